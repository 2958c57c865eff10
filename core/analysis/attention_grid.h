// Turns captured attention into what the token grid draws: one head's (or the mean of several heads')
// probabilities for one segment, with masked cells marked, plus the top-fraction highlight of the paper's Fig. 6.
#pragma once

#include "attention/attention_math.h"
#include "attention/rotary_bands.h"
#include "run/text_capture.h"

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;

struct AttentionGrid {
    int rows = 0, cols = 0;           // queries x keys
    int memoryCols = 0;               // the first memoryCols columns are memory tokens
    std::vector<float> values;        // [rows, cols]; NaN = masked (drawn blank)
    int rowStream = 0, colStream = 0; // the streams rows and columns are tokens of (ModelInfo::streams)
    std::vector<int> rowTokens;       // token index of each row, in its stream (TextCapture::streamTokens)
    std::vector<int> colTokens;       // token index of each column
    std::vector<std::uint8_t> highlight; // [rows, cols]: 1 = in the row's top fraction
    // Rows / columns that stand for words (analysis/grid_regroup.h): their texts; empty when they are tokens.
    std::vector<std::string> rowLabels, colLabels;
    float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
};

// Where a site's grid sits: its streams, shape and the token of every row and column (values left empty).
void placeGrid(const TextCapture& capture, int segment, int site, AttentionGrid& grid);

// `site`: the site (a single-stream model's layer). `heads`: zero-based heads to average (empty = all heads of the site). Terms other than full need a capture with
// terms (Transformer-XL) or bands (a rotary model); raw scores show the selected terms' sum. With terms.raw the values are the summed scores (masked cells NaN).
// The highlight ranks each row's visible keys; with `highlightMemoryOnly` only memory keys keep their mark (the
// paper's Fig. 6 marks "tokens in the memory that have top 20% attention values").
// Throws Error(BadInput) for out-of-range segment, layer or head, or when no term is selected.
struct GridOptions {
    TermSelection terms;             // Transformer-XL's terms, or with `bands` a rotary model's bands
    const BandSplit* bands = nullptr; // rotary models: what terms.a..d select (band 1..4)
    double topFraction = 0.2;
    bool highlightMemoryOnly = false;
    const StopToken* stop = nullptr;  // checked between heads (Error(Cancelled))
    std::function<void(int, int)> headsDone; // (done, total) after each head
};
AttentionGrid attentionGrid(const TextCapture& capture, int segment, int site, const std::vector<int>& heads,
                            const GridOptions& options);
inline AttentionGrid attentionGrid(const TextCapture& capture, int segment, int site, const std::vector<int>& heads,
                                   const TermSelection& terms = {})
{
    GridOptions o;
    o.terms = terms;
    return attentionGrid(capture, segment, site, heads, o);
}

// The mean of several sites' grids of one shape (an encoder-decoder model's cross-attention over every decoder layer):
// each site's `heads` averaged, then the sites; highlight as attentionGrid's. Error(BadInput) when the sites' shapes
// differ or none is given.
AttentionGrid attentionGridOfSites(const TextCapture& capture, int segment, const std::vector<int>& sites,
                                   const std::vector<int>& heads, const GridOptions& options);
// The sites averaged with `site` by a ViewSelection's siteAverage: every site of its stack and kind.
std::vector<int> sitesLike(const ModelInfo& info, int site);

// For each row, marks the keys whose value is among the top `fraction` of that row's unmasked values (ties at the
// threshold included). With `probabilities`, a key must also get more than an even share of its row (1 / visible
// keys) and print as at least 0.01: a head that attends to a few keys would otherwise get dozens of "top 20%" marks
// on cells that hold nothing.
std::vector<std::uint8_t> topFractionMask(const std::vector<float>& values, int rows, int cols, double fraction,
                                          bool probabilities = false);

// Drops the highlight of every key that is not in the memory (columns from `memoryCols` on): the "in the memory"
// scope, applied the same way to a token grid and to its regrouped views (words, no special tokens).
void restrictHighlightToMemory(AttentionGrid& grid);

} // namespace attnscope::core
