// The analysis views as figures (views/paper_figures.h's PaperFigure): attention rollout as a token grid, head
// ablation as a layers x heads grid of loss changes, the head atlas's similarity matrix, the logit lens and direct
// logit attribution.
#pragma once

#include "analysis/attention_grid.h"
#include "analysis/head_ablation.h"
#include "analysis/head_atlas.h"
#include "analysis/logit_lens.h"
#include "analysis/logit_attribution.h"
#include "data/model_bundle.h"
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
// Clark et al. (2019)'s Fig. 2 as a grid: rows = layers, columns = attention to [CLS], [SEP], punctuation, the
// previous and the next token (each averaged over the layer's heads, current text).
PaperFigure tokenKindsFigure(const std::vector<core::TokenAttention>& byLayer, const QString& modelName);
// The logit lens: rows = layers, columns = the segment's positions; each cell names the layer's top token there.
// Two grids: coloured by that token's probability, and by the actual next token's rank (1 / rank: 1 = the model's
// first choice already at that layer). Hover: the top five and the actual token's rank.
PaperFigure logitLensFigure(const core::LogitLens& lens, const core::TextCapture& capture,
                            const core::Tokenizer& tokenizer, const QString& modelName);
// The same with its columns labelled `columns` (an encoder-decoder model's target rows: the token each row writes).
PaperFigure logitLensFigure(const core::LogitLens& lens, const QStringList& columns, const core::Tokenizer& tokenizer,
                            const QString& modelName);
// Direct logit attribution: rows = layers, columns = heads, then the attention's bias (when a model has one) and the
// feed-forward block; values = shares of the logit (a diverging map). The title names the token and position and
// the embedding's and the constant's shares, so the figure sums to the logit.
PaperFigure logitAttributionFigure(const core::LogitAttribution& a, const core::TextCapture& capture,
                                   const core::Tokenizer& tokenizer, const QString& modelName);

// A learned relative-position bias (T5's buckets), the learned counterpart of the Transformer-XL paper's Fig. 5: per
// stack that has one, a grid of heads (rows) by signed distance (key minus query, columns; a causal stack's only
// looks back), the bias each head adds to every score at that distance, over the range the buckets tell apart and a
// little beyond to show it flatten.
PaperFigure positionBiasFigure(const ModelBundle& model);

} // namespace attnscope::app
