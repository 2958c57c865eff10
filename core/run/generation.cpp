// Choosing tokens from logits and generation through the cache (generation.h).
#include "run/generation.h"

#include "model/nn_ops.h"
#include "util/error.h"
#include "util/message_text.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attnscope::core {

namespace {
// The m highest of s[0..n), highest first, ties by the lower id. A small sorted list filled in one pass for the few a
// view shows (most entries fail one comparison with its last); a partial sort when many are wanted.
std::vector<int> topIndices(const float* s, int n, int m)
{
    auto before = [s](int a, int b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
    std::vector<int> best;
    if (m <= 0)
        return best;
    if (m > 64) {
        best.resize(static_cast<std::size_t>(n));
        std::iota(best.begin(), best.end(), 0);
        std::partial_sort(best.begin(), best.begin() + m, best.end(), before);
        best.resize(static_cast<std::size_t>(m));
        return best;
    }
    best.reserve(static_cast<std::size_t>(m) + 1);
    for (int j = 0; j < n; ++j) {
        if (static_cast<int>(best.size()) == m && !(s[j] > s[best.back()]))
            continue; // a tie with the last kept loses to its lower id
        best.insert(std::upper_bound(best.begin(), best.end(), j, before), j);
        if (static_cast<int>(best.size()) > m)
            best.pop_back();
    }
    return best;
}
} // namespace

Distribution distributionOf(std::span<const float> logits, double temperature, int k, std::int32_t actual)
{
    if (!(temperature > 0))
        throw Error(ErrorCode::BadInput, "the temperature must be above 0");
    const int n = static_cast<int>(logits.size());
    std::vector<float> scaled; // a copy only at a temperature other than 1
    const float* s = logits.data();
    if (temperature != 1.0) {
        // Shifted by the largest before the division, so a tiny temperature sends the others to -inf, never the
        // largest to +inf (inf - inf was NaN: "p": null at 1e-300).
        const float top = *std::max_element(logits.begin(), logits.end());
        scaled.resize(logits.size());
        for (std::size_t j = 0; j < logits.size(); ++j)
            scaled[j] = static_cast<float>((static_cast<double>(logits[j]) - top) / temperature);
        s = scaled.data();
    }
    const double logZ = logSumExp(s, static_cast<std::size_t>(n));
    Distribution d;
    for (const int id : topIndices(s, n, std::clamp(k, 0, n)))
        d.top.push_back({id, std::exp(static_cast<double>(s[id]) - logZ)});
    if (actual >= 0 && actual < n) {
        const float a = s[actual];
        d.actualProbability = std::exp(static_cast<double>(a) - logZ);
        int ahead = 0;
#pragma omp simd reduction(+ : ahead)
        for (int j = 0; j < n; ++j) // ties before it count as ahead only when they come first
            ahead += (s[j] > a) | (s[j] == a && j < actual);
        d.actualRank = ahead;
    }
    return d;
}

void checkSampling(const Sampling& sampling, const std::array<const char*, 3>& names)
{
    if (!(sampling.temperature > 0) || !std::isfinite(sampling.temperature))
        throw Error(ErrorCode::BadInput, std::string(names[0]) + " must be a positive finite number, got " +
                                             formatNumber(sampling.temperature));
    if (sampling.topK < 0)
        throw Error(ErrorCode::BadInput, std::string(names[1]) + " must be 0 (all tokens) or more, got " +
                                             std::to_string(sampling.topK));
    if (!(sampling.topP > 0 && sampling.topP <= 1))
        throw Error(ErrorCode::BadInput, std::string(names[2]) + " must be above 0 and at most 1, got " +
                                             formatNumber(sampling.topP));
}

std::vector<float> processedLogits(std::span<const float> logits, const Sampling& sampling, bool firstToken)
{
    std::vector<float> out(logits.begin(), logits.end());
    for (const auto* ids : {&sampling.excluded, firstToken ? &sampling.excludedFirst : nullptr})
        for (auto id : ids ? *ids : std::vector<std::int32_t>{})
            if (id >= 0 && static_cast<std::size_t>(id) < out.size())
                out[static_cast<std::size_t>(id)] = -std::numeric_limits<float>::infinity();
    return out;
}

std::int32_t chooseToken(std::span<const float> allowedLogits, const Sampling& sampling, std::mt19937_64& rng)
{
    if (allowedLogits.empty())
        throw Error(ErrorCode::BadInput, "no logits to choose a token from");
    // Excluded tokens get no probability: their logits become -infinity in a copy.
    std::vector<float> masked;
    std::span<const float> logits = allowedLogits;
    if (!sampling.excluded.empty()) {
        masked = processedLogits(allowedLogits, sampling, false);
        if (std::all_of(masked.begin(), masked.end(), [](float v) { return std::isinf(v) && v < 0; }))
            throw Error(ErrorCode::BadInput, "every token is excluded: nothing to choose");
        logits = masked;
    }
    if (sampling.greedy)
        return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const int n = static_cast<int>(logits.size());
    const int k = sampling.topK > 0 ? std::min(sampling.topK, n) : n;
    const auto d = distributionOf(logits, sampling.temperature, k);
    // The nucleus: the most probable tokens until their probability reaches topP (at least one).
    double mass = 0;
    std::size_t keep = 0;
    while (keep < d.top.size() && (keep == 0 || mass < sampling.topP)) {
        mass += d.top[keep].probability;
        ++keep;
    }
    std::uniform_real_distribution<double> uniform(0.0, mass);
    double u = uniform(rng);
    for (std::size_t i = 0; i < keep; ++i) {
        u -= d.top[i].probability;
        if (u <= 0)
            return d.top[i].id;
    }
    // Rounding left a sliver: the last token that has any probability (never an excluded one, which has none).
    std::size_t last = keep - 1;
    while (last > 0 && !(d.top[last].probability > 0))
        --last;
    return d.top[last].id;
}

namespace {
// Keeps the logits of every forward and hands everything on to an observer of the caller's (when there is one).
class GenerationObserver final : public AttentionObserver {
public:
    explicit GenerationObserver(AttentionObserver* inner)
        : m_inner(inner)
    {
    }
    bool wantTerms() const override { return m_inner && m_inner->wantTerms(); }
    bool wantLogits() const override { return true; }
    bool wantScores() const override { return m_inner && m_inner->wantScores(); }
    bool wantProbabilities() const override { return m_inner && m_inner->wantProbabilities(); }
    AttentionRowSink* rowSink() override { return m_inner ? m_inner->rowSink() : nullptr; }
    void onSegment(const SegmentView& v) override { forward(&AttentionObserver::onSegment, v); }
    void onLayer(const LayerView& v) override { forward(&AttentionObserver::onLayer, v); }
    void onStream(const StreamView& v) override { forward(&AttentionObserver::onStream, v); }
    void onSegmentEnd(const SegmentEndView& e) override
    {
        forward(&AttentionObserver::onSegmentEnd, e);
        kept.onSegmentEnd(e);
    }
    KeptLogits kept;

private:
    template <typename View>
    void forward(void (AttentionObserver::*call)(const View&), const View& v)
    {
        if (m_inner)
            (m_inner->*call)(v);
    }
    AttentionObserver* m_inner;
};
} // namespace

Generated generateTokens(const AttentionModel& model, std::span<const std::int32_t> prompt, int count,
                         const Sampling& sampling, std::uint64_t seed, const StopToken* stop, const GenerationRun& run)
{
    if (!model.info().can.nextTokenLoss || !model.info().can.causal)
        throw Error(ErrorCode::BadInput, std::string(familyName(model.info().family)) +
                                             " is read here without a next-token head: it cannot generate");
    if (prompt.empty())
        throw Error(ErrorCode::BadInput, "text tokenizes to nothing");
    const int context = model.info().maxSegmentLen;
    if (static_cast<int>(prompt.size()) > context)
        throw Error(ErrorCode::BadInput, "the prompt's " + std::to_string(prompt.size()) + " tokens exceed the model's " +
                                             std::to_string(context) + " positions");
    RunOptions options = run.options;
    options.memLen = 0;
    options.stop = stop;
    auto state = model.newState(options);
    state->stop = stop;
    GenerationObserver watch(run.observer);
    const KeptLogits& obs = watch.kept;
    model.forwardSegment(*state, std::vector<std::int32_t>(prompt.begin(), prompt.end()), watch);
    int length = static_cast<int>(prompt.size());
    std::mt19937_64 rng(seed);
    Generated out;
    Sampling first = sampling; // the first choice also excludes excludedFirst
    first.excluded.insert(first.excluded.end(), sampling.excludedFirst.begin(), sampling.excludedFirst.end());
    while (static_cast<int>(out.ids.size()) < count && length < context) {
        const std::span<const float> last(obs.logits.data() + obs.logits.size() - static_cast<std::size_t>(obs.vocab),
                                          static_cast<std::size_t>(obs.vocab));
        const std::int32_t id = chooseToken(last, out.ids.empty() ? first : sampling, rng);
        out.ids.push_back(id);
        out.probabilities.push_back(distributionOf(last, sampling.temperature, 0, id).actualProbability);
        out.finished = id == run.stopAt;
        if (static_cast<int>(out.ids.size()) == count || out.finished)
            break; // the last token's own logits are not needed: one forward per generated token, as llama.cpp's
        // The segment continues after all its tokens: only the new one runs, over the cached keys.
        auto next = model.resumeWithin(*state, length);
        if (!next)
            throw Error(ErrorCode::BadInput, "this model cannot continue a segment from its cache");
        model.forwardSegment(*next, std::vector<std::int32_t>{id}, watch);
        state = std::move(next);
        ++length;
    }
    return out;
}

} // namespace attnscope::core
