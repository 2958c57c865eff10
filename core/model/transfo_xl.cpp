// Transformer-XL forward pass. Shapes: q = segment length, m = memory rows, k = m + q, H heads of size D.
// Memory keys/values and the projected relative encodings are cached across segments, so each segment only
// projects its own q rows (the reference recomputes the memory's projections every segment).
#include "model/transfo_xl.h"

#include "model/row_window.h"

#include "linalg/matmul.h"
#include "model/run_limits.h"
#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"
#include "util/stage_timer.h"

#include <optional>

#include <algorithm>
#include <cmath>

namespace attnscope::core {

class TransfoXLModel::State final : public RunState {
public:
    int memLen = 0;
    bool sameLength = false;
    int clampLen = -1;
    std::optional<RunOptions::HeadRef> ablate; // a head whose output is left out of the output projection
    std::vector<RowWindow> mems;   // per layer [m, d]: un-normalised layer inputs
    std::vector<RowWindow> kMem;   // per layer [>= m, H*D]: key projections; the memory is the last m rows
    std::vector<RowWindow> vMem;   // per layer [>= m, H*D]
    std::vector<RowMatrix> rTable; // per layer [distances, H*D]: row r = r_net(sinusoid(min(r, clamp)))
    RowMatrix positions;           // [distances, d]: row r = sinusoid(min(r, clamp)), shared by every layer's table
    std::unique_ptr<RunState> clone() const override { return std::make_unique<State>(*this); }
    std::size_t bytes() const override
    {
        std::size_t b = static_cast<std::size_t>(positions.size()) * sizeof(float);
        for (const auto* v : {&mems, &kMem, &vMem})
            for (const auto& m : *v)
                b += m.bytes();
        for (const auto& m : rTable)
            b += static_cast<std::size_t>(m.size()) * sizeof(float);
        return b;
    }
};

namespace {
constexpr int kMaxSegmentLen = 4096;
} // namespace

TransfoXLModel::TransfoXLModel(TransfoXLConfig config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const std::string prefix = detectPrefix(w, TransfoXLNames::prefix, TransfoXLNames::qkv);
    auto name = [&](const char* pattern, int i = -1) { return tensorName(prefix, pattern, i); };
    const std::int64_t d = c.dModel;
    loadAdaptiveInput(prefix);
    const std::string invFreq = name(TransfoXLNames::invFreq);
    m_invFreq.resize(static_cast<std::size_t>(c.dModel / 2));
    if (w.has(invFreq)) {
        const auto f = w.getFloat(invFreq, {d / 2});
        std::copy(f.floats(), f.floats() + f.numel(), m_invFreq.begin());
    } else {
        for (int k = 0; k < c.dModel / 2; ++k)
            m_invFreq[static_cast<std::size_t>(k)] =
                static_cast<float>(1.0 / std::pow(10000.0, static_cast<double>(2 * k) / c.dModel));
    }

    const bool tiedPresent = w.has(name(TransfoXLNames::rwBiasTied));
    for (int l = 0; l < c.nLayer; ++l)
        m_layers.push_back(loadLayer(prefix, l, c.untieR || !tiedPresent));

    m_info.family = ModelFamily::TransfoXL;
    m_info.source = std::move(source);
    m_info.weightTypes = w.describeStorage();
    m_info.layers = c.nLayer;
    m_info.heads = c.nHead;
    m_info.kvHeads = c.nHead;
    m_info.dModel = c.dModel;
    m_info.dHead = c.dHead;
    m_info.vocabSize = c.vocabSize;
    m_info.defaultMemLen = c.memLen;
    m_info.defaultSegmentLen = c.tgtLen;
    m_info.maxSegmentLen = kMaxSegmentLen;
    m_info.hasRelativeTerms = true;
    // Counted from the shapes: buffers of other types (masks, ids) are neither converted nor refused.
    m_info.parameterCount = w.countElements([](const std::string& n) { return n.find("inv_freq") == std::string::npos; });
    m_info.weightBytes = w.storedBytes();
    m_info.can.causal = true;
    m_info.can.carriesMemory = true;
    m_info.can.decomposition = ScoreDecomposition::RelativeTerms;
    loadOutputSoftmax(prefix);
    m_info.can.nextTokenLoss = !m_out.empty(); // only with the checkpoint's adaptive softmax
    m_info.layerRules.assign(static_cast<std::size_t>(c.nLayer),
                             LayerRule::of(1.0f / std::sqrt(static_cast<float>(c.dHead)), 0.0f, 0, true));
    describeSingleStream(m_info.layers, m_info.can.causal, m_info.heads, m_info.streams, m_info.sites);
}

void TransfoXLModel::loadAdaptiveInput(const std::string& prefix)
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    auto name = [&](const char* pattern, int i = -1) { return tensorName(prefix, pattern, i); };
    const std::int64_t d = c.dModel;
    // Adaptive input: with div_val 1 one table covers the whole vocabulary (the reference ignores cutoffs).
    std::vector<int> bounds{0};
    if (c.divVal > 1)
        bounds.insert(bounds.end(), c.cutoffs.begin(), c.cutoffs.end());
    bounds.push_back(c.vocabSize);
    std::int64_t divPow = 1; // div_val ^ cluster: the width stops at 1 long before this could overflow
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        Cluster cl;
        cl.lo = bounds[i];
        cl.hi = bounds[i + 1];
        const int dEmb = static_cast<int>(std::max<std::int64_t>(1, c.dEmbed / divPow));
        divPow = std::min<std::int64_t>(divPow * c.divVal, std::int64_t(1) << 32);
        cl.table = w.get(name(TransfoXLNames::embTable, static_cast<int>(i)), {cl.hi - cl.lo, dEmb});
        const std::string proj = name(TransfoXLNames::embProj, static_cast<int>(i));
        if (w.has(proj))
            cl.proj = w.get(proj, {d, dEmb});
        else if (dEmb != c.dModel)
            throw Error(ErrorCode::MissingTensor,
                        "needed because the cluster's embedding width " + std::to_string(dEmb) +
                            " differs from d_model " + std::to_string(c.dModel),
                        w.source(), proj);
        m_clusters.push_back(cl);
    }

}

