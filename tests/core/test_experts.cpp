// Mixture-of-experts routing: a text's routing recomputed from its capture equals the reference's router numbers,
// and a corpus load counts every token's chosen experts.
#include "analysis/expert_routing.h"
#include "analysis/head_atlas.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

using namespace attnscope;

namespace {
std::vector<float> softmaxRows(std::vector<float> v, std::size_t width)
{
    for (std::size_t r = 0; r < v.size() / width; ++r) {
        float* row = v.data() + r * width;
        const float top = *std::max_element(row, row + width);
        double sum = 0;
        for (std::size_t k = 0; k < width; ++k)
            sum += std::exp(static_cast<double>(row[k] - top));
        for (std::size_t k = 0; k < width; ++k)
            row[k] = static_cast<float>(std::exp(static_cast<double>(row[k] - top)) / sum);
    }
    return v;
}
} // namespace

TEST_CASE("a text's expert routing, recomputed from its capture, is the reference's", "[experts][reference]")
{
    int cases = 0;
    for (const auto& dir : test::referenceCases()) {
        const auto loaded = core::loadModel(dir.string());
        if (!loaded.model->info().can.experts)
            continue;
        ++cases;
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto ids = input["token_ids"].get<std::vector<std::int32_t>>();
            std::vector<core::Token> tokens;
            for (const auto id : ids)
                tokens.push_back(core::Token{id, std::to_string(id), 0, 0});
            const auto capture = core::captureText(*loaded.model, tokens, {});
            const auto r = core::textRouting(*loaded.model, *capture, 0);
            core::SafetensorsFile expected((dir / "expected.safetensors").string());
            REQUIRE(r.layers == loaded.model->info().layers);
            for (int l = 0; l < r.layers; ++l) {
                const auto* routed = expected.find("layer" + std::to_string(l) + ".router_probs");
                const auto* logits = expected.find("layer" + std::to_string(l) + ".router_logits");
                if (!routed && !logits) { // a dense layer among the routed ones (DeepSeek's first): no routing to show
                    CHECK(r.probs[static_cast<std::size_t>(l)].empty());
                    continue;
                }
                // Some references give the router's logits only (Granite 4.0-H): their softmax per token.
                const auto probs = routed ? core::readAsFloat(expected, *routed) : softmaxRows(core::readAsFloat(expected, *logits),
                                                                                             static_cast<std::size_t>(logits->shape[1]));
                const auto chosen = core::readAsFloat(expected, *expected.find("layer" + std::to_string(l) + ".expert_ids"));
                REQUIRE(probs.size() == r.probs[static_cast<std::size_t>(l)].size());
                for (std::size_t i = 0; i < probs.size(); ++i)
                    REQUIRE(r.probs[static_cast<std::size_t>(l)][i] == Approx(probs[i]).margin(1e-5));
                for (std::size_t i = 0; i < chosen.size(); ++i)
                    REQUIRE(r.ids[static_cast<std::size_t>(l)][i] == static_cast<int>(chosen[i]));
                CHECK(r.chose(l, 0, r.ids[static_cast<std::size_t>(l)][0]));
            }
            // Over the same tokens in two chunks: every token goes to `used` experts in every layer.
            const auto load = core::expertLoad(*loaded.model, ids, 7);
            CHECK(load.tokens == static_cast<std::int64_t>(ids.size()));
            for (int l = 0; l < load.layers; ++l) {
                double sum = 0;
                for (int e = 0; e < load.experts; ++e)
                    sum += load.share[static_cast<std::size_t>(l) * load.experts + e];
                const bool routed = expected.find("layer" + std::to_string(l) + ".router_probs") != nullptr ||
                                    expected.find("layer" + std::to_string(l) + ".router_logits") != nullptr;
                CHECK(sum == Approx(routed ? load.used : 0));
            }
        }
    }
    CHECK(cases >= 3); // qwen3moe-tiny, olmoe-tiny, deepseek2-tiny
    // A dense model has no router to show, and says so.
    const auto dense = core::loadModel((test::testdataDir() / "llama-tiny").string());
    const std::vector<std::int32_t> few{1, 2, 3};
    CHECK_THROWS_WITH(core::expertLoad(*dense.model, few, 8), Catch::Contains("no mixture-of-experts"));
}

