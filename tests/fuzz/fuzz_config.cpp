// Fuzz harness: config.json parsing for every model family.
#include "fuzz_support.h"
#include "model/config.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "config.json");
    try {
        (void)core::readModelConfig(path);
    } catch (const core::Error&) {
    }
    return 0;
}