TransfoXLModel::Layer TransfoXLModel::loadLayer(const std::string& prefix, int l, bool perLayerBiases) const
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    auto name = [&](const char* pattern, int i = -1) { return tensorName(prefix, pattern, i); };
    const std::int64_t d = c.dModel, HD = static_cast<std::int64_t>(c.nHead) * c.dHead;
    const Shape biasShape{c.nHead, c.dHead};
    Layer L;
    L.qkv = w.get(name(TransfoXLNames::qkv, l), {3 * HD, d});
    L.rNet = w.get(name(TransfoXLNames::rNet, l), {HD, d});
    L.oNet = w.get(name(TransfoXLNames::oNet, l), {d, HD});
    L.lnAttnW = w.getFloat(name(TransfoXLNames::lnAttnW, l), {d});
    L.lnAttnB = w.getFloat(name(TransfoXLNames::lnAttnB, l), {d});
    L.ff1W = w.get(name(TransfoXLNames::ff1W, l), {c.dInner, d});
    L.ff1B = w.getFloat(name(TransfoXLNames::ff1B, l), {c.dInner});
    L.ff2W = w.get(name(TransfoXLNames::ff2W, l), {d, c.dInner});
    L.ff2B = w.getFloat(name(TransfoXLNames::ff2B, l), {d});
    L.lnFfW = w.getFloat(name(TransfoXLNames::lnFfW, l), {d});
    L.lnFfB = w.getFloat(name(TransfoXLNames::lnFfB, l), {d});
    L.rwBias = w.getFloat(perLayerBiases ? name(TransfoXLNames::rwBiasLayer, l) : name(TransfoXLNames::rwBiasTied), biasShape);
    L.rrBias = w.getFloat(perLayerBiases ? name(TransfoXLNames::rrBiasLayer, l) : name(TransfoXLNames::rrBiasTied), biasShape);
    return L;
}

