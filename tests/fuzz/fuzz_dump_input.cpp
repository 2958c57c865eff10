// Fuzz harness: a dump's input.json run through the built-in one-layer Transformer-XL and the GPT-2 reference case
// (segments, memory and same_length settings, token ids).
#include "fuzz_support.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const auto txl = core::loadModel(ATTNSCOPE_SOURCE_DIR "/resources/models/heads-1");
    static const auto gpt2 = core::loadModel(ATTNSCOPE_SOURCE_DIR "/../shared/testdata/gpt2-tiny");
    const auto path = fuzz::writeInput(data, size, "input.json");
    try {
        const auto input = core::readJsonFile(path);
        for (const auto* m : {&txl, &gpt2})
            try {
                (void)core::dumpReference(*m->model, input, path);
            } catch (const core::Error&) {
            }
    } catch (const core::Error&) {
    }
    return 0;
}
