// The family table and the decoder quirks that no reference case exercises: LongRoPE's frequencies (the published
// Hugging Face formula, computed here independently), default sliding-layer patterns, unknown types named.
#include "model/families.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
// A copy of a reference case with its config.json changed by `edit`.
fs::path editedCase(const test::TempDir& tmp, const std::string& name, const std::function<void(nlohmann::json&)>& edit)
{
    static int copies = 0;
    const auto dir = tmp / (name + "-" + std::to_string(copies++));
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(test::testdataDir() / name))
        if (e.path().filename() == "model.safetensors")
            fs::copy_file(e.path(), dir / "model.safetensors");
    auto cfg = core::readJsonFile((test::testdataDir() / name / "config.json").string());
    edit(cfg);
    std::ofstream(dir / "config.json") << cfg.dump();
    return dir;
}
} // namespace

TEST_CASE("every model_type and GGUF architecture opens through exactly one row of the family table", "[families]")
{
    std::map<std::string, int> types, archs;
    for (const auto& row : core::familyTable()) {
        for (const auto& t : row.modelTypes)
            ++types[t];
        for (const auto& a : row.ggufArchitectures)
            ++archs[a];
        CHECK(std::string(core::familyName(row.id)) == row.name);
    }
    for (const auto& [t, n] : types)
        CHECK(n == 1);
    for (const auto& [a, n] : archs)
        CHECK(n == 1);
    try {
        core::familyOfModelType("mamba", "config.json");
        FAIL("mamba is no family here");
    } catch (const core::Error& e) {
        CHECK(e.code() == core::ErrorCode::UnknownModelType);
        for (const auto& [t, n] : types)
            CHECK(std::string(e.what()).find(t) != std::string::npos);
    }
}

