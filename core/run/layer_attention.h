// One site's (a layer's) attention of a captured segment as the forward pass computes it, every head: what Python's
// Capture.attention and `attnscope-cli attention` hand over. The segment runs again from the capture's kept state and
// stops once the layer is done, so a 4,096-token text never materialises the other layers.
#pragma once

#include "run/text_capture.h"

#include <vector>

namespace attnscope::core {

struct LayerAttention {
    int heads = 0, queries = 0, keys = 0;
    std::vector<float> values; // [heads, queries, keys]: probabilities (masked keys 0) or raw scores (masked NaN)
};

// `site` from 0 (a single-stream model's layer); `raw`: the scaled scores before the softmax (dot-product models;
// Error(BadInput) otherwise). Error(BadInput) for a site or segment that does not exist.
LayerAttention layerAttention(const AttentionModel& model, const TextCapture& capture, int segment, int site,
                              bool raw = false);

} // namespace attnscope::core
