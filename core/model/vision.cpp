// Vision transformer forward: patches, special tokens, positions (interpolated to the image's grid where the family
// does), pre-norm blocks over all tokens, and the families' read-outs.
#include "model/vision.h"

#include "model/quiet_observer.h"
#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"

#include <cmath>

namespace attnscope::core {

class VisionModel::State final : public RunState {
public:
    std::shared_ptr<const PixelValues> image;
    std::unique_ptr<RunState> clone() const override { return std::make_unique<State>(*this); }
    std::size_t bytes() const override { return 0; }
};

namespace {
// Sampling weights of one axis resized from `in` to `out` positions: per output index, its first tap and weights.
struct AxisTaps {
    std::vector<int> first;
    std::vector<std::vector<double>> weights;
};

// torch interpolate(mode='bicubic', align_corners=False): four taps around (i + 0.5) in / out - 0.5, clamped to
// the border, Keys' cubic with A = -0.75.
AxisTaps torchBicubic(int in, int out)
{
    constexpr double A = -0.75;
    auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };      // |x| <= 1
    auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }; // 1 < |x| < 2
    AxisTaps taps;
    const double scale = static_cast<double>(in) / out;
    for (int i = 0; i < out; ++i) {
        const double src = (i + 0.5) * scale - 0.5;
        const int i0 = static_cast<int>(std::floor(src));
        const double t = src - i0;
        // Clamped taps: as weights on the rows they land on.
        std::vector<double> w(static_cast<std::size_t>(in), 0.0);
        const double k[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
        for (int j = 0; j < 4; ++j)
            w[static_cast<std::size_t>(std::clamp(i0 - 1 + j, 0, in - 1))] += k[j];
        taps.first.push_back(0);
        taps.weights.push_back(std::move(w));
    }
    return taps;
}

// Antialiased bicubic (torch antialias=True, Pillow's scheme): the filter widens by the scale when shrinking, taps
// outside the input are dropped, weights normalised; a = -0.5.
AxisTaps antialiasedBicubic(int in, int out)
{
    constexpr double a = -0.5;
    auto cubic = [](double x) {
        x = std::abs(x);
        if (x < 1)
            return ((a + 2) * x - (a + 3)) * x * x + 1;
        if (x < 2)
            return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
        return 0.0;
    };
    AxisTaps taps;
    const double scale = static_cast<double>(in) / out, f = std::max(scale, 1.0), support = 2 * f;
    for (int i = 0; i < out; ++i) {
        const double center = (i + 0.5) * scale;
        const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
        const int hi = std::min(static_cast<int>(center + support + 0.5), in);
        std::vector<double> w;
        double sum = 0;
        for (int j = lo; j < hi; ++j) {
            w.push_back(cubic((j - center + 0.5) / f));
            sum += w.back();
        }
        for (auto& v : w)
            v = sum != 0 ? v / sum : 0;
        taps.first.push_back(lo);
        taps.weights.push_back(std::move(w));
    }
    return taps;
}

// Where the checkpoint keeps the tower's tensors: the family's prefix or none for a tower on its own; inside a
// vision-language model at `place` (LLaVA: vision_tower.vision_model.*, transformers 4.52's model.vision_tower.*).
// The first candidate when none has the probe, so a missing tensor is named as usual.
std::string towerPrefix(const Checkpoint& weights, const std::string& place, const char* prefix, const std::string& probe)
{
    const std::vector<std::string> candidates = place.empty()
                                                    ? std::vector<std::string>{prefix, ""}
                                                    : std::vector<std::string>{place + prefix, "model." + place + prefix};
    for (const auto& c : candidates)
        if (weights.has(c + probe))
            return c;
    return place.empty() ? "" : candidates.front();
}

void gelu(RowMatrix& x, bool quick)
{
    if (quick)
        x.array() = x.array() / (1.0f + (-1.702f * x.array()).exp());
    else
        geluErfInPlace(x);
}
} // namespace

std::string VisionModel::name(const std::string& relative) const { return m_prefix + relative; }

