// tokenSurprisal: an observer keeps each segment's last-layer rows; read out in blocks and reduced to one log-softmax
// value per row, so no [tokens, vocab] array ever exists.
#include "analysis/surprisal.h"

#include "model/attention_model.h"
#include "model/nn_ops.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {
constexpr int kRowsPerReadOut = 32; // bounds the logits block: 32 x vocabulary floats

class LastLayerSurprisal final : public AttentionObserver {
public:
    LastLayerSurprisal(const AttentionModel& model, const TextCapture& capture, Surprisal& out)
        : m_model(model), m_capture(capture), m_out(out)
    {
    }
    bool wantProbabilities() const override { return false; }
    void onSegment(const SegmentView& s) override { m_first = s.firstPosition; }
    void onLayer(const LayerView& l) override
    {
        if (l.layer != m_model.info().layers - 1)
            return;
        std::vector<float> logits;
        for (int r0 = 0; r0 < l.qlen; r0 += kRowsPerReadOut) {
            const int rows = std::min(kRowsPerReadOut, l.qlen - r0);
            if (!m_model.readOut(l.hidden + static_cast<std::size_t>(r0) * l.dModel, rows, logits))
                throw Error(ErrorCode::BadInput, "this model has no read-out for next-token probabilities");
            const std::size_t V = logits.size() / static_cast<std::size_t>(rows);
            for (int r = 0; r < rows; ++r) {
                const std::int64_t next = m_first + r0 + r + 1; // the token this row predicts
                if (next >= static_cast<std::int64_t>(m_capture.tokens.size()))
                    continue;
                const float* row = logits.data() + static_cast<std::size_t>(r) * V;
                const std::int32_t id = m_capture.tokens[static_cast<std::size_t>(next)].id;
                if (id < 0 || static_cast<std::size_t>(id) >= V)
                    continue;
                const double nats = logSumExp(row, V) - static_cast<double>(row[id]);
                m_out.bits[static_cast<std::size_t>(next)] = nats / std::log(2.0);
            }
        }
    }
    void onSegmentEnd(const SegmentEndView&) override {}

private:
    const AttentionModel& m_model;
    const TextCapture& m_capture;
    Surprisal& m_out;
    std::int64_t m_first = 0;
};
} // namespace

Surprisal tokenSurprisal(const AttentionModel& model, const TextCapture& capture, const StopToken* stop)
{
    const auto& info = model.info();
    if (!info.can.causal || !info.can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, std::string(familyName(info.family)) +
                                             " does not predict next tokens here: no surprisal");
    Surprisal out;
    out.bits.assign(capture.tokens.size(), std::numeric_limits<double>::quiet_NaN());
    if (capture.tokens.size() < 2)
        return out;
    const std::vector<std::int32_t> ids = idsOf(capture.tokens);
    RunOptions options;
    if (capture.memLen > 0)
        options.memLen = capture.memLen;
    options.stop = stop;
    LastLayerSurprisal observer(model, capture, out);
    model.runSplit(ids, capture.segmentLen > 0 ? capture.segmentLen : static_cast<int>(ids.size()), options, observer);
    double total = 0;
    for (double b : out.bits)
        if (!std::isnan(b)) {
            total += b * std::log(2.0);
            ++out.predicted;
        }
    if (out.predicted > 0) {
        out.meanNats = total / out.predicted;
        out.perplexity = std::exp(out.meanNats);
    }
    return out;
}

} // namespace attnscope::core
