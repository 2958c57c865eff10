// Reasoning traces at sentence level as one figure: the shown head's attention between sentences, every head's
// receiver score (how much its attention converges on a few sentences), and, for decoders, what suppressing attention
// to each sentence does to each later one.
#pragma once

#include "analysis/attention_grid.h"
#include "analysis/sentence_analysis.h"
#include "views/paper_figures.h"

#include <optional>

namespace attnscope::app {

// `grid`: the shown head's token grid of the segment (attention_grid.h); `suppression` only for decoders.
PaperFigure sentenceFigure(const core::AttentionGrid& grid, const core::TextCapture& capture, const core::ReceiverHeads& receivers,
                           const std::optional<core::SentenceSuppression>& suppression, const QString& modelName,
                           const QString& headName);

} // namespace attnscope::app