VisionModel::VisionModel(VisionConfig config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const VisionNames& N = visionNames(c.family);
    const std::int64_t D = c.hidden, P = c.patch;
    m_prefix = towerPrefix(*m_weights, c.place, N.prefix, N.patch + std::string(".weight"));
    m_gridSide = c.imageSize / c.patch;
    const std::int64_t positions = static_cast<std::int64_t>(m_gridSide) * m_gridSide + c.leadTokens();
    auto vec = [&](const char* n, std::int64_t size) { return m_weights->getFloat(name(n), {size}); };
    auto norm = [&](const char* pattern, int l) {
        const std::string n = tensorName("", pattern, l);
        return Norm{m_weights->getFloat(name(n + ".weight"), {D}), m_weights->getFloat(name(n + ".bias"), {D})};
    };
    // Class token [1, 1, D] (CLIP: [D]); position table [1, positions, D] (CLIP: an embedding [positions, D]).
    const bool clip = c.family == ModelFamily::ClipVision || c.family == ModelFamily::SiglipVision;
    if (c.classToken)
        m_cls = m_weights->getFloat(name(N.cls), clip ? Shape{D} : Shape{1, 1, D});
    if (N.dist)
        m_dist = m_weights->getFloat(name(N.dist), {1, 1, D});
    if (N.registers && c.registers > 0)
        m_registers = m_weights->getFloat(name(N.registers), {1, c.registers, D});
    m_pos = m_weights->getFloat(name(N.pos), clip ? Shape{positions, D} : Shape{1, positions, D});
    m_patchW = m_weights->get(name(N.patch + std::string(".weight")), {D, 3, P, P});
    m_patchW.shape = {D, 3 * P * P}; // the convolution as a product with each patch's (channel, y, x) values
    if (c.patchBias)
        m_patchB = vec((N.patch + std::string(".bias")).c_str(), D);
    if (c.preNorm)
        m_preNorm = norm(N.preNorm, -1);
    if (c.finalNorm)
        m_finalNorm = norm(N.finalNorm, -1);
    for (int l = 0; l < c.layers; ++l)
        m_layers.push_back(loadLayer(N, l));
    loadReadOuts(N);
    describe(std::move(source));
}

VisionModel::Layer VisionModel::loadLayer(const VisionNames& N, int l) const
{
    const auto& c = m_config;
    const std::int64_t D = c.hidden;
    auto norm = [&](const char* pattern, int layer) {
        const std::string n = tensorName("", pattern, layer);
        return Norm{m_weights->getFloat(name(n + ".weight"), {D}), m_weights->getFloat(name(n + ".bias"), {D})};
    };
    auto linear = [&](const char* pattern, int layer, std::int64_t out, std::int64_t in) {
        const std::string n = tensorName("", pattern, layer);
        return Linear{m_weights->get(name(n + ".weight"), {out, in}), m_weights->getFloat(name(n + ".bias"), {out})};
    };
    Layer L;
    L.norm1 = norm(N.norm1, l);
    L.norm2 = norm(N.norm2, l);
    L.q = linear(N.q, l, D, D);
    L.k = linear(N.k, l, D, D);
    L.v = linear(N.v, l, D, D);
    L.o = linear(N.o, l, D, D);
    L.fc1 = linear(N.fc1, l, c.ffn, D);
    L.fc2 = linear(N.fc2, l, D, c.ffn);
    if (c.layerScale) {
        L.scale1 = m_weights->getFloat(name(tensorName("", N.scale1, l)), {D});
        L.scale2 = m_weights->getFloat(name(tensorName("", N.scale2, l)), {D});
    }
    return L;
}

void VisionModel::loadReadOuts(const VisionNames& N)
{
    const std::int64_t D = m_config.hidden;
    auto linear = [&](const char* pattern, int layer, std::int64_t out, std::int64_t in) {
        const std::string n = tensorName("", pattern, layer);
        return Linear{m_weights->get(name(n + ".weight"), {out, in}), m_weights->getFloat(name(n + ".bias"), {out})};
    };
    // Read-outs the file may have: ViT's pooler, CLIP's projection, DeiT's classifiers (absolute names besides the
    // pooler, which lives under the prefix).
    if (N.pooler && m_weights->has(name(std::string(N.pooler) + ".weight")))
        m_pooler = linear(N.pooler, -1, D, D);
    if (N.projection && m_weights->has(N.projection)) {
        const Shape s = m_weights->shape(N.projection);
        m_projection = m_weights->get(N.projection, {s.empty() ? 0 : s[0], D});
    }
    auto head = [&](const char* n) {
        const std::string w = std::string(n) + ".weight";
        const Shape s = m_weights->shape(w);
        return Linear{m_weights->get(w, {s.empty() ? 0 : s[0], D}), m_weights->getFloat(std::string(n) + ".bias", {s.empty() ? 0 : s[0]})};
    };
    if (N.classifier && m_weights->has(std::string(N.classifier) + ".weight"))
        m_classifier = head(N.classifier);
    if (N.clsHead && m_weights->has(std::string(N.clsHead) + ".weight")) {
        m_clsHead = head(N.clsHead);
        m_distHead = head(N.distHead);
    }
}

