// What a model's logits say and what generation does with them: the distribution over tokens at a temperature, how a
// token is chosen (greedy, or sampled within top-k and top-p), and generation through the key/value cache (the prompt
// once, then one token a step). Runs of a model, so they sit beside the capture; analyses build on them.
#pragma once

#include "model/attention_model.h"

#include <array>
#include <random>
#include <span>
#include <vector>

namespace attnscope::core {

class StopToken;

// An observer that keeps the last segment's logits [qlen, vocab] (and nothing else: no probabilities).
class KeptLogits final : public AttentionObserver {
public:
    bool wantLogits() const override { return true; }
    bool wantProbabilities() const override { return false; }
    void onLayer(const LayerView&) override {}
    void onSegmentEnd(const SegmentEndView& e) override
    {
        if (!e.logits)
            return;
        vocab = e.vocab;
        rows = e.qlen;
        logits.assign(e.logits, e.logits + static_cast<std::size_t>(e.qlen) * e.vocab);
    }
    std::vector<float> logits;
    int vocab = 0, rows = 0;
};

struct TokenPrediction {
    std::int32_t id = 0;
    double probability = 0; // softmax of the logits, in double
};

// The k most probable tokens of `logits` at `temperature` (> 0), and the probability and rank (0-based) of `actual`
// (-1: none).
struct Distribution {
    std::vector<TokenPrediction> top;
    double actualProbability = 0;
    int actualRank = -1;
};
Distribution distributionOf(std::span<const float> logits, double temperature, int k, std::int32_t actual = -1);

// How generation picks a token: the most probable (greedy), or a sample of softmax(logits / temperature) restricted to
// the topK most probable (0: all) and to the smallest set whose probability reaches topP (1: all).
struct Sampling {
    bool greedy = true;
    double temperature = 1.0;
    int topK = 0;
    double topP = 1.0;
    // Ids never chosen (controlTokenIds: <unk>, <eos>, ... unless the user asks for them), sorted or not.
    std::vector<std::int32_t> excluded;
    // Ids never chosen as the first new token (Whisper's begin_suppress_tokens: a blank or the end at once).
    std::vector<std::int32_t> excludedFirst;
};
std::int32_t chooseToken(std::span<const float> logits, const Sampling& sampling, std::mt19937_64& rng);
// The logits a choice sees (Hugging Face's "scores"): the excluded ids at -infinity, and excludedFirst's too when
// `firstToken`.
std::vector<float> processedLogits(std::span<const float> logits, const Sampling& sampling, bool firstToken);
// Throws Error(BadInput) naming the setting unless the temperature is a positive finite number, topK 0 or more and
// topP in (0, 1]: the one rule the CLI, Python and the window apply ("temperature", "top_k", "top_p" as `names` say).
void checkSampling(const Sampling& sampling, const std::array<const char*, 3>& names = {"temperature", "top_k", "top_p"});

// Generation: `count` new tokens after `prompt`, each chosen from the logits after the last (chooseToken), through the
// key/value cache: the prompt runs once, then one token at a time continues the segment (resumeWithin), as the app's
// capture does. Stops early at the model's context. Returns the new ids with each one's probability at the temperature.
struct Generated {
    std::vector<std::int32_t> ids;
    std::vector<double> probabilities;
    bool finished = false; // the last id is GenerationRun::stopAt
};
// What a generation runs with besides its prompt: the run's options (an encoder-decoder model's source), an observer
// that sees every forward (the prompt's, then each new token's), or null, and the token that ends it when written (a
// translation's end token; -1: none, only the count or the context ends it).
struct GenerationRun {
    RunOptions options;
    AttentionObserver* observer = nullptr;
    std::int32_t stopAt = -1;
};
Generated generateTokens(const AttentionModel& model, std::span<const std::int32_t> prompt, int count,
                         const Sampling& sampling, std::uint64_t seed, const StopToken* stop = nullptr,
                         const GenerationRun& run = {});

} // namespace attnscope::core
