// gpt-oss's MXFP4 weights as the Hugging Face checkpoints store them (*_blocks: 16 bytes of FP4 E2M1 codes per 32
// values, element 2k in the low nibble of byte k; *_scales: one E8M0 exponent per block) packed into ggml's MXFP4
// blocks (the exponent byte, then element j in the low nibble of byte j and j + 16 in the high one), the type the
// product engine decodes. Nothing is requantised: the codes and exponents are the same, only their places move.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace attnscope::core {

// `blocks` [n, 16] and `scales` [n] for n blocks; returns n ggml MXFP4 blocks (17 bytes each).
std::vector<std::uint8_t> packMxfp4(std::span<const std::uint8_t> blocks, std::span<const std::uint8_t> scales);

} // namespace attnscope::core
