// Hybrid models: layers that mix tokens without a softmax (LFM2's short convolutions, Qwen3.5's gated delta rule)
// as sites whose grid is their exact implicit map. Against the reference cases: the map reconstructs the mixer's output from the reference's own
// values, a capture's grids are the reference's maps, and a convolution continues across segments from its cache.
#include "analysis/attention_grid.h"
#include "model/config.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

std::vector<core::Token> tokensOf(const std::vector<std::int32_t>& ids)
{
    std::vector<core::Token> t;
    for (auto id : ids)
        t.push_back({id, std::to_string(id), 0, 0});
    return t;
}

std::vector<std::int32_t> caseIds(const fs::path& dir)
{
    return core::readJsonFile((dir / "input.json").string()).at("token_ids").get<std::vector<std::int32_t>>();
}

const core::OutputTensor* find(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return &t;
    return nullptr;
}

// The reference cases whose model has a site that is not softmax attention, with the kind of each such site.
struct HybridCase {
    fs::path dir;
    std::shared_ptr<const core::AttentionModel> model;
};
std::vector<HybridCase> hybridCases()
{
    std::vector<HybridCase> out;
    for (const auto& dir : test::referenceCases()) {
        auto loaded = core::loadModel(dir.string());
        for (const auto& site : loaded.model->info().sites)
            if (site.mixer != core::Mixer::Softmax) {
                out.push_back({dir, loaded.model});
                break;
            }
    }
    return out;
}

// What a site's map multiplies and what it must give, from the reference's own tensors of layer l, both
// [T, heads, width]: a short convolution's x and C * conv_out (width 1, a channel per head); a delta rule's
// convolved v (the last value-width channels of conv_out) and core_out; a scan's x (the first channels of conv_out)
// and ssm_out.
struct Reconstruction {
    int width = 1;
    bool skip = false; // the output also holds D_h x_i (a scan's skip), one number per head, outside the map
    std::vector<float> values, output;
};
Reconstruction targetOf(core::Mixer mixer, const std::vector<core::OutputTensor>& ref, const std::string& p, int heads)
{
    Reconstruction r;
    if (mixer == core::Mixer::ShortConv) {
        const auto* x = find(ref, p + "conv_x");
        const auto* c = find(ref, p + "conv_C");
        const auto* conv = find(ref, p + "conv_out");
        REQUIRE((x && c && conv));
        r.values = x->data;
        r.output.resize(c->data.size());
        for (std::size_t k = 0; k < r.output.size(); ++k)
            r.output[k] = c->data[k] * conv->data[k];
        return r;
    }
    if (mixer == core::Mixer::StateSpace) { // x: the first heads x width channels of conv_out; ssm_out has D x too
        const auto* conv = find(ref, p + "conv_out");
        const auto* ssm = find(ref, p + "ssm_out");
        REQUIRE((conv && ssm));
        r.width = static_cast<int>(ssm->shape[2]);
        r.skip = true;
        const auto T = static_cast<std::size_t>(ssm->shape[0]), channels = static_cast<std::size_t>(conv->shape[1]);
        const std::size_t inner = static_cast<std::size_t>(heads * r.width);
        for (std::size_t t = 0; t < T; ++t)
            r.values.insert(r.values.end(), conv->data.begin() + static_cast<std::ptrdiff_t>(t * channels),
                            conv->data.begin() + static_cast<std::ptrdiff_t>(t * channels + inner));
        r.output = ssm->data;
        return r;
    }
    REQUIRE(mixer == core::Mixer::DeltaRule);
    const auto* conv = find(ref, p + "conv_out");
    const auto* core = find(ref, p + "core_out");
    REQUIRE((conv && core));
    r.width = static_cast<int>(core->shape[2]);
    const auto T = static_cast<std::size_t>(core->shape[0]), channels = static_cast<std::size_t>(conv->shape[1]);
    const std::size_t vw = static_cast<std::size_t>(heads * r.width);
    for (std::size_t t = 0; t < T; ++t)
        r.values.insert(r.values.end(), conv->data.begin() + static_cast<std::ptrdiff_t>(t * channels + channels - vw),
                        conv->data.begin() + static_cast<std::ptrdiff_t>((t + 1) * channels));
    r.output = core->data;
    return r;
}

} // namespace

