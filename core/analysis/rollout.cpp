// attentionRollout: layer by layer, the heads' mean recomputed from the capture, then one product (triangular for causal
// models).
#include "analysis/rollout.h"

#include "attention/attention_scores.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <Eigen/Core>
#include <limits>

namespace attnscope::core {

AttentionGrid attentionRollout(const TextCapture& capture, int segment, const StopToken* stop,
                               const std::function<void(int, int)>& layersDone)
{
    const auto& seg = capture.segment(segment);
    if (seg.mlen > 0)
        throw Error(ErrorCode::BadInput, "attention rollout is for segments without memory: this one sees " +
                                             std::to_string(seg.mlen) + " earlier tokens (Transformer-XL memory or a "
                                             "carried window)");
    using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int T = seg.qlen, L = capture.model.layers, H = capture.model.heads;
    const bool causal = capture.model.can.causal;
    Matrix R = Matrix::Identity(T, T), A(T, T), head(T, T), next(T, T);
    for (int l = 0; l < L; ++l) {
        const ScoreInputs in = capture.inputs(segment, l);
        A.setZero();
        for (int h = 0; h < H; ++h) {
            headAttention(in, h, {}, head.data(), T, 0.0f);
            A += head;
        }
        A *= 0.5f / static_cast<float>(H);
        A.diagonal().array() += 0.5f;
        A.array().colwise() /= A.rowwise().sum().array(); // rows sum to 1 again (they nearly do already)
        // Causal models: both factors are lower triangular, only the lower triangle is multiplied.
        if (causal)
            next.noalias() = A.triangularView<Eigen::Lower>() * R;
        else
            next.noalias() = A * R;
        R.swap(next);
        if (layersDone)
            layersDone(l + 1, L);
        if (stop && stop->stopRequested() && l + 1 < L)
            throw Error(ErrorCode::Cancelled, "rollout cancelled");
    }
    AttentionGrid g;
    g.rows = g.cols = T;
    g.values.resize(static_cast<std::size_t>(T) * T);
    for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
            // Keys a query never sees are blank: later ones (causal), padding (encoders; its own row keeps its diagonal).
            g.values[static_cast<std::size_t>(i) * T + j] = (causal ? j > i : seg.masked(i, j) && i != j)
                                                                 ? std::numeric_limits<float>::quiet_NaN()
                                                                 : R(i, j);
    for (int i = 0; i < T; ++i) {
        g.rowTokens.push_back(static_cast<int>(seg.firstPosition) + i);
        g.colTokens.push_back(static_cast<int>(seg.firstPosition) + i);
    }
    g.highlight.assign(g.values.size(), 0);
    return g;
}

} // namespace attnscope::core
