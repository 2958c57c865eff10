// What the user has chosen to look at: layer, heads, segment, score terms, highlight fraction (0-based inside).
#pragma once

#include "analysis/attention_grid.h"

#include <vector>

namespace attnscope::app {

struct ViewSelection {
    int layer = 0;
    std::vector<int> heads{0}; // averaged when several; empty = all heads of the layer
    int segment = -1;          // -1: the last segment
    core::TermSelection terms;
    double topFraction = 0.2;
    int revealRows = -1;       // token-by-token stepping: show only the first N queries (-1 = all)
};

} // namespace attnscope::app