TEST_CASE("the atlas's learned-sink column is the share of each row the reference leaves to the sink", "[experts][atlas][reference]")
{
    const auto dir = test::testdataDir() / "gptoss-tiny";
    const auto loaded = core::loadModel(dir.string());
    const auto& info = loaded.model->info();
    const auto input = core::readJsonFile((dir / "input.json").string());
    const auto ids = input["token_ids"].get<std::vector<std::int32_t>>();
    std::vector<core::Token> tokens;
    for (const auto id : ids)
        tokens.push_back(core::Token{id, std::to_string(id), 0, 0});
    const auto scores = core::tokenAttentionScores(*core::captureText(*loaded.model, tokens, {}));
    REQUIRE(scores.size() == static_cast<std::size_t>(info.layers) * info.heads);
    core::SafetensorsFile expected((dir / "expected.safetensors").string());
    const int T = static_cast<int>(ids.size());
    for (int l = 0; l < info.layers; ++l) {
        const auto p = core::readAsFloat(expected, *expected.find("layer" + std::to_string(l) + ".attn_prob"));
        for (int h = 0; h < info.heads; ++h) {
            double mass = 0; // 1 - a row's probabilities over the real tokens, averaged over the rows
            for (int i = 0; i < T; ++i) {
                double row = 0;
                for (int j = 0; j < T; ++j)
                    row += p[(static_cast<std::size_t>(h) * T + i) * T + j];
                mass += 1.0 - row;
            }
            CHECK(scores[static_cast<std::size_t>(l) * info.heads + h].learnedSink == Approx(mass / T).margin(1e-5));
        }
    }
    // A model without sinks has no such number.
    const auto dense = core::loadModel((test::testdataDir() / "llama-tiny").string());
    const auto plain = core::tokenAttentionScores(*core::captureText(*dense.model, std::vector<core::Token>{{1, "a", 0, 0}, {2, "b", 0, 0}, {3, "c", 0, 0}}, {}));
    CHECK(std::isnan(plain.front().learnedSink));
}

TEST_CASE("gpt-oss's Hugging Face MXFP4 experts, kept packed, give the reference's outputs", "[experts][reference]")
{
    // The blocks and scales hold exactly the dense checkpoint's values (its README), so a float32 forward on them must
    // reproduce expected.safetensors, as the dense folder does.
    const auto dir = test::testdataDir() / "gptoss-tiny";
    const auto packed = core::loadModel((dir / "mxfp4").string());
    CHECK(packed.model->info().weightTypes.find("U8") != std::string::npos);
    CHECK(packed.model->info().parameterCount == core::loadModel(dir.string()).model->info().parameterCount);
    const auto inputPath = (dir / "input.json").string();
    const auto out = core::dumpReference(*packed.model, core::readJsonFile(inputPath), inputPath);
    for (const auto& p : test::referenceMismatches((dir / "expected.safetensors").string(), out))
        FAIL_CHECK(p);
}

TEST_CASE("Mixtral's experts: identical experts renormalised over the chosen ones are the dense model", "[experts][reference]")
{
    // llama-tiny with its MLP copied into three experts behind a random router: the chosen experts' weights are
    // renormalised to sum to one, so every token's output is the dense MLP's and the reference's outputs must hold.
    const auto dir = test::testdataDir() / "llama-tiny";
    test::TempDir tmp;
    auto config = core::readJsonFile((dir / "config.json").string());
    config["model_type"] = "mixtral";
    config["num_local_experts"] = 3;
    config["num_experts_per_tok"] = 2;
    std::ofstream((tmp / "config.json").string()) << config.dump();
    const int C = config["hidden_size"].get<int>();
    std::vector<core::OutputTensor> weights;
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto& w : test::loadAll((dir / "model.safetensors").string())) {
        const auto at = w.name.find(".mlp.");
        if (at == std::string::npos) {
            weights.push_back(std::move(w));
            continue;
        }
        const std::string layer = w.name.substr(0, at), role = w.name.substr(at + 5); // gate_proj.weight, ...
        const std::string which = role.rfind("gate_proj", 0) == 0 ? "w1" : role.rfind("up_proj", 0) == 0 ? "w3" : "w2";
        for (int e = 0; e < 3; ++e)
            weights.push_back({layer + ".block_sparse_moe.experts." + std::to_string(e) + "." + which + ".weight", w.shape, w.data});
        if (which == "w1") {
            core::OutputTensor router{layer + ".block_sparse_moe.gate.weight", {3, C}, std::vector<float>(static_cast<std::size_t>(3 * C))};
            for (auto& v : router.data)
                v = nd(rng);
            weights.push_back(std::move(router));
        }
    }
    core::writeSafetensors((tmp / "model.safetensors").string(), weights);
    const auto moe = core::loadModel(tmp.path().string());
    REQUIRE(moe.model->info().can.experts == 3);
    const auto inputPath = (dir / "input.json").string();
    const auto out = core::dumpReference(*moe.model, core::readJsonFile(inputPath), inputPath);
    for (const auto& p : test::referenceMismatches((dir / "expected.safetensors").string(), out))
        FAIL_CHECK(p);
    // The router really chose: two experts a token, weights summing to one.
    bool routed = false;
    for (const auto& t : out)
        if (t.name == "layer0.expert_weights") {
            routed = true;
            for (std::size_t i = 0; i + 1 < t.data.size(); i += 2)
                CHECK(t.data[i] + t.data[i + 1] == Approx(1.0f).margin(1e-6));
        }
    CHECK(routed);
}
