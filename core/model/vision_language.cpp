// The vision-language decoder: the tower's chosen hidden state, the projector, and the decoder with the picture's
// rows in place of its placeholders.
#include "model/vision_language.h"

#include "io/checkpoint.h"
#include "model/llama.h"
#include "model/quiet_observer.h"
#include "model/vision.h"
#include "util/error.h"

namespace attnscope::core {

namespace {

// Forwards the tower's layers to another observer and keeps hidden state `index` (0: the embeddings the first layer
// reads, l + 1: layer l's output).
class FeatureTap final : public AttentionObserver {
public:
    FeatureTap(AttentionObserver& inner, int index) : m_inner(inner), m_index(index) {}
    bool wantProbabilities() const override { return m_inner.wantProbabilities(); }
    bool wantScores() const override { return m_inner.wantScores(); }
    void onSegment(const SegmentView& v) override
    {
        if (m_index == 0)
            features = ConstMatrixMap(v.embedding, v.qlen, v.dModel);
        m_inner.onSegment(v);
    }
    void onLayer(const LayerView& v) override
    {
        if (v.layer + 1 == m_index)
            features = ConstMatrixMap(v.hidden, v.qlen, v.dModel);
        m_inner.onLayer(v);
    }
    void onSegmentEnd(const SegmentEndView& v) override { m_inner.onSegmentEnd(v); }
    RowMatrix features;

private:
    AttentionObserver& m_inner;
    int m_index;
};

} // namespace

VisionLanguageModel::VisionLanguageModel(LlamaConfig config, std::shared_ptr<const Checkpoint> weights,
                                         std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    if (!m_config.vision)
        throw Error(ErrorCode::BadConfig, "a vision-language model needs its vision tower's settings");
    LlamaConfig textOnly = m_config;
    textOnly.vision.reset();
    m_text = std::make_unique<LlamaModel>(std::move(textOnly), m_weights, source);
    const auto& v = *m_config.vision;
    m_tower = std::make_unique<VisionModel>(v.tower, m_weights, source);
    const std::string probe = v.poolKernel > 0 ? "multi_modal_projector.mm_input_projection_weight"
                                               : "multi_modal_projector.linear_1.weight";
    const std::string place = m_weights->has("model." + probe) ? "model.multi_modal_projector."
                                                               : "multi_modal_projector.";
    if (v.poolKernel > 0) {
        const std::int64_t D = v.tower.hidden;
        const WeightView norm = m_weights->getFloat(place + "mm_soft_emb_norm.weight", {D});
        m_ownedNorm.assign(norm.floats(), norm.floats() + D);
        for (float& w : m_ownedNorm)
            w += 1.0f; // Gemma's norms scale by 1 + w
        m_softNorm = WeightView::ofFloats(m_ownedNorm.data(), {D});
        m_inputProjection = m_weights->get(place + "mm_input_projection_weight", {D, m_config.hidden});
    } else {
        auto linearOf = [&](const char* name, std::int64_t out, std::int64_t in) {
            const std::string n = place + name;
            Linear l;
            l.w = m_weights->get(n + ".weight", {out, in});
            if (v.projectorBias)
                l.b = m_weights->getFloat(n + ".bias", {out});
            return l;
        };
        m_project1 = linearOf("linear_1", v.projectorHidden, v.tower.hidden);
        m_project2 = linearOf("linear_2", m_config.hidden, v.projectorHidden);
    }
    describe(std::move(source));
}

VisionLanguageModel::~VisionLanguageModel() = default;

void VisionLanguageModel::describe(std::string source)
{
    const auto& v = *m_config.vision;
    m_info = m_text->info();
    m_info.family = v.family;
    m_info.source = std::move(source);
    m_info.parameterCount = m_weights->countElements([](const std::string&) { return true; });
    m_info.pictureToken = v.imageToken;
    m_info.pictureTokens = imageTokens(v.tower.imageSize, v.tower.imageSize);
    m_info.positions += "; a picture of " + std::to_string(v.tower.imageSize) + " x " +
                        std::to_string(v.tower.imageSize) + " pixels as " + std::to_string(m_info.pictureTokens) +
                        " image tokens (a " + familyName(v.tower.family) + " tower of " +
                        std::to_string(v.tower.layers) + " layers)";
}

int VisionLanguageModel::imageTokens(int height, int width) const
{
    const auto& v = picture();
    if (v.poolKernel > 0) {
        const auto grid = m_tower->gridOf(height, width);
        return (grid.rows / v.poolKernel) * (grid.cols / v.poolKernel);
    }
    return m_tower->tokenCount(height, width) - (v.dropClass ? v.tower.specialTokens() : 0);
}

std::pair<int, int> VisionLanguageModel::imageGrid(int height, int width) const
{
    const auto grid = m_tower->gridOf(height, width);
    const int k = std::max(1, picture().poolKernel);
    return {grid.rows / k, grid.cols / k};
}

std::vector<std::int32_t> VisionLanguageModel::expandPlaceholders(const std::vector<std::int32_t>& ids, int height,
                                                                  int width) const
{
    const std::int32_t token = picture().imageToken;
    const int n = imageTokens(height, width);
    std::vector<std::int32_t> out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] != token) {
            out.push_back(ids[i]);
            continue;
        }
        std::size_t run = i;
        while (run < ids.size() && ids[run] == token)
            ++run;
        // A run already as long as the picture's rows (or a multiple of it) was expanded by the processor.
        const std::size_t len = run - i;
        const std::size_t copies = len % static_cast<std::size_t>(n) == 0 ? len : len * static_cast<std::size_t>(n);
        out.insert(out.end(), copies, token);
        i = run - 1;
    }
    return out;
}