void TransfoXLModel::loadOutputSoftmax(const std::string& prefix)
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    if (!w.has(tensorName("", TransfoXLNames::outBias, 0)))
        return; // an attention-only checkpoint (the reference cases, the built-in model)
    std::vector<int> bounds{0};
    bounds.insert(bounds.end(), c.cutoffs.begin(), c.cutoffs.end());
    bounds.push_back(c.vocabSize);
    const int clusters = static_cast<int>(bounds.size()) - 2;
    std::int64_t divPow = 1;
    for (int i = 0; i + 1 < static_cast<int>(bounds.size()); ++i) {
        OutCluster o;
        o.lo = bounds[static_cast<std::size_t>(i)];
        o.hi = bounds[static_cast<std::size_t>(i) + 1];
        const int table = c.divVal == 1 ? 0 : i; // div_val 1: one table, sliced by the cutoffs
        const std::int64_t dEmb = c.divVal == 1 ? c.dEmbed : std::max<std::int64_t>(1, c.dEmbed / divPow);
        divPow = std::min<std::int64_t>(divPow * c.divVal, std::int64_t(1) << 32);
        const std::int64_t rows = c.divVal == 1 ? c.vocabSize : o.hi - o.lo;
        std::string weight = tensorName("", TransfoXLNames::outWeight, table);
        if (!w.has(weight))
            weight = tensorName(prefix, TransfoXLNames::embTable, table); // tied to the input's table
        WeightView wv = w.get(weight, {rows, dEmb});
        WeightView bv = w.getFloat(tensorName("", TransfoXLNames::outBias, table), {rows});
        if (c.divVal == 1) { // the cluster's rows of the one table
            wv.bytes += static_cast<std::size_t>(o.lo) * wv.rowBytes();
            wv.shape[0] = o.hi - o.lo;
            bv = WeightView::ofFloats(bv.floats() + o.lo, {o.hi - o.lo});
        }
        o.weight = wv;
        o.bias = bv;
        std::string proj = tensorName("", TransfoXLNames::outProj, i);
        if (!w.has(proj)) // tied to the input's projection (tie_projs)
            proj = tensorName(prefix, TransfoXLNames::embProj, c.divVal == 1 ? 0 : i);
        if (w.has(proj))
            o.proj = w.get(proj, {c.dModel, dEmb});
        else if (dEmb != c.dModel)
            throw Error(ErrorCode::MissingTensor,
                        "needed by the output softmax: the cluster's width " + std::to_string(dEmb) +
                            " differs from d_model " + std::to_string(c.dModel),
                        w.source(), tensorName("", TransfoXLNames::outProj, i));
        m_out.push_back(o);
    }
    if (clusters > 0) {
        const std::int64_t dEmb0 = c.dEmbed;
        m_clusterWeight = w.get(tensorName("", TransfoXLNames::clusterWeight), {clusters, dEmb0});
        m_clusterBias = w.getFloat(tensorName("", TransfoXLNames::clusterBias), {clusters});
    }
}

void TransfoXLModel::logProbabilities(const RowMatrix& x, RowMatrix& out) const
{
    const auto M = x.rows();
    const int clusters = static_cast<int>(m_out.size()) - 1;
    out.resize(M, m_config.vocabSize);
    auto project = [&](const OutCluster& o, RowMatrix& h) -> const RowMatrix& {
        if (!o.proj)
            return x;
        multiply(x, o.proj, h); // hidden · proj: [M, d_emb]
        return h;
    };
    auto logSoftmaxRows = [](RowMatrix& m) {
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            m.row(r).array() -= static_cast<float>(logSumExp(m.row(r).data(), static_cast<std::size_t>(m.cols())));
    };
    auto addBias = [](RowMatrix& m, const WeightView& b, Eigen::Index col0) {
        for (Eigen::Index r = 0; r < m.rows(); ++r)
            for (Eigen::Index c = 0; c < b.numel(); ++c)
                m(r, col0 + c) += b.floats()[c];
    };
    // Head: the shortlist's words, then one entry per tail cluster.
    RowMatrix h, head, part;
    const RowMatrix& h0 = project(m_out[0], h);
    const int shortlist = m_out[0].hi - m_out[0].lo;
    head.resize(M, shortlist + clusters);
    multiplyTransposed(h0, m_out[0].weight, part);
    addBias(part, m_out[0].bias, 0);
    head.leftCols(shortlist) = part;
    if (clusters > 0) {
        multiplyTransposed(h0, m_clusterWeight, part);
        addBias(part, m_clusterBias, 0);
        head.rightCols(clusters) = part;
    }
    logSoftmaxRows(head);
    out.leftCols(shortlist) = head.leftCols(shortlist);
    for (int i = 1; i <= clusters; ++i) {
        const OutCluster& o = m_out[static_cast<std::size_t>(i)];
        RowMatrix hi;
        const RowMatrix& hp = project(o, hi);
        multiplyTransposed(hp, o.weight, part);
        addBias(part, o.bias, 0);
        logSoftmaxRows(part);
        // Cluster i's share of the head is its column counted from the end (the original's head_logprob[:, -i]).
        const Eigen::Index col = shortlist + clusters - i;
        for (Eigen::Index r = 0; r < M; ++r)
            out.row(r).segment(o.lo, o.hi - o.lo) = part.row(r).array() + head(r, col);
    }
}

