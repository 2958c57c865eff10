// packMxfp4: per block, the exponent, then the 32 codes re-paired.
#include "io/mxfp4_pack.h"

namespace attnscope::core {

std::vector<std::uint8_t> packMxfp4(std::span<const std::uint8_t> blocks, std::span<const std::uint8_t> scales)
{
    const std::size_t n = scales.size();
    std::vector<std::uint8_t> out(n * 17);
    for (std::size_t b = 0; b < n; ++b) {
        const std::uint8_t* in = blocks.data() + b * 16;
        std::uint8_t* o = out.data() + b * 17;
        // The same exponent: ggml's values are twice the E2M1 ones and its scale 2^(e - 128), Hugging Face's 2^(e - 127).
        o[0] = scales[b];
        auto code = [&](int i) { return (in[i / 2] >> ((i % 2) * 4)) & 0x0F; }; // element i of the block
        for (int j = 0; j < 16; ++j)
            o[1 + j] = static_cast<std::uint8_t>(code(j) | (code(j + 16) << 4));
    }
    return out;
}

} // namespace attnscope::core
