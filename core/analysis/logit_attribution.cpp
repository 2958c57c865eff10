// logitAttribution: one rerun of the position's segment keeps that row's embedding, heads' outputs, attention outputs
// and layer outputs; the family splits the attention by head and freezes its read-out into a direction.
#include "analysis/logit_attribution.h"

#include "analysis/token_predictions.h"
#include "model/attention_model.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace attnscope::core {

namespace {
// One row (a position) of everything the split needs, from the segment's run.
class RowObserver final : public AttentionObserver {
public:
    explicit RowObserver(int row) : m_row(row) {}
    bool wantProbabilities() const override { return false; }
    void onSegment(const SegmentView& s) override
    {
        layers.clear();
        if (m_row < s.qlen) // the embedding is overwritten by the layers: copied now
            embedding.assign(s.embedding + static_cast<std::size_t>(m_row) * s.dModel,
                             s.embedding + static_cast<std::size_t>(m_row + 1) * s.dModel);
    }
    void onLayer(const LayerView& l) override
    {
        // A layer that mixes by other means than attention heads (a delta rule) counts as one part, its whole output.
        const bool heads = l.inputs.mixer == Mixer::Softmax;
        if (m_row >= l.qlen || (heads && !l.headMix) || !l.attnOutput)
            throw Error(ErrorCode::BadInput, "this model does not show its heads' outputs (Transformer-XL's adaptive "
                                             "softmax has no single unembedding to read them through): no direct "
                                             "logit attribution");
        auto row = [&](const float* p, int width) {
            return std::vector<float>(p + static_cast<std::size_t>(m_row) * width, p + static_cast<std::size_t>(m_row + 1) * width);
        };
        layers.push_back({heads ? row(l.headMix, l.heads * l.inputs.vDim()) : std::vector<float>{},
                          row(l.attnOutput, l.dModel), row(l.hidden, l.dModel)});
    }
    struct Layer {
        std::vector<float> headMix, attnOutput, hidden;
    };
    std::vector<float> embedding;
    std::vector<Layer> layers; // of the last segment run (the one asked for)

private:
    int m_row;
};

double dot(const std::vector<float>& d, const float* x)
{
    double s = 0;
    for (std::size_t i = 0; i < d.size(); ++i)
        s += static_cast<double>(d[i]) * x[i];
    return s;
}
} // namespace

double LogitAttribution::sum() const
{
    return embedding + std::accumulate(head.begin(), head.end(), 0.0) +
           std::accumulate(attentionBias.begin(), attentionBias.end(), 0.0) + std::accumulate(mlp.begin(), mlp.end(), 0.0) +
           constant;
}

LogitAttribution logitAttribution(const AttentionModel& model, const TextCapture& capture, int position,
                                  std::int32_t token, const StopToken* stop)
{
    const auto& info = model.info();
    const std::string family = familyName(info.family);
    if (!info.can.nextTokenLoss || !info.can.causal)
        throw Error(ErrorCode::BadInput, family + " is read here without a language-model head: no logit attribution");
    const int s = capture.segmentOfToken(position);
    const auto& seg = capture.segment(s);
    const int row = position - static_cast<int>(seg.firstPosition);
    RowObserver obs(row);
    rerunSegment(model, capture, s, obs, stop);
    if (obs.layers.empty() || obs.embedding.empty())
        throw Error(ErrorCode::BadInput, "the model gave no layers for the logit attribution");
    const std::vector<float>& final = obs.layers.back().hidden;

    LogitAttribution a;
    a.layers = static_cast<int>(obs.layers.size());
    a.heads = info.heads;
    a.position = position;
    if (token < 0) {
        // The token that follows, else (the text's end) the model's own first choice.
        if (position + 1 < static_cast<int>(capture.tokens.size())) {
            token = capture.tokens[static_cast<std::size_t>(position) + 1].id;
        } else {
            std::vector<float> logits;
            if (!model.readOut(final.data(), 1, logits) || logits.empty())
                throw Error(ErrorCode::BadInput, "the model gave no logits");
            token = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        }
    }
    a.token = token;
    std::vector<float> direction;
    if (!model.logitDirection(final.data(), token, direction, a.constant))
        throw Error(ErrorCode::BadInput, family + ": no logit attribution for token " + std::to_string(token) +
                                             " (not in the vocabulary, or no plain read-out)");
    a.logit = dot(direction, final.data()) + a.constant;
    const double cap = info.logitSoftCap;
    a.cappedLogit = cap > 0 ? cap * std::tanh(a.logit / cap) : a.logit;
    a.embedding = dot(direction, obs.embedding.data());
    const int C = info.dModel;
    std::vector<float> parts;
    const float* before = obs.embedding.data(); // the residual stream entering each layer
    for (int l = 0; l < a.layers; ++l) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "logit attribution cancelled");
        const auto& L = obs.layers[static_cast<std::size_t>(l)];
        std::vector<float> rest(L.attnOutput); // the attention's output less its heads' parts: its bias
        if (L.headMix.empty()) { // a layer of convolutions or a delta rule: no heads' parts, its whole output
            a.head.insert(a.head.end(), static_cast<std::size_t>(a.heads), 0.0);
        } else if (!model.headParts(l, L.headMix.data(), parts)) {
            throw Error(ErrorCode::BadInput, family + " does not split its attention by head");
        }
        for (int h = 0; h < a.heads && !L.headMix.empty(); ++h) {
            const float* part = parts.data() + static_cast<std::size_t>(h) * C;
            a.head.push_back(dot(direction, part));
            for (int i = 0; i < C; ++i)
                rest[static_cast<std::size_t>(i)] -= part[i];
        }
        a.attentionBias.push_back(dot(direction, rest.data()));
        // The feed-forward block: what the layer added beyond its attention (parallel residuals too).
        std::vector<float> block(static_cast<std::size_t>(C));
        for (int i = 0; i < C; ++i)
            block[static_cast<std::size_t>(i)] = L.hidden[static_cast<std::size_t>(i)] - before[i] - L.attnOutput[static_cast<std::size_t>(i)];
        a.mlp.push_back(dot(direction, block.data()));
        before = L.hidden.data();
    }
    return a;
}

std::string logitAttributionCsv(const LogitAttribution& a)
{
    std::string out = "layer,head,share\n";
    char buf[96];
    auto line = [&](const std::string& layer, const std::string& head, double v) {
        std::snprintf(buf, sizeof buf, "%.9g", v);
        out += layer + "," + head + "," + buf + "\n";
    };
    line("0", "embedding", a.embedding);
    for (int l = 0; l < a.layers; ++l) {
        for (int h = 0; h < a.heads; ++h)
            line(std::to_string(l + 1), std::to_string(h + 1), a.headShare(l, h));
        line(std::to_string(l + 1), "attn_bias", a.attentionBias[static_cast<std::size_t>(l)]);
        line(std::to_string(l + 1), "mlp", a.mlp[static_cast<std::size_t>(l)]);
    }
    line("0", "constant", a.constant);
    line("", "logit", a.logit);
    return out;
}

} // namespace attnscope::core