TEST_CASE("a hybrid's implicit maps reconstruct each mixer's output from the reference's own values", "[hybrid][reference]")
{
    const auto cases = hybridCases();
    REQUIRE(cases.size() >= 5); // lfm2-tiny, qwen35-tiny, qwen3next-tiny, granite4h-tiny and nemotronh-tiny
    for (const auto& hc : cases) {
        DYNAMIC_SECTION(hc.dir.filename().string())
        {
            const auto inputPath = (hc.dir / "input.json").string();
            const auto ours = core::dumpReference(*hc.model, core::readJsonFile(inputPath), inputPath);
            const auto ref = test::loadAll((hc.dir / "expected.safetensors").string());
            const auto& info = hc.model->info();
            for (const auto& site : info.sites) {
                if (site.mixer == core::Mixer::Softmax || site.mixer == core::Mixer::None)
                    continue;
                const std::string p = "layer" + std::to_string(site.layer) + ".";
                const auto* map = find(ours, p + "implicit_attn");
                REQUIRE(map);
                const int H = static_cast<int>(map->shape[0]), T = static_cast<int>(map->shape[1]);
                const Reconstruction target = targetOf(site.mixer, ref, p, H);
                const auto W = static_cast<std::size_t>(target.width);
                auto at = [&](const std::vector<float>& v, int t, int h, std::size_t e) {
                    return static_cast<double>(v[(static_cast<std::size_t>(t) * H + h) * W + e]);
                };
                double worst = 0;
                for (int h = 0; h < H; ++h) {
                    // What the map leaves of each output: nothing, or (a scan) one multiple of x_i per head.
                    std::vector<double> rest(static_cast<std::size_t>(T) * W);
                    double rx = 0, xx = 0;
                    for (int i = 0; i < T; ++i)
                        for (std::size_t e = 0; e < W; ++e) {
                            double y = 0;
                            for (int j = 0; j < T; ++j)
                                y += static_cast<double>(map->data[(static_cast<std::size_t>(h) * T + i) * T + j]) *
                                     at(target.values, j, h, e);
                            const double r = at(target.output, i, h, e) - y;
                            rest[static_cast<std::size_t>(i) * W + e] = r;
                            rx += r * at(target.values, i, h, e);
                            xx += at(target.values, i, h, e) * at(target.values, i, h, e);
                        }
                    const double skip = target.skip && xx > 0 ? rx / xx : 0.0;
                    for (int i = 0; i < T; ++i)
                        for (std::size_t e = 0; e < W; ++e)
                            worst = std::max(worst, std::abs(rest[static_cast<std::size_t>(i) * W + e] - skip * at(target.values, i, h, e)));
                }
                INFO(site.label() << ": largest reconstruction error " << worst);
                CHECK(worst < 1e-4);
            }
        }
    }
}

TEST_CASE("a capture's grid of a hybrid layer is its implicit map, several heads as the kind combines them", "[hybrid][reference]")
{
    for (const auto& hc : hybridCases()) {
        DYNAMIC_SECTION(hc.dir.filename().string())
        {
            const auto capture = core::captureText(*hc.model, tokensOf(caseIds(hc.dir)), {});
            const auto ref = test::loadAll((hc.dir / "expected.safetensors").string());
            for (int s = 0; s < capture->model.siteCount(); ++s) {
                const auto& site = capture->model.site(s);
                if (site.mixer == core::Mixer::Softmax || site.mixer == core::Mixer::None)
                    continue;
                const auto* map = find(ref, "layer" + std::to_string(site.layer) + ".implicit_attn");
                REQUIRE(map);
                const int T = static_cast<int>(map->shape[1]);
                const auto at = [&](int h, int i, int j) { return map->data[(static_cast<std::size_t>(h) * T + i) * T + j]; };
                const auto& visible = capture->segment(0).spans;
                for (int h : {0, site.heads / 2, site.heads - 1}) {
                    const auto g = core::attentionGrid(*capture, 0, s, {h});
                    REQUIRE(g.rows == T);
                    REQUIRE(g.cols == T);
                    for (int i = 0; i < T; ++i)
                        for (int j = 0; j < T; ++j) {
                            const int back = i - j;
                            const int reach = hc.model->info().layerRules[static_cast<std::size_t>(s)].window;
                            if (back < 0 || (reach > 0 && back >= reach) || j < visible[static_cast<std::size_t>(i)].lo)
                                CHECK(std::isnan(g.at(i, j))); // no weight: drawn blank
                            else
                                CHECK(std::abs(g.at(i, j) - at(h, i, j)) <= 1e-5 + 1e-5 * std::abs(at(h, i, j)));
                        }
                }
                // The heuristic map where the kind has one (TransformerLens's, without the delta rule's erasure): the
                // reference's heuristic_attn, and far from the exact map.
                if (core::mixerRow(site.mixer).heuristic) {
                    const auto* heuristic = find(ref, "layer" + std::to_string(site.layer) + ".heuristic_attn");
                    REQUIRE(heuristic);
                    core::TermSelection approx;
                    approx.heuristic = true;
                    const auto g = core::attentionGrid(*capture, 0, s, {1}, approx);
                    double toHeuristic = 0, toExact = 0;
                    for (int i = 0; i < T; ++i)
                        for (int j = 0; j <= i; ++j) {
                            const float want = heuristic->data[(static_cast<std::size_t>(1) * T + i) * T + j];
                            toHeuristic = std::max(toHeuristic, static_cast<double>(std::abs(g.at(i, j) - want)));
                            toExact = std::max(toExact, static_cast<double>(std::abs(g.at(i, j) - at(1, i, j))));
                        }
                    CHECK(toHeuristic <= 1e-5);
                    CHECK(toExact > 1e-3);
                }
                const bool magnitudes = core::mixerRow(site.mixer).aggregate == core::HeadAggregate::MeanMagnitude;
                const auto all = core::attentionGrid(*capture, 0, s, {});
                for (int i = 0; i < T; ++i)
                    for (int j = 0; j <= i; ++j) {
                        double want = 0;
                        for (int h = 0; h < site.heads; ++h)
                            want += magnitudes ? std::abs(at(h, i, j)) : at(h, i, j);
                        want /= site.heads;
                        const float got = std::isnan(all.at(i, j)) ? 0.0f : all.at(i, j);
                        CHECK(std::abs(got - want) <= 1e-5);
                    }
            }
        }
    }
}