void VisionModel::describe(std::string source)
{
    const auto& c = m_config;
    m_info.family = c.family;
    m_info.source = std::move(source);
    m_info.layers = c.layers;
    m_info.heads = m_info.kvHeads = c.heads;
    m_info.dModel = c.hidden;
    m_info.dHead = c.hidden / c.heads;
    m_info.vocabSize = 0;
    m_info.defaultSegmentLen = tokenCount(c.imageSize, c.imageSize);
    m_info.maxSegmentLen = 1 << 20;
    m_info.parameterCount = m_weights->countElements([](const std::string&) { return true; });
    m_info.weightBytes = m_weights->storedBytes();
    m_info.weightTypes = m_weights->describeStorage();
    std::string pos = std::to_string(c.imageSize) + "-pixel images in " + std::to_string(c.patch) + "-pixel patches (" +
                      std::to_string(m_gridSide) + " x " + std::to_string(m_gridSide) + "), learned positions";
    if (c.positions != VisionConfig::Positions::Fixed)
        pos += " interpolated to other grids";
    pos += std::string(", CLS") + (c.distillationToken ? " + distillation token" : "") +
           (c.registers > 0 ? " + " + std::to_string(c.registers) + " registers" : "");
    m_info.positions = pos;
    m_info.can.causal = false;
    m_info.can.image = true;
    for (int l = 0; l < c.layers; ++l)
        m_info.layerRules.push_back(LayerRule::of(1.0f / std::sqrt(static_cast<float>(m_info.dHead)), 0.0f, 0, true));
    describeSingleStream(c.layers, false, m_info.heads, m_info.streams, m_info.sites, "image", false);
}

VisionModel::Grid VisionModel::gridOf(int height, int width) const
{
    const auto& c = m_config;
    if (height < c.patch || width < c.patch || height % c.patch != 0 || width % c.patch != 0)
        throw Error(ErrorCode::BadInput, "an image of " + std::to_string(width) + " x " + std::to_string(height) +
                                             " pixels is not a whole number of " + std::to_string(c.patch) +
                                             "-pixel patches");
    if (c.positions == VisionConfig::Positions::Fixed && (height != c.imageSize || width != c.imageSize))
        throw Error(ErrorCode::BadInput, "this model takes " + std::to_string(c.imageSize) + " x " +
                                             std::to_string(c.imageSize) + " pixels (its position table is fixed), not " +
                                             std::to_string(width) + " x " + std::to_string(height));
    if (static_cast<std::int64_t>(height / c.patch) * (width / c.patch) > 1'000'000)
        throw Error(ErrorCode::BadInput, "an image of " + std::to_string(width) + " x " + std::to_string(height) +
                                             " pixels makes more patches than a run can hold");
    return {height / c.patch, width / c.patch};
}

int VisionModel::tokenCount(int height, int width) const
{
    const Grid g = gridOf(height, width);
    return m_config.specialTokens() + g.rows * g.cols;
}

std::vector<std::string> VisionModel::tokenLabels(int height, int width) const
{
    const Grid g = gridOf(height, width);
    std::vector<std::string> out;
    if (m_config.classToken)
        out.emplace_back("CLS");
    if (m_config.distillationToken)
        out.emplace_back("DIST");
    for (int r = 0; r < m_config.registers; ++r)
        out.push_back("REG" + std::to_string(r + 1));
    for (int r = 0; r < g.rows; ++r)
        for (int col = 0; col < g.cols; ++col)
            out.push_back("r" + std::to_string(r + 1) + "c" + std::to_string(col + 1));
    return out;
}

