// What a model predicts from its logits: an encoder's masked-language-model head (the token at each position,
// [MASK] ones the interesting), a causal model's language-model head (the next token). One forward of one segment.
#pragma once

#include "model/attention_model.h"

#include <span>
#include <vector>

namespace attnscope::core {

struct TokenPrediction {
    std::int32_t id = 0;
    double probability = 0; // softmax of the logits, in double
};

// The k most probable tokens at each of `positions` (0-based, within `ids`), most probable first. `ids` run as one
// segment with `options` (an encoder's token types and padding). Throws Error(BadInput) when the model has no head
// that predicts tokens, or `ids` do not fit one segment.
std::vector<std::vector<TokenPrediction>> topPredictions(const AttentionModel& model, std::span<const std::int32_t> ids,
                                                         const RunOptions& options, std::span<const int> positions,
                                                         int k);

// The mean cross-entropy (nats) of the masked-language-model head on the positions whose label is not -100 (Hugging
// Face's convention), `ids` run as one segment.
double maskedTokenLoss(const AttentionModel& model, std::span<const std::int32_t> ids, const RunOptions& options,
                       std::span<const std::int32_t> labels);

} // namespace attnscope::core
