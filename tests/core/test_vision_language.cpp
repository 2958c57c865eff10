// Vision-language decoders against the reference cases (Hugging Face's code on random weights): the picture prepared
// from its PNG, the tower, the projector, the placeholders' rows in the decoder, every layer and the greedy steps.
#include "image/preprocess.h"
#include "model/model_loader.h"
#include "model/llama.h"
#include "model/vision_language.h"
#include "run/layer_attention.h"
#include "run/picture_prompt.h"
#include "run/text_capture.h"
#include "run/reference_dump.h"
#include "tokenize/tokenizer.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace attnscope;

namespace {
// The decoder's tensors: its layers, the final norm and the logits.
bool decoderTensor(const std::string& name)
{
    return name.rfind("layer", 0) == 0 || name == "norm" || name == "logits" || name.rfind("gen.", 0) == 0;
}

// The case's decoder run on the reference's own image rows (image_embeds) in place of the placeholders: the decoder
// alone against the reference, as the READMEs' cross-checks do.
std::vector<core::OutputTensor> decoderOnReferenceRows(const core::AttentionModel& model,
                                                      const std::vector<std::int32_t>& expanded,
                                                      const core::OutputTensor& imageEmbeds, int pictures)
{
    const auto& vlm = dynamic_cast<const core::VisionLanguageModel&>(model);
    auto placed = std::make_shared<core::RunOptions::PlacedRows>();
    placed->token = vlm.picture().imageToken;
    placed->cols = static_cast<int>(imageEmbeds.shape[1]);
    placed->rows = imageEmbeds.data;
    placed->perPicture.assign(static_cast<std::size_t>(pictures), static_cast<int>(imageEmbeds.shape[0]) / pictures);
    placed->bidirectional = vlm.picture().bidirectionalPicture;
    core::RunOptions options;
    options.placed = placed;
    std::vector<core::OutputTensor> out;
    const auto observer = core::referenceObserver(model.info(), out);
    vlm.text().run(std::vector<std::vector<std::int32_t>>{expanded}, options, *observer);
    return out;
}

} // namespace

TEST_CASE("vision-language decoders reproduce their reference tensors from the picture and the prompt",
          "[vlm][reference]")
{
    const auto cases = test::pictureReferenceCases();
    CHECK(cases.size() >= 2); // llava-tiny, gemma3mm-tiny at least
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            REQUIRE(loaded.model->info().pictureToken >= 0);
            const auto inputPath = (dir / "input.json").string();
            const auto input = core::readJsonFile(inputPath);
            const auto out = core::dumpReference(*loaded.model, input, inputPath);
            // End to end, from the PNG: the picture side, the expanded prompt and the masks exactly within the
            // tolerances. The decoder's own tensors are held to them on the reference's image rows below: a
            // float32 difference of the tower's sums (1.6e-6 in Gemma 3's image_embeds) grows through a deep
            // decoder's peaked layers, so end to end they get 3 x the tolerance.
            const auto expected = test::loadAll((dir / "expected.safetensors").string());
            for (const auto& e : expected) {
                const auto it = std::find_if(out.begin(), out.end(), [&](const auto& t) { return t.name == e.name; });
                if (it == out.end()) {
                    FAIL_CHECK(e.name + ": missing from the output");
                    continue;
                }
                const auto tol = test::toleranceFor(e.name);
                const double widen = decoderTensor(e.name) && e.name.find("attn_mask") == std::string::npos ? 3 : 1;
                const auto c = test::compare(e, *it, tol.abs * widen, tol.rel * widen);
                UNSCOPED_INFO(c.describe(e.name));
                CHECK(c.ok);
            }
            // The decoder alone, on the reference's image rows: every tolerance as the README gives it.
            const auto embeds = std::find_if(expected.begin(), expected.end(),
                                             [](const auto& t) { return t.name == "image_embeds"; });
            REQUIRE(embeds != expected.end());
            const auto prompt = core::picturePromptOf(*loaded.model, dir.string(), input, inputPath);
            const auto alone = decoderOnReferenceRows(*loaded.model, prompt.expanded, *embeds,
                                                      static_cast<int>(prompt.pictures.size()));
            for (const auto& e : expected) {
                if (!decoderTensor(e.name) || e.name.find("attn_mask") != std::string::npos ||
                    e.name.rfind("gen.", 0) == 0)
                    continue;
                const auto it = std::find_if(alone.begin(), alone.end(), [&](const auto& t) { return t.name == e.name; });
                REQUIRE(it != alone.end());
                const auto tol = test::toleranceFor(e.name);
                const auto c = test::compare(e, *it, tol.abs, tol.rel);
                UNSCOPED_INFO("decoder alone: " + c.describe(e.name));
                CHECK(c.ok);
            }
        }
    }
}

