// Picture prompts: the picture read and prepared, the placeholders expanded, and the reference dump of a run.
#include "run/picture_prompt.h"

#include "image/png_reader.h"
#include "model/quiet_observer.h"
#include "model/vision.h"
#include "model/vision_language.h"
#include "run/generation.h"
#include "run/reference_dump.h"
#include "tokenize/tokenizer.h"
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

RunOptions PicturePrompt::runOptions() const
{
    RunOptions o;
    if (!pictures.empty())
        o.image = pictures.front();
    o.morePictures.assign(pictures.begin() + (pictures.empty() ? 0 : 1), pictures.end());
    return o;
}

namespace {
// The placeholders of `expanded` are the pictures' tokens: as many in each run as its picture makes.
void checkPictureTokens(const VisionLanguageModel& vlm, const PicturePrompt& prompt, const std::string& file)
{
    const std::int32_t token = vlm.picture().imageToken;
    std::vector<int> runs;
    for (std::size_t i = 0; i < prompt.expanded.size(); ++i)
        if (prompt.expanded[i] == token) {
            if (i == 0 || prompt.expanded[i - 1] != token)
                runs.push_back(0);
            ++runs.back();
        }
    std::vector<int> wanted;
    for (const auto& p : prompt.pictures)
        wanted.push_back(vlm.imageTokens(p->height, p->width));
    // LLaVA's expansion puts adjacent pictures' tokens in one run: compare the totals then.
    const bool framed = vlm.picture().beginToken >= 0;
    const auto sum = [](const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); };
    if (framed ? runs != wanted : sum(runs) != sum(wanted))
        throw Error(ErrorCode::BadInput, "the prompt's image tokens (token " + std::to_string(token) + ", " +
                                             std::to_string(sum(runs)) + " in " + std::to_string(runs.size()) +
                                             " runs) do not fit " + std::to_string(prompt.pictures.size()) +
                                             " picture(s) of " + std::to_string(sum(wanted)) +
                                             " tokens: give one placeholder per picture",
                    file);
}
} // namespace

PicturePrompt picturePrompt(const AttentionModel& model, const std::string& modelFolder,
                            const std::vector<std::string>& pngPaths, std::vector<std::int32_t> ids,
                            std::vector<std::int32_t> expanded)
{
    const VisionLanguageModel& vlm = asVisionLanguage(model);
    if (pngPaths.empty())
        throw Error(ErrorCode::BadInput, "a picture prompt needs a picture", model.info().source);
    const Preprocessor p = readPreprocessor(modelFolder);
    Preprocessor uncropped = p;
    uncropped.centerCrop = false;
    PicturePrompt out;
    for (const auto& path : pngPaths) {
        const Image8 picture = readPng(path);
        out.resized.push_back(preparedImage(picture, uncropped));
        out.prepared.push_back(preparedImage(picture, p));
        out.pictures.push_back(std::make_shared<const PixelValues>(pixelValuesOf(out.prepared.back(), p)));
    }
    const bool hasPictureTokens = std::find(ids.begin(), ids.end(), vlm.picture().imageToken) != ids.end();
    if (expanded.empty() && vlm.picture().beginToken >= 0 && hasPictureTokens)
        expanded = ids; // the processor's own expanded ids, given as the prompt
    if (expanded.empty()) {
        if (vlm.picture().beginToken >= 0)
            throw Error(ErrorCode::BadInput, "this model's processor frames each picture's tokens with text: give the "
                                             "expanded ids (input_ids_expanded) or a text",
                        model.info().source);
        // LLaVA's tower takes one size: every placeholder expands alike.
        expanded = vlm.expandPlaceholders(ids, out.pictures.front()->height, out.pictures.front()->width);
    }
    out.expanded = std::move(expanded);
    out.ids = std::move(ids);
    checkPictureTokens(vlm, out, pngPaths.front());
    return out;
}

