// Head ablation: a logits observer that sums the next-token loss, run once intact and once per zeroed head.
#include "analysis/head_ablation.h"

#include "model/nn_ops.h"

#include "util/error.h"
#include "util/stop_token.h"

#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {
class LossObserver final : public AttentionObserver {
public:
    explicit LossObserver(std::span<const std::int32_t> ids)
        : m_ids(ids)
    {
    }
    bool wantLogits() const override { return true; }
    bool wantProbabilities() const override { return false; }
    void onLayer(const LayerView&) override {}
    void onSegmentEnd(const SegmentEndView& e) override
    {
        if (!e.logits)
            throw Error(ErrorCode::BadInput, "this model has no language-model head: head ablation needs one");
        for (int t = 0; t < e.qlen; ++t) {
            const std::size_t next = m_position + static_cast<std::size_t>(t) + 1;
            if (next >= m_ids.size())
                continue;
            const float* row = e.logits + static_cast<std::size_t>(t) * e.vocab;
            loss += logSumExp(row, static_cast<std::size_t>(e.vocab)) - row[m_ids[next]];
            ++predictions;
        }
        m_position += static_cast<std::size_t>(e.qlen);
    }
    double loss = 0;
    int predictions = 0;

private:
    std::span<const std::int32_t> m_ids;
    std::size_t m_position = 0;
};
} // namespace

double nextTokenLoss(const AttentionModel& model, std::span<const std::int32_t> ids, int segmentLen,
                     std::optional<RunOptions::HeadRef> ablate, const StopToken* stop)
{
    if (ids.size() < 2)
        throw Error(ErrorCode::BadInput, "the next-token loss needs a text of at least two tokens");
    RunOptions ro;
    ro.memLen = 0;
    ro.ablate = ablate;
    ro.stop = stop;
    LossObserver obs(ids);
    model.runSplit(ids, segmentLen, ro, obs);
    return obs.loss / obs.predictions;
}

AblationResult headAblation(const AttentionModel& model, std::span<const std::int32_t> ids, int segmentLen,
                            const StopToken* stop, const std::function<void(int, int)>& progress)
{
    const auto& info = model.info();
    if (!info.can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, "head ablation measures the next-token loss, and " +
                                             std::string(familyName(info.family)) +
                                             " models are read here without their output softmax: it needs a model that "
                                             "predicts the next token (a decoder with its language-model head, or "
                                             "Transformer-XL with its adaptive softmax)");
    AblationResult r;
    r.layers = info.layers;
    r.heads = info.heads;
    r.loss.assign(static_cast<std::size_t>(r.layers) * r.heads, std::numeric_limits<double>::quiet_NaN());
    r.predictions = static_cast<int>(ids.size()) - 1;
    const int total = r.layers * r.heads + 1;
    r.baseLoss = nextTokenLoss(model, ids, segmentLen, std::nullopt, stop);
    if (progress)
        progress(1, total);
    try {
        for (int l = 0; l < r.layers; ++l)
            for (int h = 0; h < r.heads && info.site(l).mixer == Mixer::Softmax; ++h) { // other kinds stay NaN
                r.loss[static_cast<std::size_t>(l) * r.heads + h] = nextTokenLoss(model, ids, segmentLen, RunOptions::HeadRef{l, h}, stop);
                if (progress)
                    progress(2 + l * r.heads + h, total);
            }
    } catch (const Error& e) {
        if (e.code() != ErrorCode::Cancelled)
            throw;
        r.partial = true;
    }
    return r;
}

} // namespace attnscope::core