bool TransfoXLModel::readOut(const float* hidden, int rows, std::vector<float>& logits) const
{
    if (m_out.empty())
        return false;
    const RowMatrix x = ConstMatrixMap(hidden, rows, m_config.dModel);
    RowMatrix lp;
    logProbabilities(x, lp);
    logits.assign(lp.data(), lp.data() + lp.size());
    return true;
}

std::unique_ptr<RunState> TransfoXLModel::newState(const RunOptions& options) const
{
    refuseIntervention(options, m_info);
    auto st = std::make_unique<State>();
    st->ablate = options.ablate;
    if (st->ablate && (st->ablate->layer < 0 || st->ablate->layer >= m_config.nLayer || st->ablate->head < 0 ||
                       st->ablate->head >= m_config.nHead))
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(st->ablate->head + 1) + " in layer " +
                                             std::to_string(st->ablate->layer + 1) + " to ablate");
    st->memLen = options.memLen.value_or(m_config.memLen);
    st->sameLength = options.sameLength.value_or(m_config.sameLength);
    st->clampLen = options.clampLen.value_or(m_config.clampLen);
    st->stop = options.stop;
    checkedMemoryLength(st->memLen, "", "");
    if (st->memLen < 0)
        throw Error(ErrorCode::BadInput, "memory length must be 0 or more, got " + std::to_string(st->memLen));
    const auto n = static_cast<std::size_t>(m_config.nLayer);
    const Eigen::Index HD = static_cast<Eigen::Index>(m_config.nHead) * m_config.dHead;
    st->mems.assign(n, RowWindow(m_config.dModel));
    st->kMem.assign(n, RowWindow(HD));
    st->vMem.assign(n, RowWindow(HD));
    st->rTable.assign(n, RowMatrix(0, HD));
    return st;
}

RowMatrix TransfoXLModel::embed(std::span<const std::int32_t> ids) const
{
    RowMatrix out(static_cast<Eigen::Index>(ids.size()), m_config.dModel);
    const float scale = std::sqrt(static_cast<float>(m_config.dModel));
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const int id = ids[t];
        for (const auto& cl : m_clusters) {
            if (id < cl.lo || id >= cl.hi)
                continue;
            auto row = out.row(static_cast<Eigen::Index>(t));
            if (cl.proj) {
                RowMatrix small(1, cl.table.cols()), projected;
                weightRow(cl.table, id - cl.lo, small.data());
                multiplyTransposed(small, cl.proj, projected);
                row = projected;
            } else {
                weightRow(cl.table, id - cl.lo, row.data());
            }
            row *= scale;
            break;
        }
    }
    return out;
}

void TransfoXLModel::sinusoid(int distance, float* out) const
{
    const int half = m_config.dModel / 2;
    const float r = static_cast<float>(distance);
    for (int k = 0; k < half; ++k) {
        const float arg = r * m_invFreq[static_cast<std::size_t>(k)]; // float32 product, as the reference
        out[k] = static_cast<float>(std::sin(static_cast<double>(arg)));
        out[k + half] = static_cast<float>(std::cos(static_cast<double>(arg)));
    }
}

const RowMatrix& TransfoXLModel::positionTable(State& st, int rows) const
{
    const int have = static_cast<int>(st.positions.rows());
    if (have < rows) {
        st.positions.conservativeResize(rows, m_config.dModel);
        for (int r = have; r < rows; ++r)
            sinusoid(st.clampLen > 0 ? std::min(r, st.clampLen) : r, st.positions.row(r).data());
    }
    return st.positions;
}

const RowMatrix& TransfoXLModel::relativeTable(State& st, int layer, int maxDistance, int segmentLen) const
{
    RowMatrix& table = st.rTable[static_cast<std::size_t>(layer)];
    if (table.rows() > maxDistance)
        return table;
    // Grow to cover a full memory plus a segment of this length, so later segments of the same length reuse it: a
    // corpus scan computes it once (it grew twice before, 4% of a 3,000-token scan).
    const int rows = std::max(maxDistance + 1, st.memLen + segmentLen);
    positionTable(st, rows); // the first layer to grow computes the encodings for all of them
    const WeightView& rNet = m_layers[static_cast<std::size_t>(layer)].rNet;
    table.resize(rows, rNet.rows());
    matmulTransposed(st.positions.data(), st.positions.cols(), rows, rNet, table.data(), table.cols());
    return table;
}

