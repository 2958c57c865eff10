// The immutable data a token grid draws: labels, values (NaN = masked), memory split, highlights.
#pragma once

#include <QString>
#include <QStringList>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

namespace attnscope::widgets {

// A picture of the keys drawn under the grid, one column per key column (a recording's spectrogram under the
// frames it was heard in): [bins, cols] values, bin 0 at the bottom; the columns from `contentCols` on are padding
// (drawn faded; 0: none).
struct KeyStrip {
    int bins = 0, cols = 0;
    std::vector<float> values;
    int contentCols = 0;
    QString label; // the strip's axis title ("mel")
};

struct GridData {
    QString title;             // e.g. "txl-wikitext2 · layer 1 · head 8"
    QStringList rowLabels;     // query tokens
    QStringList colLabels;     // key tokens (memory first)
    int rows = 0, cols = 0;
    // The shape the view frames while stepping reveals the grid row by row (0: rows, cols): cells keep their size
    // and the triangle fills in, instead of one row stretched over the whole plot.
    int frameRows = 0, frameCols = 0;
    int memoryCols = 0;        // columns [0, memoryCols) are memory tokens
    int secondRow = -1, secondCol = -1; // a text pair: the first row / column of text B (-1: one text)
    std::vector<float> values; // [rows, cols]; NaN = masked
    std::vector<std::uint8_t> highlight; // [rows, cols]; 1 = top-fraction cell (drawn with a red outline)
    std::vector<int> rowPositions;       // absolute token position of each row (for distances and hover)
    std::vector<int> colPositions;
    QString valueLabel = QStringLiteral("attention");
    QString rowAxis, colAxis;  // axis titles; empty: query tokens / key (attended-to) tokens
    bool diverging = false;    // raw scores: symmetric colour range around 0
    bool signedWeights = false; // an implicit map's signed weights: the diverging colours too (with `diverging`)
    bool fromZero = false;     // values that are no probabilities (a divergence): colour range 0 .. their maximum
    int labelChars = 0;        // tick labels longer than this are elided (0: the view's default for token labels)
    QStringList cellTexts;     // [rows * cols] when cells show words instead of their values (the logit lens's tokens)
    QStringList cellTips;      // [rows * cols] extra lines for a cell's tooltip (HTML), or empty
    std::shared_ptr<const KeyStrip> keyStrip; // drawn under the grid, the key axis's labels below it; null: none

    int shownRows() const { return std::max(rows, frameRows); }
    int shownCols() const { return std::max(cols, frameCols); }
    float at(int r, int c) const { return values[static_cast<std::size_t>(r) * cols + c]; }
    int rowPosition(int r) const { return r >= 0 && r < static_cast<int>(rowPositions.size()) ? rowPositions[static_cast<std::size_t>(r)] : -1; }
    int colPosition(int c) const { return c >= 0 && c < static_cast<int>(colPositions.size()) ? colPositions[static_cast<std::size_t>(c)] : -1; }
};

using GridDataPtr = std::shared_ptr<const GridData>;

} // namespace attnscope::widgets