std::unique_ptr<RunState> VisionModel::newState(const RunOptions& options) const
{
    refuseIntervention(options, m_info);
    auto st = std::make_unique<State>();
    st->image = options.image;
    st->stop = options.stop;
    return st;
}

RowMatrix VisionModel::positionTable(const Grid& grid) const
{
    const auto& c = m_config;
    const int D = c.hidden, g0 = m_gridSide, lead = c.leadTokens();
    const ConstMatrixMap table(m_pos.floats(), lead + g0 * g0, D);
    const bool same = grid.rows * grid.cols == g0 * g0 && grid.rows == grid.cols;
    if (c.positions == VisionConfig::Positions::Fixed || same)
        return table;
    // The patch rows as a [g0, g0] grid of vectors, resized separably (rows, then columns) in double.
    const AxisTaps ty = c.positions == VisionConfig::Positions::Bicubic ? torchBicubic(g0, grid.rows)
                                                                        : antialiasedBicubic(g0, grid.rows);
    const AxisTaps tx = c.positions == VisionConfig::Positions::Bicubic ? torchBicubic(g0, grid.cols)
                                                                        : antialiasedBicubic(g0, grid.cols);
    RowMatrix out(lead + grid.rows * grid.cols, D);
    out.topRows(lead) = table.topRows(lead);
    Eigen::VectorXd acc(D);
    for (int i = 0; i < grid.rows; ++i)
        for (int j = 0; j < grid.cols; ++j) {
            acc.setZero();
            const auto& wy = ty.weights[static_cast<std::size_t>(i)];
            const auto& wx = tx.weights[static_cast<std::size_t>(j)];
            for (std::size_t a = 0; a < wy.size(); ++a) {
                if (wy[a] == 0)
                    continue;
                const int y = ty.first[static_cast<std::size_t>(i)] + static_cast<int>(a);
                for (std::size_t b = 0; b < wx.size(); ++b) {
                    if (wx[b] == 0)
                        continue;
                    const int x = tx.first[static_cast<std::size_t>(j)] + static_cast<int>(b);
                    acc += wy[a] * wx[b] * table.row(lead + y * g0 + x).transpose().cast<double>();
                }
            }
            out.row(lead + i * grid.cols + j) = acc.transpose().cast<float>();
        }
    return out;
}

void VisionModel::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<State&>(baseState);
    if (!st.image)
        throw Error(ErrorCode::BadInput, "a vision model runs on an image: open one (its pixels come with the run)");
    if (static_cast<int>(ids.size()) != tokenCount(st.image->height, st.image->width))
        throw Error(ErrorCode::BadInput, "the image makes " + std::to_string(tokenCount(st.image->height, st.image->width)) +
                                             " tokens, the run was given " + std::to_string(ids.size()));
    run(*st.image, observer, nullptr, st);
}

std::vector<float> VisionModel::classify(const PixelValues& pixels) const
{
    if (!hasClassifier())
        return {};
    QuietObserver quiet;
    for (auto& t : outputs(pixels, quiet))
        if (t.name == "logits") {
            softmaxInPlace(t.data.data(), static_cast<int>(t.data.size()), nullptr);
            return t.data;
        }
    return {};
}

std::vector<OutputTensor> VisionModel::outputs(const PixelValues& pixels, AttentionObserver& observer) const
{
    std::vector<OutputTensor> extra;
    State counters;
    run(pixels, observer, &extra, counters);
    return extra;
}

namespace {
// Keeps a non-layer tensor for the dump when the caller wants them (`extra` non-null).
void keepTensor(std::vector<OutputTensor>* extra, const std::string& n, const Shape& shape, const float* data)
{
    if (extra)
        extra->push_back({n, shape, std::vector<float>(data, data + shapeNumel(shape))});
}
} // namespace

