// Fuzz harness: the safetensors reader (header, offsets, dtypes) and float conversion of every tensor.
#include "fuzz_support.h"
#include "io/safetensors.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "model.safetensors");
    try {
        const core::SafetensorsFile f(path);
        for (const auto& t : f.tensors())
            try {
                (void)core::readAsFloat(f, t);
            } catch (const core::Error&) { // a dtype that is not float: refused by name
            }
    } catch (const core::Error&) {
    }
    return 0;
}
