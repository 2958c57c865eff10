// Heads over a corpus: every statistic and metric equals a brute-force pass over the same windows through the app's
// own grid path (a capture in segments of the window, each from an empty state, read back with attentionGrid).
#include "analysis/attention_grid.h"
#include "analysis/head_contexts.h"
#include "model/model_loader.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <random>

using namespace attnscope;
using namespace attnscope::core;

namespace {

std::vector<Token> randomTokens(int n, int vocab, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<Token> t;
    for (int i = 0; i < n; ++i) {
        const int id = static_cast<int>(rng() % static_cast<unsigned>(std::min(vocab, 12))); // repeats: induction has cases
        t.push_back({id, "t" + std::to_string(id), 0, 0});
    }
    return t;
}

double mean(const std::vector<double>& v)
{
    double s = 0;
    int n = 0;
    for (double x : v)
        if (std::isfinite(x)) {
            s += x;
            ++n;
        }
    return n ? s / n : std::nan("");
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-5 + 1e-5 * std::abs(b); }

} // namespace

TEST_CASE("head contexts: statistics, metrics and chosen contexts equal a brute-force pass", "[head-contexts]")
{
    for (const char* name : {"gpt2-tiny", "llama-gqa", "bert-tiny"}) {
        INFO(name);
        const auto loaded = loadModel((test::testdataDir() / name).string());
        const auto& model = *loaded.model;
        const int W = 7, N = 30;
        const auto tokens = randomTokens(N, model.info().vocabSize, 5);
        HeadContextOptions o;
        o.window = W;
        o.top = 3;
        o.perDecile = 1;
        o.contextBefore = 4;
        const auto r = headContexts(model, tokens, o);
        REQUIRE(r.tokens == N);

        CaptureOptions copt;
        copt.segmentLen = W;
        copt.run.memLen = 0;
        const auto capture = captureText(model, tokens, copt);
        REQUIRE(capture->segments.size() == static_cast<std::size_t>((N + W - 1) / W));
        const int L = model.info().layers, H = model.info().heads;
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < H; ++h) {
                INFO("layer " << l + 1 << " head " << h + 1);
                std::vector<double> maxAway, previous, induction, first, entropy, distance, sink;
                std::vector<std::vector<float>> rows(static_cast<std::size_t>(N));
                for (int s = 0; s < static_cast<int>(capture->segments.size()); ++s) {
                    const auto g = attentionGrid(*capture, s, l, {h});
                    REQUIRE(g.memoryCols == 0);
                    for (int i = 0; i < g.rows; ++i) {
                        double away = -1, ind = 0, ent = 0, dist = 0;
                        bool inductive = false;
                        const int pos = s * W + i;
                        for (int j = 0; j < g.cols; ++j) {
                            const double p = std::isnan(g.at(i, j)) ? 0.0 : g.at(i, j);
                            rows[static_cast<std::size_t>(pos)].push_back(static_cast<float>(p));
                            if (j > 0)
                                away = std::max(away, p);
                            if (p > 0)
                                ent -= p * std::log(p);
                            dist += p * std::abs(i - j);
                            if (j >= 1 && j <= i && tokens[static_cast<std::size_t>(s * W + j - 1)].id == tokens[static_cast<std::size_t>(pos)].id) {
                                ind += p;
                                inductive = true;
                            }
                        }
                        maxAway.push_back(g.cols > 1 && away >= 0 ? away : std::nan(""));
                        previous.push_back(i >= 1 ? (std::isnan(g.at(i, i - 1)) ? 0.0 : g.at(i, i - 1)) : std::nan(""));
                        induction.push_back(inductive ? ind : std::nan(""));
                        first.push_back(std::isnan(g.at(i, 0)) ? 0.0 : g.at(i, 0));
                        sink.push_back(i >= 1 ? (first.back() > 0.3 ? 1.0 : 0.0) : std::nan(""));
                        entropy.push_back(ent);
                        distance.push_back(dist);
                    }
                }
                const auto& m = r.metrics[static_cast<std::size_t>(l * H + h)];
                CHECK(same(m.statistic, mean(maxAway)));
                CHECK(same(m.previousToken, mean(previous)));
                CHECK(same(m.induction, mean(induction)));
                CHECK(same(m.firstToken, mean(first)));
                CHECK(same(m.entropy, mean(entropy)));
                CHECK(same(m.meanDistance, mean(distance)));
                CHECK(same(m.sinkRate, mean(sink)));
                // The top contexts are the largest values, largest first; each carries the query's row as shown.
                std::vector<double> sorted;
                for (double v : maxAway)
                    if (std::isfinite(v))
                        sorted.push_back(v);
                std::sort(sorted.rbegin(), sorted.rend());
                const auto& contexts = r.contexts[static_cast<std::size_t>(l * H + h)];
                REQUIRE(contexts.size() == 3 + 10);
                for (int t = 0; t < 3; ++t) {
                    CHECK(contexts[static_cast<std::size_t>(t)].decile == -1);
                    CHECK(same(contexts[static_cast<std::size_t>(t)].value, sorted[static_cast<std::size_t>(t)]));
                }
                for (const auto& c : contexts) {
                    CHECK(same(c.value, maxAway[static_cast<std::size_t>(c.position)]));
                    const auto& row = rows[static_cast<std::size_t>(c.position)];
                    const int from = static_cast<int>(c.firstToken - (c.position / W) * W);
                    REQUIRE(c.attention.size() == static_cast<std::size_t>(c.position - c.firstToken + 1));
                    for (std::size_t j = 0; j < c.attention.size(); ++j)
                        CHECK(c.attention[j] == Approx(row[static_cast<std::size_t>(from) + j]).margin(1e-6));
                    CHECK(c.tokens[static_cast<std::size_t>(c.position - c.firstToken)] == tokens[static_cast<std::size_t>(c.position)].text);
                    // The context's grid: every shown token's row over the shown keys.
                    const std::size_t n = c.tokens.size();
                    REQUIRE(c.grid.size() == n * n);
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t j = 0; j < n; ++j)
                            CHECK(c.grid[i * n + j] ==
                                  Approx(rows[static_cast<std::size_t>(c.firstToken) + i][static_cast<std::size_t>(from) + j]).margin(1e-6));
                }
                // Deciles from low to high: each sample's value is at least the one before.
                for (std::size_t k = 4; k < contexts.size(); ++k)
                    CHECK(contexts[k].value >= contexts[k - 1].value);
            }
    }
}

