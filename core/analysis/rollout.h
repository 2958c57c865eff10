// Attention rollout (Abnar and Zuidema 2020; figures.md): how much each input token feeds each output position
// through all layers, for models without memory. Per layer A'_l = 0.5 * mean over heads(A_l) + 0.5 * I, rows
// renormalised; rollout R = A'_L ... A'_1, drawn like a grid (rows = output positions, columns = input tokens).
#pragma once

#include "analysis/attention_grid.h"

#include <functional>

namespace attnscope::core {

class StopToken;

// One segment of a capture, through the self sites of `stream` (-1: the segment stream; an encoder-decoder model's
// source: its encoder's layers); Error(BadInput) when the segment sees memory (Transformer-XL, a carried window) or the
// stream's layers also read another stream (a decoder's cross-attention). `stop` is checked and
// `layersDone(done, total)` called after each layer. Keys a position cannot reach are NaN.
AttentionGrid attentionRollout(const TextCapture& capture, int segment, const StopToken* stop = nullptr,
                               const std::function<void(int, int)>& layersDone = {}, int stream = -1);

} // namespace attnscope::core
