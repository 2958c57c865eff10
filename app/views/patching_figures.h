// Activation patching as figures: the scores as a heatmap (layers x heads or key/value groups, layers x positions for
// the residual stream, or layer.head x positions per position), and one head's attention on both prompts side by side.
#pragma once

#include "data/results.h"
#include "views/paper_figures.h"

namespace attnscope::app {

// The heatmap of a result (partial ones too: cells not run yet are blank). Diverging around 0: 1 is the clean run's
// metric restored (denoising) or kept (noising), 0 the corrupted run's.
PaperFigure patchingFigure(const PatchingResult& result);

// The head a heatmap cell stands for: layer and query head from 0 (a key/value group's first query head), or -1 for
// the residual stream's cells (no head).
struct PatchingCell {
    int layer = -1;
    int head = -1;
};
PatchingCell patchingCellAt(const PatchingResult& result, int row, int col);

// A head's attention on the clean and the corrupted prompt, side by side.
PaperFigure promptPairFigure(widgets::GridDataPtr clean, widgets::GridDataPtr corrupt, const QString& modelName,
                             int layer, int head);

} // namespace attnscope::app
