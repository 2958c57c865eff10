// The analyses of the head atlas, rotary bands, rollout and head ablation, each against a direct computation from
// dumped reference-case tensors or hand-built attention with known answers.
#include "analysis/attention_grid.h"
#include "analysis/head_ablation.h"
#include "analysis/head_atlas.h"
#include "analysis/relpos_scan.h"
#include "analysis/logit_lens.h"
#include "analysis/logit_attribution.h"
#include "analysis/token_predictions.h"
#include "analysis/rollout.h"
#include "analysis/surprisal.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "run/patch_prompts.h"
#include "model/tensor_names.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

using namespace attnscope;

namespace {
std::vector<core::Token> tokensOf(const std::vector<std::int32_t>& ids)
{
    std::vector<core::Token> t;
    for (auto id : ids)
        t.push_back({id, std::to_string(id), 0, 0});
    return t;
}

std::vector<std::int32_t> caseIds(const std::filesystem::path& dir)
{
    const auto in = core::readJsonFile((dir / "input.json").string());
    return in.at(in.contains("token_ids") ? "token_ids" : "input_ids").get<std::vector<std::int32_t>>();
}

const core::OutputTensor& tensor(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return t;
    FAIL("no tensor " << name);
    throw std::logic_error("unreachable");
}

// The last layer whose heads attend (a hybrid's last layer may be a convolution or a scan).
int lastAttentionLayer(const core::ModelInfo& info)
{
    int l = info.layers - 1;
    while (l > 0 && info.site(l).mixer != core::Mixer::Softmax)
        --l;
    return l;
}

// The ids captured as one segment.
std::shared_ptr<const core::TextCapture> oneSegment(const core::AttentionModel& model, const std::vector<std::int32_t>& ids)
{
    core::CaptureOptions copt;
    copt.segmentLen = static_cast<int>(ids.size());
    return core::captureText(model, tokensOf(ids), copt);
}

std::vector<std::filesystem::path> casesWithoutMemory()
{
    std::vector<std::filesystem::path> out;
    for (const auto& dir : test::referenceCases())
        if (core::readJsonFile((dir / "config.json").string()).value("model_type", "") != "transfo-xl")
            out.push_back(dir);
    return out;
}

// Every reference case whose model predicts the next token (encoders predict masked tokens: test_encoders.cpp), each
// in a section of its own: body(model, token ids).
template <class Body>
void forEachPredictingCase(Body&& body)
{
    for (const auto& dir : casesWithoutMemory()) {
        const auto loaded = core::loadModel(dir.string());
        if (!loaded.model->info().can.nextTokenLoss)
            continue;
        DYNAMIC_SECTION(dir.filename().string())
        {
            body(loaded, caseIds(dir));
        }
    }
}
} // namespace

TEST_CASE("rotary bands: each band's raw scores sum to the dumped scores, all bands are the full attention exactly",
          "[analyses][bands][reference]")
{
    for (const auto& dir : test::referenceCases("llama")) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& info = loaded.model->info();
            const auto ids = caseIds(dir);
            const auto dump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", ids}}, "case");
            const auto capture = core::captureText(*loaded.model, tokensOf(ids), {});
            const auto split = core::BandSplit::equal(info.dHead / 2, 3);
            const int T = static_cast<int>(ids.size());
            for (int l = 0; l < info.layers; ++l) {
                const auto& scores = tensor(dump, "layer" + std::to_string(l) + ".attn_scores");
                for (int h = 0; h < info.heads; ++h) {
                    std::vector<double> sum(static_cast<std::size_t>(T) * T, 0.0);
                    for (int b = 0; b < 3; ++b) {
                        core::GridOptions o;
                        o.bands = &split;
                        o.terms = core::TermSelection{b == 0, b == 1, b == 2, false};
                        o.terms.raw = true;
                        const auto g = core::attentionGrid(*capture, 0, l, {h}, o);
                        for (std::size_t i = 0; i < g.values.size(); ++i)
                            sum[i] += std::isnan(g.values[i]) ? 0.0 : g.values[i];
                    }
                    for (std::size_t i = 0; i < sum.size(); ++i)
                        REQUIRE(sum[i] == Approx(scores.data[static_cast<std::size_t>(h) * T * T + i]).margin(2e-5));
                    // The three toggles on (the unused fourth slot off): the full attention, not a sum of bands.
                    core::GridOptions all;
                    all.bands = &split;
                    all.terms = core::TermSelection{true, true, true, false};
                    const auto a = core::attentionGrid(*capture, 0, l, {h}, all).values;
                    const auto f = core::attentionGrid(*capture, 0, l, {h}).values;
                    CHECK(std::memcmp(a.data(), f.data(), a.size() * sizeof(float)) == 0); // bit for bit, NaNs too
                }
            }
        }
    }
}