VisionLanguageModel::PictureRows VisionLanguageModel::pictureRows(const PixelValues& pixels,
                                                                  AttentionObserver& towerObserver) const
{
    const auto& v = picture();
    FeatureTap tap(towerObserver, v.normedOutput ? -1 : v.featureIndex());
    PictureRows out;
    for (auto& t : m_tower->outputs(pixels, tap))
        if (v.normedOutput && t.name == "last_hidden_state")
            out.features = ConstMatrixMap(t.data.data(), t.shape[0], t.shape[1]);
    if (!v.normedOutput) {
        const int drop = v.dropClass ? v.tower.specialTokens() : 0;
        out.features = tap.features.bottomRows(tap.features.rows() - drop);
    }
    if (v.poolKernel > 0) {
        const auto grid = m_tower->gridOf(pixels.height, pixels.width);
        out.embeds = projectPooled(out.features, grid.rows, grid.cols);
    } else {
        out.embeds = projectMlp(out.features);
    }
    return out;
}

RowMatrix VisionLanguageModel::projectMlp(const RowMatrix& features) const
{
    RowMatrix hidden, out;
    linear(features, m_project1.w, m_project1.b, hidden);
    geluErfInPlace(hidden); // projector_hidden_act "gelu": the exact erf form
    linear(hidden, m_project2.w, m_project2.b, out);
    return out;
}

RowMatrix VisionLanguageModel::projectPooled(const RowMatrix& features, int gridRows, int gridCols) const
{
    const int k = picture().poolKernel, rows = gridRows / k, cols = gridCols / k;
    const auto D = features.cols();
    RowMatrix pooled = RowMatrix::Zero(static_cast<Eigen::Index>(rows) * cols, D);
    for (int r = 0; r < rows * k; ++r)
        for (int c = 0; c < cols * k; ++c)
            pooled.row((r / k) * cols + c / k) += features.row(static_cast<Eigen::Index>(r) * gridCols + c);
    pooled /= static_cast<float>(k * k);
    rmsNormGroupsInPlace(pooled, 1, m_softNorm, picture().tower.eps);
    RowMatrix out;
    multiply(pooled, m_inputProjection, out); // x W: the weight is [tower, text], not transposed
    return out;
}

std::shared_ptr<const RunOptions::PlacedRows>
VisionLanguageModel::placedRowsOf(const std::vector<std::shared_ptr<const PixelValues>>& pictures) const
{
    auto placed = std::make_shared<RunOptions::PlacedRows>();
    placed->token = picture().imageToken;
    placed->cols = m_config.hidden;
    placed->bidirectional = picture().bidirectionalPicture;
    if (pictures.empty())
        return placed; // no rows: a placeholder in the prompt is refused by name
    {
        const std::lock_guard<std::mutex> lock(m_cacheMutex);
        bool same = m_cachedPictures.size() == pictures.size();
        for (std::size_t p = 0; same && p < pictures.size(); ++p)
            same = m_cachedPictures[p].lock() == pictures[p];
        if (same)
            return m_cachedRows;
    }
    QuietObserver quiet;
    for (const auto& pixels : pictures) {
        const RowMatrix embeds = pictureRows(*pixels, quiet).embeds;
        placed->rows.insert(placed->rows.end(), embeds.data(), embeds.data() + embeds.size());
        placed->perPicture.push_back(static_cast<int>(embeds.rows()));
    }
    const std::lock_guard<std::mutex> lock(m_cacheMutex);
    m_cachedPictures.assign(pictures.begin(), pictures.end());
    m_cachedRows = placed;
    return placed;
}

std::unique_ptr<RunState> VisionLanguageModel::newState(const RunOptions& options) const
{
    RunOptions text = options;
    std::vector<std::shared_ptr<const PixelValues>> pictures;
    if (options.image)
        pictures.push_back(options.image);
    for (const auto& p : options.morePictures)
        if (p)
            pictures.push_back(p);
    text.image.reset();
    text.morePictures.clear();
    text.placed = placedRowsOf(pictures);
    return m_text->newState(text);
}

void VisionLanguageModel::forwardSegment(RunState& state, std::span<const std::int32_t> ids,
                                         AttentionObserver& observer) const
{
    m_text->forwardSegment(state, ids, observer);
}

std::unique_ptr<RunState> VisionLanguageModel::resumeWithin(const RunState& segmentEnd, int keep) const
{
    return m_text->resumeWithin(segmentEnd, keep);
}

bool VisionLanguageModel::readOut(const float* hidden, int rows, std::vector<float>& logits) const
{
    return m_text->readOut(hidden, rows, logits);
}

bool VisionLanguageModel::headParts(int layer, const float* headMixRow, std::vector<float>& out) const
{
    return m_text->headParts(layer, headMixRow, out);
}

bool VisionLanguageModel::logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                                         double& constant) const
{
    return m_text->logitDirection(residual, token, direction, constant);
}

} // namespace attnscope::core
