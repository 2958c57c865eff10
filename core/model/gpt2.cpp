// GPT-2 forward pass. Shapes: T tokens, C = n_embd, H heads of size hs = C / H.
#include "model/gpt2.h"

#include "model/kv_cache.h"
#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"

#include <cmath>

namespace attnscope::core {

class GPT2Model::GPT2State final : public RunState {
public:
    std::optional<RunOptions::HeadRef> ablate;
    KvCache cache; // keys and values [rows, C] per layer; only a resumed segment starts with rows in it
    std::unique_ptr<RunState> clone() const override { return std::make_unique<GPT2State>(*this); }
    std::size_t bytes() const override { return cache.bytes(); }
};

GPT2Model::GPT2Model(GPT2Config config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const std::string prefix = detectPrefix(w, GPT2Names::prefix, GPT2Names::wte);
    auto name = [&](const char* pattern, int i = -1) { return tensorName(prefix, pattern, i); };
    const std::int64_t C = c.nEmbd;
    // Matrices stay as stored (get); norms and biases are small and become float32 (getFloat).
    m_wte = w.get(name(GPT2Names::wte), {c.vocabSize, C});
    m_wpe = w.get(name(GPT2Names::wpe), {c.nPositions, C});
    m_lnFW = w.getFloat(name(GPT2Names::lnFW), {C});
    m_lnFB = w.getFloat(name(GPT2Names::lnFB), {C});
    for (int l = 0; l < c.nLayer; ++l) {
        Layer L;
        L.ln1W = w.getFloat(name(GPT2Names::ln1W, l), {C});
        L.ln1B = w.getFloat(name(GPT2Names::ln1B, l), {C});
        L.attnW = w.get(name(GPT2Names::attnW, l), {C, 3 * C});
        L.attnB = w.getFloat(name(GPT2Names::attnB, l), {3 * C});
        L.projW = w.get(name(GPT2Names::projW, l), {C, C});
        L.projB = w.getFloat(name(GPT2Names::projB, l), {C});
        L.ln2W = w.getFloat(name(GPT2Names::ln2W, l), {C});
        L.ln2B = w.getFloat(name(GPT2Names::ln2B, l), {C});
        L.fcW = w.get(name(GPT2Names::fcW, l), {C, c.nInner});
        L.fcB = w.getFloat(name(GPT2Names::fcB, l), {c.nInner});
        L.mlpProjW = w.get(name(GPT2Names::mlpProjW, l), {c.nInner, C});
        L.mlpProjB = w.getFloat(name(GPT2Names::mlpProjB, l), {C});
        m_layers.push_back(L);
    }
    m_info.family = ModelFamily::GPT2;
    m_info.source = std::move(source);
    m_info.weightTypes = w.describeStorage();
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
    // Counted from the shapes: buffers of other types (masks, ids) are neither converted nor refused.
    m_info.parameterCount = w.countElements([](const std::string& n) { return n.find(".attn.bias") == std::string::npos && n.find(".attn.masked_bias") == std::string::npos; });
    m_info.weightBytes = w.storedBytes();
    m_info.can.causal = true;
    m_info.can.nextTokenLoss = true; // absolute positions: canCarryKeys stays false
    m_info.can.interventions = true;
    m_info.layerRules.assign(static_cast<std::size_t>(c.nLayer),
                             LayerRule::of(1.0f / std::sqrt(static_cast<float>(c.nEmbd / c.nHead)), 0.0f, 0, true));
    describeSingleStream(m_info.layers, m_info.can.causal, m_info.heads, m_info.streams, m_info.sites);
}

std::unique_ptr<RunState> GPT2Model::newState(const RunOptions& options) const
{
    if (options.memLen.value_or(0) > 0)
        throw Error(ErrorCode::BadInput,
                    "GPT-2 cannot carry earlier tokens into a segment (memory " + std::to_string(*options.memLen) +
                        "): its learned positions are absolute, so every segment starts at position 0 and holds at most " +
                        std::to_string(m_config.nPositions) + " tokens. Use a memory of 0 (chunks).");
    auto st = std::make_unique<GPT2State>();
    st->stop = options.stop;
    st->ablate = options.ablate;
    st->intervene = options.intervene;
    if (st->ablate && (st->ablate->layer < 0 || st->ablate->layer >= m_config.nLayer || st->ablate->head < 0 ||
                       st->ablate->head >= m_config.nHead))
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(st->ablate->head + 1) + " in layer " +
                                             std::to_string(st->ablate->layer + 1) + " to ablate");
    st->cache = KvCache(m_config.nLayer, m_config.nEmbd);
    return st;
}

