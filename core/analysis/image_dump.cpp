// dumpImage and readPixelValues.
#include "analysis/image_dump.h"

#include "analysis/rollout.h"
#include "model/vision.h"
#include "run/image_capture.h"
#include "util/error.h"

namespace attnscope::core {

PixelValues readPixelValues(const std::string& path)
{
    SafetensorsFile f(path);
    const auto* t = f.find("pixel_values");
    if (!t)
        throw Error(ErrorCode::MissingTensor, "no tensor \"pixel_values\"", path, "pixel_values");
    if (t->shape.size() != 4 || t->shape[0] != 1 || t->shape[1] != 3 || t->shape[2] < 1 || t->shape[3] < 1)
        throw Error(ErrorCode::ShapeMismatch, "pixel_values must be [1, 3, height, width], got " + shapeToString(t->shape),
                    path, "pixel_values");
    PixelValues px;
    px.height = static_cast<int>(t->shape[2]);
    px.width = static_cast<int>(t->shape[3]);
    px.data = readAsFloat(f, *t);
    for (const float v : px.data)
        if (!std::isfinite(v))
            throw Error(ErrorCode::BadInput, "pixel values must be finite numbers", path, "pixel_values");
    return px;
}

namespace {
// Each layer's probabilities and hidden states, under the reference's names.
class LayerTensors final : public AttentionObserver {
public:
    explicit LayerTensors(std::vector<OutputTensor>& out)
        : m_out(out)
    {
    }
    void onLayer(const LayerView& l) override
    {
        const std::string p = "layer" + std::to_string(l.layer) + ".";
        add(p + "attn_prob", {l.heads, l.qlen, l.klen}, l.attnProb);
        add(p + "hidden", {l.qlen, l.dModel}, l.hidden);
    }

private:
    void add(const std::string& name, const Shape& shape, const float* data)
    {
        m_out.push_back({name, shape, std::vector<float>(data, data + shapeNumel(shape))});
    }
    std::vector<OutputTensor>& m_out;
};
} // namespace

std::vector<OutputTensor> dumpImage(const AttentionModel& model, std::shared_ptr<const PixelValues> pixels)
{
    const VisionModel& vision = asVision(model);
    std::vector<OutputTensor> layers;
    LayerTensors observer(layers);
    auto out = vision.outputs(*pixels, observer);
    out.insert(out.end(), layers.begin(), layers.end());
    // Rollout as the app computes it: from a capture of the image.
    const auto rollout = attentionRollout(*capturePicture(vision, std::move(pixels)), 0);
    out.push_back({"rollout", {rollout.rows, rollout.cols}, rollout.values});
    return out;
}

} // namespace attnscope::core
