// Teaching and query-key benchmarks on the built-in models or random real shapes.
#include "teaching_bench.h"

#include "bench_clock.h"

#include "analysis/attention_grid.h"
#include "analysis/logit_lens.h"
#include "analysis/qk_space.h"
#include "analysis/token_predictions.h"
#include "model/model_loader.h"
#include "random_models.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "util/text_file.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <omp.h>
#include <random>

namespace fs = std::filesystem;
using namespace attnscope::core;

namespace attnscope::bench {

namespace {

struct BenchModel {
    fs::path dir;
    LoadedModel loaded;
    std::unique_ptr<Tokenizer> tokenizer;
};

BenchModel openBenchModel(const std::string& which, int threads)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    BenchModel m;
    m.dir = which == "smollm2" ? randomLlamaFolder("smollm2-135m") : fs::path(which);
    m.loaded = loadModel(m.dir.string());
    m.tokenizer = textTokenizer(m.loaded);
    return m;
}

// `n` tokens: WikiText through the model's tokenizer when it has one, random ids otherwise.
std::vector<Token> benchTokens(const BenchModel& m, int n)
{
    if (m.tokenizer) {
        const auto corpus = fs::path(ATTNSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "wikitext-2" / "valid.txt";
        const std::string all = readTextFile(corpus.string());
        auto tokens = m.tokenizer->encodeWithSpecial(all.substr(0, std::min(all.size(), static_cast<std::size_t>(n) * 8)));
        if (static_cast<int>(tokens.size()) >= n) {
            tokens.resize(static_cast<std::size_t>(n));
            return tokens;
        }
    }
    std::mt19937 rng(3);
    std::vector<Token> t(static_cast<std::size_t>(n));
    for (auto& tok : t)
        tok.id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(m.loaded.model->info().vocabSize));
    return t;
}

void describe(const BenchModel& m, int threads)
{
    const auto& info = m.loaded.model->info();
    std::printf("model: %s (%d layers x %d heads), %d thread(s), %s\n", m.dir.filename().string().c_str(), info.layers,
                info.heads, threads, m.tokenizer ? "WikiText through its tokenizer" : "random token ids");
}

} // namespace

int generationStep(const std::string& which, int context, int steps, int threads)
{
    const BenchModel m = openBenchModel(which, threads);
    describe(m, threads);
    auto tokens = benchTokens(m, context);
    auto capture = captureText(*m.loaded.model, tokens, {});
    std::vector<double> times;
    Sampling greedy;
    std::mt19937_64 rng(1);
    for (int s = 0; s < steps; ++s) {
        const auto t0 = Clock::now();
        const int last = static_cast<int>(capture->tokens.size()) - 1;
        const auto logits = nextTokenLogits(*m.loaded.model, *capture, last);
        const std::int32_t id = chooseToken(logits, greedy, rng);
        tokens.push_back(Token{id, "", 0, 0});
        CaptureOptions opt;
        opt.previous = capture;
        capture = captureText(*m.loaded.model, tokens, opt);
        attentionGrid(*capture, static_cast<int>(capture->segments.size()) - 1, 0, {0});
        times.push_back(seconds(t0, Clock::now()));
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf("one generated token after %d tokens: median %.1f ms over %d steps (next-token logits, greedy choice, "
                "capture with the cache reused, the shown head's grid)\n",
                context, median * 1000, steps);
    std::printf("generation_step_ms: %.1f\n", median * 1000);
    return 0;
}

int logitLensTime(const std::string& which, int tokens, int threads)
{
    const BenchModel m = openBenchModel(which, threads);
    describe(m, threads);
    CaptureOptions opt;
    opt.segmentLen = tokens; // one segment, as the lens shows one
    const auto capture = captureText(*m.loaded.model, benchTokens(m, tokens), opt);
    const auto t0 = Clock::now();
    const auto lens = logitLens(*m.loaded.model, *capture, 0);
    const double s = seconds(t0, Clock::now());
    std::printf("logit lens of %d tokens x %d layers: %.2f s\n", lens.positions, lens.layers, s);
    std::printf("logit_lens_s: %.2f\n", s);
    return 0;
}

int qkSpaceTimes(const std::string& which, int tokens, int tsnePoints, int threads)
{
    const BenchModel m = openBenchModel(which, threads);
    describe(m, threads);
    const auto& info = m.loaded.model->info();
    CaptureOptions opt;
    opt.segmentLen = std::max(tokens, (tsnePoints + 1) / 2);
    const auto capture = captureText(*m.loaded.model, benchTokens(m, opt.segmentLen), opt);
    // PCA of every head of a `tokens`-token text (the first `tokens` queries and keys of each).
    auto t0 = Clock::now();
    for (int l = 0; l < info.layers; ++l)
        for (int h = 0; h < info.heads; ++h) {
            // What the all-heads matrix computes per head: vectors, each query's strongest keys, the embedding.
            QkVectors v = headQkVectors(*capture, 0, l, h);
            v.queries.resize(static_cast<std::size_t>(tokens) * v.dim);
            v.keys.resize(static_cast<std::size_t>(tokens) * v.dim);
            v.queryPositions.resize(static_cast<std::size_t>(tokens));
            v.keyPositions.resize(static_cast<std::size_t>(tokens));
            strongestKeys(v, capture->segment(0));
            normaliseQk(v);
            embedQk(v, QkMethod::Pca);
        }
    const double pca = seconds(t0, Clock::now());
    std::printf("PCA of all %d heads of a %d-token text (the all-heads matrix: vectors, strongest keys, embedding): %.2f s\n",
                info.layers * info.heads, tokens, pca);
    std::printf("qk_pca_all_heads_s: %.2f\n", pca);
    // t-SNE of one head's first tsnePoints / 2 queries and keys.
    QkVectors v = headQkVectors(*capture, 0, 0, 0);
    v.queries.resize(static_cast<std::size_t>(tsnePoints / 2) * v.dim);
    v.keys.resize(static_cast<std::size_t>(tsnePoints - tsnePoints / 2) * v.dim);
    normaliseQk(v);
    t0 = Clock::now();
    const auto e = embedQk(v, QkMethod::Tsne);
    const double tsne = seconds(t0, Clock::now());
    std::printf("t-SNE (Barnes-Hut, 1,000 iterations) of %d points: %.2f s (KL %.3f)\n", tsnePoints, tsne, e.klDivergence);
    std::printf("qk_tsne_s: %.2f\n", tsne);
    t0 = Clock::now();
    embedQk(v, QkMethod::Umap);
    const double umap = seconds(t0, Clock::now());
    std::printf("UMAP (umap-learn defaults, 200 epochs above 2,000 points) of %d points: %.2f s\n", tsnePoints, umap);
    std::printf("qk_umap_s: %.2f\n", umap);
    return 0;
}

} // namespace attnscope::bench