ScoreInputs TransfoXLModel::attention(State& st, int l, const RowMatrix& x, int mlen, const std::vector<VisibleSpan>& spans,
                                      const AttentionCapture& keep, LayerBuffers& buf) const
{
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int H = m_config.nHead, D = m_config.dHead, HD = H * D;
    const int q = static_cast<int>(x.rows()), k = mlen + q;

    RowMatrix normed;
    if (m_config.preLnorm) {
        StageScope timed(Stage::Norms);
        layerNormRows(x, L.lnAttnW, L.lnAttnB, m_config.layerNormEps, normed);
    }
    const RowMatrix& xin = m_config.preLnorm ? normed : x;

    {
        StageScope timed(Stage::Projections);
        multiplyTransposed(xin, L.qkv, buf.qkv);
    }
    {
        StageScope timed(Stage::Copies); // keys and values: the memory's, then this segment's
        st.kMem[static_cast<std::size_t>(l)].append(buf.qkv.middleCols(HD, HD), mlen);
        st.vMem[static_cast<std::size_t>(l)].append(buf.qkv.middleCols(2 * HD, HD), mlen);
    }
    const RowMatrix& R = [&]() -> const RowMatrix& {
        StageScope timed(Stage::Projections); // the position projection, once per layer and memory length
        return relativeTable(st, l, k - 1, q);
    }();

    ScoreInputs in = ScoreInputs::ofShape(q, k, mlen, H, H, D);
    in.queries = RowSource::strided(buf.qkv.data(), 3 * HD);
    in.keys = RowSource::strided(st.kMem[static_cast<std::size_t>(l)].data(), HD);
    in.relative = RowSource::strided(R.data(), HD);
    in.u = L.rwBias.floats();
    in.v = L.rrBias.floats();
    in.spans = spans.data();
    RowMatrix heads(q, HD); // concatenated per-head outputs
    attendAllHeads(in, st.vMem[static_cast<std::size_t>(l)].data(), HD, heads.data(), HD, keep);

    if (st.ablate && st.ablate->layer == l) // ablation: the head's output never reaches the residual stream
        heads.middleCols(static_cast<Eigen::Index>(st.ablate->head) * D, D).setZero();
    RowMatrix sum = x;
    {
        StageScope timed(Stage::Projections);
        multiplyTransposed(heads, L.oNet, sum, true);
    }
    StageScope timed(Stage::Norms);
    if (m_config.preLnorm)
        buf.attnOut = std::move(sum);
    else
        layerNormRows(sum, L.lnAttnW, L.lnAttnB, m_config.layerNormEps, buf.attnOut);
    return in;
}

void TransfoXLModel::feedForward(int l, const RowMatrix& y, RowMatrix& out) const
{
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    RowMatrix normed;
    if (m_config.preLnorm) {
        StageScope timed(Stage::Norms);
        layerNormRows(y, L.lnFfW, L.lnFfB, m_config.layerNormEps, normed);
    }
    const RowMatrix& in = m_config.preLnorm ? normed : y;
    RowMatrix sum = y;
    {
        StageScope timed(Stage::FeedForward);
        RowMatrix h;
        multiplyTransposed(in, L.ff1W, h, false, {L.ff1B.floats(), true}); // ReLU(x W1ᵀ + b1)
        multiplyTransposed(h, L.ff2W, sum, true, {L.ff2B.floats(), false}); // y + h W2ᵀ + b2
    }
    StageScope timed(Stage::Norms);
    if (m_config.preLnorm)
        out = std::move(sum);
    else
        layerNormRows(sum, L.lnFfW, L.lnFfB, m_config.layerNormEps, out);
}

std::vector<std::uint8_t> TransfoXLModel::segmentMask(const State& st, int q, int mlen) const
{
    // [q, k]: no future keys; with same_length every query sees the same number of keys.
    const int k = mlen + q;
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(q) * k, 0);
    const int excess = k - st.memLen;
    const int shift = excess > 0 ? q - excess : q;
    for (int i = 0; i < q; ++i)
        for (int j = 0; j < k; ++j)
            mask[static_cast<std::size_t>(i) * k + j] = (j > i + mlen || (st.sameLength && j <= i - shift)) ? 1 : 0;
    return mask;
}