TEST_CASE("band profiles: a scan's per-band profiles equal the capture's and each band's softmax sums to one",
          "[analyses][bands][scan]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto ids = caseIds(test::testdataDir() / "llama-gqa");
    core::ScanOptions opt;
    opt.segmentLen = static_cast<int>(ids.size());
    opt.terms = "1,2,3,1+3";
    core::RelposScanner scanner(*loaded.model, opt);
    scanner.feed(ids);
    const auto scan = scanner.finish();
    REQUIRE(scan.profileNames == std::vector<std::string>{"full", "band_1", "band_2", "band_3", "band_1+3"});
    core::CaptureOptions copt;
    copt.segmentLen = static_cast<int>(ids.size());
    const auto capture = core::captureText(*loaded.model, tokensOf(ids), copt);
    const auto text = core::relposFromCapture(*capture, "1,2,3,1+3");
    for (const auto& name : scan.profileNames) {
        INFO(name);
        for (std::size_t i = 0; i < scan.sums.at(name).size(); ++i)
            REQUIRE(text.sums.at(name)[i] == Approx(scan.sums.at(name)[i]).margin(1e-5));
    }
    // Every query's distribution sums to one, whatever the band: the sum over distances is the number of queries.
    const auto& band = scan.sums.at("band_2");
    for (int head = 0; head < scan.layers * scan.heads; ++head) {
        double total = 0;
        for (int d = 0; d < scan.distances; ++d)
            total += band[static_cast<std::size_t>(head) * scan.distances + d];
        CHECK(total == Approx(static_cast<double>(ids.size())).epsilon(1e-5));
    }
    // GPT-2 and Transformer-XL have no bands.
    opt.terms = "1";
    const auto gpt2 = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    opt.segmentLen = 8;
    CHECK_THROWS_WITH(core::RelposScanner(*gpt2.model, opt), Catch::Contains("rotary"));
}

TEST_CASE("attention rollout equals the product of the dumped layers' mean attention", "[analyses][rollout][reference]")
{
    for (const auto& dir : casesWithoutMemory()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& info = loaded.model->info();
            const auto ids = caseIds(dir);
            const int T = static_cast<int>(ids.size());
            if (std::any_of(info.sites.begin(), info.sites.end(),
                            [](const core::AttentionSite& s) { return s.mixer != core::Mixer::Softmax; })) {
                // A hybrid's convolutions and delta rules have signed maps, no distributions to multiply: refused.
                CHECK_THROWS_WITH(core::attentionRollout(*oneSegment(*loaded.model, ids), 0), Catch::Contains("mixes tokens by"));
                continue;
            }
            const auto dump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", ids}}, "case");
            // R = A'_L ... A'_1 in double, from the dumped probabilities.
            std::vector<double> R(static_cast<std::size_t>(T) * T, 0.0);
            for (int i = 0; i < T; ++i)
                R[static_cast<std::size_t>(i) * T + i] = 1;
            for (int l = 0; l < info.layers; ++l) {
                const auto& P = tensor(dump, "layer" + std::to_string(l) + ".attn_prob").data;
                std::vector<double> A(static_cast<std::size_t>(T) * T, 0.0), next(A.size(), 0.0);
                for (int h = 0; h < info.heads; ++h)
                    for (std::size_t k = 0; k < A.size(); ++k)
                        A[k] += P[static_cast<std::size_t>(h) * T * T + k] / info.heads;
                for (int i = 0; i < T; ++i) {
                    double row = 0;
                    for (int j = 0; j < T; ++j) {
                        auto& a = A[static_cast<std::size_t>(i) * T + j];
                        a = 0.5 * a + (i == j ? 0.5 : 0.0);
                        row += a;
                    }
                    for (int j = 0; j < T; ++j)
                        A[static_cast<std::size_t>(i) * T + j] /= row;
                }
                for (int i = 0; i < T; ++i)
                    for (int j = 0; j < T; ++j)
                        for (int k = 0; k < T; ++k)
                            next[static_cast<std::size_t>(i) * T + j] += A[static_cast<std::size_t>(i) * T + k] * R[static_cast<std::size_t>(k) * T + j];
                R = next;
            }
            const auto capture = oneSegment(*loaded.model, ids);
            int reported = 0;
            const auto g = core::attentionRollout(*capture, 0, nullptr, [&](int done, int) { reported = done; });
            CHECK(reported == info.layers);
            for (int i = 0; i < T; ++i)
                for (int j = 0; j < T; ++j) {
                    const float v = g.values[static_cast<std::size_t>(i) * T + j];
                    if (j > i && info.can.causal) // an encoder's rollout is a full square (no padding here)
                        REQUIRE(std::isnan(v));
                    else
                        REQUIRE(v == Approx(R[static_cast<std::size_t>(i) * T + j]).margin(2e-5));
                }
        }
    }
    // Memory makes rollout undefined: a Transformer-XL segment with memory is refused.
    const auto txl = core::loadModel((test::testdataDir() / "txl-tiny").string());
    core::CaptureOptions copt;
    copt.segmentLen = 4;
    const auto capture = core::captureText(*txl.model, tokensOf({1, 2, 3, 4, 5, 6, 7, 8}), copt);
    CHECK_THROWS_WITH(core::attentionRollout(*capture, 1), Catch::Contains("memory"));
}

