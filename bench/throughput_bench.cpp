// Timed runs with the core's stage timers on, and the arithmetic that turns stage times into rates: each stage's
// floating-point work is counted from the model's shape (matrix products only), so GFLOP/s per stage is that
// count over the stage's wall time.
#include "throughput_bench.h"

#include "analysis/relpos_scan.h"
#include "analysis/token_predictions.h"
#include "model/model_loader.h"
#include "big_models.h"
#include "linalg/matmul.h"
#include "model/llama.h"
#include "random_models.h"
#include "util/error.h"
#include "util/memory_info.h"
#include "util/cpu_features.h"
#include "util/fma_peak.h"
#include "util/gemm_peak.h"
#include "util/stage_timer.h"

#include <Eigen/Core>
#include <array>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <omp.h>
#include <random>
#include <vector>

namespace attnscope::bench {

using namespace attnscope::core;

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kStages = static_cast<std::size_t>(Stage::Count);
using StageFlops = std::array<double, kStages>;

double since(Clock::time_point t0)
{
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::int32_t> randomIds(int n, int vocab)
{
    std::mt19937 rng(7);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
    for (auto& id : ids)
        id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab));
    return ids;
}

// Every query's visible keys, summed over queries: causal within a chunk, plus the whole memory.
double visiblePairs(int tokens, int chunk, int memory)
{
    double pairs = 0;
    int seen = 0;
    for (int start = 0; start < tokens; start += chunk) {
        const int q = std::min(chunk, tokens - start), m = std::min(seen, memory);
        pairs += static_cast<double>(q) * m + static_cast<double>(q) * (q + 1) / 2;
        seen += q;
    }
    return pairs;
}

// The machine's peak, measured around the run it judges: register FMA chains before and after (the best of both,
// so a neighbour's burst on a shared machine lowers neither), and Eigen's sgemm in the same process as a second line.
struct Peaks {
    double fma = 0, sgemm = 0;
    int vectorBits = 0, chains = 0;
};

Peaks peaksBefore(int threads)
{
    const FmaPeak p = fmaPeak(threads);
    return {p.gflops, gemmPeakGflops(threads), p.vectorBits, p.chains};
}

void peaksAfter(Peaks& peaks, int threads)
{
    peaks.fma = std::max(peaks.fma, fmaPeak(threads).gflops);
}

void printRates(const char* what, int tokens, double seconds, double flops, const Peaks& peak, int threads)
{
    const double gflops = flops / seconds / 1e9;
    std::printf("%s: %.1f tokens/s (%.2f s for %d tokens)\n", what, tokens / seconds, seconds, tokens);
    std::printf("matrix-product work %.1f GFLOP -> %.1f GFLOP/s = %.0f%% of the FMA peak\n", flops / 1e9, gflops,
                100 * gflops / peak.fma);
    std::printf("FMA peak (%d independent %d-bit FMA chains in registers per thread, %d threads, best of 5 before and "
                "after the run): %.1f GFLOP/s; Eigen sgemm 1024^3 in the same process: %.1f GFLOP/s (%.0f%% of the FMA "
                "peak; the run is at %.0f%% of it)\n",
                peak.chains, peak.vectorBits, threads, peak.fma, peak.sgemm, 100 * peak.sgemm / peak.fma,
                100 * gflops / peak.sgemm);
}