TEST_CASE("head contexts are written in the documented layout", "[head-contexts]")
{
    const auto loaded = loadModel((test::testdataDir() / "gpt2-tiny").string());
    HeadContextOptions o;
    o.window = 8;
    o.statistic = ContextStatistic::Induction;
    const auto r = headContexts(*loaded.model, randomTokens(40, 50, 9), o);
    test::TempDir tmp;
    const auto files = writeHeadContexts(r, "gpt2-tiny", (tmp / "out").string());
    const auto& info = loaded.model->info();
    CHECK(files.size() == static_cast<std::size_t>(2 + info.layers * info.heads));
    const auto index = readJsonFile((tmp / "out" / "index.json").string());
    CHECK(index["statistic"] == "induction");
    CHECK(index["tokens"] == 40);
    const auto scatter = readJsonFile((tmp / "out" / "scatter.json").string());
    REQUIRE(scatter.size() == static_cast<std::size_t>(info.layers * info.heads));
    CHECK(scatter[0]["layer"] == 1);
    CHECK(scatter[0].contains("previous_token"));
    CHECK(scatter[0]["ablation_effect"].is_null()); // not asked for
    CHECK(index["ablation_tokens"] == 0);
    CHECK(index["metrics"].size() == headMetricColumns().size());
    const auto head = readJsonFile((tmp / "out" / "heads" / "L2-H3.json").string());
    CHECK(head["layer"] == 2);
    CHECK(head["head"] == 3);
    REQUIRE(!head["contexts"].empty());
    const auto& c = head["contexts"][0];
    CHECK(c["attention"].size() == c["query_index"].get<std::size_t>() + 1);
    REQUIRE(c["grid"].size() == c["tokens"].size());
    CHECK(c["grid"][0].size() == c["tokens"].size());
    CHECK_THROWS_WITH(headContexts(*loaded.model, randomTokens(1, 50, 1), o), Catch::Contains("too short"));
    o.window = 1;
    CHECK_THROWS_WITH(headContexts(*loaded.model, randomTokens(10, 50, 1), o), Catch::Contains("window"));
}

namespace {

// The next-token loss of ids in windows of W, each from an empty state, with `ablate` zeroed: the logits each window's
// run hands out, summed here (log-sum-exp in double) rather than by the analysis's own loss observer.
class LogitsKeeper final : public AttentionObserver {
public:
    bool wantLogits() const override { return true; }
    bool wantProbabilities() const override { return false; }
    void onLayer(const LayerView&) override {}
    void onSegmentEnd(const SegmentEndView& e) override
    {
        REQUIRE(e.logits);
        logits.insert(logits.end(), e.logits, e.logits + static_cast<std::size_t>(e.qlen) * e.vocab);
        vocab = e.vocab;
    }
    std::vector<float> logits;
    int vocab = 0;
};

double lossByHand(const AttentionModel& model, const std::vector<std::int32_t>& ids, int W, std::optional<RunOptions::HeadRef> ablate)
{
    double loss = 0;
    int n = 0;
    std::vector<float> all;
    int vocab = 0;
    for (std::size_t a = 0; a < ids.size(); a += static_cast<std::size_t>(W)) {
        const std::vector<std::int32_t> window(ids.begin() + static_cast<std::ptrdiff_t>(a),
                                               ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), a + W)));
        RunOptions ro;
        ro.memLen = 0;
        ro.ablate = ablate;
        LogitsKeeper keep;
        model.runSplit(window, W, ro, keep);
        all.insert(all.end(), keep.logits.begin(), keep.logits.end());
        vocab = keep.vocab;
    }
    for (std::size_t t = 0; t + 1 < ids.size(); ++t) { // the last token of a window predicts the next window's first
        const float* row = all.data() + t * static_cast<std::size_t>(vocab);
        double top = row[0], sum = 0;
        for (int v = 0; v < vocab; ++v)
            top = std::max(top, static_cast<double>(row[v]));
        for (int v = 0; v < vocab; ++v)
            sum += std::exp(row[v] - top);
        loss += top + std::log(sum) - row[ids[t + 1]];
        ++n;
    }
    return loss / n;
}

} // namespace

