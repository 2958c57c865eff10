// The Transformer-XL paper's Figs. 5, 6 and 7 as data, built the same way for the window and for headless export:
//   Fig. 5: every head by relative distance (the full-attention profile of a scan);
//   Fig. 6: the token grids of the widest heads (by the scan's profile entropy) with the memory's top 20% outlined;
//   Fig. 7: the profiles of terms (a), (b) and (d) alone.
#pragma once

#include "analysis/relpos_scan.h"
#include "grid_data.h"
#include "relpos_figure_data.h"
#include "run/text_capture.h"

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

// Figs. 5 and 7 from a scan; `what` describes the source ("txl-wikitext2 · 20000 tokens · memory 128").
// Throws core::Error(BadInput) when the scan lacks what the figure needs (Fig. 7 needs term profiles).
PaperFigure paperFigureFromScan(int number, const core::ScanResult& scan, const QString& what);

// The segment Fig. 6 shows: the one whose grid holds the most visible (query, key) pairs, i.e. the most memory in
// use over the most queries (a short tail after a full segment loses to it); the later one on ties.
int fig6Segment(const core::TextCapture& capture);

// Fig. 6: the `count` widest heads of `ranking` (a scan or the current text's profile) drawn from `capture`.
PaperFigure paperFigure6(const core::ScanResult& ranking, const core::TextCapture& capture, const QString& modelName,
                         int count = 3);

} // namespace attnscope::app
