// Picture prompts: the picture read and prepared, the placeholders expanded, and the reference dump of a run.
#include "run/picture_prompt.h"

#include "image/png_reader.h"
#include "model/vision.h"
#include "model/vision_language.h"
#include "run/generation.h"
#include "run/reference_dump.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <numeric>

namespace attnscope::core {

const VisionLanguageModel& asVisionLanguage(const AttentionModel& model)
{
    const auto* vlm = dynamic_cast<const VisionLanguageModel*>(&model);
    if (!vlm)
        throw Error(ErrorCode::BadInput, std::string(familyName(model.info().family)) +
                                             " reads no picture beside its prompt (a vision-language model does)",
                    model.info().source);
    return *vlm;
}

PicturePrompt picturePrompt(const AttentionModel& model, const std::string& modelFolder, const std::string& pngPath,
                            std::vector<std::int32_t> ids)
{
    const VisionLanguageModel& vlm = asVisionLanguage(model);
    const Preprocessor p = readPreprocessor(modelFolder);
    const Image8 picture = readPng(pngPath);
    PicturePrompt out;
    Preprocessor uncropped = p;
    uncropped.centerCrop = false;
    out.resized = preparedImage(picture, uncropped);
    out.prepared = preparedImage(picture, p);
    auto pixels = std::make_shared<PixelValues>(pixelValuesOf(out.prepared, p));
    out.expanded = vlm.expandPlaceholders(ids, pixels->height, pixels->width);
    const int rows = vlm.imageTokens(pixels->height, pixels->width);
    const auto placeholders = std::count(out.expanded.begin(), out.expanded.end(), vlm.picture().imageToken);
    if (placeholders != rows)
        throw Error(ErrorCode::BadInput, "the prompt has " + std::to_string(placeholders / rows) +
                                             " image placeholders (token " + std::to_string(vlm.picture().imageToken) +
                                             ") for one picture: give it exactly one",
                    pngPath);
    out.pixels = std::move(pixels);
    out.ids = std::move(ids);
    return out;
}

PicturePrompt picturePromptOf(const AttentionModel& model, const std::string& modelFolder, const nlohmann::json& input,
                              const std::string& inputFile)
{
    if (!input.is_object())
        throw Error(ErrorCode::BadInput, "input is not a JSON object", inputFile);
    const auto image = input.find("image");
    const nlohmann::json* file = image == input.end() ? nullptr : image->is_object() ? &(*image)["file"] : &*image;
    if (!file || !file->is_string())
        throw Error(ErrorCode::BadInput, "names no picture: \"image\" must be a PNG file beside it (or {\"file\": ...})",
                    inputFile, "image");
    const auto ids = input.find("input_ids");
    if (ids == input.end())
        throw Error(ErrorCode::BadInput, "needs \"input_ids\": the prompt with a placeholder for the picture", inputFile);
    const auto path = std::filesystem::path(inputFile).parent_path() / file->get<std::string>();
    return picturePrompt(model, modelFolder, path.string(), jsonIdList(*ids, inputFile, "input_ids"));
}

namespace {

OutputTensor imageTensor(const char* name, const Image8& img)
{
    return {name, {img.height, img.width, 3}, std::vector<float>(img.rgb.begin(), img.rgb.end())};
}

OutputTensor idTensor(const char* name, const std::vector<std::int32_t>& ids)
{
    return {name, {static_cast<std::int64_t>(ids.size())}, std::vector<float>(ids.begin(), ids.end())};
}

OutputTensor rowsTensor(const char* name, const RowMatrix& m)
{
    return {name, {m.rows(), m.cols()}, std::vector<float>(m.data(), m.data() + m.size())};
}

// Adds each layer's mask as the reference writes it (1 = key visible): layer{l}.attn_mask, and layer 0's as attn_mask.
class MaskTap final : public AttentionObserver {
public:
    MaskTap(AttentionObserver& inner, std::vector<OutputTensor>& out) : m_inner(inner), m_out(out) {}
    bool wantTerms() const override { return m_inner.wantTerms(); }
    bool wantLogits() const override { return m_inner.wantLogits(); }
    bool wantScores() const override { return m_inner.wantScores(); }
    void onSegment(const SegmentView& v) override { m_inner.onSegment(v); }
    void onLayer(const LayerView& v) override
    {
        if (v.mask) {
            OutputTensor t{"layer" + std::to_string(v.layer) + ".attn_mask", {v.qlen, v.klen},
                           std::vector<float>(static_cast<std::size_t>(v.qlen) * v.klen)};
            for (std::size_t i = 0; i < t.data.size(); ++i)
                t.data[i] = v.mask[i] ? 0.0f : 1.0f;
            if (v.layer == 0)
                m_out.push_back({"attn_mask", t.shape, t.data});
            m_out.push_back(std::move(t));
        }
        m_inner.onLayer(v);
    }
    void onSegmentEnd(const SegmentEndView& v) override { m_inner.onSegmentEnd(v); }

private:
    AttentionObserver& m_inner;
    std::vector<OutputTensor>& m_out;
};

// A greedy generation's forwards after the prompt's: step s >= 1 feeds the token chosen at step s - 1; its row over
// every key per layer and its logits.
class GenerationSteps final : public AttentionObserver {
public:
    explicit GenerationSteps(std::vector<OutputTensor>& out) : m_out(out) {}
    bool wantLogits() const override { return true; }
    void onLayer(const LayerView& l) override
    {
        if (m_step == 0)
            return; // the prompt's forward: dumped whole already
        OutputTensor t{prefix() + "layer" + std::to_string(l.layer) + ".attn_prob", {l.heads, l.klen},
                       std::vector<float>(static_cast<std::size_t>(l.heads) * l.klen)};
        for (int h = 0; h < l.heads; ++h)
            std::copy_n(l.attnProb + (static_cast<std::size_t>(h) * l.qlen + l.qlen - 1) * l.klen, l.klen,
                        t.data.begin() + static_cast<std::ptrdiff_t>(h) * l.klen);
        m_out.push_back(std::move(t));
    }
    void onSegmentEnd(const SegmentEndView& e) override
    {
        if (m_step > 0) {
            const float* row = e.logits + static_cast<std::size_t>(e.qlen - 1 - e.firstLogitRow) * e.vocab;
            m_out.push_back({prefix() + "logits", {e.vocab}, std::vector<float>(row, row + e.vocab)});
        }
        ++m_step;
    }

private:
    std::string prefix() const { return "gen.step" + std::to_string(m_step) + "."; }
    std::vector<OutputTensor>& m_out;
    int m_step = 0;
};

// The tower's own tensors under "vision.": its embeddings after the pre-norm, each layer's attention and output.
void dumpTower(const VisionLanguageModel& vlm, const PixelValues& pixels, std::vector<OutputTensor>& out)
{
    std::vector<OutputTensor> tower;
    const auto observer = referenceObserver(vlm.tower().info(), tower);
    for (auto& t : vlm.tower().outputs(pixels, *observer))
        tower.push_back(std::move(t));
    for (auto& t : tower) {
        t.name = "vision." + t.name;
        out.push_back(std::move(t));
    }
}

int generationSteps(const nlohmann::json& input, const std::string& inputFile)
{
    const auto g = input.find("generation");
    if (g == input.end() || !g->is_object() || !g->contains("n_new"))
        return 0;
    const auto& n = (*g)["n_new"];
    if (!n.is_number_integer() || n.get<long long>() < 0 || n.get<long long>() > 4096)
        throw Error(ErrorCode::BadInput, "must be a number of tokens from 0 to 4096", inputFile, "generation.n_new");
    return n.get<int>();
}

} // namespace

std::vector<OutputTensor> dumpPicturePrompt(const AttentionModel& model, const nlohmann::json& input,
                                            const std::string& inputFile)
{
    const VisionLanguageModel& vlm = asVisionLanguage(model);
    const PicturePrompt prompt = picturePromptOf(model, model.info().source, input, inputFile);
    std::vector<OutputTensor> out{imageTensor("resized", prompt.resized), imageTensor("cropped", prompt.prepared),
                                  {"pixel_values", {3, prompt.pixels->height, prompt.pixels->width}, prompt.pixels->data}};
    dumpTower(vlm, *prompt.pixels, out);
    struct Quiet final : AttentionObserver {
        bool wantProbabilities() const override { return false; }
        void onLayer(const LayerView&) override {}
    } quiet;
    const auto rows = vlm.pictureRows(*prompt.pixels, quiet);
    out.push_back(rowsTensor("image_features", rows.features));
    out.push_back(rowsTensor("image_embeds", rows.embeds));
    out.push_back(idTensor("input_ids", prompt.ids));
    out.push_back(idTensor("input_ids_expanded", prompt.expanded));
    std::vector<std::int32_t> positions(prompt.expanded.size());
    std::iota(positions.begin(), positions.end(), 0);
    out.push_back(idTensor("position_ids", positions));
    RunOptions options;
    options.image = prompt.pixels;
    std::vector<OutputTensor> decoder;
    const auto dump = referenceObserver(model.info(), decoder);
    MaskTap masks(*dump, decoder);
    model.run({prompt.expanded}, options, masks);
    for (auto& t : decoder) {
        if (t.name == "embedding")
            t.name = "inputs_embeds";
        out.push_back(std::move(t));
    }
    if (const int steps = generationSteps(input, inputFile); steps > 0) {
        GenerationSteps observer(out);
        const auto g = generateTokens(model, prompt.expanded, steps, Sampling{}, 0, nullptr, GenerationRun{options, &observer});
        out.push_back(idTensor("gen.ids", g.ids));
    }
    return out;
}

} // namespace attnscope::core
