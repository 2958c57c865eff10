// Fuzz harness: the GGUF reader (header, typed metadata, tensor table), the model configuration read from it, its
// vocabulary, and every tensor decoded through a Checkpoint's typed view.
#include "fuzz_support.h"
#include "io/checkpoint.h"
#include "io/gguf.h"
#include "model/config.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "model.gguf");
    try {
        const auto weights = core::Checkpoint::openGguf(path);
        try {
            (void)core::ggufModelConfig(*weights->gguf());
        } catch (const core::Error&) {
        }
        try {
            (void)core::tokenizerFromGguf(*weights->gguf())->encode("Hello world, 123!");
        } catch (const core::Error&) {
        }
        // Every tensor decoded through its typed view (the product engine's path): each row of each readable type.
        for (const auto& name : weights->names())
            try {
                weights->get(name).checkFinite();
            } catch (const core::Error&) { // unreadable type or non-finite values: refused by name
            }
    } catch (const core::Error&) {
    }
    return 0;
}