std::vector<Token> pictureTokens(const AttentionModel& model, const PicturePrompt& prompt, const Tokenizer* tokenizer)
{
    const VisionLanguageModel& vlm = asVisionLanguage(model);
    std::vector<Token> out;
    int picture = 0, cell = 0;
    for (std::size_t i = 0; i < prompt.expanded.size(); ++i) {
        const std::int32_t id = prompt.expanded[i];
        if (id != vlm.picture().imageToken) {
            out.push_back({id, tokenizer ? tokenizer->pieceOf(id) : "<" + std::to_string(id) + ">", 0, 0});
            continue;
        }
        const auto& px = *prompt.pictures[static_cast<std::size_t>(std::min<int>(picture, static_cast<int>(prompt.pictures.size()) - 1))];
        const auto grid = vlm.imageGrid(px.height, px.width);
        const int r = cell / grid.second, c = cell % grid.second;
        out.push_back({id, "\u25A3" + (picture > 0 ? std::to_string(picture + 1) + " " : std::string()) + "r" +
                               std::to_string(r + 1) + "c" + std::to_string(c + 1), 0, 0});
        if (++cell == grid.first * grid.second) {
            cell = 0;
            ++picture;
        }
    }
    return out;
}

namespace {
std::size_t countOf(const std::string& text, const std::string& piece)
{
    std::size_t n = 0;
    for (auto at = text.find(piece); !piece.empty() && at != std::string::npos; at = text.find(piece, at + piece.size()))
        ++n;
    return n;
}

// Each `piece` of the text replaced by `with`.
std::string replacedAll(const std::string& text, const std::string& piece, const std::string& with)
{
    std::string out;
    std::size_t from = 0;
    for (auto at = text.find(piece); at != std::string::npos; at = text.find(piece, from)) {
        out += text.substr(from, at - from) + with;
        from = at + piece.size();
    }
    return out + text.substr(from);
}
} // namespace

PicturePrompt picturePromptOfText(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& modelFolder,
                                  const std::vector<std::string>& pngPaths, const std::string& text)
{
    const VisionLanguageModel& vlm = asVisionLanguage(model);
    const auto& v = vlm.picture();
    const bool framed = v.beginToken >= 0;
    const std::string placeholder = tokenizer.pieceOf(framed ? v.beginToken : v.imageToken);
    std::string typed = text;
    if (countOf(typed, placeholder) == 0) // one per picture where the text starts
        for (std::size_t p = 0; p < pngPaths.size(); ++p)
            typed = placeholder + typed;
    const auto ids = idsOf(tokenizer.encodeWithSpecial(typed));
    if (!framed)
        return picturePrompt(model, modelFolder, pngPaths, ids);
    // The processor's text: each <start_of_image> written out with the picture's tokens.
    std::string soft;
    for (int k = 0; k < vlm.imageTokens(v.tower.imageSize, v.tower.imageSize); ++k)
        soft += tokenizer.pieceOf(v.imageToken);
    const std::string full = "\n\n" + placeholder + soft + tokenizer.pieceOf(v.endToken) + "\n\n";
    return picturePrompt(model, modelFolder, pngPaths, ids, idsOf(tokenizer.encodeWithSpecial(replacedAll(typed, placeholder, full))));
}

