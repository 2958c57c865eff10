// The Gated DeltaNet layer of Qwen3.5 as LlamaModel's block (llama.h): a causal convolution with SiLU over q | k | v,
// L2-normed heads, beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias), the decayed delta rule per value head
//   S_t = alpha_t S_{t-1} (erased along khat_t) + beta_t khat_t (v_t - alpha_t S_{t-1}^T khat_t)^T,  o_t = S_t^T q_t,
// the gated RMSNorm (plain w, silu(z)) and out_proj. The rule runs over every cached row from a zero state, so a
// segment sees exactly the rows its map is drawn over; what the grid shows is that map (attention/implicit_maps.h).
#include "model/llama.h"

#include "model/llama_parts.h"
#include "model/recurrent_parts.h"
#include "util/stage_timer.h"

#include <cmath>

namespace attnscope::core {

namespace {

// Each head of `rows` ([n, heads * d]) divided by sqrt(|head|^2 + 1e-6), Hugging Face's l2norm.
void l2NormHeads(RowMatrix& rows, int heads, int d)
{
    for (Eigen::Index i = 0; i < rows.rows(); ++i)
        for (int h = 0; h < heads; ++h) {
            auto head = rows.row(i).segment(static_cast<Eigen::Index>(h) * d, d);
            head /= std::sqrt(head.squaredNorm() + 1e-6f);
        }
}

// beta = sigmoid(b) and g = -exp(A_log) softplus(a + dt_bias), per row and value head.
void deltaGates(const RowMatrix& b, const RowMatrix& a, const float* decay, const float* dtBias, RowMatrix& beta,
                RowMatrix& g)
{
    beta.resize(b.rows(), b.cols());
    g.resize(b.rows(), b.cols());
    for (Eigen::Index i = 0; i < b.rows(); ++i)
        for (Eigen::Index h = 0; h < b.cols(); ++h) {
            beta(i, h) = 1.0f / (1.0f + std::exp(-b(i, h)));
            g(i, h) = decay[h] * softplus(a(i, h) + dtBias[h]);
        }
}

// The rule per value head over every cached row (keys: khat | beta | g, values: the unconvolved rows | v) from a zero
// state; the outputs of the segment's rows (from m on) into `core` [q, Hv * dv].
void runDeltaRule(const LlamaConfig::DeltaNet& d, const float* keys, const float* values, int k, int m,
                  const RowMatrix& queries, RowMatrix& core)
{
    const int Hk = d.keyHeads, Hv = d.valueHeads, dk = d.keyDim, dv = d.valueDim, KW = d.keyWidth();
    const int keyRow = KW + 2 * Hv, valueRow = d.convChannels() + d.valueWidth(), CD = d.convChannels();
    core.setZero(queries.rows(), d.valueWidth());
    StageScope timed(Stage::Attention);
#pragma omp parallel for schedule(static) if (static_cast<double>(k) * Hv * dk * dv > 1e6)
    for (int h = 0; h < Hv; ++h) {
        const int kh = h / (Hv / Hk);
        Eigen::MatrixXf S = Eigen::MatrixXf::Zero(dk, dv);
        for (int t = 0; t < k; ++t) {
            const float* keyRowT = keys + static_cast<std::ptrdiff_t>(t) * keyRow;
            const Eigen::Map<const Eigen::VectorXf> kt(keyRowT + kh * dk, dk);
            const float beta = keyRowT[KW + h], alpha = std::exp(keyRowT[KW + Hv + h]);
            const Eigen::Map<const Eigen::VectorXf> v(values + static_cast<std::ptrdiff_t>(t) * valueRow + CD + h * dv, dv);
            S *= alpha;
            const Eigen::VectorXf u = beta * (v - S.transpose() * kt);
            S.noalias() += kt * u.transpose();
            if (t >= m) {
                const Eigen::Map<const Eigen::VectorXf> q(queries.row(t - m).data() + kh * dk, dk);
                core.row(t - m).segment(h * dv, dv) = (S.transpose() * q).transpose();
            }
        }
    }
}

// out_proj's input columns in the file's head order (a qwen35 GGUF's tiled heads), from Hugging Face's.
RowMatrix inFileOrder(const RowMatrix& heads, const std::vector<int>& fileHead, int dv)
{
    RowMatrix filed(heads.rows(), heads.cols());
    for (std::size_t h = 0; h < fileHead.size(); ++h)
        filed.middleCols(static_cast<Eigen::Index>(fileHead[h]) * dv, dv) =
            heads.middleCols(static_cast<Eigen::Index>(h) * dv, dv);
    return filed;
}

} // namespace

void LlamaModel::deltaRuleBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& d = c.deltaNet;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int Hk = d.keyHeads, Hv = d.valueHeads, dk = d.keyDim, dv = d.valueDim;
    const int KW = d.keyWidth(), VW = d.valueWidth(), CD = d.convChannels();
    const int keyRow = KW + 2 * Hv, valueRow = CD + VW; // the cache's rows (llama.cpp's newCache)
    {
        StageScope timed(Stage::Norms);
        familyNorm(x, L.attnNorm, L.attnNormBias, f.a);
    }
    RowMatrix mixed, z, b, a;
    {
        StageScope timed(Stage::Projections);
        linear(f.a, L.dQkv, WeightView{}, mixed);
        linear(f.a, L.dZ, WeightView{}, z);
        linear(f.a, L.dB, WeightView{}, b);
        linear(f.a, L.dA, WeightView{}, a);
    }
    // The causal convolution reads the unconvolved rows the cache holds before this segment's.
    convolveWithSilu({L.dConvTaps.floats(), nullptr, d.convWidth, CD}, st.cache.values(l), valueRow, f.m, mixed, 0,
                     f.deltaConv);
    f.qhat = f.deltaConv.leftCols(KW);
    f.khat = f.deltaConv.middleCols(KW, KW);
    l2NormHeads(f.qhat, Hk, dk);
    l2NormHeads(f.khat, Hk, dk);
    deltaGates(b, a, L.dDecay.floats(), L.dDtBias.floats(), f.beta, f.g);
    // The cache: khat | beta | g (the map's keys), and the unconvolved rows | convolved v (the next rows' convolution,
    // the values the rule writes). The map's queries carry the rule's 1/sqrt(dk).
    RowMatrix keys(f.q, keyRow), values(f.q, valueRow);
    keys << f.khat, f.beta, f.g;
    values << mixed, f.deltaConv.rightCols(VW);
    st.cache.append(l, keys.data(), values.data(), f.q);
    f.Q = f.qhat / std::sqrt(static_cast<float>(dk));
    runDeltaRule(d, st.cache.keys(l), st.cache.values(l), f.k, f.m, f.Q, f.core);
    // The gated RMSNorm per value head: plain w, times silu(z).
    f.normed = f.core;
    rmsNormRuns(f.normed, Hv, L.dNorm.floats(), false, c.rmsNormEps);
    f.normed.array() *= z.array() / (1.0f + (-z.array()).exp());
    if (st.ablate && st.ablate->layer == l)
        f.normed.middleCols(static_cast<Eigen::Index>(st.ablate->head) * dv, dv).setZero();
    {
        StageScope timed(Stage::Projections);
        linear(inFileOrder(f.normed, fileValueHeads(), dv), L.dOut, WeightView{}, out);
    }
    if (c.residualScale != 1.0f)
        out *= c.residualScale;
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, Hv, Hk, dk);
    in.mixer = Mixer::DeltaRule;
    in.queryCols = KW;
    in.keyCols = keyRow;
    in.queries = RowSource::strided(f.Q.data(), KW);
    in.keys = RowSource::strided(st.cache.keys(l), keyRow);
    in.spans = f.global.spans.data();
    lv.heads = Hv;
    lv.kvHeads = Hk;
    lv.headDim = dk;
    lv.inputs = in;
    lv.mask = f.global.mask.data();
    lv.parts = {{"conv_out", CD, f.deltaConv.data()}, {"qhat", KW, f.qhat.data(), Hk}, {"khat", KW, f.khat.data(), Hk},
                {"beta", Hv, f.beta.data()},          {"g", Hv, f.g.data()},           {"core_out", VW, f.core.data(), Hv},
                {"norm_out", VW, f.normed.data()}};
}

} // namespace attnscope::core
