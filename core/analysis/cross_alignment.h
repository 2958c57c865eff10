// Which heads align: for every cross-attention head of an encoder-decoder model's captured target, how concentrated
// its rows are (the mean of each target row's largest weight: 1 when every row looks at one source token) and how
// monotonic (the share of consecutive target rows whose most-read source position does not move back: 1 for the
// diagonal a word-for-word translation follows). Ranked, so a user finds a checkpoint's "alignment heads".
// Also the word alignment of one grid: each row's most-read column.
#pragma once

#include "analysis/attention_grid.h"

#include <vector>

namespace attnscope::core {

struct AlignmentHead {
    int site = 0;  // ModelInfo::sites index of the cross-attention
    int layer = 0; // decoder layer, from 0
    int head = 0;  // from 0
    double concentration = 0;
    double monotonicity = 0;
};

// Every head of every cross-attention site of a capture's segment, most concentrated first (ties: more monotonic
// first); a segment of one row has monotonicity 1. Empty for a model without cross-attention.
std::vector<AlignmentHead> rankAlignmentHeads(const TextCapture& capture, int segment = 0);

// Each row's most-read column of a grid (the first of equal ones; masked cells never).
std::vector<int> strongestColumns(const AttentionGrid& grid);

} // namespace attnscope::core