TEST_CASE("ablating a head equals a forward whose output projection ignores that head", "[analyses][ablation]")
{
    for (const auto& dir : casesWithoutMemory()) {
        if (dir.filename() == "llama-bf16-sharded")
            continue; // the same model as llama-gqa in two BF16 shards
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& info = loaded.model->info();
            if (!info.can.nextTokenLoss)
                continue; // ablation measures next-token loss: encoders refuse it (tested with the encoders)
            const bool gpt2 = info.family == core::ModelFamily::GPT2;
            const auto ids = caseIds(dir);
            const int layer = lastAttentionLayer(info), head = info.heads / 2, d = info.valueDim();
            // The same weights with the head's slice of the output projection zeroed.
            test::TempDir tmp;
            auto weights = test::loadAll((dir / "model.safetensors").string());
            bool found = false;
            for (auto& w : weights) {
                // The output projection's name from the family's own table (rotary decoders) or GPT-2's.
                const std::string name = gpt2 ? "h." + std::to_string(layer) + ".attn.c_proj.weight"
                                              : core::tensorName("", core::decoderNames(info.family).o.hf, layer);
                if (w.name != name)
                    continue;
                found = true;
                const auto rows = w.shape[0], cols = w.shape[1];
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < cols; ++c) {
                        const std::int64_t input = gpt2 ? r : c; // Conv1D [in, out]; Linear [out, in]
                        if (input >= static_cast<std::int64_t>(head) * d && input < static_cast<std::int64_t>(head + 1) * d)
                            w.data[static_cast<std::size_t>(r * cols + c)] = 0;
                    }
            }
            REQUIRE(found);
            core::writeSafetensors((tmp / "model.safetensors").string(), weights);
            std::filesystem::copy(dir / "config.json", tmp / "config.json");
            const auto zeroed = core::loadModel(tmp.path().string());
            // The loss of the zeroed model, computed here from its dumped logits.
            const auto dump = core::dumpReference(*zeroed.model, nlohmann::json{{"token_ids", ids}}, "case");
            const auto& logits = tensor(dump, "logits");
            const auto vocab = static_cast<std::size_t>(logits.shape[1]);
            double expected = 0;
            for (std::size_t t = 0; t + 1 < ids.size(); ++t) {
                double mx = -1e30, sum = 0;
                for (std::size_t v = 0; v < vocab; ++v)
                    mx = std::max(mx, static_cast<double>(logits.data[t * vocab + v]));
                for (std::size_t v = 0; v < vocab; ++v)
                    sum += std::exp(logits.data[t * vocab + v] - mx);
                expected += mx + std::log(sum) - logits.data[t * vocab + static_cast<std::size_t>(ids[t + 1])];
            }
            expected /= static_cast<double>(ids.size() - 1);
            const auto r = core::headAblation(*loaded.model, ids, static_cast<int>(ids.size()));
            CHECK(r.change(layer, head) == Approx(expected - r.baseLoss).margin(1e-5));
            CHECK(r.loss[static_cast<std::size_t>(layer) * info.heads + head] == Approx(expected).margin(1e-5));
            CHECK(r.predictions == static_cast<int>(ids.size()) - 1);
            CHECK(!r.partial);
        }
    }
    const auto txl = core::loadModel((test::testdataDir() / "txl-tiny").string());
    const std::vector<std::int32_t> ids{1, 2, 3};
    CHECK_THROWS_WITH(core::headAblation(*txl.model, ids, 3), Catch::Contains("language-model head"));
}

TEST_CASE("Transformer-XL with its adaptive softmax: ablating a head equals zeroing its slice of o_net",
          "[analyses][ablation][txl]")
{
    const auto dir = test::projectDataDir() / "txl-crit";
    const auto loaded = core::loadModel(dir.string());
    REQUIRE(loaded.model->info().can.nextTokenLoss);
    const auto input = core::readJsonFile((dir / "input.json").string());
    std::vector<std::int32_t> ids;
    for (const auto& id : input["token_ids"])
        ids.push_back(id.get<std::int32_t>());
    const int segmentLen = 5; // three segments, each a text of its own (nextTokenLoss)
    const auto r = core::headAblation(*loaded.model, ids, segmentLen);
    const auto& info = loaded.model->info();
    for (int layer = 0; layer < info.layers; ++layer)
        for (int head = 0; head < info.heads; ++head) {
            test::TempDir tmp;
            auto weights = test::loadAll((dir / "model.safetensors").string());
            const std::string name = "transformer.layers." + std::to_string(layer) + ".dec_attn.o_net.weight";
            bool found = false;
            for (auto& w : weights) {
                if (w.name != name)
                    continue;
                found = true;
                const auto rows = w.shape[0], cols = w.shape[1]; // Linear [d_model, heads * d_head]
                for (std::int64_t row = 0; row < rows; ++row)
                    for (std::int64_t c = static_cast<std::int64_t>(head) * info.dHead; c < (head + 1) * info.dHead; ++c)
                        w.data[static_cast<std::size_t>(row * cols + c)] = 0;
            }
            REQUIRE(found);
            core::writeSafetensors((tmp / "model.safetensors").string(), weights);
            std::filesystem::copy(dir / "config.json", tmp / "config.json");
            const auto zeroed = core::loadModel(tmp.path().string());
            const double expected = core::nextTokenLoss(*zeroed.model, ids, segmentLen);
            INFO("layer " << layer + 1 << " head " << head + 1);
            CHECK(r.loss[static_cast<std::size_t>(layer) * info.heads + head] == Approx(expected).margin(1e-5));
            CHECK(r.change(layer, head) != Approx(0).margin(1e-7)); // every head matters a little
        }
}

