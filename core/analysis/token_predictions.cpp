// Token predictions: one forward that keeps the logits, softmax in double.
#include "analysis/token_predictions.h"

#include "model/nn_ops.h"

#include "model/run_limits.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cmath>
#include <numeric>

namespace attnscope::core {

namespace {

using LogitsObserver = KeptLogits;

// Log-probabilities of one row of logits.
std::vector<double> logSoftmax(const float* row, int n)
{
    const double logZ = logSumExp(row, static_cast<std::size_t>(n));
    std::vector<double> out(static_cast<std::size_t>(n));
    for (int j = 0; j < n; ++j)
        out[static_cast<std::size_t>(j)] = static_cast<double>(row[j]) - logZ;
    return out;
}

LogitsObserver runForLogits(const AttentionModel& model, std::span<const std::int32_t> ids, const RunOptions& options)
{
    const auto& can = model.info().can;
    if (!can.maskedTokens && !can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, "this model has no head that predicts tokens (an encoder without its "
                                         "masked-language-model weights)");
    if (ids.empty())
        throw Error(ErrorCode::BadInput, "text tokenizes to nothing");
    if (static_cast<int>(ids.size()) > model.info().maxSegmentLen)
        throw Error(ErrorCode::BadInput, std::to_string(ids.size()) + " tokens do not fit the model's " +
                                             std::to_string(model.info().maxSegmentLen) + " positions");
    checkFits(logitsBytes(model.info(), ids.size()), "the logits of " + std::to_string(ids.size()) +
                                                          " tokens over a vocabulary of " + std::to_string(model.info().vocabSize),
              "use a shorter text");
    LogitsObserver obs;
    model.run({std::vector<std::int32_t>(ids.begin(), ids.end())}, options, obs);
    if (obs.logits.empty())
        throw Error(ErrorCode::BadInput, "the model gave no logits");
    return obs;
}

} // namespace

std::vector<std::vector<TokenPrediction>> topPredictions(const AttentionModel& model, std::span<const std::int32_t> ids,
                                                         const RunOptions& options, std::span<const int> positions, int k)
{
    const auto obs = runForLogits(model, ids, options);
    std::vector<std::vector<TokenPrediction>> out;
    for (const int p : positions) {
        if (p < 0 || p >= static_cast<int>(ids.size()))
            throw Error(ErrorCode::BadInput, "no position " + std::to_string(p + 1) + " among " +
                                                 std::to_string(ids.size()) + " tokens");
        auto top = distributionOf(std::span<const float>(obs.logits.data() + static_cast<std::size_t>(p) * obs.vocab,
                                                         static_cast<std::size_t>(obs.vocab)),
                                  1.0, k)
                       .top;
        out.push_back(std::move(top));
    }
    return out;
}

double maskedTokenLoss(const AttentionModel& model, std::span<const std::int32_t> ids, const RunOptions& options,
                       std::span<const std::int32_t> labels)
{
    if (labels.size() != ids.size())
        throw Error(ErrorCode::BadInput, std::to_string(labels.size()) + " labels for " + std::to_string(ids.size()) +
                                             " tokens");
    const auto obs = runForLogits(model, ids, options);
    double total = 0;
    int count = 0;
    for (std::size_t t = 0; t < labels.size(); ++t) {
        if (labels[t] == -100)
            continue;
        if (labels[t] < 0 || labels[t] >= obs.vocab)
            throw Error(ErrorCode::BadInput, "label " + std::to_string(labels[t]) + " is outside the vocabulary");
        const auto lp = logSoftmax(obs.logits.data() + t * static_cast<std::size_t>(obs.vocab), obs.vocab);
        total -= lp[static_cast<std::size_t>(labels[t])];
        ++count;
    }
    if (count == 0)
        throw Error(ErrorCode::BadInput, "no labelled position (every label is -100)");
    return total / count;
}

std::vector<float> nextTokenLogits(const AttentionModel& model, const TextCapture& capture, int position,
                                   const StopToken* stop)
{
    if (!model.info().can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, std::string(familyName(model.info().family)) +
                                             " models are read here without their output softmax: no next-token "
                                             "prediction");
    if (position + 1 == static_cast<int>(capture.tokens.size()) && !capture.lastLogits.empty())
        return capture.lastLogits; // after the last token: the capture's run computed them
    const int s = capture.segmentOfToken(position);
    const int within = position - capture.segment(s).firstPosition;
    LogitsObserver obs; // keeps the last segment's logits
    // A causal model runs only the token itself, resumed inside its segment from the state the capture kept after
    // it (the keys of the tokens before it are all there): one token, not the whole segment again, per generated token.
    std::unique_ptr<RunState> resumed;
    if (within > 0 && s < static_cast<int>(capture.endStates.size()) && capture.endStates[static_cast<std::size_t>(s)])
        resumed = model.resumeWithin(*capture.endStates[static_cast<std::size_t>(s)], within);
    if (resumed) {
        resumed->stop = stop;
        const std::int32_t id = capture.tokens[static_cast<std::size_t>(position)].id;
        model.forwardSegment(*resumed, std::span<const std::int32_t>(&id, 1), obs);
        if (obs.logits.size() < static_cast<std::size_t>(obs.vocab) || obs.vocab <= 0)
            throw Error(ErrorCode::BadInput, "the model gave no logits");
        return {obs.logits.begin(), obs.logits.begin() + obs.vocab};
    }
    rerunSegment(model, capture, s, obs, stop);
    const auto row = static_cast<std::size_t>(within);
    if (obs.logits.size() < (row + 1) * static_cast<std::size_t>(obs.vocab))
        throw Error(ErrorCode::BadInput, "the model gave no logits");
    return {obs.logits.begin() + static_cast<std::ptrdiff_t>(row * obs.vocab),
            obs.logits.begin() + static_cast<std::ptrdiff_t>((row + 1) * obs.vocab)};
}

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
        scaled.resize(logits.size());
        for (std::size_t j = 0; j < logits.size(); ++j)
            scaled[j] = static_cast<float>(logits[j] / temperature);
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

std::int32_t chooseToken(std::span<const float> allowedLogits, const Sampling& sampling, std::mt19937_64& rng)
{
    if (allowedLogits.empty())
        throw Error(ErrorCode::BadInput, "no logits to choose a token from");
    // Excluded tokens get no probability: their logits become -infinity in a copy.
    std::vector<float> masked;
    std::span<const float> logits = allowedLogits;
    if (!sampling.excluded.empty()) {
        masked.assign(allowedLogits.begin(), allowedLogits.end());
        for (auto id : sampling.excluded)
            if (id >= 0 && static_cast<std::size_t>(id) < masked.size())
                masked[static_cast<std::size_t>(id)] = -std::numeric_limits<float>::infinity();
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
    while (static_cast<int>(out.ids.size()) < count && length < context) {
        const std::span<const float> last(obs.logits.data() + obs.logits.size() - static_cast<std::size_t>(obs.vocab),
                                          static_cast<std::size_t>(obs.vocab));
        const std::int32_t id = chooseToken(last, sampling, rng);
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

bool isMaskToken(const Token& token)
{
    return token.text == "[MASK]" || token.text == "<mask>";
}

std::string maskTokenOf(const Tokenizer& tokenizer)
{
    for (const char* candidate : {"[MASK]", "<mask>"}) {
        const auto tokens = tokenizer.encode(candidate);
        if (tokens.size() == 1 && isMaskToken(tokens.front()))
            return candidate;
    }
    return {};
}

std::vector<MaskedFill> maskedFills(const AttentionModel& model, const TextCapture& capture, int k)
{
    if (!model.info().can.maskedTokens)
        throw Error(ErrorCode::BadInput, "this model has no masked-language-model head to fill masks");
    std::vector<MaskedFill> out;
    for (int s = 0; s < static_cast<int>(capture.segments.size()); ++s) {
        const auto& seg = capture.segment(s);
        const int first = static_cast<int>(seg.firstPosition);
        std::vector<int> positions;
        for (int i = 0; i < seg.qlen; ++i)
            if (isMaskToken(capture.tokens[static_cast<std::size_t>(first + i)]))
                positions.push_back(i);
        if (positions.empty())
            continue;
        LogitsObserver obs; // the segment as the capture ran it (its token types included)
        rerunSegment(model, capture, s, obs);
        for (const int p : positions) {
            const std::span<const float> row(obs.logits.data() + static_cast<std::size_t>(p) * obs.vocab,
                                             static_cast<std::size_t>(obs.vocab));
            out.push_back({first + p, distributionOf(row, 1.0, k).top});
        }
    }
    return out;
}

} // namespace attnscope::core