TEST_CASE("a prompt with an image placeholder and no picture is refused by name", "[vlm]")
{
    for (const auto& dir : test::pictureReferenceCases()) {
        const auto loaded = core::loadModel(dir.string());
        const auto input = core::readJsonFile((dir / "input.json").string());
        const char* key = input.contains("input_ids_expanded") ? "input_ids_expanded" : "input_ids";
        const auto ids = core::jsonIdList(input[key], "input.json", key); // with the picture's own tokens
        struct Quiet final : core::AttentionObserver {
            void onLayer(const core::LayerView&) override {}
        } quiet;
        const std::string message = test::errorOf([&] { loaded.model->run({ids}, {}, quiet); });
        CHECK_THAT(message, Catch::Contains("no picture"));
        // Without a placeholder it is its text model: the prompt's text runs.
        std::vector<std::int32_t> text;
        for (const auto id : ids)
            if (id != loaded.model->info().pictureToken)
                text.push_back(id);
        CHECK_NOTHROW(loaded.model->run({text}, {}, quiet));
    }
}

TEST_CASE("the picture's rows change what the prompt's tokens attend to", "[vlm]")
{
    // A second, different picture moves the decoder's attention: the rows really come from the pixels.
    for (const auto& dir : test::pictureReferenceCases()) {
        const auto loaded = core::loadModel(dir.string());
        const auto inputPath = (dir / "input.json").string();
        const auto input = core::readJsonFile(inputPath);
        const auto prompt = core::picturePromptOf(*loaded.model, dir.string(), input, inputPath);
        auto flipped = std::make_shared<core::PixelValues>(*prompt.pictures.front());
        std::reverse(flipped->data.begin(), flipped->data.end());
        struct LastLayer final : core::AttentionObserver {
            std::vector<float> probs;
            void onLayer(const core::LayerView& l) override
            {
                probs.assign(l.attnProb, l.attnProb + static_cast<std::size_t>(l.heads) * l.qlen * l.klen);
            }
        } a, b;
        core::RunOptions options = prompt.runOptions();
        loaded.model->run({prompt.expanded}, options, a);
        options.image = flipped;
        loaded.model->run({prompt.expanded}, options, b);
        REQUIRE(a.probs.size() == b.probs.size());
        double most = 0;
        for (std::size_t i = 0; i < a.probs.size(); ++i)
            most = std::max(most, static_cast<double>(std::abs(a.probs[i] - b.probs[i])));
        CHECK(most > 1e-3);
    }
}