TEST_CASE("raw scores before the soft cap: Gemma 2's capped scores are cap * tanh(uncapped / cap)", "[analyses][softcap]")
{
    const auto dir = test::testdataDir() / "gemma2-tiny";
    const auto loaded = core::loadModel(dir.string());
    const auto& info = loaded.model->info();
    REQUIRE(info.softCapsScores());
    const auto capture = core::captureText(*loaded.model, tokensOf(caseIds(dir)), {});
    const auto bands = core::BandSplit::equal(static_cast<int>(info.rotaryFrequencies.size()), 3);
    core::GridOptions o;
    o.bands = &bands;
    o.terms.raw = true;
    for (int layer = 0; layer < info.layers; ++layer) {
        const float cap = info.layerRules[static_cast<std::size_t>(layer)].softCap;
        REQUIRE(cap > 0);
        o.terms.uncapped = false;
        const auto capped = core::attentionGrid(*capture, 0, layer, {1}, o);
        o.terms.uncapped = true;
        const auto uncapped = core::attentionGrid(*capture, 0, layer, {1}, o);
        REQUIRE(capped.values.size() == uncapped.values.size());
        double biggest = 0;
        for (std::size_t i = 0; i < capped.values.size(); ++i) {
            if (std::isnan(capped.values[i])) {
                CHECK(std::isnan(uncapped.values[i]));
                continue;
            }
            biggest = std::max(biggest, static_cast<double>(std::abs(uncapped.values[i])));
            REQUIRE(capped.values[i] == Approx(cap * std::tanh(uncapped.values[i] / cap)).margin(1e-5));
        }
        INFO("layer " << layer + 1 << ": largest uncapped score " << biggest << ", cap " << cap);
        CHECK(biggest > 0.25 * cap); // the cap bends these scores visibly: the two views differ
    }
    // Without a cap the option changes nothing.
    const auto llama = core::loadModel((test::testdataDir() / "llama-gqa").string());
    CHECK_FALSE(llama.model->info().softCapsScores());
}

TEST_CASE("duplicate-token and induction scores on hand-built attention", "[analyses][atlas]")
{
    // Tokens 5 7 5 9 7 5: queries 2 (5), 4 (7) and 5 (5) have earlier occurrences.
    const std::vector<std::int32_t> ids{5, 7, 5, 9, 7, 5};
    const int T = 6;
    std::vector<float> P(static_cast<std::size_t>(T) * T, 0.0f);
    auto set = [&](int i, int j, float v) { P[static_cast<std::size_t>(i) * T + j] = v; };
    for (int i = 0; i < T; ++i)
        set(i, i, 1.0f); // every query on itself ...
    set(2, 2, 0.4f);
    set(2, 0, 0.6f); // ... except: query 2 puts 0.6 on the earlier 5
    set(4, 4, 0.9f);
    set(4, 1, 0.1f); // query 4: 0.1 on the earlier 7
    set(5, 5, 0.5f);
    set(5, 0, 0.25f);
    set(5, 2, 0.25f); // query 5: 0.5 on the two earlier 5s
    std::vector<int> pos{0, 1, 2, 3, 4, 5};
    double sum = 0, queries = 0;
    core::addDuplicateToken(P.data(), T, T, pos, pos, ids, sum, queries);
    CHECK(queries == 3);
    CHECK(sum / queries == Approx((0.6 + 0.1 + 0.5) / 3));

    // Induction on BOS + R = 3 random tokens twice: a perfect induction head scores 1, one that looks at itself 0.
    const int R = 3, prefix = 1, n = prefix + 2 * R;
    std::vector<float> induction(static_cast<std::size_t>(n) * n, 0.0f), self(induction.size(), 0.0f);
    for (int i = 0; i < n; ++i) {
        self[static_cast<std::size_t>(i) * n + i] = 1;
        const int target = i >= prefix + R ? i - R + 1 : i;
        induction[static_cast<std::size_t>(i) * n + target] = 1;
    }
    CHECK(core::inductionScore(induction.data(), n, prefix, R) == Approx(1.0));
    CHECK(core::inductionScore(self.data(), n, prefix, R) == Approx(0.0));
    // The generated sequence: the prefix, then R ids, then the same R ids.
    const auto seq = core::inductionSequence(1000, nullptr, 10);
    REQUIRE(seq.size() == 20);
    CHECK(std::equal(seq.begin(), seq.begin() + 10, seq.begin() + 10));

    // Jensen-Shannon distance: 0 for the same profile (any scale), 1 for disjoint ones.
    const std::vector<float> p{1, 2, 0}, p2{2, 4, 0}, q{0, 0, 5};
    CHECK(core::jensenShannonDistance(p, p2) == Approx(0.0).margin(1e-12));
    CHECK(core::jensenShannonDistance(p, q) == Approx(1.0));
    // Clustering puts the two close pairs side by side.
    const std::vector<double> d{0, 0.9, 0.1, 0.8, //
                                0.9, 0, 0.85, 0.05, //
                                0.1, 0.85, 0, 0.9, //
                                0.8, 0.05, 0.9, 0};
    const auto order = core::clusterOrder(d, 4);
    REQUIRE(order.size() == 4);
    auto at = [&](int item) { return std::find(order.begin(), order.end(), item) - order.begin(); };
    CHECK(std::abs(at(0) - at(2)) == 1);
    CHECK(std::abs(at(1) - at(3)) == 1);
}

