// Long-text benchmarks: the capture's memory and the prefix reuse of live typing, measured on real-shaped models.
#include "long_text_bench.h"

#include "bench_clock.h"

#include "analysis/attention_grid.h"
#include "attention/attention_scores.h"
#include "model/model_loader.h"
#include "random_models.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "util/memory_info.h"
#include "util/text_file.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <omp.h>
#include <random>

namespace fs = std::filesystem;
using namespace attnscope::core;

namespace attnscope::bench {

namespace {
double mib(std::uint64_t bytes)
{
    return static_cast<double>(bytes) / (1 << 20);
}

fs::path smollm2Folder()
{
    return randomLlamaFolder("smollm2-135m");
}

std::vector<Token> randomTokens(int n, int vocab, unsigned seed)
{
    std::mt19937 rng(seed);
    std::vector<Token> t(static_cast<std::size_t>(n));
    for (auto& tok : t)
        tok.id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab));
    return t;
}

// What the head overview computes: `side` sampled query rows of every head of every layer.
void overviewRows(const TextCapture& c, int side)
{
    const int seg = static_cast<int>(c.segments.size()) - 1;
    const int q = c.segment(seg).qlen, h = std::min(q, side);
    std::vector<int> rows;
    for (int y = 0; y < h; ++y)
        rows.push_back(y * q / h);
    for (int l = 0; l < c.model.layers; ++l) {
        const auto in = c.inputs(seg, l);
#pragma omp parallel for schedule(dynamic)
        for (int head = 0; head < c.model.heads; ++head) {
            std::vector<float> out(rows.size() * static_cast<std::size_t>(in.klen));
            headAttentionRows(in, head, {}, rows, out.data(), in.klen, std::numeric_limits<float>::quiet_NaN());
        }
    }
}
} // namespace

int longTextMemory(int tokens, int threads)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const auto loaded = loadModel(smollm2Folder().string());
    const auto& info = loaded.model->info();
    // Touch every weight once (a short run), so the baseline holds the mapped weights.
    captureText(*loaded.model, randomTokens(8, info.vocabSize, 1), {});
    const auto baseline = residentBytes();
    resetPeakResident();
    const auto t0 = Clock::now();
    const auto capture = captureText(*loaded.model, randomTokens(tokens, info.vocabSize, 2), {});
    const auto t1 = Clock::now();
    const auto grid = attentionGrid(*capture, 0, info.layers / 2, {0});
    const auto t2 = Clock::now();
    overviewRows(*capture, 64);
    const auto t3 = Clock::now();
    const auto peak = peakResidentBytes();
    std::printf("model: random SmolLM2-135M shape (%d layers x %d heads, %d kv heads, d_head %d), float32 weights "
                "memory-mapped, %d thread(s)\n",
                info.layers, info.heads, info.kvHeads, info.dHead, threads);
    std::printf("long text, %d tokens: capture %.1f s, one head's %dx%d grid %.2f s, the %d heads' thumbnails %.2f s\n",
                tokens, seconds(t0, t1), grid.rows, grid.cols, seconds(t1, t2), info.layers * info.heads, seconds(t2, t3));
    std::printf("long text, %d tokens: resident with weights %.0f MiB; capture kept %.0f MiB; peak beyond the weights "
                "%.0f MiB (target 1536)\n",
                tokens, mib(baseline), mib(capture->bytes()), mib(peak - baseline));
    std::printf("peak_beyond_weights_mib: %.0f\n", mib(peak - baseline));
    return 0;
}

int editLatency(const std::string& which, int tokens, int edits, int threads)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const fs::path dir = which == "smollm2" ? smollm2Folder() : fs::path(which);
    const auto loaded = loadModel(dir.string());
    const auto& info = loaded.model->info();
    // A real tokenizer when the folder has one: the latency includes tokenizing the whole text again.
    const std::unique_ptr<Tokenizer> tokenizer = textTokenizer(loaded);
    auto base = randomTokens(tokens, info.vocabSize, 3);
    std::string text;
    if (tokenizer) {
        // WikiText words until the text has `tokens` tokens.
        const auto corpus = fs::path(ATTNSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "wikitext-2" / "valid.txt";
        const std::string all = readTextFile(corpus.string());
        std::size_t len = static_cast<std::size_t>(tokens) * 3;
        while (len < all.size() && static_cast<int>(tokenizer->encodeWithSpecial(all.substr(0, len)).size()) < tokens)
            len += static_cast<std::size_t>(tokens) / 4;
        text = all.substr(0, len);
    }
    auto run = [&](const std::string& t, const std::vector<Token>& ids, std::shared_ptr<const TextCapture> previous) {
        CaptureOptions opt;
        opt.previous = std::move(previous);
        auto c = tokenizer ? captureText(*loaded.model, *tokenizer, t, opt) : captureText(*loaded.model, ids, opt);
        const int seg = static_cast<int>(c->segments.size()) - 1;
        attentionGrid(*c, seg, 0, {0}); // the shown head's grid
        return c;
    };
    auto capture = run(text, base, nullptr);
    const auto fullStart = Clock::now();
    capture = run(text, base, nullptr);
    const double full = seconds(fullStart, Clock::now());
    std::vector<double> times;
    const char* typed = "abcdefghijklmnopqrstuvwxyz";
    for (int e = 0; e < edits; ++e) {
        // Typing at the end: one more character (or token).
        text += typed[e % 26];
        base.push_back(Token{static_cast<std::int32_t>(e % info.vocabSize), "", 0, 0});
        const auto t0 = Clock::now();
        capture = run(text, base, capture);
        times.push_back(seconds(t0, Clock::now()));
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    std::printf("model: %s (%d layers x %d heads), %d thread(s), %s\n", dir.filename().string().c_str(), info.layers,
                info.heads, threads, tokenizer ? "text through its tokenizer" : "token ids");
    std::printf("edit at the end of a %d-token text: median %.1f ms to the shown head's grid over %d edits "
                "(whole text recomputed: %.0f ms; reused %d tokens)\n",
                static_cast<int>(capture->tokens.size()), median * 1000, edits, full * 1000, capture->reusedTokens);
    std::printf("edit_latency_ms: %.1f\n", median * 1000);
    return 0;
}

} // namespace attnscope::bench
