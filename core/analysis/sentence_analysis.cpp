// Sentence-level analyses (sentence_analysis.h).
#include "analysis/sentence_analysis.h"

#include "analysis/attention_grid.h"
#include "analysis/grid_regroup.h"
#include "analysis/token_predictions.h"
#include "model/attention_model.h"
#include "model/intervention.h"
#include "model/run_limits.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double excessKurtosis(const std::vector<double>& v)
{
    std::vector<double> x;
    for (double a : v)
        if (std::isfinite(a))
            x.push_back(a);
    if (x.size() < 4)
        return kNaN;
    double mean = 0;
    for (double a : x)
        mean += a;
    mean /= static_cast<double>(x.size());
    double m2 = 0, m4 = 0;
    for (double a : x) {
        const double d = (a - mean) * (a - mean);
        m2 += d;
        m4 += d * d;
    }
    m2 /= static_cast<double>(x.size());
    m4 /= static_cast<double>(x.size());
    return m2 > 0 ? m4 / (m2 * m2) - 3.0 : kNaN;
}

// Removes attention from queries after `end` to keys [begin, end) in every head, the rest of each row rescaled to its
// former total, and the heads' outputs recomputed from the changed rows.
class SuppressKeys final : public Intervention {
public:
    SuppressKeys(int begin, int end)
        : m_begin(begin)
        , m_end(end)
    {
    }
    void onActivation(Activation, int, const ActivationRows&) override {}
    void onAttention(int, const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride,
                     const ActivationRows& heads) override
    {
        const int q = in.qlen, k = in.klen, dv = in.vDim();
        std::vector<float> p(static_cast<std::size_t>(q) * k);
        for (int h = 0; h < in.heads; ++h) {
            headAttention(in, h, TermSelection{}, p.data(), k, 0.0f);
            const float* V = values + static_cast<std::ptrdiff_t>(in.keyHead(h)) * dv;
            for (int r = 0; r < q; ++r) {
                if (r + heads.firstPosition < m_end) // a query before the sentence's end is left as it is
                    continue;
                float* row = p.data() + static_cast<std::size_t>(r) * k;
                double total = 0, kept = 0;
                for (int j = 0; j < k; ++j) {
                    total += row[j];
                    if (j >= m_begin && j < m_end)
                        row[j] = 0;
                    kept += row[j];
                }
                const float scale = kept > 0 ? static_cast<float>(total / kept) : 0.0f;
                float* out = heads.at(r, h);
                std::fill(out, out + dv, 0.0f);
                for (int j = 0; j < k; ++j) {
                    const float w = row[j] * scale;
                    if (w == 0.0f)
                        continue;
                    const float* v = V + j * valueStride;
                    for (int e = 0; e < dv; ++e)
                        out[e] += w * v[e];
                }
            }
        }
    }

private:
    int m_begin, m_end;
};

// log-softmax of every row of the run's logits.
std::vector<double> logProbabilities(const AttentionModel& model, std::span<const std::int32_t> ids, Intervention* hook,
                                     const StopToken* stop, int& vocab)
{
    KeptLogits see;
    RunOptions o;
    o.memLen = 0;
    o.stop = stop;
    o.intervene = hook;
    auto st = model.newState(o);
    model.forwardSegment(*st, ids, see);
    if (see.logits.empty())
        throw Error(ErrorCode::BadInput, model.info().source + " has no output layer: nothing to compare");
    vocab = see.vocab;
    std::vector<double> out(see.logits.size());
    const int rows = static_cast<int>(ids.size());
    for (int r = 0; r < rows; ++r) {
        const float* z = see.logits.data() + static_cast<std::size_t>(r) * vocab;
        const double top = *std::max_element(z, z + vocab);
        double sum = 0;
        for (int i = 0; i < vocab; ++i)
            sum += std::exp(z[i] - top);
        const double lse = top + std::log(sum);
        for (int i = 0; i < vocab; ++i)
            out[static_cast<std::size_t>(r) * vocab + i] = z[i] - lse;
    }
    return out;
}

} // namespace