TEST_CASE("a hybrid's first layer continues a text across segments from its cached rows", "[hybrid]")
{
    for (const auto& hc : hybridCases()) {
        DYNAMIC_SECTION(hc.dir.filename().string())
        {
            const auto ids = caseIds(hc.dir);
            const auto whole = core::captureText(*hc.model, tokensOf(ids), {});
            core::CaptureOptions split;
            split.segmentLen = static_cast<int>(ids.size()) / 2;
            split.run.memLen = 4; // more than a convolution reaches back
            const auto parts = core::captureText(*hc.model, tokensOf(ids), split);
            REQUIRE(parts->segments.size() == 2);
            // A map entry depends only on the rows between its key and its query, and the first layer's rows on the
            // tokens within the convolution's reach: the second segment's map is the whole text's where it sees.
            const int c = parts->model.site(0).heads - 1;
            const auto a = core::attentionGrid(*whole, 0, 0, {c});
            const auto b = core::attentionGrid(*parts, 1, 0, {c});
            REQUIRE(b.memoryCols == 4);
            REQUIRE(b.cols == b.rows + b.memoryCols);
            for (int i = 0; i < b.rows; ++i)
                for (int j = 0; j < b.cols; ++j) {
                    const int wi = split.segmentLen + i, wj = split.segmentLen - b.memoryCols + j;
                    const float want = a.at(wi, wj), got = b.at(i, j);
                    if (std::isnan(got))
                        CHECK(std::isnan(want)); // a later key, or beyond a convolution's reach, in both
                    else
                        CHECK(std::abs(got - want) <= 1e-5 + 1e-5 * std::abs(want));
                }
        }
    }
}

TEST_CASE("Qwen3.5 in the multimodal wrapper's layout is the same text model", "[hybrid][reference]")
{
    const auto dir = test::testdataDir() / "qwen35-tiny";
    const auto loaded = core::loadModel((dir / "vlm").string());
    const auto inputPath = (dir / "input.json").string();
    const auto out = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
    const auto problems = test::referenceMismatches((dir / "expected.safetensors").string(), out);
    for (const auto& p : problems)
        FAIL_CHECK(p);
    CHECK(problems.empty());
}

TEST_CASE("an LFM2 config the core cannot run exactly is refused with the key named", "[hybrid][config]")
{
    const auto dir = test::testdataDir() / "lfm2-tiny";
    auto config = core::readJsonFile((dir / "config.json").string());
    auto refused = [&](const nlohmann::json& j, const std::string& key) {
        try {
            (void)core::parseModelConfig(j, "config.json");
            FAIL("accepted");
        } catch (const core::Error& e) {
            CHECK(e.code() == core::ErrorCode::BadConfig);
            CHECK(std::string(e.what()).find(key) != std::string::npos);
        }
    };
    auto biased = config;
    biased["conv_bias"] = true;
    refused(biased, "conv_bias");
    auto shortList = config;
    shortList["layer_types"].erase(shortList["layer_types"].begin());
    refused(shortList, "layer_types");
    auto unknown = config;
    unknown["layer_types"][0] = "mamba";
    refused(unknown, "layer_types");
    // Older files list the attention layers instead: the same model.
    auto older = config;
    older.erase("layer_types");
    older["full_attn_idxs"] = {2, 4};
    const auto c = std::get<core::LlamaConfig>(core::parseModelConfig(older, "config.json"));
    const auto now = std::get<core::LlamaConfig>(core::parseModelConfig(config, "config.json"));
    CHECK(c.layerMixers == now.layerMixers);
    CHECK(now.intermediate == 64); // int(2 * 96 / 3), rounded up to a multiple of 16
}
