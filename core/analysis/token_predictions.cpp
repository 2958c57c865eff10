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
              "use a shorter text", model.info().source);
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
