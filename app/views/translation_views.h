// Builders for an encoder-decoder model's views: the translation's labels, one site's grid (a head or the mean of its
// heads), the overview of every site and head, the word alignment and the alignment heads' table. Pure functions of
// their inputs.
#pragma once

#include "analysis/cross_alignment.h"
#include "compute/results.h"
#include "views/paper_figures.h"
#include "grid_data.h"
#include "thumbnail_data.h"

namespace attnscope::core {
class StopToken;
}

namespace attnscope::app {

// Labels the translation's tokens: source, decoder input, and the token each target row writes.
TranslationResultPtr describeTranslation(ModelBundlePtr model, core::Translation translation, bool running);

// "decoder layer 2 cross-attention (target × source)": which attention a person is looking at (also the all-layers
// entry).
QString siteTitle(const core::ModelInfo& info, int site);

// Site `site`'s grid for head `head` (from 0) or the mean of its heads (head < 0): rows are the tokens a target row
// writes (decoder sites) or the source's tokens (encoder sites), columns the keys' tokens; a causal site's masked
// cells NaN. `site` == allCrossSites(info) is the cross-attention of every decoder layer averaged (that head in each
// layer, or every head).
int allCrossSites(const core::ModelInfo& info);
widgets::GridDataPtr translationGrid(const TranslationResult& t, int site, int head, bool wholeWords = false);

// The word each piece belongs to (0, 1, ...), from the pieces' own spelling: SentencePiece's ▁ and byte-level BPE's Ġ
// (or a space) start a word, WordPiece's ## continues one; special tokens (<s>, </s>, [SEP]) and punctuation are words
// of their own.
std::vector<int> wordsOfPieces(const QStringList& pieces);

// One thumbnail per site and head (site-major), rows labelled by site ("E1", "D1 self", "D1 cross").
widgets::HeadThumbnailsPtr translationThumbnails(const TranslationResult& t, int maxSide = 48);

// "2026 ← 2026 · - ← , · 11 ← november": each written token and the source token it reads most, for a cross site.
QString alignmentText(const TranslationResult& t, int site, int head);

// T5's learned relative-position bias, the learned counterpart of the Transformer-XL paper's Fig. 5: per stack a
// grid of heads (rows) by signed distance (key minus query, columns; the decoder's only looks back), the bias each
// head adds to every score at that distance, over the buckets' whole range (the largest distance the model tells
// apart, and a little beyond to show it flatten).
PaperFigure positionBiasFigure(const ModelBundle& model);

// Attention rollout over the encoder's layers (source x source), and the logit lens over the decoder's layers (rows:
// layers, columns: target rows labelled by the token each writes).
PaperFigure encoderRolloutFigure(const TranslationResult& t);
PaperFigure decoderLensFigure(const TranslationResult& t, const core::StopToken* stop = nullptr);

} // namespace attnscope::app