// Stage table: wall seconds (inner attention stages get their share of the region's wall time), share of the
// run, GFLOP/s where the stage multiplies matrices, and that rate's share of the FMA peak.
void printBreakdown(double total, const StageFlops& flops, double peak, int threads)
{
    const auto s = stageSeconds();
    const auto at = [&s](Stage st) { return s[static_cast<std::size_t>(st)]; };
    double innerThreadSeconds = 0;
    for (std::size_t i = 0; i < kStages; ++i)
        if (insideAttention(static_cast<Stage>(i)))
            innerThreadSeconds += s[i];
    const double region = at(Stage::Attention);
    const double capacity = region * threads; // thread-seconds the region had
    std::printf("\n| stage | seconds | share | GFLOP/s | of the FMA peak |\n| --- | ---: | ---: | ---: | ---: |\n");
    double accounted = 0;
    auto row = [&](const std::string& name, double secs, double f) {
        accounted += secs;
        if (f > 0)
            std::printf("| %s | %.3f | %.1f%% | %.1f | %.0f%% |\n", name.c_str(), secs, 100 * secs / total,
                        f / secs / 1e9, 100 * f / secs / 1e9 / peak);
        else
            std::printf("| %s | %.3f | %.1f%% | | |\n", name.c_str(), secs, 100 * secs / total);
    };
    for (std::size_t i = 0; i < kStages; ++i) {
        const auto st = static_cast<Stage>(i);
        if (st == Stage::Attention || s[i] == 0)
            continue;
        // Inner stages: their thread-seconds as a share of the region's capacity, times its wall time.
        const double secs = insideAttention(st) ? s[i] / capacity * region : s[i];
        row(insideAttention(st) ? std::string("attention: ") + stageName(st) : stageName(st), secs, flops[i]);
    }
    if (region > 0)
        row("attention: threads waiting (imbalance, synchronisation)", (capacity - innerThreadSeconds) / threads, 0);
    row("everything else (observer, glue)", total - accounted, 0);
    std::printf("| **total** | %.3f | 100%% | | |\n\n", total);
}

// Touches every layer's probabilities, as a consumer of the forward pass would read them.
class ReadingObserver final : public AttentionObserver {
public:
    void onLayer(const LayerView& l) override { checksum += l.attnProb[static_cast<std::size_t>(l.qlen) * l.klen / 2]; }
    double checksum = 0;
};

} // namespace

int txlScanThroughput(int tokens, int threads, bool breakdown)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    TransfoXLShape shape;
    const auto loaded = loadModel(randomTransfoXL(shape).string());
    const auto ids = randomIds(tokens, shape.vocab);
    ScanOptions so;
    so.memLen = shape.memLen;
    so.segmentLen = shape.tgtLen;
    { // warm-up: one segment
        RelposScanner warm(*loaded.model, so);
        warm.feed(std::span(ids).first(static_cast<std::size_t>(shape.tgtLen)));
        warm.finish();
    }
    Peaks peak = peaksBefore(threads);
    std::printf("compute library: %s\n", compiledCpuLevel().c_str());
    std::printf("Transformer-XL corpus scan: %d layers x %d heads, d_model %d, d_head %d, d_inner %d, segments of %d, "
                "memory %d, %d threads\n", shape.layers, shape.heads, shape.dModel, shape.dHead, shape.dInner,
                shape.tgtLen, shape.memLen, threads);
    enableStageTimes(breakdown);
    const auto t0 = Clock::now();
    RelposScanner scanner(*loaded.model, so);
    scanner.feed(ids);
    const auto r = scanner.finish();
    const double secs = since(t0);
    enableStageTimes(false);
    peaksAfter(peak, threads);

    const double d = shape.dModel, hd = static_cast<double>(shape.heads) * shape.dHead;
    const double pairs = visiblePairs(static_cast<int>(r.tokens), shape.tgtLen, shape.memLen) * shape.heads * shape.layers;
    StageFlops f{};
    f[static_cast<std::size_t>(Stage::Projections)] = static_cast<double>(r.tokens) * shape.layers * (2 * d * 3 * hd + 2 * hd * d);
    f[static_cast<std::size_t>(Stage::FeedForward)] = static_cast<double>(r.tokens) * shape.layers * 4 * d * shape.dInner;
    f[static_cast<std::size_t>(Stage::Scores)] = pairs * 4 * shape.dHead; // q.k and q.R
    f[static_cast<std::size_t>(Stage::Values)] = pairs * 2 * shape.dHead;
    double total = 0;
    for (double x : f)
        total += x;
    printRates("corpus scan", static_cast<int>(r.tokens), secs, total, peak, threads);
    if (breakdown)
        printBreakdown(secs, f, peak.fma, threads);
    return 0;
}

