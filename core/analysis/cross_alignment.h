// Which heads align: for every cross-attention head of an encoder-decoder model's translation, how concentrated its
// rows are (the mean of each target row's largest weight: 1 when every row looks at one source token) and how
// monotonic (the share of consecutive target rows whose most-read source position does not move back: 1 for the
// diagonal a word-for-word translation follows). Ranked, so a user finds a checkpoint's "alignment heads".
// Also the word alignment of one head or of a site's mean: each target row's most-read source token.
#pragma once

#include "run/translation.h"

#include <vector>

namespace attnscope::core {

struct AlignmentHead {
    int site = 0;  // ModelInfo::sites index of the cross-attention
    int layer = 0; // decoder layer, from 0
    int head = 0;  // from 0
    double concentration = 0;
    double monotonicity = 0;
};

// Every cross-attention head of `t`, most concentrated first (ties: more monotonic first). Rows that wrote nothing
// (none here) are not counted; a translation of one target row has monotonicity 1.
std::vector<AlignmentHead> rankAlignmentHeads(const ModelInfo& info, const Translation& t);

// Each row's most-read column in site `site`'s attention, for head `head` or the mean of its heads (head < 0).
std::vector<int> strongestColumns(const SiteAttention& a, int head);

} // namespace attnscope::core
