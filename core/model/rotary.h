// Rotary position embedding as the Hugging Face references compute it: each rotated pair's frequency from the base and
// the scaling (linear, llama3, LongRoPE, YaRN, a file's own divisors), float32 as the references round it; a table of
// cos and sin per position; rotation of head vectors in the rotate_half layout (dimension i pairs with i + r/2 of the r
// rotated dimensions, the rest of a head unchanged). Pure functions of the configuration.
#pragma once

#include "model/config.h"

#include <cstddef>
#include <vector>

namespace attnscope::core {

// The rotation frequencies of the r rotated dimensions' pairs (inv_freq, [r / 2]) after the configuration's scaling;
// LongRoPE: its short factors, or with `longFactors` its long ones (for sequences past the original context).
std::vector<float> rotaryFrequencies(const LlamaConfig& c, bool longFactors = false);
// 1 / theta^(2i/r) at another base (Gemma 3's sliding layers: rope_local_base_freq, no scaling).
std::vector<float> plainRotaryFrequencies(double theta, int rotated);

// cos and sin of every (position, pair), [positions, r / 2], times LongRoPE's or YaRN's factor.
struct RotaryTable {
    std::vector<float> cos, sin;
    int pairs = 0;
};
RotaryTable rotaryTable(const RopeConfig& rope, int positions, const std::vector<float>& frequencies);

// Rotates, in place, `rows` rows of `heads` head vectors of `headDim` (row t at x + t * stride, head n at + n * headDim)
// to positions firstPosition + t.
void rotateRows(const RotaryTable& table, float* x, int rows, std::ptrdiff_t stride, int heads, int headDim,
                int firstPosition);

} // namespace attnscope::core