namespace {
// The model a llama benchmark runs: a file or folder given, or a random model of a named shape (written once).
struct BenchPath {
    std::string path, label;
};
BenchPath benchPath(const LlamaBenchModel& which)
{
    if (!which.modelPath.empty())
        return {which.modelPath, which.modelPath};
    if (isBigLlamaShape(which.shape)) {
        const auto shape = bigLlamaShape(which.shape);
        // The family's own tokenizer: Llama 3's, Qwen3's, GPT-NeoX's (OLMoE's; Granite's stand-in).
        const std::string source = ATTNSCOPE_SOURCE_DIR;
        const std::string tokenizer = shape.arch == "qwen3moe" || shape.arch == "gpt-oss"
                                          ? source + "/tests/data/tokenizers/qwen3/tokenizer.json"
                                      : shape.arch == "olmoe" || shape.arch == "granitemoe"
                                          ? source + "/tests/data/tokenizers/pythia/tokenizer.json"
                                                               : source + "/../shared/testdata/tokenizers/llama3/tokenizer.json";
        return {bigLlamaModel(shape, which.format, which.modelRoot, std::filesystem::exists(tokenizer) ? tokenizer : "").string(),
                which.shape + " " + which.format};
    }
    return {randomLlamaFolder(which.shape).string(), which.shape};
}
} // namespace

int llamaForwardThroughput(const LlamaBenchModel& which, int tokens, int threads, bool breakdown)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const auto [path, label] = benchPath(which);
    resetPeakResident();
    const auto tOpen = Clock::now();
    const auto loaded = loadModel(path);
    const double openSeconds = since(tOpen);
    const std::uint64_t openRss = residentBytes();
    const auto* llama = dynamic_cast<const LlamaModel*>(loaded.model.get());
    if (!llama)
        throw Error(ErrorCode::BadInput, "not a Llama-family model", path);
    const auto& c = llama->config();
    std::printf("compute library: %s, product kernel %s\n", compiledCpuLevel().c_str(), matmulKernelName());
    std::printf("Llama-family forward, every head's probabilities: %s (%d layers x %d heads, %d kv heads, hidden %d, "
                "intermediate %d%s; weights %s), %d tokens in one sequence, %d threads\n",
                label.c_str(), c.nLayer, c.nHead, c.nKvHead, c.hidden, c.intermediate,
                c.experts > 0 ? (", experts " + std::to_string(c.experts) + " of width " + std::to_string(c.expertFfn) +
                                 ", " + std::to_string(c.expertsUsed) + " per token").c_str()
                              : "",
                loaded.model->info().weightTypes.c_str(), tokens, threads);
    std::printf("open: %.3f s, resident %s\n", openSeconds, formatBytes(openRss).c_str());
    const auto ids = randomIds(tokens, c.vocabSize);
    RunOptions ro;
    double firstSeconds = 0;
    { // the first pass reads every weight from the file (page cache or disk) and checks it once
        ReadingObserver first;
        const auto t0 = Clock::now();
        loaded.model->runSplit(ids, tokens, ro, first);
        firstSeconds = since(t0);
    }
    std::printf("first forward (weights read in): %.2f s, peak resident %s\n", firstSeconds,
                formatBytes(peakResidentBytes()).c_str());
    Peaks peak = peaksBefore(threads);
    ReadingObserver obs;
    enableStageTimes(breakdown);
    const auto t0 = Clock::now();
    loaded.model->runSplit(ids, tokens, ro, obs);
    const double secs = since(t0);
    enableStageTimes(false);
    peaksAfter(peak, threads);

    const double C = c.hidden, d = c.headDim, H = c.nHead, KV = c.nKvHead;
    const double pairs = visiblePairs(tokens, tokens, 0) * H * c.nLayer;
    StageFlops f{};
    f[static_cast<std::size_t>(Stage::Projections)] = tokens * c.nLayer * 2 * C * (2 * H * d + 2 * KV * d);
    // A mixture of experts multiplies each token by its router and the experts it uses only: its active parameters.
    f[static_cast<std::size_t>(Stage::FeedForward)] =
        c.experts > 0 ? tokens * c.nLayer * 2 * C * (3.0 * c.expertFfn * c.expertsUsed + c.experts)
                      : tokens * c.nLayer * 2 * C * 3.0 * c.intermediate;
    f[static_cast<std::size_t>(Stage::Scores)] = pairs * 2 * d;
    f[static_cast<std::size_t>(Stage::Values)] = pairs * 2 * d;
    double total = 0;
    for (double x : f)
        total += x;
    printRates("forward pass", tokens, secs, total, peak, threads);
    std::printf("peak resident: %s (weights as stored %s)\n", formatBytes(peakResidentBytes()).c_str(),
                formatBytes(loaded.model->info().weightBytes).c_str());
    std::printf("(checksum %.4f)\n", obs.checksum);
    if (breakdown)
        printBreakdown(secs, f, peak.fma, threads);
    return 0;
}


