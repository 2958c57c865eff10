// Turns captured attention into what the token grid draws: one head's (or the mean of several heads')
// probabilities for one segment, with masked cells marked, plus the top-fraction highlight of the paper's Fig. 6.
#pragma once

#include "run/text_capture.h"

#include <optional>
#include <string>
#include <vector>

namespace attnscope::core {

// Which score the grid shows: full attention, or the softmax over visible keys of the sum of chosen terms.
struct TermSelection {
    bool a = true, b = true, c = true, d = true;
    bool raw = false; // the chosen terms' sum before softmax (scores, not probabilities)
    bool isFull() const { return a && b && c && d; }
    bool any() const { return a || b || c || d; }
    std::string label() const; // "full", "a+b", ...
};

struct AttentionGrid {
    int rows = 0, cols = 0;           // queries x keys
    int memoryCols = 0;               // the first memoryCols columns are memory tokens
    std::vector<float> values;        // [rows, cols]; NaN = masked (drawn blank)
    std::vector<int> rowTokens;       // token index of each row
    std::vector<int> colTokens;       // token index of each column
    std::vector<std::uint8_t> highlight; // [rows, cols]: 1 = in the row's top fraction
    float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
};

// `heads`: zero-based heads to average (empty = all heads of the layer). Terms other than full, and raw
// scores, need a capture with terms. With terms.raw the values are the summed scores (masked cells NaN). Throws Error(BadInput) for out-of-range segment, layer or head.
AttentionGrid attentionGrid(const TextCapture& capture, int segment, int layer, const std::vector<int>& heads,
                            const TermSelection& terms = {}, double topFraction = 0.2);

// For each row, marks the keys whose value is among the top `fraction` of that row's unmasked values
// (at least one key per row; ties at the threshold included).
std::vector<std::uint8_t> topFractionMask(const std::vector<float>& values, int rows, int cols, double fraction);

} // namespace attnscope::core