PicturePrompt picturePromptOf(const AttentionModel& model, const std::string& modelFolder, const nlohmann::json& input,
                              const std::string& inputFile)
{
    if (!input.is_object())
        throw Error(ErrorCode::BadInput, "input is not a JSON object", inputFile);
    const auto dir = std::filesystem::path(inputFile).parent_path();
    std::vector<std::string> files;
    auto addFile = [&](const nlohmann::json& entry, const char* key) {
        const nlohmann::json* f = entry.is_object() && entry.contains("file") ? &entry["file"] : &entry;
        if (!f->is_string())
            throw Error(ErrorCode::BadInput, "must name a PNG file beside it (or {\"file\": ...})", inputFile, key);
        files.push_back((dir / f->get<std::string>()).string());
    };
    if (const auto images = input.find("images"); images != input.end() && images->is_array()) {
        for (const auto& entry : *images)
            addFile(entry, "images");
    } else if (const auto image = input.find("image"); image != input.end()) {
        addFile(*image, "image");
    } else {
        throw Error(ErrorCode::BadInput, "names no picture: \"image\" or \"images\"", inputFile, "image");
    }
    const auto ids = input.find("input_ids");
    if (ids == input.end())
        throw Error(ErrorCode::BadInput, "needs \"input_ids\": the prompt with a placeholder per picture", inputFile);
    std::vector<std::int32_t> expanded;
    if (asVisionLanguage(model).picture().beginToken >= 0 && input.contains("input_ids_expanded"))
        expanded = jsonIdList(input["input_ids_expanded"], inputFile, "input_ids_expanded");
    try {
        return picturePrompt(model, modelFolder, files, jsonIdList(*ids, inputFile, "input_ids"), std::move(expanded));
    } catch (const Error& e) {
        if (e.file().empty() || e.file() == model.info().source)
            throw Error(e.code(), e.message(), inputFile, e.key());
        throw;
    }
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

// The pictures as the processor left them: 8-bit after the resize and the crop (the first picture's, or each one's
// stacked when the input lists "images"), and the pixel values.
void addPictures(const PicturePrompt& prompt, bool listed, std::vector<OutputTensor>& out)
{
    const auto& first = *prompt.pictures.front();
    if (!listed) {
        out.push_back(imageTensor("resized", prompt.resized.front()));
        out.push_back(imageTensor("cropped", prompt.prepared.front()));
        out.push_back({"pixel_values", {3, first.height, first.width}, first.data});
        return;
    }
    // Stacked only when every picture has the first one's size (a shortest-edge resize keeps each aspect): else one
    // tensor per picture, resized.{p} and pixel_values.{p}.
    const auto sameSize = [&](int h, int w) { return h == first.height && w == first.width; };
    bool stack = true;
    for (std::size_t p = 0; p < prompt.pictures.size(); ++p)
        stack = stack && sameSize(prompt.pictures[p]->height, prompt.pictures[p]->width) &&
                prompt.resized[p].height == prompt.resized.front().height &&
                prompt.resized[p].width == prompt.resized.front().width;
    if (!stack) {
        for (std::size_t p = 0; p < prompt.pictures.size(); ++p) {
            const auto& px = *prompt.pictures[p];
            out.push_back(imageTensor(("resized." + std::to_string(p)).c_str(), prompt.resized[p]));
            out.push_back({"pixel_values." + std::to_string(p), {1, 3, px.height, px.width}, px.data});
        }
        return;
    }
    const auto n = static_cast<std::int64_t>(prompt.pictures.size());
    OutputTensor resized = imageTensor("resized", prompt.resized.front());
    OutputTensor pixels{"pixel_values", {n, 3, first.height, first.width}, {}};
    for (std::size_t p = 0; p < prompt.pictures.size(); ++p) {
        if (p > 0)
            resized.data.insert(resized.data.end(), prompt.resized[p].rgb.begin(), prompt.resized[p].rgb.end());
        pixels.data.insert(pixels.data.end(), prompt.pictures[p]->data.begin(), prompt.pictures[p]->data.end());
    }
    if (n > 1)
        resized.shape.insert(resized.shape.begin(), n);
    out.push_back(std::move(resized));
    out.push_back(std::move(pixels));
}

// The projector's input and output of every picture, stacked in prompt order.
void addPictureRows(const VisionLanguageModel& vlm, const PicturePrompt& prompt, std::vector<OutputTensor>& out)
{
    QuietObserver quiet;
    OutputTensor features{"image_features", {0, 0}, {}}, embeds{"image_embeds", {0, 0}, {}};
    for (const auto& picture : prompt.pictures) {
        const auto rows = vlm.pictureRows(*picture, quiet);
        auto stack = [](OutputTensor& t, const RowMatrix& m) {
            t.data.insert(t.data.end(), m.data(), m.data() + m.size());
            t.shape = {t.shape[0] + m.rows(), m.cols()};
        };
        stack(features, rows.features);
        stack(embeds, rows.embeds);
    }
    out.push_back(std::move(features));
    out.push_back(std::move(embeds));
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
    std::vector<OutputTensor> out;
    addPictures(prompt, input.contains("images"), out);
    dumpTower(vlm, *prompt.pictures.front(), out); // the first picture's tower, as the references record it
    addPictureRows(vlm, prompt, out);
    out.push_back(idTensor("input_ids", prompt.ids));
    out.push_back(idTensor("input_ids_expanded", prompt.expanded));
    std::vector<std::int32_t> positions(prompt.expanded.size()), types(prompt.expanded.size());
    std::iota(positions.begin(), positions.end(), 0);
    out.push_back(idTensor("position_ids", positions));
    for (std::size_t i = 0; i < types.size(); ++i)
        types[i] = prompt.expanded[i] == vlm.picture().imageToken ? 1 : 0;
    out.push_back(idTensor("token_type_ids", types));
    const RunOptions options = prompt.runOptions();
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
