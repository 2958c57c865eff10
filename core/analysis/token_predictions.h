// What a model predicts from its logits: an encoder's masked-language-model head (the token at each position,
// [MASK] ones the interesting), a causal model's language-model head (the next token). One forward of one segment.
#pragma once

#include "model/attention_model.h"
#include "run/generation.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"

#include <random>
#include <span>
#include <vector>

namespace attnscope::core {

// The k most probable tokens at each of `positions` (0-based, within `ids`), most probable first. `ids` run as one
// segment with `options` (an encoder's token types and padding). Throws Error(BadInput) when the model has no head
// that predicts tokens, or `ids` do not fit one segment.
std::vector<std::vector<TokenPrediction>> topPredictions(const AttentionModel& model, std::span<const std::int32_t> ids,
                                                         const RunOptions& options, std::span<const int> positions,
                                                         int k);

// The mean cross-entropy (nats) of the masked-language-model head on the positions whose label is not -100 (Hugging
// Face's convention), `ids` run as one segment.
// A token a user masked: BERT's [MASK], RoBERTa's <mask>.
bool isMaskToken(const Token& token);
// The mask token a user types for this tokenizer ("[MASK]", "<mask>"), or "" when it has none.
std::string maskTokenOf(const Tokenizer& tokenizer);

struct MaskedFill {
    int position = 0; // token index in the text
    std::vector<TokenPrediction> top;
};
// The top k fillers of every masked token of a captured text, each from a forward of its segment (with the text's
// token types). Empty when the text has no mask.
std::vector<MaskedFill> maskedFills(const AttentionModel& model, const TextCapture& capture, int k);

// A causal model's logits for the token after `position` of a captured text ([vocab]), computed as the capture
// ran it: the segment holding the position, continued from the state the capture kept before it (or rerun from the
// newest kept state). Throws Error(BadInput) when the model does not predict next tokens or the position is out of range.
std::vector<float> nextTokenLogits(const AttentionModel& model, const TextCapture& capture, int position,
                                   const StopToken* stop = nullptr);
double maskedTokenLoss(const AttentionModel& model, std::span<const std::int32_t> ids, const RunOptions& options,
                       std::span<const std::int32_t> labels);

} // namespace attnscope::core
