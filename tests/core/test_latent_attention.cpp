// DeepSeek-V2's latent attention beyond what its reference case runs directly: a query latent (q_lora_rank) and
// group-limited routing, each checked against the reference through an identity that holds by construction, and the
// rotary and content terms as the views use them.
#include "analysis/attention_grid.h"
#include "analysis/expert_routing.h"
#include "analysis/relpos_scan.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
const fs::path kCase = test::testdataDir() / "deepseek2-tiny";

core::OutputTensor* named(std::vector<core::OutputTensor>& v, const std::string& name)
{
    for (auto& t : v)
        if (t.name == name)
            return &t;
    return nullptr;
}

// The case's folder with its config changed by `edit` and its weights by `rewrite`, in `dir`.
void variant(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit,
             const std::function<void(std::vector<core::OutputTensor>&, const nlohmann::json&)>& rewrite)
{
    auto config = core::readJsonFile((kCase / "config.json").string());
    edit(config);
    std::ofstream((dir / "config.json").string()) << config.dump(1);
    auto weights = test::loadAll((kCase / "model.safetensors").string());
    rewrite(weights, config);
    core::writeSafetensors((dir / "model.safetensors").string(), weights);
}

std::vector<std::string> mismatches(const fs::path& dir)
{
    const auto loaded = core::loadModel(dir.string());
    const auto inputPath = (kCase / "input.json").string();
    const auto out = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
    return test::referenceMismatches((kCase / "expected.safetensors").string(), out);
}
} // namespace

TEST_CASE("a query latent computes the queries the reference's direct projection does", "[latent][reference]")
{
    // q = q_b(RMSNorm(q_a(a)) * g) with q_a = diag(3 / w), g = 2 and q_b = q_proj diag(w) / 2, where w is the layer's
    // input norm: q_a(a) is three times the normalised hidden row, its norm that row again (up to eps), so the
    // queries are q_proj(a) and the outputs must be the reference's. Without the norm, or without its weight, they
    // are off by a factor of 3 or 2.
    test::TempDir dir;
    variant(
        dir.path(), [](nlohmann::json& c) { c["q_lora_rank"] = c["hidden_size"]; },
        [](std::vector<core::OutputTensor>& w, const nlohmann::json& c) {
            const int C = c["hidden_size"].get<int>(), layers = c["num_hidden_layers"].get<int>();
            for (int l = 0; l < layers; ++l) {
                const std::string p = "model.layers." + std::to_string(l) + ".";
                const auto norm = named(w, p + "input_layernorm.weight")->data;
                auto* q = named(w, p + "self_attn.q_proj.weight");
                core::OutputTensor a{p + "self_attn.q_a_proj.weight", {C, C}, std::vector<float>(static_cast<std::size_t>(C) * C, 0.0f)};
                for (int i = 0; i < C; ++i)
                    a.data[static_cast<std::size_t>(i) * C + i] = 3.0f / norm[static_cast<std::size_t>(i)];
                core::OutputTensor b{p + "self_attn.q_b_proj.weight", q->shape, q->data};
                for (std::size_t r = 0; r < b.data.size() / C; ++r)
                    for (int i = 0; i < C; ++i)
                        b.data[r * C + i] *= norm[static_cast<std::size_t>(i)] / 2.0f;
                core::OutputTensor n{p + "self_attn.q_a_layernorm.weight", {C}, std::vector<float>(static_cast<std::size_t>(C), 2.0f)};
                q->name = p + "unused.q_proj.weight"; // a query latent model has no q_proj
                w.push_back(std::move(a));
                w.push_back(std::move(b));
                w.push_back(std::move(n));
            }
        });
    const auto problems = mismatches(dir.path());
    for (const auto& p : problems)
        FAIL_CHECK(p);
    CHECK(core::loadModel(dir.path().string()).model->info().positions.find("query latent 32") != std::string::npos);
}

