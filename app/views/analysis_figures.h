// The analysis views as figures (views/paper_figures.h's PaperFigure): attention rollout as a token grid, head
// ablation as a layers x heads grid of loss changes, and the head atlas's similarity matrix.
#pragma once

#include "analysis/attention_grid.h"
#include "analysis/head_ablation.h"
#include "analysis/head_atlas.h"
#include "views/paper_figures.h"

namespace attnscope::app {

// Rollout of one segment, labelled with its tokens.
PaperFigure rolloutFigure(const core::AttentionGrid& rollout, const core::TextCapture& capture, const QString& modelName);
// Rows = layers, columns = heads; values = the loss change (nats) when the head is zeroed.
PaperFigure ablationFigure(const core::AblationResult& result, const QString& modelName, int tokens);
// The N x N Jensen-Shannon distances of the heads in `order`, labelled "L1 H2".
widgets::GridDataPtr similarityGrid(const std::vector<double>& distances, const std::vector<int>& order, int heads,
                                    const QString& title);
QString headLabel(int layer, int head); // "L1 H2" (1-based)

} // namespace attnscope::app
