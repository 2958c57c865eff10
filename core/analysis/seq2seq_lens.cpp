// encoderRollout and decoderLogitLens.
#include "analysis/seq2seq_lens.h"

#include "analysis/token_predictions.h"

#include <Eigen/Core>

namespace attnscope::core {

std::vector<float> encoderRollout(const ModelInfo& info, const Translation& t)
{
    const int S = static_cast<int>(t.source.size());
    using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Matrix R = Matrix::Identity(S, S);
    for (std::size_t k = 0; k < info.sites.size(); ++k) {
        if (info.sites[k].stack != Stack::Encoder)
            continue;
        const SiteAttention& a = t.sites[k];
        Matrix A = Matrix::Zero(S, S);
        for (int h = 0; h < a.heads; ++h)
            for (int i = 0; i < S; ++i)
                for (int j = 0; j < S; ++j)
                    A(i, j) += a.at(h, i, j) / a.heads;
        A = 0.5 * A + 0.5 * Matrix::Identity(S, S);
        for (int i = 0; i < S; ++i)
            A.row(i) /= A.row(i).sum();
        R = A * R; // later layers on the left: R = A'_L ... A'_1
    }
    std::vector<float> out(static_cast<std::size_t>(S) * S);
    for (int i = 0; i < S; ++i)
        for (int j = 0; j < S; ++j)
            out[static_cast<std::size_t>(i) * S + j] = static_cast<float>(R(i, j));
    return out;
}

namespace {
// Keeps every decoder layer's output of one decode call.
class DecoderLayers final : public SiteObserver {
public:
    bool wantProbabilities() const override { return false; }
    void onLayerOutput(Stack s, int layer, const float* x, int rows) override
    {
        if (s != Stack::Decoder)
            return;
        if (static_cast<int>(hidden.size()) <= layer)
            hidden.resize(static_cast<std::size_t>(layer) + 1);
        hidden[static_cast<std::size_t>(layer)].assign(x, x + static_cast<std::size_t>(rows) * dModel);
    }
    int dModel = 0;
    std::vector<std::vector<float>> hidden;
};
} // namespace

LogitLens decoderLogitLens(const EncoderDecoderModel& model, const Translation& t, int k, const StopToken* stop)
{
    DecoderLayers layers;
    layers.dModel = model.info().dModel;
    SiteObserver none;
    auto encoded = model.encode(t.source, none, stop);
    auto state = model.startDecoder(encoded);
    // The rows the translation's grids show: the typed target and every written token that was decoded.
    const int rows = static_cast<int>(t.logits.size() / static_cast<std::size_t>(std::max(1, t.vocab)));
    model.decode(state, std::span<const std::int32_t>(t.target).first(static_cast<std::size_t>(rows)), layers, nullptr,
                 stop);
    LogitLens lens;
    lens.layers = static_cast<int>(layers.hidden.size());
    lens.positions = rows;
    lens.nextToken = true;
    const int V = model.info().vocabSize;
    std::vector<float> logits;
    for (int l = 0; l < lens.layers; ++l) {
        model.readOut(layers.hidden[static_cast<std::size_t>(l)].data(), rows, logits);
        for (int p = 0; p < rows; ++p) {
            const std::int32_t next = p + 1 < static_cast<int>(t.target.size()) ? t.target[static_cast<std::size_t>(p) + 1] : -1;
            auto d = distributionOf(std::span<const float>(logits.data() + static_cast<std::size_t>(p) * V, V), 1.0, k, next);
            lens.top.push_back(std::move(d.top));
            lens.actualProbability.push_back(d.actualProbability);
            lens.actualRank.push_back(next >= 0 ? d.actualRank : -1);
        }
    }
    return lens;
}

} // namespace attnscope::core
