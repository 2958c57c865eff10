// Direct logit attribution (TransformerLens's standard view): at one position, how much each head's output, each
// feed-forward block and the embedding add to the logit of one token, read through the final norm with its scale
// frozen at that position and the unembedding. The residual stream is the embedding plus every layer's attention and
// feed-forward outputs, and the attention output is its heads' parts plus its bias, so the shares sum to the logit
// (before Gemma 2's soft cap). Decoders with a language-model head (GPT-2, the Llama family and its relatives).
#pragma once

#include "run/text_capture.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;
class Tokenizer;

struct LogitAttribution {
    int layers = 0, heads = 0;
    int position = 0;           // token index whose next token is read (0-based)
    std::int32_t token = -1;    // the token whose logit is split
    double logit = 0;           // the model's logit of `token` there, before any soft cap
    double cappedLogit = 0;     // after the model's soft cap (Gemma 2), what its softmax reads; = logit without one
    double embedding = 0;       // the embedding's share (token and absolute position embeddings)
    std::vector<double> head;   // [layers * heads], layer-major: each head's share
    // [layers]: what the attention adds beyond its heads (the output bias); a layer that mixes without attention heads
    // (a convolution, a delta rule): its whole output.
    std::vector<double> attentionBias;
    std::vector<double> mlp;    // [layers]: each feed-forward block's share
    double constant = 0;        // the final norm's bias and the unembedding's, read out
    double headShare(int layer, int h) const { return head[static_cast<std::size_t>(layer) * heads + h]; }
    double sum() const;         // embedding + heads + biases + blocks + constant: equals `logit`
};

// The attribution at `position` of a captured text for `token` (-1: the token that follows, or the model's top
// prediction at the text's end). Reruns the segment holding the position. Throws Error(BadInput) for models without
// the split (Transformer-XL, encoders) or a position out of range; Error(Cancelled) through `stop`.
LogitAttribution logitAttribution(const AttentionModel& model, const TextCapture& capture, int position,
                                  std::int32_t token = -1, const StopToken* stop = nullptr);

// layer,head,share rows (1-based; head "mlp", "attn_bias"; layer 0 "embedding" and "constant") and a last "logit" row.
std::string logitAttributionCsv(const LogitAttribution& a);

} // namespace attnscope::core
