// The router of a mixture-of-experts model: for a text, per layer, each token's router probabilities over every
// expert, the experts it was sent to and their weights (recomputed from the capture, never kept with it); over a
// corpus, each expert's load per layer (the share of tokens routed to it) and the tokens it takes most often.
#pragma once

#include "run/text_capture.h"

#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;
class Tokenizer;

struct TextRouting {
    int layers = 0, experts = 0, used = 0;
    int tokens = 0;        // the segment's tokens
    int firstPosition = 0; // token index of row 0
    // Per layer: [tokens, experts] probabilities; [tokens, used] chosen experts (most probable first) and weights.
    std::vector<std::vector<float>> probs;
    std::vector<std::vector<std::int32_t>> ids;
    std::vector<std::vector<float>> weights;
    bool chose(int layer, int token, int expert) const;
};

// One segment of a captured text, rerun from the state the capture kept before it. Error(BadInput) for a model
// without experts.
TextRouting textRouting(const AttentionModel& model, const TextCapture& capture, int segment,
                        const StopToken* stop = nullptr);

struct ExpertLoad {
    int layers = 0, experts = 0, used = 0;
    std::int64_t tokens = 0;
    std::vector<double> share;   // [layers, experts]: tokens routed to the expert / tokens (sums to `used` per layer)
    std::vector<double> weight;  // [layers, experts]: mean router weight of the tokens routed to it
    // Per layer and expert, its most frequent tokens (id, count), at most `topTokens`, most frequent first.
    std::vector<std::vector<std::pair<std::int32_t, std::int64_t>>> top;
};

// Each expert's load over `ids` (run in chunks of `chunk` tokens from an empty cache).
ExpertLoad expertLoad(const AttentionModel& model, std::span<const std::int32_t> ids, int chunk, int topTokens = 10,
                      const StopToken* stop = nullptr);

// The load as JSON: {"layers", "experts", "used", "tokens", "load": [[share per expert] per layer], "weight": ...,
// "top_tokens": [[[{"token", "count"}] per expert] per layer]}, tokens spelled by `tokenizer`.
std::string expertLoadJson(const ExpertLoad& load, const Tokenizer& tokenizer);

} // namespace attnscope::core