RowMatrix VisionModel::embedPatches(const PixelValues& px, const Grid& grid, std::vector<OutputTensor>* extra) const
{
    const auto& c = m_config;
    const int D = c.hidden, p = c.patch, patches = grid.rows * grid.cols;
    const int lead = c.leadTokens(), R = c.registers, T = lead + R + patches;
    // Each patch's (channel, y, x) values as a row, times the convolution's [D, 3 p p] weights.
    RowMatrix rows(patches, 3 * p * p), patchEmbeds;
    for (int r = 0; r < grid.rows; ++r)
        for (int col = 0; col < grid.cols; ++col) {
            float* out = rows.row(r * grid.cols + col).data();
            for (int ch = 0; ch < 3; ++ch)
                for (int y = 0; y < p; ++y)
                    for (int x = 0; x < p; ++x)
                        *out++ = px.at(ch, r * p + y, col * p + x);
        }
    multiplyTransposed(rows, m_patchW, patchEmbeds);
    if (m_patchB)
        patchEmbeds.rowwise() += asVector(m_patchB);
    keepTensor(extra, "patch_embeds", {patches, D}, patchEmbeds.data());
    const RowMatrix pos = positionTable(grid);
    keepTensor(extra, "pos_embed", {pos.rows(), D}, pos.data());
    // [CLS, DIST?] + patches, plus positions; registers (no position) after CLS.
    RowMatrix x(T, D);
    if (c.classToken)
        x.row(0) = ConstVectorMap(m_cls.floats(), D) + pos.row(0);
    if (c.distillationToken)
        x.row(1) = ConstVectorMap(m_dist.floats(), D) + pos.row(1);
    for (int r = 0; r < R; ++r)
        x.row(lead + r) = ConstVectorMap(m_registers.floats() + static_cast<std::size_t>(r) * D, D);
    x.bottomRows(patches) = patchEmbeds + pos.bottomRows(patches);
    keepTensor(extra, "embedding", {T, D}, x.data());
    if (c.preNorm) {
        layerNormRows(x, m_preNorm.w, m_preNorm.b, c.eps, x);
        keepTensor(extra, "pre_layrnorm", {T, D}, x.data());
    }
    return x;
}

void VisionModel::run(const PixelValues& px, AttentionObserver& observer, std::vector<OutputTensor>* extra,
                      RunState& counters) const
{
    const auto& c = m_config;
    const Grid grid = gridOf(px.height, px.width);
    if (px.data.size() != static_cast<std::size_t>(3) * px.height * px.width)
        throw Error(ErrorCode::BadInput, "pixel values hold " + std::to_string(px.data.size()) + " numbers for a 3 x " +
                                             std::to_string(px.height) + " x " + std::to_string(px.width) + " image");
    RowMatrix x = embedPatches(px, grid, extra);
    const int T = static_cast<int>(x.rows()), D = c.hidden;
    SegmentDriver drive(counters, observer, *m_weights);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(T) * T, 0);
    const std::vector<VisibleSpan> spans(static_cast<std::size_t>(T), VisibleSpan{0, T});
    SegmentView sv;
    sv.embedding = x.data();
    sv.mask = mask.data();
    drive.begin({T, 0, D}, sv);
    const AttentionCapture kept = drive.kept(c.heads);
    LayerRows rows;
    for (int l = 0; l < c.layers; ++l) {
        drive.checkStop();
        LayerView lv;
        encoderBlock(l, spans, kept, x, rows, lv);
        lv.mask = mask.data();
        drive.layerDone(l, lv);
    }
    drive.end([](SegmentEndView&) {});
    if (extra)
        readOuts(x, *extra);
}