int llamaGeneration(const LlamaBenchModel& which, int tokens, int rounds, int threads, bool breakdown)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const auto [path, label] = benchPath(which);
    const auto loaded = loadModel(path);
    const auto& info = loaded.model->info();
    std::printf("compute library: %s, product kernel %s\n", compiledCpuLevel().c_str(), matmulKernelName());
    std::printf("generation as llama-bench -n %d: %s (%d layers x %d heads; weights %s), greedy, %d threads\n", tokens,
                label.c_str(), info.layers, info.heads, info.weightTypes.c_str(), threads);
    // A one-token prompt and `tokens` generated: `tokens` one-token forwards, each reading every weight once.
    const std::vector<std::int32_t> prompt{1}; // which token does not change the work
    Sampling greedy;
    generateTokens(*loaded.model, prompt, 4, greedy, 1); // reads the weights in and checks them once
    std::vector<double> rates;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = Clock::now();
        const auto g = generateTokens(*loaded.model, prompt, tokens, greedy, 1);
        const double secs = since(t0);
        rates.push_back(static_cast<double>(g.ids.size()) / secs);
        std::printf("round %d: %zu tokens in %.3f s, %.2f tokens/s, %.1f ms per token\n", r + 1, g.ids.size(), secs,
                    rates.back(), 1000 * secs / static_cast<double>(g.ids.size()));
    }
    if (breakdown) { // one more round, timed by stage
        enableStageTimes(true);
        const auto t0 = Clock::now();
        const auto g = generateTokens(*loaded.model, prompt, tokens, greedy, 1);
        const double secs = since(t0);
        const auto st = stageSeconds();
        enableStageTimes(false);
        std::printf("where a token's %.1f ms go:", 1000 * secs / static_cast<double>(g.ids.size()));
        for (std::size_t i = 0; i < st.size(); ++i)
            if (st[i] > 0)
                std::printf(" %s %.1f", stageName(static_cast<Stage>(i)), 1000 * st[i] / static_cast<double>(g.ids.size()));
        std::printf(" (ms)\n");
    }
    std::sort(rates.begin(), rates.end());
    std::printf("generation: %.2f tokens/s (median of %d rounds), peak resident %s\n", rates[rates.size() / 2], rounds,
                formatBytes(peakResidentBytes()).c_str());
    return 0;
}
} // namespace attnscope::bench

namespace attnscope::bench {

int txlWt103(int tokens, int threads)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    const TransfoXLShape shape = wt103Shape();
    auto t0 = Clock::now();
    const auto dir = randomTransfoXL(shape);
    std::printf("Transformer-XL WikiText-103 shape (random weights, %s): %s\n",
                formatBytes(std::filesystem::file_size(dir / "model.safetensors")).c_str(), dir.c_str());
    std::printf("  written or found in %.1f s\n", since(t0));
    returnLargeBlocksToSystem();
    resetPeakResident();
    t0 = Clock::now();
    const auto loaded = loadModel(dir.string());
    std::printf("  open: %.2f s, resident %s\n", since(t0), formatBytes(residentBytes()).c_str());
    const auto ids = randomIds(tokens, shape.vocab);
    // Figs. 5 and 7: the corpus scan with the paper's memory, the four terms folded per distance.
    ScanOptions so;
    so.memLen = shape.memLen;
    so.segmentLen = shape.tgtLen;
    so.terms = "a,b,c,d";
    t0 = Clock::now();
    RelposScanner scanner(*loaded.model, so);
    scanner.feed(ids);
    const auto r = scanner.finish();
    const double secs = since(t0);
    std::printf("  Figs. 5/7 corpus scan, memory %d, terms a-d: %lld tokens in %.1f s (%.1f tokens/s), %d threads\n",
                shape.memLen, static_cast<long long>(r.tokens), secs, static_cast<double>(r.tokens) / secs, threads);
    std::printf("  peak resident %s of %s\n", formatBytes(peakResidentBytes()).c_str(),
                formatBytes(totalMemoryBytes()).c_str());
    return 0;
}

} // namespace attnscope::bench
