// The Mamba-2 layer of Granite 4.0-H as LlamaModel's block (llama.h): in_proj split z | xBC | dt, a causal
// convolution with bias and SiLU over xBC, dt = softplus(dt_raw + dt_bias), A = -exp(A_log), per head h (group
// g = h / (H / G)) the scan
//   S_t = exp(dt_t A) S_{t-1} + dt_t x_t B_t^T,  y_t = S_t C_t + D x_t,
// the gated RMSNorm (the gate before the norm, over all channels or per group) and out_proj. The scan runs over every
// cached row from a zero state, so a segment sees exactly the rows its map is drawn over (attention/implicit_maps.h:
// M[i, j] = C_i . B_j exp(A sum_{t = j+1..i} dt_t) dt_j, the D term beside it).
#include "model/llama.h"

#include "model/llama_parts.h"
#include "model/recurrent_parts.h"
#include "util/stage_timer.h"

#include <cmath>

namespace attnscope::core {

namespace {

// dt = softplus(dt_raw + dt_bias) per row and head, from in_proj's last columns (from `column` on).
RowMatrix stepSizes(const RowMatrix& p, int column, int heads, const float* dtBias)
{
    RowMatrix dt(p.rows(), heads);
    for (Eigen::Index i = 0; i < p.rows(); ++i)
        for (int h = 0; h < heads; ++h)
            dt(i, h) = softplus(p(i, column + h) + dtBias[h]);
    return dt;
}

// The scan per head over every cached row (keys: B | dt, values: the unconvolved rows | x) from a zero state; the
// outputs y + D x of the segment's rows (from m on) into `core` [q, heads * headDim]. C (the queries) per group.
void runScan(const LlamaConfig::Mamba2& s, const float* keys, const float* values, int k, int m, const RowMatrix& C,
             const float* A, const float* D, RowMatrix& core)
{
    const int H = s.heads, P = s.headDim, G = s.groups, N = s.state, GN = G * N, CD = s.convChannels();
    const int keyRow = GN + H, valueRow = CD + s.inner();
    core.resize(C.rows(), s.inner());
    StageScope timed(Stage::Attention);
#pragma omp parallel for schedule(static) if (static_cast<double>(k) * H * P * N > 1e6)
    for (int h = 0; h < H; ++h) {
        const int g = h / (H / G);
        Eigen::MatrixXf S = Eigen::MatrixXf::Zero(P, N);
        for (int t = 0; t < k; ++t) {
            const float* keyRowT = keys + static_cast<std::ptrdiff_t>(t) * keyRow;
            const Eigen::Map<const Eigen::VectorXf> b(keyRowT + g * N, N);
            const float dt = keyRowT[GN + h];
            const Eigen::Map<const Eigen::VectorXf> xt(values + static_cast<std::ptrdiff_t>(t) * valueRow + CD + h * P, P);
            S *= std::exp(dt * A[h]);
            S.noalias() += (dt * xt) * b.transpose();
            if (t >= m) {
                const Eigen::Map<const Eigen::VectorXf> cq(C.row(t - m).data() + g * N, N);
                core.row(t - m).segment(h * P, P) = (S * cq + D[h] * xt).transpose();
            }
        }
    }
}

} // namespace

void LlamaModel::stateSpaceBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& s = c.mamba;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int H = s.heads, P = s.headDim, G = s.groups, N = s.state;
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
    convolveWithSilu({L.mConvTaps.floats(), L.mConvBias ? L.mConvBias.floats() : nullptr, s.convWidth, CD},
                     st.cache.values(l), valueRow, f.m, p, I, f.deltaConv);
    f.g = stepSizes(p, I + CD, H, L.mDtBias.floats());
    // The cache: B | dt (the map's keys), and xBC before the convolution | x after it.
    RowMatrix keys(f.q, keyRow), values(f.q, valueRow);
    keys << f.deltaConv.middleCols(I, GN), f.g;
    values << p.middleCols(I, CD), f.deltaConv.leftCols(I);
    st.cache.append(l, keys.data(), values.data(), f.q);
    f.Q = f.deltaConv.rightCols(GN); // C: the map's queries
    runScan(s, st.cache.keys(l), st.cache.values(l), f.k, f.m, f.Q, L.mDecay.floats(), L.mSkip.floats(), f.core);
    // The gated RMSNorm: the gate first, then the norm over each of normGroups runs of channels, times w.
    const auto gate = p.leftCols(I).array();
    f.normed = (f.core.array() * gate / (1.0f + (-gate).exp())).matrix();
    rmsNormRuns(f.normed, s.normGroups, L.mNorm.floats(), true, c.rmsNormEps);
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
    in.keys = RowSource::strided(st.cache.keys(l), keyRow);
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
