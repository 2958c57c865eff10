// Reasoning traces at sentence level (Bogdan et al. 2025, "Thought Anchors"): which heads' attention converges on a
// few sentences (receiver heads), and what suppressing all attention to one sentence does to the text after it.
// Sentences as core/analysis/grid_regroup.h's sentenceOfTokens finds them.
#pragma once

#include "run/text_capture.h"

#include <functional>
#include <string>
#include <vector>

namespace attnscope::core {

class AttentionModel;
class StopToken;

// Per head, the kurtosis (excess, Fisher's) over key sentences of each sentence's vertical score: the mean attention
// it receives from sentences at least `proximity` later (sentence-level attention: a query sentence's tokens averaged,
// a key sentence's summed). High: the head's attention converges on a few sentences, as receiver heads' does.
struct ReceiverHeads {
    int layers = 0, heads = 0, sentences = 0;
    std::vector<double> kurtosis; // [layers * heads], NaN where fewer than four sentences get a score
    std::vector<double> vertical; // [layers * heads * sentences]: each key sentence's score (NaN: no later sentence)
};
inline constexpr int kReceiverProximity = 4; // nearby sentences left out of a receiver head's score (every front end)
ReceiverHeads receiverHeads(const TextCapture& capture, int segment, int proximity = kReceiverProximity,
                            const StopToken* stop = nullptr,
                            const std::function<void(int, int)>& progress = {});

// Attention suppression: for each sentence i, the run with every head's attention from the tokens after sentence i to
// sentence i's tokens removed (the rest of each row rescaled to its former total), against the plain run; effect[i][j]
// the mean KL divergence (nats) of the next-token distribution over sentence j's tokens, KL(plain || suppressed).
// Tokens before the end of sentence i are unchanged (NaN for j <= i). One forward per sentence, one segment, decoders.
struct SentenceSuppression {
    int sentences = 0;
    std::vector<double> effect;   // [sentences * sentences]
    std::vector<double> perToken; // [sentences * tokens]: each token's KL with sentence i suppressed (NaN before it)
    std::vector<int> sentenceOf;  // per token
};
SentenceSuppression sentenceSuppression(const AttentionModel& model, const std::vector<Token>& tokens,
                                        const StopToken* stop = nullptr, const std::function<void(int, int)>& progress = {});

} // namespace attnscope::core