TEST_CASE("Phi-3 LongRoPE: short factors up to the original context, the attention factor from the lengths", "[families][rope]")
{
    test::TempDir tmp;
    const int pairs = 6; // phi3-tiny: head_dim 12, all of it rotates
    std::vector<double> shortF, longF;
    for (int i = 0; i < pairs; ++i) {
        shortF.push_back(1.0 + 0.25 * i);
        longF.push_back(2.0 + 1.5 * i);
    }
    const auto dir = editedCase(tmp, "phi3-tiny", [&](nlohmann::json& c) {
        c["max_position_embeddings"] = 16384;
        c["original_max_position_embeddings"] = 4096;
        c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", shortF}, {"long_factor", longF}};
    });
    const auto m = core::loadModel(dir.string());
    const auto& f = m.model->info().rotaryFrequencies;
    REQUIRE(f.size() == static_cast<std::size_t>(pairs));
    for (int i = 0; i < pairs; ++i) {
        // Hugging Face: inv_freq = 1 / (ext_factors * base ** (arange(0, dim, 2) / dim)), float32.
        const float base = static_cast<float>(std::pow(10000.0, static_cast<double>(static_cast<float>(2 * i) / 12.0f)));
        CHECK(f[static_cast<std::size_t>(i)] == Approx(1.0f / (static_cast<float>(shortF[static_cast<std::size_t>(i)]) * base)).epsilon(1e-6));
    }
    CHECK(m.model->info().positions.find("LongRoPE") != std::string::npos);
    // Factor lists that do not cover the rotated pairs are refused by name.
    const auto bad = editedCase(tmp, "phi3-tiny", [&](nlohmann::json& c) {
        c["rope_scaling"] = {{"type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
    });
    try {
        core::loadModel(bad.string());
        FAIL("one factor for six pairs");
    } catch (const core::Error& e) {
        CHECK(std::string(e.what()).find("rope_scaling") != std::string::npos);
        CHECK(std::string(e.what()).find("6 pairs") != std::string::npos);
    }
}

TEST_CASE("Gemma without layer_types: Gemma 2 alternates, Gemma 3 has five local layers to one global", "[families]")
{
    test::TempDir tmp;
    for (const auto& [name, expectLocal] : std::vector<std::pair<std::string, std::vector<bool>>>{
             {"gemma2-tiny", {true, false, true}}, {"gemma3-tiny", {true, true, true, true, true, false}}}) {
        const auto dir = editedCase(tmp, name, [](nlohmann::json& c) {
            c.erase("layer_types");
            c.erase("sliding_window_pattern");
        });
        const auto m = core::loadModel(dir.string());
        const auto& rules = m.model->info().layerRules;
        REQUIRE(rules.size() == expectLocal.size());
        for (std::size_t l = 0; l < rules.size(); ++l) {
            INFO(name << " layer " << l);
            CHECK((rules[l].window > 0) == expectLocal[l]);
        }
        CHECK(rules[0].softCap == (name == "gemma2-tiny" ? 4.0f : 0.0f));
        fs::remove_all(dir);
    }
}

TEST_CASE("a multimodal Gemma 3 folder (model_type gemma3) opens as its text model, in both of transformers' layouts",
          "[families][gemma3]")
{
    const auto ref = test::testdataDir() / "gemma3-tiny";
    const auto input = core::readJsonFile((ref / "input.json").string());
    const auto expected = (ref / "expected.safetensors").string();
    const auto textConfig = core::readJsonFile((ref / "config.json").string());
    const auto weights = test::loadAll((ref / "model.safetensors").string());
    test::TempDir tmp;
    // Gemma3ForConditionalGeneration as transformers wrote it before 4.52 (language_model.model.*) and since
    // (model.language_model.*), without a vision_config (with one it reads pictures: test_vision_language.cpp).
    for (const std::string layout : {"language_model.model.", "model.language_model."}) {
        DYNAMIC_SECTION(layout)
        {
            const auto dir = tmp / (layout + "case");
            fs::create_directories(dir);
            nlohmann::json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                                     {"model_type", "gemma3"},
                                     {"text_config", textConfig}};
            std::ofstream(dir / "config.json") << config.dump();
            auto nested = weights;
            for (auto& w : nested) {
                REQUIRE(w.name.rfind("model.", 0) == 0);
                w.name = layout + w.name.substr(6);
            }
            core::writeSafetensors((dir / "model.safetensors").string(), nested);
            const auto m = core::loadModel(dir.string());
            CHECK(m.model->info().layerRules.size() == 6);
            CHECK(test::referenceMismatches(expected, core::dumpReference(*m.model, input, "input.json")).empty());
        }
    }
}

TEST_CASE("Gemma 3's text settings a config leaves out take its configuration class's defaults", "[families][gemma3]")
{
    // A text_config as the 4B model's: sizes, window and rope scaling only.
    const nlohmann::json config = {
        {"model_type", "gemma3"},
        {"text_config",
         {{"hidden_size", 2560}, {"intermediate_size", 10240}, {"model_type", "gemma3_text"}, {"num_hidden_layers", 34},
          {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}}, {"sliding_window", 1024}}}};
    const auto c = std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json"));
    CHECK(c.family == core::ModelFamily::Gemma3);
    CHECK(c.vocabSize == 262208);
    CHECK(c.nHead == 8);
    CHECK(c.nKvHead == 4);
    CHECK(c.headDim == 256);
    CHECK(c.rope.theta == 1e6);
    CHECK(c.localRopeTheta == 1e4);
    CHECK(c.queryPreAttnScalar == 256);
    CHECK(c.slidingWindow == 1024);
    REQUIRE(c.slidingLayers.size() == 34);
    CHECK(c.slidingLayers[4]);
    CHECK_FALSE(c.slidingLayers[5]);
    CHECK(c.tieEmbeddings);

    try {
        core::parseModelConfig(nlohmann::json{{"model_type", "gemma3"}}, "config.json");
        FAIL("a gemma3 config without text_config opened");
    } catch (const core::Error& e) {
        CHECK(e.code() == core::ErrorCode::BadConfig);
        CHECK(std::string(e.what()).find("text_config") != std::string::npos);
    }
}