TEST_CASE("LLaVA's processor pads a picture to a square of the mean colour, centred", "[vlm][preprocess]")
{
    // A 3-wide, 1-high picture becomes 3 x 3: one row of padding above and below (offset (3 - 1) / 2 = 1).
    core::Image8 wide{1, 3, {10, 20, 30, 40, 50, 60, 70, 80, 90}};
    const std::uint8_t colour[3] = {122, 116, 104};
    const auto square = core::padToSquare(wide, colour);
    REQUIRE(square.height == 3);
    REQUIRE(square.width == 3);
    const std::vector<std::uint8_t> expected{122, 116, 104, 122, 116, 104, 122, 116, 104, //
                                             10,  20,  30,  40,  50,  60,  70,  80,  90,  //
                                             122, 116, 104, 122, 116, 104, 122, 116, 104};
    CHECK(square.rgb == expected);
    // A 1-wide, 2-high picture: offset (2 - 1) / 2 = 0, the padding on the right.
    core::Image8 tall{2, 1, {1, 2, 3, 4, 5, 6}};
    const auto padded = core::padToSquare(tall, colour);
    CHECK(padded.rgb == std::vector<std::uint8_t>{1, 2, 3, 122, 116, 104, 4, 5, 6, 122, 116, 104});
    // The colour is Python's int(255 * mean) of the processor's image_mean; other processors' do_pad is not this.
    const nlohmann::json llava = {{"image_processor_type", "LlavaImageProcessor"}, {"do_pad", true},
                                  {"size", {{"shortest_edge", 28}}}, {"image_mean", {0.48145466, 0.4578275, 0.40821073}}};
    const auto p = core::parsePreprocessor(llava, "preprocessor_config.json");
    CHECK(p.padToSquare);
    CHECK(std::vector<int>(p.padColour, p.padColour + 3) == std::vector<int>{122, 116, 104});
    auto clip = llava;
    clip["image_processor_type"] = "CLIPImageProcessor";
    CHECK_FALSE(core::parsePreprocessor(clip, "preprocessor_config.json").padToSquare);
}

TEST_CASE("a picture prompt tokenizes and expands as the reference's processor did", "[vlm][tokenizer]")
{
    // The reference's slow tokenizer (added tokens from added_tokens.json / tokenizer_config.json, legacy false: no
    // prefix space after a special token) made input.json's input_ids from its prompt, and its processor the expanded
    // ids (LLaVA: <image> repeated; Gemma 3: "\n\n<start_of_image>", the soft tokens, "<end_of_image>\n\n").
    for (const auto& dir : test::pictureReferenceCases()) {
        const auto input = core::readJsonFile((dir / "input.json").string());
        if (!input.contains("prompt"))
            continue;
        const auto tok = core::loadTokenizer(dir.string());
        std::vector<int> ids;
        for (const auto& t : tok->encodeWithSpecial(input["prompt"].get<std::string>()))
            ids.push_back(t.id);
        CHECK(ids == input["input_ids"].get<std::vector<int>>());
        std::vector<std::string> files;
        if (input.contains("images"))
            for (const auto& image : input["images"])
                files.push_back((dir / image["file"].get<std::string>()).string());
        else
            files.push_back((dir / input["image"]["file"].get<std::string>()).string());
        const auto loaded = core::loadModel(dir.string());
        const auto prompt = core::picturePromptOfText(*loaded.model, *tok, dir.string(), files,
                                                      input["prompt"].get<std::string>());
        CHECK(prompt.expanded == input["input_ids_expanded"].get<std::vector<std::int32_t>>());
    }
}

TEST_CASE("a captured picture prompt gives the reference's attention at every layer", "[vlm][capture]")
{
    // What the window, Python and the CLI's attention read: the capture of the expanded prompt with its pictures,
    // each site recomputed from what the capture kept (Gemma 3's picture blocks included).
    for (const auto& dir : test::pictureReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto inputPath = (dir / "input.json").string();
            const auto prompt = core::picturePromptOf(*loaded.model, dir.string(), core::readJsonFile(inputPath), inputPath);
            core::CaptureOptions options;
            options.run = prompt.runOptions();
            options.segmentLen = static_cast<int>(prompt.expanded.size());
            const auto capture = core::captureText(*loaded.model, core::pictureTokens(*loaded.model, prompt, nullptr), options);
            REQUIRE(capture->tokens.size() == prompt.expanded.size());
            const auto expected = test::loadAll((dir / "expected.safetensors").string());
            for (int l = 0; l < loaded.model->info().siteCount(); ++l) {
                const auto a = core::layerAttention(*loaded.model, *capture, 0, l);
                const std::string name = "layer" + std::to_string(l) + ".attn_prob";
                const auto e = std::find_if(expected.begin(), expected.end(), [&](const auto& t) { return t.name == name; });
                REQUIRE(e != expected.end());
                const core::OutputTensor got{name, {a.heads, a.queries, a.keys}, a.values};
                const auto c = test::compare(*e, got, 3e-5, 0); // end to end: 3 x the tolerance, as above
                INFO(c.describe(name));
                CHECK(c.ok);
            }
        }
    }
}

