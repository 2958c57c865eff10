// GPT-2 forward pass. Shapes: T tokens, C = n_embd, H heads of size hs = C / H.
#include "model/gpt2.h"

#include "model/tensor_names.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <cmath>

namespace attnscope::core {

namespace {
class GPT2State final : public RunState {
public:
    const StopToken* stop = nullptr;
};
} // namespace

GPT2Model::GPT2Model(GPT2Config config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const std::string prefix = detectPrefix(w, GPT2Names::prefix, GPT2Names::wte);
    auto name = [&](const char* pattern, int i = -1) { return tensorName(prefix, pattern, i); };
    const std::int64_t C = c.nEmbd;
    m_wte = w.get(name(GPT2Names::wte), {c.vocabSize, C});
    m_wpe = w.get(name(GPT2Names::wpe), {c.nPositions, C});
    m_lnFW = w.get(name(GPT2Names::lnFW), {C});
    m_lnFB = w.get(name(GPT2Names::lnFB), {C});
    for (int l = 0; l < c.nLayer; ++l) {
        Layer L;
        L.ln1W = w.get(name(GPT2Names::ln1W, l), {C});
        L.ln1B = w.get(name(GPT2Names::ln1B, l), {C});
        L.attnW = w.get(name(GPT2Names::attnW, l), {C, 3 * C});
        L.attnB = w.get(name(GPT2Names::attnB, l), {3 * C});
        L.projW = w.get(name(GPT2Names::projW, l), {C, C});
        L.projB = w.get(name(GPT2Names::projB, l), {C});
        L.ln2W = w.get(name(GPT2Names::ln2W, l), {C});
        L.ln2B = w.get(name(GPT2Names::ln2B, l), {C});
        L.fcW = w.get(name(GPT2Names::fcW, l), {C, c.nInner});
        L.fcB = w.get(name(GPT2Names::fcB, l), {c.nInner});
        L.mlpProjW = w.get(name(GPT2Names::mlpProjW, l), {c.nInner, C});
        L.mlpProjB = w.get(name(GPT2Names::mlpProjB, l), {C});
        m_layers.push_back(L);
    }
    m_info.family = ModelFamily::GPT2;
    m_info.source = std::move(source);
    m_info.layers = c.nLayer;
    m_info.heads = c.nHead;
    m_info.kvHeads = c.nHead;
    m_info.dModel = c.nEmbd;
    m_info.dHead = c.nEmbd / c.nHead;
    m_info.vocabSize = c.vocabSize;
    m_info.defaultMemLen = 0;
    m_info.defaultSegmentLen = c.nPositions;
    m_info.maxSegmentLen = c.nPositions;
    m_info.hasRelativeTerms = false;
    for (const auto& n : w.names())
        if (n.find(".attn.bias") == std::string::npos && n.find(".attn.masked_bias") == std::string::npos)
            m_info.parameterCount += w.get(n).numel();
}

std::unique_ptr<RunState> GPT2Model::newState(const RunOptions& options) const
{
    auto st = std::make_unique<GPT2State>();
    st->stop = options.stop;
    return st;
}

void GPT2Model::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<GPT2State&>(baseState);
    const int T = static_cast<int>(ids.size());
    const int C = m_config.nEmbd, H = m_config.nHead, hs = C / H;
    if (T == 0)
        throw Error(ErrorCode::BadInput, "a segment must hold at least one token");
    if (T > m_config.nPositions)
        throw Error(ErrorCode::BadInput, "segment of " + std::to_string(T) + " tokens exceeds the model's " +
                                             std::to_string(m_config.nPositions) + " positions (n_positions)");

