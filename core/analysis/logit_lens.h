// The logit lens (nostalgebraist 2020): every layer's residual stream read through the model's own read-out (final
// norm and unembedding; an encoder's MLM head), as if the model stopped there. Per layer and position: the top tokens
// with their probabilities, and the probability and rank of the token that actually follows (causal models) or
// stands there (encoders).
#pragma once

#include "analysis/token_predictions.h"
#include "run/text_capture.h"

#include <vector>

namespace attnscope::core {

class StopToken;

struct LogitLens {
    int layers = 0, positions = 0; // rows: layers (after layer l), columns: the segment's queries
    int firstPosition = 0;         // token index of column 0
    bool nextToken = true;         // causal: predictions of the next token; encoders: of the token itself
    // [layers * positions], layer-major: the top `k` tokens; the compared token's probability and rank (-1: none,
    // at the text's end).
    std::vector<std::vector<TokenPrediction>> top;
    std::vector<double> actualProbability;
    std::vector<int> actualRank;
    const std::vector<TokenPrediction>& at(int layer, int position) const
    {
        return top[static_cast<std::size_t>(layer) * positions + position];
    }
};

// One segment of a captured text, rerun from the state the capture kept before it. Throws Error(BadInput) when the
// model has no read-out; Error(Cancelled) through `stop`.
inline constexpr int kLensTopK = 5; // the top tokens a lens keeps per cell (every front end's default)
LogitLens logitLens(const AttentionModel& model, const TextCapture& capture, int segment, int k = kLensTopK,
                    const StopToken* stop = nullptr);

// The lens as CSV: layer, position (1-based), id, token, p of the layer's top token there, then the compared token
// (the next one; encoders: the token itself) with its id, text, probability and rank (1-based; empty at the text's
// end). Pieces spelled by `tokenizer`.
std::string logitLensCsv(const LogitLens& lens, const TextCapture& capture, const Tokenizer& tokenizer);

} // namespace attnscope::core
