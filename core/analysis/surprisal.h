// Surprisal: how unexpected each token of a text is to a causal model, -log p(token | the tokens before it), from the
// model's own next-token logits, and the text's perplexity (exp of the mean in nats). What a class reads off a text
// ("the model did not see that word coming") and what an analyst compares across models.
#pragma once

#include "run/text_capture.h"

#include <vector>

namespace attnscope::core {

class StopToken;

struct Surprisal {
    // Per token of the capture, in bits; NaN where nothing predicts the token (the text's first token).
    std::vector<double> bits;
    double meanNats = 0;   // over the predicted tokens
    double perplexity = 0; // exp(meanNats)
    int predicted = 0;     // tokens with a value
};

// One forward of the captured text with the settings it was captured with (segments, memory), the last layer read out
// through the model's own head, a few rows at a time. Throws Error(BadInput) when the model does not predict next
// tokens; Error(Cancelled) through `stop`.
Surprisal tokenSurprisal(const AttentionModel& model, const TextCapture& capture, const StopToken* stop = nullptr);

} // namespace attnscope::core
