// The Transformer-XL paper's Figs. 5, 6 and 7 as data, built the same way for the window and for headless export:
//   Fig. 5: every head by relative distance (the full-attention profile of a scan);
//   Fig. 6: the token grids of the widest heads (by the scan's profile entropy) with the memory's top 20% outlined;
//   Fig. 7: the profiles of terms (a), (b) and (d) alone.
#pragma once

#include "analysis/relpos_scan.h"
#include "data/paper_figure.h"
#include "grid_data.h"
#include "relpos_figure_data.h"
#include "run/text_capture.h"

#include <QString>
#include <vector>

namespace attnscope::app {

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