void VisionModel::encoderBlock(int l, const std::vector<VisibleSpan>& spans, const AttentionCapture& kept, RowMatrix& x,
                               LayerRows& rows, LayerView& lv) const
{
    const auto& c = m_config;
    const int T = static_cast<int>(x.rows()), D = c.hidden, H = c.heads, d = D / H;
    const Layer& L = m_layers[static_cast<std::size_t>(l)];
    auto project = [](const RowMatrix& in, const Linear& p, RowMatrix& out) { linear(in, p.w, p.b, out); };
    RowMatrix a, inner, ffn;
    // Pre-norm blocks; DINOv2 scales each branch by its LayerScale before it joins the stream.
    layerNormRows(x, L.norm1.w, L.norm1.b, c.eps, a);
    project(a, L.q, rows.q);
    project(a, L.k, rows.k);
    project(a, L.v, rows.v);
    ScoreInputs in = ScoreInputs::ofShape(T, T, 0, H, H, d);
    in.queries = RowSource::strided(rows.q.data(), D);
    in.keys = RowSource::strided(rows.k.data(), D);
    in.spans = spans.data();
    rows.heads.resize(T, D);
    attendAllHeads(in, rows.v.data(), D, rows.heads.data(), D, kept);
    project(rows.heads, L.o, rows.attnOut);
    if (L.scale1)
        rows.attnOut.array().rowwise() *= asVector(L.scale1).array();
    x += rows.attnOut;
    layerNormRows(x, L.norm2.w, L.norm2.b, c.eps, a);
    project(a, L.fc1, inner);
    if (c.tanhGelu)
        geluNewInPlace(inner);
    else
        gelu(inner, c.quickGelu);
    project(inner, L.fc2, ffn);
    if (L.scale2)
        ffn.array().rowwise() *= asVector(L.scale2).array();
    x += ffn;
    lv.heads = H;
    lv.inputs = in;
    lv.kvHeads = H;
    lv.headDim = d;
    lv.attnOutput = rows.attnOut.data();
    lv.headMix = rows.heads.data();
    lv.hidden = x.data();
}

void VisionModel::readOuts(const RowMatrix& x, std::vector<OutputTensor>& extra) const
{
    const auto& c = m_config;
    const int T = static_cast<int>(x.rows()), D = c.hidden;
    auto project = [](const RowMatrix& in, const Linear& p, RowMatrix& out) { linear(in, p.w, p.b, out); };
    RowMatrix last = x;
    if (c.finalNorm)
        layerNormRows(x, m_finalNorm.w, m_finalNorm.b, c.eps, last);
    keepTensor(&extra, "last_hidden_state", {T, D}, last.data());
    const RowMatrix cls = last.topRows(1);
    if (m_pooler.w) { // ViT: tanh(dense(CLS))
        RowMatrix pooled;
        project(cls, m_pooler, pooled);
        pooled = pooled.array().tanh().matrix();
        keepTensor(&extra, "pooler_output", {D}, pooled.data());
    } else if (c.family == ModelFamily::Dinov2 || c.family == ModelFamily::Dinov2Registers) {
        keepTensor(&extra, "pooler_output", {D}, cls.data());
    } else if (c.family == ModelFamily::ClipVision) { // post_layernorm of the CLS row, then the projection
        RowMatrix pooled;
        const Norm post{m_weights->getFloat(name("post_layernorm.weight"), {D}), m_weights->getFloat(name("post_layernorm.bias"), {D})};
        layerNormRows(cls, post.w, post.b, c.eps, pooled);
        keepTensor(&extra, "pooler_output", {D}, pooled.data());
        if (m_projection) {
            RowMatrix embeds;
            multiplyTransposed(pooled, m_projection, embeds);
            keepTensor(&extra, "image_embeds", {embeds.cols()}, embeds.data());
        }
    }
    if (m_classifier.w) { // ViTForImageClassification: the classes from the CLS row
        RowMatrix logits;
        project(cls, m_classifier, logits);
        keepTensor(&extra, "logits", {logits.cols()}, logits.data());
    }
    if (m_clsHead.w) { // DeiT: a classifier on CLS, one on the distillation token, and their mean
        RowMatrix clsLogits, distLogits;
        project(cls, m_clsHead, clsLogits);
        project(last.middleRows(1, 1), m_distHead, distLogits);
        const RowMatrix mean = (clsLogits + distLogits) / 2.0f;
        keepTensor(&extra, "cls_logits", {clsLogits.cols()}, clsLogits.data());
        keepTensor(&extra, "distillation_logits", {distLogits.cols()}, distLogits.data());
        keepTensor(&extra, "logits", {mean.cols()}, mean.data());
    }
}

const VisionModel& asVision(const AttentionModel& model)
{
    const auto* m = dynamic_cast<const VisionModel*>(&model);
    if (!m)
        throw Error(ErrorCode::BadInput,
                    std::string(familyName(model.info().family)) + " reads text: pictures are for vision models (ViT, "
                                                                   "DeiT, DINOv2, CLIP's vision tower)",
                    model.info().source);
    return *m;
}

} // namespace attnscope::core