TEST_CASE("group-limited routing keeps the chosen experts inside the best groups", "[latent][experts]")
{
    const auto input = core::readJsonFile((kCase / "input.json").string());
    const auto ids = input["token_ids"].get<std::vector<std::int32_t>>();
    std::vector<core::Token> tokens;
    for (const auto id : ids)
        tokens.push_back(core::Token{id, std::to_string(id), 0, 0});
    auto routingWith = [&](int groups, int used) {
        test::TempDir dir;
        variant(
            dir.path(),
            [&](nlohmann::json& c) {
                c["topk_method"] = "group_limited_greedy";
                c["n_group"] = groups;
                c["topk_group"] = used;
            },
            [](std::vector<core::OutputTensor>&, const nlohmann::json&) {});
        const auto loaded = core::loadModel(dir.path().string());
        return core::textRouting(*loaded.model, *core::captureText(*loaded.model, tokens, {}), 0);
    };
    SECTION("every group kept is plain top-k: the reference's choices")
    {
        core::SafetensorsFile expected((kCase / "expected.safetensors").string());
        const auto r = routingWith(2, 2);
        for (int l = 1; l < r.layers; ++l) {
            const auto chosen = core::readAsFloat(expected, *expected.find("layer" + std::to_string(l) + ".expert_ids"));
            for (std::size_t i = 0; i < chosen.size(); ++i)
                REQUIRE(r.ids[static_cast<std::size_t>(l)][i] == static_cast<int>(chosen[i]));
        }
    }
    SECTION("one group of two: both experts from the group holding the most probable expert")
    {
        const auto r = routingWith(2, 1);
        for (int l = 1; l < r.layers; ++l)
            for (int t = 0; t < r.tokens; ++t) {
                const auto& p = r.probs[static_cast<std::size_t>(l)];
                const float* row = p.data() + static_cast<std::size_t>(t) * r.experts;
                const int best = static_cast<int>(std::max_element(row, row + r.experts) - row);
                for (int k = 0; k < r.used; ++k)
                    REQUIRE(r.ids[static_cast<std::size_t>(l)][static_cast<std::size_t>(t) * r.used + k] / 2 == best / 2);
            }
    }
    SECTION("more groups kept than can exist is refused by name")
    {
        test::TempDir dir;
        variant(
            dir.path(),
            [](nlohmann::json& c) {
                c["topk_method"] = "group_limited_greedy";
                c["n_group"] = 4;
                c["topk_group"] = 1; // one group of one expert cannot hold two
            },
            [](std::vector<core::OutputTensor>&, const nlohmann::json&) {});
        CHECK_THROWS_WITH(core::loadModel(dir.path().string()), Catch::Contains("topk_group"));
    }
}

TEST_CASE("latent attention's score is its rotary and content terms, as the views split it", "[latent][reference]")
{
    const auto loaded = core::loadModel(kCase.string());
    const auto& info = loaded.model->info();
    REQUIRE(info.fixedTerms);
    CHECK(core::bandsFor(info).count() == 2);
    CHECK(core::bandsFor(info, core::BandSplit::equal(4, 3)).shortName(1) == "content"); // a chosen split cannot replace them
    // The terms recomputed from a capture (as the grid does) are the reference's score_rope and score_nope.
    const auto input = core::readJsonFile((kCase / "input.json").string());
    const auto ids = input["token_ids"].get<std::vector<std::int32_t>>();
    std::vector<core::Token> tokens;
    for (const auto id : ids)
        tokens.push_back(core::Token{id, std::to_string(id), 0, 0});
    core::CaptureOptions options;
    options.run.bands = info.fixedTerms;
    const auto capture = core::captureText(*loaded.model, tokens, options);
    core::SafetensorsFile expected((kCase / "expected.safetensors").string());
    const int T = static_cast<int>(ids.size());
    for (const int layer : {0, 13, 26})
        for (int t = 0; t < 2; ++t) {
            const auto want = core::readAsFloat(
                expected, *expected.find("layer" + std::to_string(layer) + "." + info.fixedTerms->named[static_cast<std::size_t>(t)].dumpName));
            core::GridOptions g;
            g.terms = core::TermSelection{t == 0, t == 1, false, false};
            g.terms.raw = true;
            g.bands = &*info.fixedTerms;
            const auto grid = core::attentionGrid(*capture, 0, layer, {2}, g);
            for (int i = 0; i < T; ++i)
                for (int j = 0; j <= i; ++j)
                    REQUIRE(grid.at(i, j) ==
                            Approx(want[(static_cast<std::size_t>(2) * T + i) * T + j]).margin(1e-4));
        }
}
