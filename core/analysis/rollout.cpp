// attentionRollout: layer by layer, the heads' mean recomputed from the capture, then one product (triangular for causal
// models).
#include "analysis/rollout.h"

#include "attention/attention_scores.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <Eigen/Core>
#include <limits>

namespace attnscope::core {

namespace {
// The self sites over `stream` in model order; Error(BadInput) when another stream's keys reach it.
std::vector<int> rolloutSites(const ModelInfo& info, int stream)
{
    std::vector<int> sites;
    for (int s = 0; s < info.siteCount(); ++s) {
        const AttentionSite& site = info.site(s);
        if (site.queryStream != stream)
            continue;
        if (site.mixer != Mixer::Softmax) // rows of a signed map are no distribution to multiply through
            throw Error(ErrorCode::BadInput, "attention rollout multiplies attention layers; " + site.label() +
                                                 " mixes tokens by a " + mixerRow(site.mixer).name);
        if (!site.sameStream())
            throw Error(ErrorCode::BadInput, "attention rollout follows one stream through its layers: the " +
                                                 info.streams[static_cast<std::size_t>(stream)].name + "'s layers also read the " +
                                                 info.streams[static_cast<std::size_t>(site.keyStream)].name +
                                                 " (" + site.label() + "); roll out the " +
                                                 info.streams[static_cast<std::size_t>(site.keyStream)].name + " instead");
        sites.push_back(s);
    }
    return sites;
}
} // namespace

AttentionGrid attentionRollout(const TextCapture& capture, int segment, const StopToken* stop,
                               const std::function<void(int, int)>& layersDone, int stream)
{
    const auto& info = capture.model;
    if (stream < 0)
        stream = info.segmentStream();
    const auto sites = rolloutSites(info, stream);
    if (sites.empty())
        throw Error(ErrorCode::BadInput, "no layer reads the " + info.streams.at(static_cast<std::size_t>(stream)).name);
    AttentionGrid g;
    placeGrid(capture, segment, sites.front(), g);
    if (g.memoryCols > 0 || g.rows != g.cols)
        throw Error(ErrorCode::BadInput, "attention rollout is for segments without memory: this one sees " +
                                             std::to_string(g.memoryCols) + " earlier tokens (Transformer-XL memory or a "
                                             "carried window)");
    using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int T = g.rows, L = static_cast<int>(sites.size());
    const bool causal = info.site(sites.front()).causal;
    Matrix R = Matrix::Identity(T, T), A(T, T), head(T, T), next(T, T);
    for (int l = 0; l < L; ++l) {
        const ScoreInputs in = capture.inputs(segment, sites[static_cast<std::size_t>(l)]);
        A.setZero();
        for (int h = 0; h < in.heads; ++h) {
            headAttention(in, h, {}, head.data(), T, 0.0f);
            A += head;
        }
        A *= 0.5f / static_cast<float>(in.heads);
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
    const ScoreInputs first = capture.inputs(segment, sites.front());
    g.values.resize(static_cast<std::size_t>(T) * T);
    for (int i = 0; i < T; ++i) {
        const VisibleSpan span = first.spans[i];
        for (int j = 0; j < T; ++j) {
            // Keys a query never sees are blank: later ones (causal), padding (encoders; its own row keeps its diagonal).
            const bool unseen = causal ? j > i : (j < span.lo || j >= span.lo + span.len) && i != j;
            g.values[static_cast<std::size_t>(i) * T + j] = unseen ? std::numeric_limits<float>::quiet_NaN() : R(i, j);
        }
    }
    g.highlight.assign(g.values.size(), 0);
    return g;
}

} // namespace attnscope::core
