// The single-stream analyses that have an encoder-decoder counterpart: attention rollout over the encoder's layers
// (source x source: how much each source token feeds each position of the encoder's output) and the logit lens over
// the decoder's layers (each decoder layer's residual stream read through the model's final norm and read-out, at
// every target row: what the model would write next if it stopped there).
#pragma once

#include "analysis/logit_lens.h"
#include "run/translation.h"

namespace attnscope::core {

// Rollout (figures.md's rule) over the encoder sites of `t`: A'_l = 0.5 mean over heads + 0.5 I, rows renormalised,
// R = A'_L ... A'_1; [S, S] row-major.
std::vector<float> encoderRollout(const ModelInfo& info, const Translation& t);

// The logit lens of a translation's target rows: rows are decoder layers, columns target rows; the compared token of
// row i is target token i + 1 (none after the last). The source and target run once more (teacher forcing).
LogitLens decoderLogitLens(const EncoderDecoderModel& model, const Translation& t, int k = 5,
                           const StopToken* stop = nullptr);

} // namespace attnscope::core