TEST_CASE("duplicate-token and induction scores of a model equal those computed from its dumped attention",
          "[analyses][atlas][reference]")
{
    const auto dir = test::testdataDir() / "llama-gqa";
    const auto loaded = core::loadModel(dir.string());
    const auto& info = loaded.model->info();
    // A text with repeats: the case's ids twice.
    auto ids = caseIds(dir);
    const auto once = ids;
    ids.insert(ids.end(), once.begin(), once.end());
    const int T = static_cast<int>(ids.size());
    core::CaptureOptions copt;
    copt.segmentLen = T;
    const auto capture = core::captureText(*loaded.model, tokensOf(ids), copt);
    const auto dup = core::duplicateTokenScores(*capture);
    const auto dump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", ids}}, "text");
    std::vector<int> pos(static_cast<std::size_t>(T));
    std::iota(pos.begin(), pos.end(), 0);
    for (int l = 0; l < info.layers; ++l) {
        const auto& P = tensor(dump, "layer" + std::to_string(l) + ".attn_prob").data;
        for (int h = 0; h < info.heads; ++h) {
            double sum = 0, queries = 0;
            core::addDuplicateToken(P.data() + static_cast<std::size_t>(h) * T * T, T, T, pos, pos, ids, sum, queries);
            CHECK(dup[static_cast<std::size_t>(l) * info.heads + h] == Approx(sum / queries).margin(1e-6));
        }
    }
    // Induction: the generated sequence's dump.
    const int R = 16;
    const auto seq = core::inductionSequence(info.vocabSize, nullptr, R);
    const auto ind = core::inductionScores(*loaded.model, nullptr, R);
    const auto seqDump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", seq}}, "induction");
    const int n = static_cast<int>(seq.size());
    for (int l = 0; l < info.layers; ++l) {
        const auto& P = tensor(seqDump, "layer" + std::to_string(l) + ".attn_prob").data;
        for (int h = 0; h < info.heads; ++h)
            CHECK(ind[static_cast<std::size_t>(l) * info.heads + h] ==
                  Approx(core::inductionScore(P.data() + static_cast<std::size_t>(h) * n * n, n, 0, R)).margin(1e-6));
    }
}

TEST_CASE("next-token logits of a captured text equal the forward pass's, from the state the capture kept",
          "[analyses][predictions]")
{
    forEachPredictingCase([&](const core::LoadedModel& loaded, std::vector<std::int32_t> ids) {
        const int T = static_cast<int>(ids.size());
        const auto dump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", ids}}, "case");
        const auto& logits = tensor(dump, "logits");
        const int V = static_cast<int>(logits.shape[1]);
        // Two segments; rotary models carry the first one's keys, so the second sees what the whole run saw.
        core::CaptureOptions copt;
        copt.segmentLen = T / 2 + 1;
        const bool carries = loaded.model->info().can.canCarryKeys;
        copt.run.memLen = carries ? T : 0;
        const auto capture = core::captureText(*loaded.model, tokensOf(ids), copt);
        REQUIRE(capture->segments.size() == 2);
        // A causal model's capture keeps the logits after its last token (the last position below reads them, with no
        // second forward): the reference's last row.
        if (loaded.model->info().can.causal)
            REQUIRE(capture->lastLogits.size() == static_cast<std::size_t>(V));
        for (const int p : {1, T / 2, T - 1}) {
            const bool sameContext = carries || p < copt.segmentLen;
            if (!sameContext)
                continue; // GPT-2's second chunk starts afresh: not the single run's context
            const auto row = core::nextTokenLogits(*loaded.model, *capture, p);
            REQUIRE(static_cast<int>(row.size()) == V);
            double worst = 0;
            for (int v = 0; v < V; ++v)
                worst = std::max(worst, static_cast<double>(std::abs(row[static_cast<std::size_t>(v)] -
                                                                     logits.data[static_cast<std::size_t>(p) * V + v])));
            INFO("position " << p);
            CHECK(worst < 1e-3);
        }
        // The distribution at a temperature: probabilities of softmax(logits / t), the actual token's rank.
        const auto row = core::nextTokenLogits(*loaded.model, *capture, 0);
        const auto d = core::distributionOf(row, 0.5, 3, ids[1]);
        REQUIRE(d.top.size() == 3);
        CHECK(d.top[0].probability >= d.top[1].probability);
        double z = 0;
        for (float v : row)
            z += std::exp((v - row[static_cast<std::size_t>(d.top[0].id)]) / 0.5);
        CHECK(d.top[0].probability == Approx(1.0 / z).epsilon(1e-6));
        CHECK(d.actualRank >= 0);
    });
}