void TransfoXLModel::remember(State& st, int l, const RowMatrix& layerInput) const
{
    // The next segment's memory: the newest memLen rows (keys and values already hold this segment's).
    StageScope timed(Stage::Copies);
    const auto li = static_cast<std::size_t>(l);
    st.kMem[li].keepLast(st.memLen);
    st.vMem[li].keepLast(st.memLen);
    st.mems[li].append(layerInput.bottomRows(std::min<Eigen::Index>(layerInput.rows(), st.memLen)), st.memLen);
    st.mems[li].keepLast(st.memLen);
}

void TransfoXLModel::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids,
                                    AttentionObserver& observer) const
{
    auto& st = static_cast<State&>(baseState);
    const int q = static_cast<int>(ids.size());
    SegmentDriver::checkIds(ids, m_config.vocabSize);
    SegmentDriver::checkLength(q, kMaxSegmentLen, "the limit of " + std::to_string(kMaxSegmentLen));
    SegmentDriver run(st, observer, *m_weights);
    const int mlen = static_cast<int>(st.mems[0].rows());
    const int k = mlen + q;
    const int d = m_config.dModel;

    {
        // The memory windows' steady room at once (as RowWindow::append would grow them over the first segments).
        StageScope timed(Stage::Copies);
        const Eigen::Index room = st.memLen + q + std::min(3 * q, st.memLen);
        for (auto* windows : {&st.mems, &st.kMem, &st.vMem})
            for (auto& w : *windows)
                w.reserve(room);
    }
    std::optional<StageScope> embedding(std::in_place, Stage::Embedding);
    const std::vector<std::uint8_t> mask = segmentMask(st, q, mlen);
    RowMatrix x = embed(ids);
    // Row p: distance k-1-p, as the reference lays it out; copied from the state's table (computed once per state,
    // not per segment: a sine and a cosine per element were 2% of a corpus scan).
    const RowMatrix& positions = positionTable(st, k);
    RowMatrix posEmb(k, d);
    for (int p = 0; p < k; ++p)
        posEmb.row(p) = positions.row(k - 1 - p);
    SegmentView sv;
    sv.embedding = x.data();
    sv.posEmb = posEmb.data();
    sv.mask = mask.data();
    run.begin({q, mlen, d}, sv);

    const bool wantTerms = run.wantTerms();
    const auto spans = spansOfMask(mask.data(), q, k);
    const std::size_t perLayer = static_cast<std::size_t>(m_config.nHead) * q * k;
    std::vector<float> terms[4];
    AttentionCapture keep = run.kept(m_config.nHead);
    if (wantTerms)
        for (int t = 0; t < 4; ++t) {
            terms[t].resize(perLayer);
            keep.terms[t] = terms[t].data();
        }
    LayerBuffers buf;
    RowMatrix hidden;
    embedding.reset();
    for (int l = 0; l < m_config.nLayer; ++l) {
        run.checkStop();
        const auto li = static_cast<std::size_t>(l);
        const ScoreInputs in = attention(st, l, x, mlen, spans, keep, buf);
        feedForward(l, buf.attnOut, hidden);
        LayerView lv;
        lv.heads = m_config.nHead;
        lv.inputs = in;
        if (wantTerms)
            for (int t = 0; t < 4; ++t)
                lv.terms[t] = terms[t].data();
        lv.mask = mask.data();
        lv.kvHeads = m_config.nHead;
        lv.headDim = m_config.dHead;
        lv.memsIn = mlen > 0 ? st.mems[li].data() : nullptr;
        lv.attnOutput = buf.attnOut.data();
        lv.hidden = hidden.data();
        run.layerDone(l, lv);
        remember(st, l, x);
        x = std::move(hidden);
        hidden = RowMatrix();
    }
    RowMatrix logProbs;
    run.end([&](SegmentEndView& ev) {
        if (m_out.empty())
            return;
        RowMatrix tail; // the adaptive softmax's log-probabilities stand for logits
        logProbabilities(rowsFrom(x, ev.firstLogitRow, tail), logProbs);
        ev.logits = logProbs.data();
        ev.vocab = m_config.vocabSize;
    });
}

} // namespace attnscope::core