std::unique_ptr<RunState> GPT2Model::resumeWithin(const RunState& segmentEnd, int keep) const
{
    const auto& end = dynamic_cast<const GPT2State&>(segmentEnd);
    auto st = std::make_unique<GPT2State>();
    st->stop = end.stop;
    st->ablate = end.ablate;
    st->intervene = end.intervene;
    st->cache = end.cache.resumedAt(keep);
    st->tokensSeen = end.tokensSeen - end.cache.segmentTokens() + keep;
    st->segmentsDone = end.segmentsDone - 1;
    return st;
}

void GPT2Model::embed(std::span<const std::int32_t> ids, int firstPosition, RowMatrix& x) const
{
    const int T = static_cast<int>(ids.size());
    x.resize(T, m_config.nEmbd);
    RowVector position(m_config.nEmbd);
    for (int t = 0; t < T; ++t) {
        weightRow(m_wte, ids[static_cast<std::size_t>(t)], x.row(t).data());
        weightRow(m_wpe, firstPosition + t, position.data());
        x.row(t) += position;
    }
}

void GPT2Model::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<GPT2State&>(baseState);
    const int T = static_cast<int>(ids.size()), C = m_config.nEmbd;
    SegmentDriver::checkIds(ids, m_config.vocabSize);
    const int m = st.cache.begin(0); // positions are absolute: nothing carries over, except into a resumed segment
    SegmentDriver::checkLength(m + T, m_config.nPositions,
                               "the model's " + std::to_string(m_config.nPositions) + " positions (n_positions)");
    SegmentDriver run(st, observer, *m_weights);
    RowMatrix x;
    embed(ids, m, x);
    Frame f{causalVisibility(T, m), {}, st.intervene, m, {}, {}, {}};
    SegmentView sv;
    sv.embedding = x.data();
    sv.mask = f.seen.mask.data();
    run.begin({T, m, C}, sv);
    f.keep = run.kept(m_config.nHead); // buffers of the segment's shape: after begin

    RowMatrix a, h, ff;
    for (int l = f.hooks ? f.hooks->firstLayer() : 0; l < m_config.nLayer; ++l) {
        run.checkStop();
        const auto& L = m_layers[static_cast<std::size_t>(l)];
        if (f.hooks)
            f.hooks->onActivation(Activation::Residual, l, {x.data(), T, C, 1, C, m});
        LayerView lv;
        layerNormRows(x, L.ln1W, L.ln1B, m_config.layerNormEps, a);
        attentionBlock(l, f, st, a, lv);
        x += f.attnOut;
        layerNormRows(x, L.ln2W, L.ln2B, m_config.layerNormEps, a);
        mlpBlock(L, a, ff);
        if (f.hooks)
            f.hooks->onActivation(Activation::MlpOutputs, l, {ff.data(), T, C, 1, C, m});
        x += ff;
        lv.hidden = x.data();
        run.layerDone(l, lv);
    }
    st.cache.finish();
    if (f.hooks)
        f.hooks->onActivation(Activation::Residual, m_config.nLayer, {x.data(), T, C, 1, C, m});
    RowMatrix lnF, logits;
    run.end([&](SegmentEndView& ev) {
        RowMatrix tail;
        readOutRows(rowsFrom(x, ev.firstLogitRow, tail), lnF, logits);
        ev.lnF = lnF.data();
        ev.logits = logits.data();
        ev.vocab = m_config.vocabSize;
    });
}

