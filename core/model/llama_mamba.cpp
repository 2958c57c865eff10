// The Mamba-2 layer of Granite 4.0-H as LlamaModel's block (llama.h): in_proj split z | xBC | dt, a causal
// convolution with bias and SiLU over xBC, dt = softplus(dt_raw + dt_bias), A = -exp(A_log), per head h (group
// g = h / (H / G)) the scan
//   S_t = exp(dt_t A) S_{t-1} + dt_t x_t B_t^T,  y_t = S_t C_t + D x_t,
// the gated RMSNorm (the gate before the norm, over all channels or per group) and out_proj. The scan runs over every
// cached row from a zero state, so a segment sees exactly the rows its map is drawn over (attention/implicit_maps.h:
// M[i, j] = C_i . B_j exp(A sum_{t = j+1..i} dt_t) dt_j, the D term beside it).
#include "model/llama.h"

#include "model/llama_parts.h"
#include "util/stage_timer.h"

#include <cmath>

namespace attnscope::core {

namespace {
float silu(float v) { return v / (1.0f + std::exp(-v)); }
float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }
} // namespace

void LlamaModel::stateSpaceBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& s = c.mamba;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int H = s.heads, P = s.headDim, G = s.groups, N = s.state, K = s.convWidth;
    const int I = s.inner(), GN = G * N, CD = s.convChannels();
    const int keyRow = GN + H, valueRow = CD + I; // the cache's rows (llama.cpp's newCache)
    {
        StageScope timed(Stage::Norms);
        familyNorm(x, L.attnNorm, L.attnNormBias, f.a);
    }
    RowMatrix p;
    {
        StageScope timed(Stage::Projections);
        linear(f.a, L.mIn, WeightView{}, p);
    }
    // in_proj's columns: the gate z, then x | B | C before the convolution, then dt.
    const float* cachedRows = st.cache.values(l);
    const float* taps = L.mConvTaps.floats();
    const float* bias = L.mConvBias ? L.mConvBias.floats() : nullptr;
    f.deltaConv.resize(f.q, CD);
    for (int i = 0; i < f.q; ++i)
        for (int ch = 0; ch < CD; ++ch) {
            float sum = bias ? bias[ch] : 0.0f;
            for (int k = 0; k < K; ++k) {
                const int row = f.m + i - (K - 1) + k;
                if (row < 0)
                    continue;
                sum += taps[static_cast<std::ptrdiff_t>(ch) * K + k] *
                       (row < f.m ? cachedRows[static_cast<std::ptrdiff_t>(row) * valueRow + ch] : p(row - f.m, I + ch));
            }
            f.deltaConv(i, ch) = silu(sum);
        }
    f.g.resize(f.q, H); // dt
    for (int i = 0; i < f.q; ++i)
        for (int h = 0; h < H; ++h)
            f.g(i, h) = softplus(p(i, I + CD + h) + L.mDtBias.floats()[h]);
    // The cache: B | dt (the map's keys), and xBC before the convolution | x after it.
    RowMatrix keys(f.q, keyRow), values(f.q, valueRow);
    keys << f.deltaConv.middleCols(I, GN), f.g;
    values << p.middleCols(I, CD), f.deltaConv.leftCols(I);
    st.cache.append(l, keys.data(), values.data(), f.q);
    f.Q = f.deltaConv.rightCols(GN); // C: the map's queries
    const float* K_ = st.cache.keys(l);
    const float* V_ = st.cache.values(l);
    const float* A = L.mDecay.floats();
    f.core.resize(f.q, I);
    {
        StageScope timed(Stage::Attention);
#pragma omp parallel for schedule(static) if (static_cast<double>(f.k) * H * P * N > 1e6)
        for (int h = 0; h < H; ++h) {
            const int g = h / (H / G);
            Eigen::MatrixXf S = Eigen::MatrixXf::Zero(P, N);
            for (int t = 0; t < f.k; ++t) {
                const float* keyRowT = K_ + static_cast<std::ptrdiff_t>(t) * keyRow;
                const Eigen::Map<const Eigen::VectorXf> b(keyRowT + g * N, N);
                const float dt = keyRowT[GN + h];
                const Eigen::Map<const Eigen::VectorXf> xt(V_ + static_cast<std::ptrdiff_t>(t) * valueRow + CD + h * P, P);
                S *= std::exp(dt * A[h]);
                S.noalias() += (dt * xt) * b.transpose();
                if (t >= f.m) {
                    const Eigen::Map<const Eigen::VectorXf> cq(f.Q.row(t - f.m).data() + g * N, N);
                    f.core.row(t - f.m).segment(h * P, P) = (S * cq + L.mSkip.floats()[h] * xt).transpose();
                }
            }
        }
    }
    // The gated RMSNorm: the gate first, then the norm over each of normGroups runs of channels, times w.
    f.normed.resize(f.q, I);
    const float* w = L.mNorm.floats();
    const int width = I / s.normGroups;
    for (int i = 0; i < f.q; ++i) {
        for (int ch = 0; ch < I; ++ch)
            f.normed(i, ch) = f.core(i, ch) * silu(p(i, ch));
        for (int ng = 0; ng < s.normGroups; ++ng) {
            auto run = f.normed.row(i).segment(static_cast<Eigen::Index>(ng) * width, width);
            run *= 1.0f / std::sqrt(run.squaredNorm() / static_cast<float>(width) + c.rmsNormEps);
        }
        f.normed.row(i).array() *= Eigen::Map<const Eigen::ArrayXf>(w, I).transpose();
    }
    if (st.ablate && st.ablate->layer == l)
        f.normed.middleCols(static_cast<Eigen::Index>(st.ablate->head) * P, P).setZero();
    {
        StageScope timed(Stage::Projections);
        linear(f.normed, L.mOut, WeightView{}, out);
    }
    if (c.residualScale != 1.0f)
        out *= c.residualScale;
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, H, G, N);
    in.mixer = Mixer::StateSpace;
    in.queryCols = GN;
    in.keyCols = keyRow;
    in.queries = RowSource::strided(f.Q.data(), GN);
    in.keys = RowSource::strided(K_, keyRow);
    in.spans = f.global.spans.data();
    in.stateDecay = m_info.layerRules[static_cast<std::size_t>(l)].stateDecay.data();
    lv.heads = H;
    lv.kvHeads = G;
    lv.headDim = N;
    lv.inputs = in;
    lv.mask = f.global.mask.data();
    lv.parts = {{"conv_out", CD, f.deltaConv.data()}, {"dt", H, f.g.data()}, {"ssm_out", I, f.core.data(), H}};
}

} // namespace attnscope::core