TEST_CASE("Granite's and Granite-MoE's configs as their configuration classes read them, GGUF as llama.cpp reads it",
          "[families][granite]")
{
    // IBM's granite-3.0-3b-a800m config.json (a head_dim key added: Granite's attention does not read it).
    nlohmann::json config = {{"model_type", "granitemoe"},      {"hidden_size", 1536},          {"intermediate_size", 512},
                             {"num_attention_heads", 24},       {"num_key_value_heads", 8},     {"num_hidden_layers", 32},
                             {"num_local_experts", 40},         {"num_experts_per_tok", 8},     {"vocab_size", 49155},
                             {"embedding_multiplier", 12.0},    {"attention_multiplier", 0.015625},
                             {"residual_multiplier", 0.22},     {"logits_scaling", 6.0},        {"rms_norm_eps", 1e-6},
                             {"tie_word_embeddings", true},     {"head_dim", 128},              {"shared_intermediate_size", 64}};
    auto c = std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json"));
    CHECK(c.family == core::ModelFamily::Granite);
    CHECK(c.headDim == 64);
    CHECK(c.experts == 40);
    CHECK(c.expertsUsed == 8);
    CHECK(c.expertFfn == 512);
    CHECK(c.normTopK);      // a softmax over the chosen logits
    CHECK(c.fusedGateUp);   // input_linear: gate rows, then up rows
    CHECK(c.sharedFfn == 0); // GraniteMoe's class has no shared expert, whatever the file says
    CHECK(c.embeddingScale == 12.0f);
    CHECK(c.scoreScale() == 0.015625f);
    CHECK(c.residualScale == 0.22f);
    CHECK(c.logitScale == 6.0f);
    config["model_type"] = "granitemoeshared";
    CHECK(std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json")).sharedFfn == 64);
    // Dense Granite: the same multipliers and head size, Llama's MLP (no experts read, nothing fused).
    config["model_type"] = "granite";
    const auto dense = std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json"));
    CHECK(dense.family == core::ModelFamily::Granite);
    CHECK(dense.experts == 0);
    CHECK_FALSE(dense.fusedGateUp);
    CHECK(dense.headDim == 64);
    CHECK(dense.scoreScale() == 0.015625f);
    CHECK(dense.logitScale == 6.0f);
    config["model_type"] = "granitemoe";
    // Left out, the multipliers are the class's defaults: 1, also for the scores (not 1/sqrt(head size)).
    for (const char* key : {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"})
        config.erase(key);
    c = std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json"));
    CHECK(c.scoreScale() == 1.0f);
    CHECK(c.embeddingScale == 1.0f);
    CHECK(c.residualScale == 1.0f);
    CHECK(c.logitScale == 1.0f);
    // A multiplier that would silence or blow up the stream is refused, naming its key.
    for (const char* key : {"residual_multiplier", "logits_scaling", "embedding_multiplier", "attention_multiplier"}) {
        auto bad = config;
        bad[key] = 0.0;
        try {
            core::parseModelConfig(bad, "config.json");
            FAIL(key << " 0 was accepted");
        } catch (const core::Error& e) {
            CHECK(e.code() == core::ErrorCode::BadConfig);
            CHECK(std::string(e.what()).find(key) != std::string::npos);
        }
    }

    // More experts chosen than there are: refused by the key (the check every MoE family's reader shares).
    for (const char* type : {"granitemoe", "mixtral", "olmoe", "gpt_oss"}) {
        auto bad = config;
        bad["model_type"] = type;
        bad["num_experts"] = 40;
        bad["num_experts_per_tok"] = 41;
        CHECK_THROWS_WITH(core::parseModelConfig(bad, "config.json"),
                          Catch::Contains("num_experts_per_tok") && Catch::Contains("chooses 41 experts per token, more than the 40"));
    }
    // gpt-oss's original key for the count (the SIGSEGV of issue 59: it was read without the check), and its default.
    auto gptOss = config;
    gptOss["model_type"] = "gpt_oss";
    gptOss.erase("num_experts_per_tok");
    gptOss["experts_per_token"] = 41;
    CHECK_THROWS_WITH(core::parseModelConfig(gptOss, "config.json"),
                      Catch::Contains("experts_per_token") && Catch::Contains("more than the 40"));
    gptOss.erase("experts_per_token");
    CHECK(std::get<core::LlamaConfig>(core::parseModelConfig(gptOss, "config.json")).expertsUsed == 4);
    gptOss["num_local_experts"] = 3;
    CHECK_THROWS_WITH(core::parseModelConfig(gptOss, "config.json"), Catch::Contains("chooses 4 experts per token"));

    // The GGUF: multipliers under llama.cpp's keys, experts split by its converter, the read-out tied.
    const auto dir = test::projectDataDir() / "reference" / "granitemoe-tiny";
    const auto gguf = core::loadModel((dir / "model-f32.gguf").string());
    const auto hf = core::loadModel(dir.string());
    const auto& info = gguf.model->info();
    CHECK(info.family == core::ModelFamily::Granite);
    CHECK(info.layerRules.at(0).scale == 0.2f);
    CHECK(info.can.experts == 8);
    CHECK(info.positions.find("logits / 4") != std::string::npos);
    CHECK(gguf.model->info().parameterCount == hf.model->info().parameterCount);
}
