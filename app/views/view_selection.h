// What the user has chosen to look at: site (a layer of a single-stream model), heads, segment, score terms,
// highlight (0-based inside).
#pragma once

#include "attention/attention_math.h"
#include "attention/rotary_bands.h"

#include <optional>
#include <vector>

namespace attnscope::app {

// Where the top-fraction highlight may appear: the paper's Fig. 6 marks memory tokens only.
enum class HighlightScope { Memory, AllKeys };

struct ViewSelection {
    int site = 0;              // ModelInfo::sites index: a single-stream model's layer
    // The mean over every site of the chosen one's kind and stack (an encoder-decoder model's cross-attention of every
    // decoder layer), each site's chosen heads first.
    bool siteAverage = false;
    std::vector<int> heads{0}; // averaged when several; empty = all heads of the site
    int segment = -1;          // -1: the segment chosen automatically (autoSegment)
    core::TermSelection terms;             // Transformer-XL's terms, or a rotary model's bands (slot t = band t)
    std::optional<core::BandSplit> bands;  // rotary models: the bands the toggles select (unset: three equal bands)
    double topFraction = 0.2;
    HighlightScope highlightScope = HighlightScope::Memory;
    int revealRows = -1;       // token-by-token stepping: show only the first N queries (-1 = all)
    bool wholeWords = false;   // rows and columns are words: subword pieces merged (analysis/grid_regroup.h)
    bool hideSpecial = false;  // special tokens ([CLS], [SEP], BOS) left out, rows renormalised
};

} // namespace attnscope::app