TEST_CASE("head contexts: the ablation effect is each head's zeroed loss over the first tokens less the intact one", "[head-contexts]")
{
    for (const char* name : {"gpt2-tiny", "llama-gqa"}) {
        INFO(name);
        const auto loaded = loadModel((test::testdataDir() / name).string());
        const auto& model = *loaded.model;
        const auto tokens = randomTokens(40, model.info().vocabSize, 3);
        HeadContextOptions o;
        o.window = 9;
        o.ablationTokens = 23; // two whole windows and part of a third, of the 40 tokens
        const auto r = headContexts(model, tokens, o);
        CHECK(r.ablationTokens == 23);
        std::vector<std::int32_t> ids;
        for (int t = 0; t < 23; ++t)
            ids.push_back(tokens[static_cast<std::size_t>(t)].id);
        const double intact = lossByHand(model, ids, o.window, std::nullopt);
        for (int l = 0; l < r.layers; ++l)
            for (int h = 0; h < r.heads; ++h) {
                INFO("layer " << l << " head " << h);
                const double effect = r.metrics[static_cast<std::size_t>(l) * r.heads + h].ablationEffect;
                CHECK(std::abs(effect - (lossByHand(model, ids, o.window, RunOptions::HeadRef{l, h}) - intact)) < 1e-4);
            }
        // Not asked for: NaN, and null in scatter.json.
        o.ablationTokens = 0;
        CHECK(std::isnan(headContexts(model, tokens, o).metrics[0].ablationEffect));
    }
    // More tokens asked than the text has: all of them.
    const auto loaded = loadModel((test::testdataDir() / "gpt2-tiny").string());
    HeadContextOptions o;
    o.window = 8;
    o.ablationTokens = 1000;
    CHECK(headContexts(*loaded.model, randomTokens(20, 50, 4), o).ablationTokens == 20);
    // An encoder read without its language-model head says so before it runs.
    const auto bert = loadModel((test::testdataDir() / "bert-tiny").string());
    CHECK_THROWS_WITH(headContexts(*bert.model, randomTokens(20, 50, 4), o), Catch::Contains("language-model head"));
}

TEST_CASE("head contexts in shards, merged in any order, equal one run, a shard not of its windows is refused",
          "[head-contexts][shards]")
{
    const auto loaded = loadModel((test::testdataDir() / "llama-gqa").string());
    const auto& model = *loaded.model;
    const auto tokens = randomTokens(100, model.info().vocabSize, 5);
    HeadContextOptions o;
    o.window = 9; // 12 windows
    o.top = 2;
    o.perDecile = 1;
    const auto one = headContexts(model, tokens, o);
    std::vector<HeadContextValues> shards;
    for (int s : {3, 1, 4, 2}) // any order
        shards.push_back(headContextValues(model, tokens, o, s, 4));
    auto shifted = shards; // kept for the refusals below
    const auto merged = mergeHeadContexts(model, tokens, o, std::move(shards));
    REQUIRE(merged.contexts.size() == one.contexts.size());
    for (std::size_t slot = 0; slot < one.contexts.size(); ++slot) {
        REQUIRE(merged.contexts[slot].size() == one.contexts[slot].size());
        for (std::size_t c = 0; c < one.contexts[slot].size(); ++c) {
            CHECK(merged.contexts[slot][c].position == one.contexts[slot][c].position);
            CHECK(merged.contexts[slot][c].value == one.contexts[slot][c].value);
            CHECK(merged.contexts[slot][c].grid == one.contexts[slot][c].grid);
        }
        CHECK(merged.metrics[slot].entropy == Approx(one.metrics[slot].entropy).epsilon(1e-12));
        CHECK(merged.metrics[slot].statistic == Approx(one.metrics[slot].statistic).epsilon(1e-12));
    }
    // A shard whose windows are not those its number gives (a hand-edited file) would put positions out of place.
    auto wrong = shifted;
    wrong[0].firstWindow += 1;
    CHECK_THROWS_WITH(mergeHeadContexts(model, tokens, o, wrong), Catch::Contains("does not hold windows"));
    wrong = shifted;
    wrong[1].values[0].pop_back();
    CHECK_THROWS_WITH(mergeHeadContexts(model, tokens, o, wrong), Catch::Contains("does not hold windows"));
    wrong = shifted;
    wrong.pop_back();
    CHECK_THROWS_WITH(mergeHeadContexts(model, tokens, o, wrong), Catch::Contains("are missing"));
}