void GPT2Model::attentionBlock(int l, Frame& f, GPT2State& st, const RowMatrix& a, LayerView& lv) const
{
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int T = static_cast<int>(a.rows()), C = m_config.nEmbd, H = m_config.nHead, hs = C / H, m = f.m;
    multiply(a, L.attnW, f.qkv);
    f.qkv.rowwise() += asVector(L.attnB);
    RowMatrix kNew = f.qkv.middleCols(C, C), vNew = f.qkv.middleCols(2 * C, C); // the hooks may replace them
    if (f.hooks) {
        f.hooks->onActivation(Activation::Queries, l, {f.qkv.data(), T, 3 * C, H, hs, m});
        f.hooks->onActivation(Activation::Keys, l, {kNew.data(), T, C, H, hs, m});
        f.hooks->onActivation(Activation::Values, l, {vNew.data(), T, C, H, hs, m});
    }
    st.cache.append(l, kNew.data(), vNew.data(), T);
    ScoreInputs in = ScoreInputs::ofShape(T, m + T, m, H, H, hs);
    in.queries = RowSource::strided(f.qkv.data(), 3 * C);
    in.keys = RowSource::strided(st.cache.keys(l), C);
    in.spans = f.seen.spans.data();
    f.heads.resize(T, C);
    attendAllHeads(in, st.cache.values(l), C, f.heads.data(), C, f.keep);
    if (f.hooks) {
        f.hooks->onAttention(l, in, st.cache.values(l), C, {f.heads.data(), T, C, H, hs, m});
        f.hooks->onActivation(Activation::HeadOutputs, l, {f.heads.data(), T, C, H, hs, m});
    }
    if (st.ablate && st.ablate->layer == l)
        f.heads.middleCols(static_cast<Eigen::Index>(st.ablate->head) * hs, hs).setZero();
    multiply(f.heads, L.projW, f.attnOut);
    f.attnOut.rowwise() += asVector(L.projB);
    lv.heads = H;
    lv.inputs = in;
    lv.mask = f.seen.mask.data();
    lv.kvHeads = H;
    lv.headDim = hs;
    lv.attnOutput = f.attnOut.data();
    lv.headMix = f.heads.data();
}

void GPT2Model::mlpBlock(const Layer& L, const RowMatrix& a, RowMatrix& out) const
{
    RowMatrix h;
    multiply(a, L.fcW, h);
    h.rowwise() += asVector(L.fcB);
    switch (m_config.activation) {
    case GPT2Config::Activation::GeluNew: geluNewInPlace(h); break;
    case GPT2Config::Activation::Gelu: geluErfInPlace(h); break;
    case GPT2Config::Activation::Relu: h = h.cwiseMax(0.0f); break;
    }
    multiply(h, L.mlpProjW, out);
    out.rowwise() += asVector(L.mlpProjB);
}

void GPT2Model::readOutRows(const RowMatrix& x, RowMatrix& lnF, RowMatrix& logits) const
{
    layerNormRows(x, m_lnFW, m_lnFB, m_config.layerNormEps, lnF);
    multiplyTransposed(lnF, m_wte, logits); // tied embeddings
}

bool GPT2Model::readOut(const float* hidden, int rows, std::vector<float>& out) const
{
    const RowMatrix x = ConstMatrixMap(hidden, rows, m_config.nEmbd);
    RowMatrix lnF, logits;
    readOutRows(x, lnF, logits);
    out.assign(logits.data(), logits.data() + logits.size());
    return true;
}

bool GPT2Model::headParts(int layer, const float* headMixRow, std::vector<float>& out) const
{
    const int H = m_config.nHead, hs = m_config.nEmbd / m_config.nHead;
    RowMatrix parts;
    multiply(headSlices(headMixRow, H, hs), m_layers[static_cast<std::size_t>(layer)].projW, parts); // c_proj, no bias
    out.assign(parts.data(), parts.data() + parts.size());
    return true;
}

bool GPT2Model::logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                               double& constant) const
{
    return unembeddingDirection(m_wte, token, residual, m_lnFW, m_lnFB, m_config.layerNormEps, true, m_config.nEmbd,
                                direction, constant); // tied unembedding
}

} // namespace attnscope::core