TEST_CASE("next-token logits after an edit equal a fresh capture's: a text cut short, a text grown by a token",
          "[analyses][predictions]")
{
    forEachPredictingCase([&](const core::LoadedModel& loaded, std::vector<std::int32_t> ids) {
        const int T = static_cast<int>(ids.size());
        REQUIRE(T >= 6);
        // The whole text grown a token at a time (as generation grows it), each capture from the one before.
        std::shared_ptr<const core::TextCapture> whole;
        for (int n = T / 2; n <= T; ++n) {
            core::CaptureOptions grow;
            grow.previous = whole;
            whole = core::captureText(*loaded.model, tokensOf(std::vector<std::int32_t>(ids.begin(), ids.begin() + n)), grow);
        }
        for (const int keep : {T / 2, T / 2 + 2, T - 1}) {
            const std::vector<std::int32_t> prefix(ids.begin(), ids.begin() + keep);
            core::CaptureOptions reuse;
            reuse.previous = whole;
            const auto cut = core::captureText(*loaded.model, tokensOf(prefix), reuse);
            const auto fresh = core::captureText(*loaded.model, tokensOf(prefix), {});
            for (const int p : {keep / 2, keep - 1}) {
                const auto a = core::nextTokenLogits(*loaded.model, *cut, p);
                const auto b = core::nextTokenLogits(*loaded.model, *fresh, p);
                REQUIRE(a.size() == b.size());
                double worst = 0;
                for (std::size_t v = 0; v < a.size(); ++v)
                    worst = std::max(worst, static_cast<double>(std::abs(a[v] - b[v])));
                INFO("kept " << keep << " of " << T << " tokens, position " << p);
                CHECK(worst < 1e-4);
            }
        }
    });
}

TEST_CASE("the logit lens's last layer is the model's own prediction, earlier layers read through the same read-out",
          "[analyses][lens]")
{
    forEachPredictingCase([&](const core::LoadedModel& loaded, std::vector<std::int32_t> ids) {
        const int T = static_cast<int>(ids.size());
        const auto capture = oneSegment(*loaded.model, ids);
        const auto lens = core::logitLens(*loaded.model, *capture, 0, 3);
        const int L = loaded.model->info().layers;
        REQUIRE(lens.layers == L);
        REQUIRE(lens.positions == T);
        for (int p = 0; p < T; ++p) {
            const auto d = core::distributionOf(core::nextTokenLogits(*loaded.model, *capture, p), 1.0, 3,
                                                p + 1 < T ? ids[static_cast<std::size_t>(p) + 1] : -1);
            const auto& last = lens.at(L - 1, p);
            REQUIRE(last.size() == 3);
            for (int i = 0; i < 3; ++i)
                // The lens reads every row at once, the next-token logits one row: the products may round the last
                // bit apart, which large logits (LFM2's reach 25) turn into 1e-6 of a probability.
                CHECK(last[static_cast<std::size_t>(i)].probability ==
                      Approx(d.top[static_cast<std::size_t>(i)].probability).margin(1e-6).epsilon(1e-4));
            CHECK(lens.actualRank[static_cast<std::size_t>(L - 1) * T + p] == d.actualRank);
        }
        CHECK(lens.actualRank[static_cast<std::size_t>(T) - 1] == -1); // nothing follows the last token
    });
    // Transformer-XL is read without its adaptive softmax: refused by name.
    const auto txl = core::loadModel((test::testdataDir() / "txl-tiny").string());
    const auto capture = core::captureText(*txl.model, tokensOf({1, 2, 3, 4}), {});
    CHECK_THROWS_WITH(core::logitLens(*txl.model, *capture, 0), Catch::Contains("Transformer-XL"));
}