TEST_CASE("a vision-language folder opens in transformers' newer layout too", "[vlm][families]")
{
    // Since transformers 4.52: model.vision_tower.*, model.multi_modal_projector.*, model.language_model.* and lm_head.*.
    for (const auto& dir : test::pictureReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            test::TempDir tmp;
            for (const auto& e : std::filesystem::directory_iterator(dir))
                if (e.path().filename() != "model.safetensors" && e.is_regular_file())
                    std::filesystem::copy_file(e.path(), tmp / e.path().filename());
            auto weights = test::loadAll((dir / "model.safetensors").string());
            for (auto& w : weights) {
                for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
                         {"language_model.model.", "model.language_model."},
                         {"language_model.lm_head.", "lm_head."},
                         {"vision_tower.", "model.vision_tower."},
                         {"multi_modal_projector.", "model.multi_modal_projector."}})
                    if (w.name.rfind(from, 0) == 0) {
                        w.name = to + w.name.substr(from.size());
                        break;
                    }
            }
            core::writeSafetensors((tmp / "model.safetensors").string(), weights);
            const auto loaded = core::loadModel(tmp.path().string());
            const auto inputPath = (tmp / "input.json").string();
            const auto moved = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
            const auto original = core::loadModel(dir.string());
            const auto same = core::dumpReference(*original.model, core::readJsonFile((dir / "input.json").string()),
                                                  (dir / "input.json").string());
            REQUIRE(moved.size() == same.size());
            for (std::size_t i = 0; i < moved.size(); ++i) {
                INFO(moved[i].name);
                CHECK(moved[i].data == same[i].data); // the same numbers: only the names moved
            }
        }
    }
}

TEST_CASE("pictures of different shapes in one dump get a tensor each, each of its own shape", "[vlm]")
{
    // LLaVA's shortest-edge resize keeps each picture's aspect: 320 x 240 and 240 x 240 resize to 37 x 28 and 28 x 28,
    // which one stacked tensor cannot hold.
    const auto dir = test::testdataDir() / "llava-tiny";
    const auto square = test::testdataDir() / "qwen25vl-tiny" / "image.png";
    if (!std::filesystem::exists(dir) || !std::filesystem::exists(square))
        return;
    test::TempDir tmp;
    std::filesystem::copy_file(square, tmp / "square.png");
    std::filesystem::copy_file(dir / "image.png", tmp / "wide.png");
    auto input = core::readJsonFile((dir / "input.json").string());
    input.erase("image");
    input.erase("generation");
    input["images"] = {{{"file", "wide.png"}}, {{"file", "square.png"}}};
    auto ids = input["input_ids"].get<std::vector<int>>();
    ids.insert(ids.begin() + 1, 250); // a second <image>
    input["input_ids"] = ids;
    const auto path = (tmp / "input.json").string();
    const auto loaded = core::loadModel(dir.string());
    const auto out = core::dumpReference(*loaded.model, input, path);
    std::map<std::string, core::Shape> shapes;
    for (const auto& t : out) {
        CHECK(static_cast<std::size_t>(core::shapeNumel(t.shape)) == t.data.size()); // every tensor whole
        shapes[t.name] = t.shape;
    }
    CHECK(shapes["resized.0"] == core::Shape{28, 37, 3});
    CHECK(shapes["resized.1"] == core::Shape{28, 28, 3});
    CHECK(shapes["pixel_values.1"] == core::Shape{1, 3, 28, 28});
    CHECK(shapes["image_embeds"] == core::Shape{98, 48}); // both pictures' rows, stacked
}
