// What the image view shows of a vision model's capture: one query token's attention over the patches (one head,
// the layer's mean, or rollout through every layer), over the picture the model read.
#pragma once

#include "analysis/attention_grid.h"
#include "data/results.h"
#include "image_overlay_data.h"

#include <QString>

namespace attnscope::app {

// SpecialTokens: every special token's map side by side (CLS, DIST, the registers), for the head or the layer's mean.
enum class ImageSource { Head, LayerMean, Rollout, SpecialTokens };

// `query` is a token of the capture (0: CLS; the patches follow the special tokens); `rollout` is needed for
// ImageSource::Rollout (attentionRollout of the capture). Null when the text is not an image.
widgets::ImageOverlayDataPtr imageOverlay(const TextResult& result, int layer, int head, ImageSource source, int query,
                                          const core::AttentionGrid* rollout, const QString& modelName);
// The picture as a QImage.
QImage toQImage(const core::Image8& image);

} // namespace attnscope::app