ReceiverHeads receiverHeads(const TextCapture& capture, int segment, int proximity, const StopToken* stop,
                            const std::function<void(int, int)>& progress)
{
    ReceiverHeads r;
    r.layers = capture.model.layers;
    r.heads = capture.model.heads;
    const auto sentences = sentenceOfTokens(capture.tokens);
    for (int l = 0; l < r.layers; ++l) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "receiver heads cancelled");
        for (int h = 0; h < r.heads; ++h) {
            const AttentionGrid g = sentenceLevelGrid(attentionGrid(capture, segment, l, {h}), capture.tokens, capture.text, 1.0);
            if (l == 0 && h == 0)
                r.sentences = g.cols;
            // Sentence index of each row / column (the grid may start later than sentence 0: a later segment).
            auto sentenceAt = [&](const std::vector<int>& tokensOf, int i) {
                return sentences[static_cast<std::size_t>(tokensOf[static_cast<std::size_t>(i)])];
            };
            std::vector<double> vertical(static_cast<std::size_t>(g.cols), kNaN);
            for (int c = 0; c < g.cols; ++c) {
                double sum = 0;
                int n = 0;
                for (int row = 0; row < g.rows; ++row)
                    if (sentenceAt(g.rowTokens, row) - sentenceAt(g.colTokens, c) >= proximity && !std::isnan(g.at(row, c))) {
                        sum += g.at(row, c);
                        ++n;
                    }
                if (n > 0)
                    vertical[static_cast<std::size_t>(c)] = sum / n;
            }
            r.kurtosis.push_back(excessKurtosis(vertical));
            r.vertical.insert(r.vertical.end(), vertical.begin(), vertical.end());
        }
        if (progress)
            progress(l + 1, r.layers);
    }
    return r;
}

SentenceSuppression sentenceSuppression(const AttentionModel& model, const std::vector<Token>& tokens,
                                        const StopToken* stop, const std::function<void(int, int)>& progress)
{
    if (!model.info().can.interventions)
        throw Error(ErrorCode::BadInput, "attention suppression runs a decoder (GPT-2 or a Llama-family model); " +
                                             model.info().source + " is not one");
    if (static_cast<int>(tokens.size()) > model.info().maxSegmentLen)
        throw Error(ErrorCode::BadInput, "attention suppression runs the text as one segment: at most " +
                                             std::to_string(model.info().maxSegmentLen) + " tokens, the text has " +
                                             std::to_string(tokens.size()));
    std::vector<std::int32_t> ids = idsOf(tokens);
    SentenceSuppression r;
    r.sentenceOf = sentenceOfTokens(tokens);
    const int T = static_cast<int>(tokens.size());
    r.sentences = T ? r.sentenceOf.back() + 1 : 0;
    // The plain run's log-probabilities (doubles) stay while each suppressed run makes its logits, their copy and its
    // own log-probabilities: six float-sized [tokens, vocabulary] arrays at the peak.
    checkFits(logitsBytes(model.info(), ids.size(), 6),
              "attention suppression over " + std::to_string(ids.size()) + " tokens and a vocabulary of " +
                  std::to_string(model.info().vocabSize),
              "use a shorter text", model.info().source);
    int vocab = 0;
    const auto plain = logProbabilities(model, ids, nullptr, stop, vocab);
    r.effect.assign(static_cast<std::size_t>(r.sentences) * r.sentences, kNaN);
    r.perToken.assign(static_cast<std::size_t>(r.sentences) * T, kNaN);
    for (int i = 0; i < r.sentences; ++i) {
        const int begin = static_cast<int>(std::find(r.sentenceOf.begin(), r.sentenceOf.end(), i) - r.sentenceOf.begin());
        int end = begin;
        while (end < T && r.sentenceOf[static_cast<std::size_t>(end)] == i)
            ++end;
        SuppressKeys hook(begin, end);
        const auto suppressed = logProbabilities(model, ids, &hook, stop, vocab);
        std::vector<double> sum(static_cast<std::size_t>(r.sentences), 0.0);
        std::vector<int> count(static_cast<std::size_t>(r.sentences), 0);
        for (int t = end; t < T; ++t) {
            double kl = 0;
            for (int v = 0; v < vocab; ++v) {
                const double lp = plain[static_cast<std::size_t>(t) * vocab + v];
                kl += std::exp(lp) * (lp - suppressed[static_cast<std::size_t>(t) * vocab + v]);
            }
            r.perToken[static_cast<std::size_t>(i) * T + t] = kl;
            const int j = r.sentenceOf[static_cast<std::size_t>(t)];
            sum[static_cast<std::size_t>(j)] += kl;
            ++count[static_cast<std::size_t>(j)];
        }
        for (int j = i + 1; j < r.sentences; ++j)
            if (count[static_cast<std::size_t>(j)] > 0)
                r.effect[static_cast<std::size_t>(i) * r.sentences + j] = sum[static_cast<std::size_t>(j)] / count[static_cast<std::size_t>(j)];
        if (progress)
            progress(i + 1, r.sentences);
    }
    return r;
}

} // namespace attnscope::core