TEST_CASE("direct logit attribution: the shares sum to the model's own logit, a head's part is what ablating it removes",
          "[analyses][dla]")
{
    for (const auto& dir : casesWithoutMemory()) {
        const auto loaded = core::loadModel(dir.string());
        const auto& info = loaded.model->info();
        if (!info.can.nextTokenLoss || !info.can.causal)
            continue;
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto ids = caseIds(dir);
            const int T = static_cast<int>(ids.size());
            const auto capture = oneSegment(*loaded.model, ids);
            for (int p : {0, T / 2, T - 1}) {
                const auto a = core::logitAttribution(*loaded.model, *capture, p);
                INFO("position " << p << ", token " << a.token);
                REQUIRE(a.layers == info.layers);
                REQUIRE(a.head.size() == static_cast<std::size_t>(info.layers) * info.heads);
                CHECK(a.token == (p + 1 < T ? ids[static_cast<std::size_t>(p) + 1] : a.token));
                // The read-out's direction is right: with the frozen norm it gives the logit the model computes.
                const auto logits = core::nextTokenLogits(*loaded.model, *capture, p);
                const double own = logits[static_cast<std::size_t>(a.token)];
                CHECK(a.cappedLogit == Approx(own).margin(2e-4 * std::max(1.0, std::abs(own))));
                // And the parts add up to it.
                CHECK(a.sum() == Approx(a.logit).margin(1e-4 * std::max(1.0, std::abs(a.logit))));
            }
            // Each head's part, checked against ablation where the attention output is linear in the heads (no
            // norm after it): zeroing head h of layer l lowers layer l's attention output by exactly that head's
            // part, so its share of the final logit read through the same direction is the difference.
            const int p = T - 1, l = lastAttentionLayer(info);
            const auto a = core::logitAttribution(*loaded.model, *capture, p);
            struct Last final : core::AttentionObserver {
                int layer = 0;
                bool wantProbabilities() const override { return false; }
                void onLayer(const core::LayerView& v) override
                {
                    if (v.layer == layer) // the layer's attention output; the final stream for the direction
                        attn.assign(v.attnOutput + static_cast<std::size_t>(v.qlen - 1) * v.dModel,
                                    v.attnOutput + static_cast<std::size_t>(v.qlen) * v.dModel);
                    hidden.assign(v.hidden + static_cast<std::size_t>(v.qlen - 1) * v.dModel,
                                  v.hidden + static_cast<std::size_t>(v.qlen) * v.dModel);
                }
                std::vector<float> attn, hidden;
            };
            Last full;
            full.layer = l;
            loaded.model->run({ids}, {}, full);
            std::vector<float> direction;
            double constant = 0;
            REQUIRE(loaded.model->logitDirection(full.hidden.data(), a.token, direction, constant));
            const bool postNorm = dir.filename().string().rfind("gemma", 0) == 0 || dir.filename().string().rfind("olmo2", 0) == 0;
            for (int h = 0; h < info.heads; ++h) {
                core::RunOptions o;
                o.ablate = core::RunOptions::HeadRef{l, h};
                Last ablated;
                ablated.layer = l;
                loaded.model->run({ids}, o, ablated);
                double removed = 0;
                for (std::size_t i = 0; i < direction.size(); ++i)
                    removed += static_cast<double>(direction[i]) * (full.attn[i] - ablated.attn[i]);
                if (!postNorm)
                    CHECK(a.headShare(l, h) == Approx(removed).margin(1e-4));
            }
            // With a norm after the attention (no output bias there) the heads' scaled parts alone make its output:
            // nothing is left for a bias unless the norm's factor is wrong.
            if (postNorm)
                for (int layer = 0; layer < info.layers; ++layer)
                    CHECK(std::abs(a.attentionBias[static_cast<std::size_t>(layer)]) < 1e-4 * std::max(1.0, std::abs(a.logit)));
        }
    }
    // Transformer-XL's adaptive softmax and encoders have no such split: refused by name.
    const auto txl = core::loadModel((test::testdataDir() / "txl-tiny").string());
    const auto capture = core::captureText(*txl.model, tokensOf({1, 2, 3, 4}), {});
    CHECK_THROWS_WITH(core::logitAttribution(*txl.model, *capture, 0), Catch::Contains("Transformer-XL"));
}

TEST_CASE("choosing a token: greedy is the argmax, sampling is seeded and stays in its top-k / top-p", "[analyses][generate]")
{
    const std::vector<float> logits{0.5f, 3.0f, 2.5f, -1.0f, 2.9f};
    std::mt19937_64 rng(7);
    CHECK(core::chooseToken(logits, {}, rng) == 1);
    core::Sampling s;
    s.greedy = false;
    s.topK = 1;
    CHECK(core::chooseToken(logits, s, rng) == 1);
    s.topK = 0;
    s.topP = 1e-9; // the nucleus is the single most probable token
    CHECK(core::chooseToken(logits, s, rng) == 1);
    s.topP = 1.0;
    s.topK = 3;
    std::vector<std::int32_t> a, b;
    std::mt19937_64 r1(42), r2(42);
    for (int i = 0; i < 50; ++i) {
        a.push_back(core::chooseToken(logits, s, r1));
        b.push_back(core::chooseToken(logits, s, r2));
    }
    CHECK(a == b); // the same seed repeats a run
    for (auto id : a)
        CHECK((id == 1 || id == 2 || id == 4)); // the three most probable
    CHECK(std::count(a.begin(), a.end(), 1) > 5);
}