    const auto wte = asMatrix(m_wte);
    const auto wpe = asMatrix(m_wpe);
    RowMatrix x(T, C);
    for (int t = 0; t < T; ++t) {
        const int id = ids[static_cast<std::size_t>(t)];
        if (id < 0 || id >= m_config.vocabSize)
            throw Error(ErrorCode::BadInput, "token id " + std::to_string(id) + " at position " + std::to_string(t) +
                                                 " is outside the vocabulary [0, " +
                                                 std::to_string(m_config.vocabSize) + ")");
        x.row(t) = wte.row(id) + wpe.row(t);
    }
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(T) * T, 0);
    for (int i = 0; i < T; ++i)
        for (int j = i + 1; j < T; ++j)
            mask[static_cast<std::size_t>(i) * T + j] = 1;

    SegmentView sv;
    sv.segment = st.segmentsDone;
    sv.firstPosition = st.tokensSeen;
    sv.qlen = T;
    sv.klen = T;
    sv.dModel = C;
    sv.embedding = x.data();
    sv.mask = mask.data();
    observer.onSegment(sv);

    const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const std::size_t perHead = static_cast<std::size_t>(T) * T;
    std::vector<float> probs(static_cast<std::size_t>(H) * perHead);
    RowMatrix a, qkv(T, 3 * C), heads(T, C), attnOut(T, C), h, ff;
    for (int l = 0; l < m_config.nLayer; ++l) {
        if (st.stop && st.stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "run cancelled");
        const auto& L = m_layers[static_cast<std::size_t>(l)];
        layerNormRows(x, L.ln1W, L.ln1B, m_config.layerNormEps, a);
        qkv.noalias() = a * asMatrix(L.attnW);
        qkv.rowwise() += asVector(L.attnB);
#pragma omp parallel for schedule(dynamic) if (static_cast<double>(H) * T * T * hs > 2e5)
        for (int n = 0; n < H; ++n) {
            RowMatrix S(T, T);
            S.noalias() = qkv.middleCols(n * hs, hs) * qkv.middleCols(C + n * hs, hs).transpose();
            S *= scale;
            float* P = probs.data() + static_cast<std::size_t>(n) * perHead;
            for (int i = 0; i < T; ++i)
                maskedSoftmax(S.row(i).data(), mask.data() + static_cast<std::size_t>(i) * T, T,
                              P + static_cast<std::size_t>(i) * T);
            const Eigen::Map<const RowMatrix> Pn(P, T, T);
            heads.middleCols(n * hs, hs).noalias() = Pn * qkv.middleCols(2 * C + n * hs, hs);
        }
        attnOut.noalias() = heads * asMatrix(L.projW);
        attnOut.rowwise() += asVector(L.projB);
        x += attnOut;
        layerNormRows(x, L.ln2W, L.ln2B, m_config.layerNormEps, a);
        h.resize(T, m_config.nInner);
        h.noalias() = a * asMatrix(L.fcW);
        h.rowwise() += asVector(L.fcB);
        switch (m_config.activation) {
        case GPT2Config::Activation::GeluNew: geluNewInPlace(h); break;
        case GPT2Config::Activation::Gelu: geluErfInPlace(h); break;
        case GPT2Config::Activation::Relu: h = h.cwiseMax(0.0f); break;
        }
        ff.resize(T, C);
        ff.noalias() = h * asMatrix(L.mlpProjW);
        ff.rowwise() += asVector(L.mlpProjB);
        x += ff;

        LayerView lv;
        lv.segment = st.segmentsDone;
        lv.layer = l;
        lv.heads = H;
        lv.qlen = T;
        lv.klen = T;
        lv.dModel = C;
        lv.attnProb = probs.data();
        lv.mask = mask.data();
        lv.attnOutput = attnOut.data();
        lv.hidden = x.data();
        observer.onLayer(lv);
    }

    SegmentEndView ev;
    ev.segment = st.segmentsDone;
    ev.qlen = T;
    ev.dModel = C;
    RowMatrix lnF, logits;
    if (observer.wantLogits()) {
        layerNormRows(x, m_lnFW, m_lnFB, m_config.layerNormEps, lnF);
        logits.noalias() = lnF * wte.transpose();
        ev.lnF = lnF.data();
        ev.logits = logits.data();
        ev.vocab = m_config.vocabSize;
    }
    observer.onSegmentEnd(ev);
    st.tokensSeen += T;
    ++st.segmentsDone;
}

} // namespace attnscope::core
