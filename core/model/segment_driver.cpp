// The frame of one segment's forward, shared by every family (see segment_driver.h).
#include "model/segment_driver.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "util/error.h"
#include "util/stop_token.h"

namespace attnscope::core {

Visibility causalVisibility(int q, int m, int window)
{
    const int k = m + q;
    Visibility v{std::vector<std::uint8_t>(static_cast<std::size_t>(q) * k, 0), std::vector<VisibleSpan>(static_cast<std::size_t>(q))};
    for (int i = 0; i < q; ++i) {
        const int lo = window > 0 ? std::max(0, m + i - window + 1) : 0;
        v.spans[static_cast<std::size_t>(i)] = {lo, m + i - lo + 1};
        for (int j = 0; j < k; ++j)
            v.mask[static_cast<std::size_t>(i) * k + j] = (j < lo || j > m + i) ? 1 : 0;
    }
    return v;
}

SegmentDriver::SegmentDriver(RunState& state, AttentionObserver& observer, const Checkpoint& weights)
    : m_state(state), m_observer(observer), m_weights(weights), m_wantProbabilities(observer.wantProbabilities()),
      m_wantScores(observer.wantScores())
{
}

void SegmentDriver::checkLength(int tokens, int maxTokens, const std::string& limit)
{
    if (tokens > maxTokens)
        throw Error(ErrorCode::BadInput, "segment of " + std::to_string(tokens) + " tokens exceeds " + limit);
}

void SegmentDriver::checkIds(std::span<const std::int32_t> ids, int vocab)
{
    if (ids.empty())
        throw Error(ErrorCode::BadInput, "a segment must hold at least one token");
    for (std::size_t t = 0; t < ids.size(); ++t)
        if (ids[t] < 0 || ids[t] >= vocab)
            throw Error(ErrorCode::BadInput, "token id " + std::to_string(ids[t]) + " at position " + std::to_string(t) +
                                                 " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

void SegmentDriver::begin(const Shape& shape, SegmentView& view)
{
    m_shape = shape;
    view.segment = m_state.segmentsDone;
    view.firstPosition = m_state.tokensSeen;
    view.qlen = shape.qlen;
    view.mlen = shape.mlen;
    view.klen = shape.klen();
    view.dModel = shape.dModel;
    m_observer.onSegment(view);
}

AttentionCapture SegmentDriver::kept(int heads)
{
    return keptFor(heads, m_shape.qlen, m_shape.klen());
}

AttentionCapture SegmentDriver::keptFor(int heads, int qlen, int klen)
{
    const std::size_t perLayer = static_cast<std::size_t>(heads) * qlen * klen;
    AttentionCapture keep;
    keep.rows = m_observer.rowSink();
    if (m_wantProbabilities) {
        if (!m_probabilities || m_probabilities->size() != perLayer)
            m_probabilities = std::make_unique<LayerBuffer>(perLayer);
        m_entropy.assign(static_cast<std::size_t>(heads) * qlen, 0.0f);
        keep.probabilities = m_probabilities->data();
        keep.entropy = m_entropy.data();
    }
    if (m_wantScores) {
        if (!m_scores || m_scores->size() != perLayer)
            m_scores = std::make_unique<LayerBuffer>(perLayer);
        keep.scores = m_scores->data();
    }
    return keep;
}

void SegmentDriver::checkStop() const
{
    if (m_state.stop && m_state.stop->stopRequested())
        throw Error(ErrorCode::Cancelled, "run cancelled");
}

void SegmentDriver::layerDone(int layer, LayerView& view)
{
    view.layer = layer;
    view.site = layer; // one stream, one self-attention per layer
    view.qlen = m_shape.qlen;
    view.mlen = m_shape.mlen;
    view.klen = m_shape.klen();
    siteDone(view);
}

void SegmentDriver::siteDone(LayerView& view)
{
    view.segment = m_state.segmentsDone;
    view.dModel = m_shape.dModel;
    // Probabilities and scores are softmax attention's: a site of another kind has its implicit map (from inputs).
    const bool softmax = view.inputs.mixer == Mixer::Softmax;
    if (m_probabilities && softmax) {
        view.attnProb = m_probabilities->data();
        view.rowEntropy = m_entropy.data();
    }
    if (m_scores && softmax)
        view.scores = m_scores->data();
    m_weights.throwIfDamaged(); // an observer never sees what a truncated file gave
    throwIfNotFinite(view.hidden, view.qlen, view.layer);
    m_observer.onLayer(view);
}

void SegmentDriver::throwIfNotFinite(const float* hidden, int rows, int layer) const
{
    // Finite but huge weights (1e30 in F32, BF16's maximum) overflow float32 arithmetic into NaN everywhere: said here,
    // once, instead of every view and number after it quietly showing NaN or zero.
    if (!hidden)
        return;
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(m_shape.dModel);
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isfinite(hidden[i]))
            throw Error(ErrorCode::CorruptFile,
                        "layer " + std::to_string(layer + 1) + "'s output holds NaN or infinity (token " +
                            std::to_string(m_state.tokensSeen + static_cast<std::int64_t>(i) / m_shape.dModel + 1) +
                            "): the weights give values float32 arithmetic cannot hold",
                        m_weights.source());
}

void SegmentDriver::end(const std::function<void(SegmentEndView&)>& readOut)
{
    SegmentEndView view;
    view.segment = m_state.segmentsDone;
    view.qlen = m_shape.qlen;
    view.dModel = m_shape.dModel;
    if (m_observer.wantLogits() || m_observer.wantLastLogits()) {
        view.firstLogitRow = m_observer.wantLogits() ? 0 : m_shape.qlen - 1;
        readOut(view);
        // The final norm and the read-out can overflow where no layer did (a huge final norm weight): said here too.
        const auto rows = static_cast<std::size_t>(m_shape.qlen - view.firstLogitRow);
        for (const auto& [values, width, what] : {std::tuple{view.lnF, view.dModel, "final norm's output"},
                                                  std::tuple{view.logits, view.vocab, "logits"}})
            if (values && !std::all_of(values, values + rows * static_cast<std::size_t>(width),
                                       [](float v) { return std::isfinite(v); }))
                throw Error(ErrorCode::CorruptFile,
                            std::string("the ") + what + " holds NaN or infinity: the weights give values float32 "
                                                         "arithmetic cannot hold",
                            m_weights.source());
    }
    m_weights.throwIfDamaged();
    m_observer.onSegmentEnd(view);
    m_state.tokensSeen += m_shape.qlen;
    ++m_state.segmentsDone;
}

} // namespace attnscope::core