TEST_CASE("generation leaves out control tokens unless asked: excluded ids are never chosen", "[analyses][generate]")
{
    const std::vector<float> logits{0.5f, 3.0f, 2.5f, -1.0f, 2.9f};
    std::mt19937_64 rng(7);
    core::Sampling s;
    s.excluded = {1};
    CHECK(core::chooseToken(logits, s, rng) == 4); // greedy: the best allowed
    s.greedy = false;
    s.topK = 2;
    for (int i = 0; i < 200; ++i) {
        const auto id = core::chooseToken(logits, s, rng);
        CHECK(id != 1);
        CHECK((id == 4 || id == 2)); // top-k among the allowed ones
    }
    s.excluded = {0, 1, 2, 3, 4};
    CHECK_THROWS_WITH(core::chooseToken(logits, s, rng), Catch::Contains("every token is excluded"));

    // The built-in decoder's vocabulary: its <unk> and <eos> are control tokens, its words are not.
    const auto loaded = core::loadModel("builtin:llama-wikitext2", {(std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()});
    const auto tok = core::loadModelTokenizer(loaded);
    const auto ids = core::controlTokenIds(*tok);
    std::vector<std::string> pieces;
    for (auto id : ids)
        pieces.push_back(tok->pieceOf(id));
    CHECK(std::find(pieces.begin(), pieces.end(), "<unk>") != pieces.end());
    CHECK(std::find(pieces.begin(), pieces.end(), "<eos>") != pieces.end());
    CHECK(ids.size() < 10);
    // A folder without tokenizer files types ids, spelled "<5>": none of them is a control token.
    const auto plain = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    CHECK(core::controlTokenIds(*core::loadModelTokenizer(plain)).empty());
    const auto g = core::generateTokens(*loaded.model, core::promptIds(*tok, "Homarus gammarus is a species of"), 30,
                                        core::Sampling{true, 1.0, 0, 1.0, ids}, 1);
    for (auto id : g.ids)
        CHECK(std::find(ids.begin(), ids.end(), id) == ids.end());
}

TEST_CASE("greedy generation through the key/value cache equals greedy generation recomputing the whole text",
          "[analyses][generate]")
{
    forEachPredictingCase([&](const core::LoadedModel& loaded, std::vector<std::int32_t> ids) {
        ids.resize(std::min<std::size_t>(ids.size(), 6));
        const auto cached = core::generateTokens(*loaded.model, ids, 4, {}, 1);
        REQUIRE(cached.ids.size() == 4);
        auto text = ids;
        for (int step = 0; step < 4; ++step) {
            const auto dump = core::dumpReference(*loaded.model, nlohmann::json{{"token_ids", text}}, "case");
            const auto& logits = tensor(dump, "logits");
            const auto V = static_cast<std::size_t>(logits.shape[1]);
            const float* last = logits.data.data() + (text.size() - 1) * V;
            const auto best = static_cast<std::int32_t>(std::max_element(last, last + V) - last);
            INFO("step " << step);
            CHECK(cached.ids[static_cast<std::size_t>(step)] == best);
            text.push_back(best);
        }
        // A seeded sampled run is reproducible.
        core::Sampling s;
        s.greedy = false;
        s.topK = 5;
        CHECK(core::generateTokens(*loaded.model, ids, 4, s, 99).ids == core::generateTokens(*loaded.model, ids, 4, s, 99).ids);
    });
}

TEST_CASE("surprisal is -log2 of the reference logits' probability of each next token, perplexity their mean",
          "[analyses][surprisal]")
{
    int withLogits = 0; // cases whose reference has logits (each is checked in a section of its own)
    for (const auto& dir : casesWithoutMemory()) {
        const auto loaded = core::loadModel(dir.string());
        if (!loaded.model->info().can.causal || !loaded.model->info().can.nextTokenLoss)
            continue;
        const auto expected = test::loadAll((dir / "expected.safetensors").string());
        const auto logits = std::find_if(expected.begin(), expected.end(), [](const auto& t) { return t.name == "logits"; });
        if (logits == expected.end())
            continue;
        ++withLogits;
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto ids = caseIds(dir);
            const int T = static_cast<int>(ids.size());
            const auto capture = oneSegment(*loaded.model, ids);
            const auto s = core::tokenSurprisal(*loaded.model, *capture);
            REQUIRE(s.bits.size() == ids.size());
            CHECK(std::isnan(s.bits[0])); // nothing predicts the first token
            const auto V = static_cast<std::size_t>(logits->shape[1]);
            double sumNats = 0;
            for (int p = 0; p + 1 < T; ++p) { // the reference's own logits, in double
                const float* row = logits->data.data() + static_cast<std::size_t>(p) * V;
                double mx = row[0], z = 0;
                for (std::size_t v = 0; v < V; ++v)
                    mx = std::max(mx, static_cast<double>(row[v]));
                for (std::size_t v = 0; v < V; ++v)
                    z += std::exp(row[v] - mx);
                const double nats = mx + std::log(z) - row[ids[static_cast<std::size_t>(p) + 1]];
                sumNats += nats;
                CHECK(s.bits[static_cast<std::size_t>(p) + 1] == Approx(nats / std::log(2.0)).margin(2e-3));
            }
            CHECK(s.predicted == T - 1);
            CHECK(s.perplexity == Approx(std::exp(sumNats / (T - 1))).epsilon(1e-3));
        }
    }
    CHECK(withLogits >= 3);
}

TEST_CASE("surprisal across segments is each position's own next-token prediction", "[analyses][surprisal]")
{
    const auto loaded = core::loadModel("builtin:llama-wikitext2", {(std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()});
    const auto tok = core::loadModelTokenizer(loaded);
    core::CaptureOptions copt;
    copt.segmentLen = 7; // several segments, the cache carried between them
    const auto capture = core::captureText(*loaded.model, *tok,
                                           "The lobster is blue . It lives in the sea and it eats fish .", copt);
    REQUIRE(capture->segments.size() >= 3);
    const auto s = core::tokenSurprisal(*loaded.model, *capture);
    for (std::size_t p = 0; p + 1 < capture->tokens.size(); ++p) {
        const auto d = core::distributionOf(core::nextTokenLogits(*loaded.model, *capture, static_cast<int>(p)), 1.0, 1,
                                            capture->tokens[p + 1].id);
        CHECK(s.bits[p + 1] == Approx(-std::log2(d.actualProbability)).margin(1e-3));
    }
    // Transformer-XL is read without its adaptive softmax, an encoder predicts no next token: refused by name.
    const auto bert = core::loadModel((test::testdataDir() / "bert-tiny").string());
    CHECK_THROWS_WITH(core::tokenSurprisal(*bert.model, *core::captureText(*bert.model, tokensOf({1, 2, 3}), {})),
                      Catch::Contains("BERT"));
}
