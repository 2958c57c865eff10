// The Gated DeltaNet layer of Qwen3.5 as LlamaModel's block (llama.h): a causal convolution with SiLU over q | k | v,
// L2-normed heads, beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias), the decayed delta rule per value head
//   S_t = alpha_t S_{t-1} (erased along khat_t) + beta_t khat_t (v_t - alpha_t S_{t-1}^T khat_t)^T,  o_t = S_t^T q_t,
// the gated RMSNorm (plain w, silu(z)) and out_proj. The rule runs over every cached row from a zero state, so a
// segment sees exactly the rows its map is drawn over; what the grid shows is that map (attention/implicit_maps.h).
#include "model/llama.h"

#include "model/llama_parts.h"
#include "util/stage_timer.h"

#include <cmath>

namespace attnscope::core {

namespace {

float silu(float v) { return v / (1.0f + std::exp(-v)); }
float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

// Each head of `rows` ([n, heads * d]) divided by sqrt(|head|^2 + 1e-6), Hugging Face's l2norm.
void l2NormHeads(RowMatrix& rows, int heads, int d)
{
    for (Eigen::Index i = 0; i < rows.rows(); ++i)
        for (int h = 0; h < heads; ++h) {
            auto head = rows.row(i).segment(static_cast<Eigen::Index>(h) * d, d);
            head /= std::sqrt(head.squaredNorm() + 1e-6f);
        }
}

} // namespace

void LlamaModel::deltaRuleBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& d = c.deltaNet;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int Hk = d.keyHeads, Hv = d.valueHeads, dk = d.keyDim, dv = d.valueDim, K = d.convWidth;
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
    const float* cachedRows = st.cache.values(l);
    const float* taps = L.dConvTaps.floats();
    f.deltaConv.resize(f.q, CD);
    for (int i = 0; i < f.q; ++i)
        for (int ch = 0; ch < CD; ++ch) {
            float sum = 0.0f;
            for (int s = 0; s < K; ++s) {
                const int row = f.m + i - (K - 1) + s; // in the whole run's rows
                if (row < 0)
                    continue;
                sum += taps[static_cast<std::ptrdiff_t>(ch) * K + s] *
                       (row < f.m ? cachedRows[static_cast<std::ptrdiff_t>(row) * valueRow + ch] : mixed(row - f.m, ch));
            }
            f.deltaConv(i, ch) = silu(sum);
        }
    f.qhat = f.deltaConv.leftCols(KW);
    f.khat = f.deltaConv.middleCols(KW, KW);
    l2NormHeads(f.qhat, Hk, dk);
    l2NormHeads(f.khat, Hk, dk);
    f.beta.resize(f.q, Hv);
    f.g.resize(f.q, Hv);
    for (int i = 0; i < f.q; ++i)
        for (int h = 0; h < Hv; ++h) {
            f.beta(i, h) = 1.0f / (1.0f + std::exp(-b(i, h)));
            f.g(i, h) = L.dDecay.floats()[h] * softplus(a(i, h) + L.dDtBias.floats()[h]);
        }
    // The cache: khat | beta | g (the map's keys), and the unconvolved rows | convolved v (the next rows' convolution,
    // the values the rule writes).
    RowMatrix keys(f.q, keyRow), values(f.q, valueRow);
    keys << f.khat, f.beta, f.g;
    values << mixed, f.deltaConv.rightCols(VW);
    st.cache.append(l, keys.data(), values.data(), f.q);
    // The map's queries carry the rule's 1/sqrt(dk).
    RowMatrix queries = f.qhat / std::sqrt(static_cast<float>(dk));
    const float* K_ = st.cache.keys(l);
    const float* V_ = st.cache.values(l);
    f.core.setZero(f.q, VW);
    {
        StageScope timed(Stage::Attention);
#pragma omp parallel for schedule(static) if (static_cast<double>(f.k) * Hv * dk * dv > 1e6)
        for (int h = 0; h < Hv; ++h) {
            const int kh = h / (Hv / Hk);
            Eigen::MatrixXf S = Eigen::MatrixXf::Zero(dk, dv);
            for (int t = 0; t < f.k; ++t) {
                const float* keyRowT = K_ + static_cast<std::ptrdiff_t>(t) * keyRow;
                const Eigen::Map<const Eigen::VectorXf> k(keyRowT + kh * dk, dk);
                const float beta = keyRowT[KW + h], alpha = std::exp(keyRowT[KW + Hv + h]);
                const Eigen::Map<const Eigen::VectorXf> v(V_ + static_cast<std::ptrdiff_t>(t) * valueRow + CD + h * dv, dv);
                S *= alpha;
                const Eigen::VectorXf u = beta * (v - S.transpose() * k);
                S.noalias() += k * u.transpose();
                if (t >= f.m) {
                    const Eigen::Map<const Eigen::VectorXf> q(queries.row(t - f.m).data() + kh * dk, dk);
                    f.core.row(t - f.m).segment(h * dv, dv) = (S.transpose() * q).transpose();
                }
            }
        }
    }
    // The gated RMSNorm per value head: plain w, times silu(z).
    f.normed.resize(f.q, VW);
    const float* w = L.dNorm.floats();
    for (int i = 0; i < f.q; ++i)
        for (int h = 0; h < Hv; ++h) {
            const auto o = f.core.row(i).segment(h * dv, dv);
            const float inv = 1.0f / std::sqrt(o.squaredNorm() / static_cast<float>(dv) + c.rmsNormEps);
            for (int e = 0; e < dv; ++e)
                f.normed(i, h * dv + e) = o(e) * inv * w[e] * silu(z(i, h * dv + e));
        }
    if (st.ablate && st.ablate->layer == l)
        f.normed.middleCols(static_cast<Eigen::Index>(st.ablate->head) * dv, dv).setZero();
    {
        // out_proj's input columns are in the file's head order (a qwen35 GGUF's tiled heads).
        StageScope timed(Stage::Projections);
        const std::vector<int> fileHead = fileValueHeads();
        RowMatrix filed(f.q, VW);
        for (int h = 0; h < Hv; ++h)
            filed.middleCols(static_cast<Eigen::Index>(fileHead[static_cast<std::size_t>(h)]) * dv, dv) =
                f.normed.middleCols(static_cast<Eigen::Index>(h) * dv, dv);
        linear(filed, L.dOut, WeightView{}, out);
    }
    if (c.residualScale != 1.0f)
        out *= c.residualScale;
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, Hv, Hk, dk);
    in.mixer = Mixer::DeltaRule;
    in.queryCols = KW;
    in.keyCols = keyRow;
    f.Q = std::move(queries); // kept for the layer view (the map's queries)
    in.queries = RowSource::strided(f.Q.data(), KW);
    in.keys = RowSource::strided(K_, keyRow);
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
