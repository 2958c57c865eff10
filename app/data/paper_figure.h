// A figure as plain data: what a figure window shows and what export writes (a paper figure or an analysis view).
#pragma once

#include "grid_data.h"
#include "relpos_figure_data.h"

#include <QString>
#include <vector>

namespace attnscope::app {

// A figure shown in a window of its own and exported as one: a paper figure (number 5, 6, 7) or an analysis view
// (number 0: rollout, ablation, the atlas's similarity matrix) named by `name`.
struct PaperFigure {
    int number = 5;
    QString name;                            // "Fig. 5", "Attention rollout", ... (empty: "Fig. <number>")
    QString title;
    widgets::RelposFigurePtr heatmap;        // Figs. 5 and 7
    std::vector<widgets::GridDataPtr> grids; // Fig. 6, widest head first; an analysis's grid
    bool values = false;                     // print values in cells (ablation) rather than show where attention goes
    bool stacked = false;                    // grids one above another (wide, short ones: the logit lens's layers x
                                             // positions), each the figure's full width
    QString displayName() const { return name.isEmpty() ? QStringLiteral("Fig. %1").arg(number) : name; }
    QString fileStem() const; // "fig5", "attention-rollout"
};

} // namespace attnscope::app
