// attnscope-bench: speed of the forward pass with attention capture (and the machine's GEMM peak) on a random
// Transformer-XL of the WikiText-103 base shape. Not a test: prints numbers to compare with PyTorch.
#include "analysis/relpos_scan.h"
#include "bench_clock.h"
#include "big_models.h"
#include "linalg/matvec.h"
#include "long_text_bench.h"
#include "teaching_bench.h"
#include "throughput_bench.h"
#include "random_models.h"
#include "seq2seq_bench.h"
#include "speech_bench.h"
#include "vision_bench.h"
#include "patch_bench.h"
#include "util/memory_info.h"
#include "io/safetensors.h"
#include "util/cpu_features.h"
#include "util/fma_peak.h"
#include "util/gemm_peak.h"
#include "model/model_loader.h"
#include "util/text_file.h"
#include "util/error.h"

#include <Eigen/Core>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>
#include <string>

using namespace attnscope::core;
namespace bench = attnscope::bench;
namespace fs = std::filesystem;
using attnscope::bench::Clock;
using attnscope::bench::seconds;

namespace {

struct Options {
    int tokens = 3000, tgtLen = 150, memLen = 640, layers = 16, heads = 10, dModel = 410, dHead = 41, dInner = 2100;
    int vocab = 1000, threads = 2;
    bool terms = false;
    bool scan = false; // time the corpus scan (relative-position profiles) instead of the plain forward pass
};

// Copies every layer's probabilities (and terms) into a reused buffer, as a real consumer would read them.
class CopyObserver final : public AttentionObserver {
public:
    explicit CopyObserver(bool terms)
        : m_terms(terms)
    {
    }
    bool wantTerms() const override { return m_terms; }
    void onLayer(const LayerView& l) override
    {
        const std::size_t n = static_cast<std::size_t>(l.heads) * l.qlen * l.klen;
        m_buffer.resize(n);
        std::memcpy(m_buffer.data(), l.attnProb, n * sizeof(float));
        checksum += m_buffer[n / 2];
        if (m_terms)
            for (const float* t : l.terms)
                checksum += t[n / 3];
    }
    double checksum = 0;

private:
    bool m_terms;
    std::vector<float> m_buffer;
};

// FLOPs per token of the forward pass with cached memory projections (matrix products only).
double flopsPerToken(const Options& o)
{
    const double d = o.dModel, hd = static_cast<double>(o.heads) * o.dHead, klen = o.memLen + o.tgtLen;
    const double proj = 2 * d * 3 * hd + 2 * hd * d + 2 * 2 * d * o.dInner;
    const double attn = 3 * 2 * klen * hd; // q.k, q.R, p.v
    return o.layers * (proj + attn);
}

// The command line after the sub-command's name: `--name value` options and `--flag`s.
class Args {
public:
    Args(int argc, char** argv)
        : m_argc(argc)
        , m_argv(argv)
    {
    }
    int integer(const char* name, int fallback) const
    {
        const char* v = value(name);
        return v ? std::atoi(v) : fallback;
    }
    std::string text(const char* name, const char* fallback) const
    {
        const char* v = value(name);
        return v ? v : fallback;
    }
    bool flag(const char* name) const
    {
        for (int i = 2; i < m_argc; ++i)
            if (std::string(m_argv[i]) == name)
                return true;
        return false;
    }

private:
    const char* value(const char* name) const
    {
        for (int i = 2; i + 1 < m_argc; ++i)
            if (std::string(m_argv[i]) == name)
                return m_argv[i + 1];
        return nullptr;
    }
    int m_argc;
    char** m_argv;
};

int llamaCommand(const Args& a)
{
    bench::LlamaBenchModel which;
    which.modelPath = a.text("--model", "");
    which.shape = a.text("--shape", "smollm2-135m");
    which.format = a.text("--format", "bf16");
    which.modelRoot = a.text("--model-dir", (fs::temp_directory_path() / "attnscope-bench-models").c_str());
    try {
        if (a.flag("--float-kernels")) // the float kernels where integer ones exist, to compare the two
            attnscope::core::linalg_detail::setIntegerKernels(false);
        if (a.integer("--generate", 0) > 0)
            return bench::llamaGeneration(which, a.integer("--generate", 64), a.integer("--rounds", 3),
                                          a.integer("--threads", 2), a.flag("--breakdown"));
        return bench::llamaForwardThroughput(which, a.integer("--tokens", 1024), a.integer("--threads", 2),
                                             a.flag("--breakdown"));
    } catch (const attnscope::core::Error& e) {
        std::fprintf(stderr, "attnscope-bench: %s\n", e.what());
        return 1;
    }
}

// One sub-command: its name and what it runs.
struct Command {
    const char* name;
    int (*run)(const Args&);
};

const Command kCommands[] = {
    {"vision", [](const Args& a) { return bench::visionCapture(a.text("--shape", "dinov2-small"), a.integer("--image", 0),
                                                               a.integer("--threads", 2), a.integer("--rounds", 5)); }},
    {"patch", [](const Args& a) { return bench::patchHeads(a.text("--model", "gpt2-small"), a.integer("--tokens", 20),
                                                           a.integer("--threads", 2), a.integer("--rounds", 3)); }},
    {"seq2seq", [](const Args& a) {
         return bench::seq2seqTranslate(a.text("--shape", "marian"), a.integer("--source-tokens", 30),
                                        a.integer("--new-tokens", 30), a.integer("--threads", 2), a.integer("--rounds", 5));
     }},
    {"speech", [](const Args& a) { return bench::speechTranscribe(a.text("--shape", "whisper-base"), a.integer("--new-tokens", 50),
                                                                  a.integer("--threads", 2), a.integer("--rounds", 3)); }},
    {"long-text", [](const Args& a) { return bench::longTextMemory(a.integer("--tokens", 4096), a.integer("--threads", 2)); }},
    {"edit", [](const Args& a) { return bench::editLatency(a.text("--model", "smollm2"), a.integer("--tokens", 1000),
                                                           a.integer("--edits", 21), a.integer("--threads", 2)); }},
    {"generate", [](const Args& a) { return bench::generationStep(a.text("--model", "smollm2"), a.integer("--tokens", 1000),
                                                                  a.integer("--steps", 11), a.integer("--threads", 2)); }},
    {"lens", [](const Args& a) { return bench::logitLensTime(a.text("--model", "smollm2"), a.integer("--tokens", 1000),
                                                             a.integer("--threads", 2)); }},
    {"qk", [](const Args& a) { return bench::qkSpaceTimes(a.text("--model", "smollm2"), a.integer("--tokens", 1000),
                                                          a.integer("--points", 5000), a.integer("--threads", 2)); }},
    {"decode", [](const Args& a) { return bench::blockDecodeSpeed(a.integer("--megabytes", 64), a.integer("--rounds", 5),
                                                                  a.text("--type", "")); }},
    {"txl-wt103", [](const Args& a) { return bench::txlWt103(a.integer("--tokens", 2000), a.integer("--threads", 2)); }},
    {"scan", [](const Args& a) { return bench::txlScanThroughput(a.integer("--tokens", 3000), a.integer("--threads", 2),
                                                                 a.flag("--breakdown")); }},
    {"llama", llamaCommand},
};

// attnscope-bench --make-llama DIR [SHAPE] [f32|bf16] [TOKENIZER.json]: a random model to open and try.
int makeLlama(int argc, char** argv)
{
    const std::string shape = argc > 3 ? argv[3] : "smollm2-135m";
    const auto dtype = argc > 4 && std::string(argv[4]) == "bf16" ? DType::BF16 : DType::F32;
    bench::writeRandomLlama(bench::llamaShape(shape), argv[2], dtype, argc > 5 ? argv[5] : "");
    std::printf("wrote a random %s model to %s\n", shape.c_str(), argv[2]);
    return 0;
}

int usage()
{
    std::fprintf(stderr, "usage: attnscope-bench [--tokens N] [--tgt-len T] [--mem-len M] [--layers L] "
                         "[--threads N] [--terms] [--scan]\n"
                         "       attnscope-bench scan [--tokens N] [--threads N] [--breakdown]\n"
                         "       attnscope-bench llama [--model PATH | --shape smollm2-135m|llama-1b|tiny|llama-3.2-1b|llama-3.2-3b|llama-3.1-8b\n"
                         "                             [--format bf16|bf16-gguf|f16|q8_0|q4_k_m] [--model-dir DIR]] [--tokens N] [--threads N] [--breakdown]\n"
                         "                             [--generate N [--rounds R]] [--float-kernels]   (N tokens generated, as llama-bench -n N)\n"
                         "       attnscope-bench long-text [--tokens N] [--threads N]\n"
                         "       attnscope-bench txl-wt103 [--tokens N] [--threads N]\n"
                         "       attnscope-bench decode [--megabytes N] [--rounds N] [--type Q8_0|Q4_K|Q6_K]\n"
                         "       attnscope-bench edit [--model smollm2|DIR] [--tokens N] [--edits N] [--threads N]\n"
                         "       attnscope-bench generate|lens|qk [--model smollm2|DIR] [--tokens N] [--steps N]\n"
                         "                             [--points N] [--threads N]\n"
                         "       attnscope-bench --make-llama DIR [SHAPE] [f32|bf16] [TOKENIZER.json]\n");
    return 2;
}

// The default bench's options (a random Transformer-XL of the WikiText-103 base shape); false on an unknown one.
bool parseTxlOptions(int argc, char** argv, Options& o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
        if (a == "--tokens") o.tokens = next();
        else if (a == "--tgt-len") o.tgtLen = next();
        else if (a == "--mem-len") o.memLen = next();
        else if (a == "--layers") o.layers = next();
        else if (a == "--threads") o.threads = next();
        else if (a == "--terms") o.terms = true;
        else if (a == "--scan") o.scan = true;
        else return false;
    }
    return true;
}

// The corpus scan of the paper's Figs. 5 / 7 over the ids: every layer's attention folded into per-distance sums.
void timeTxlScan(const AttentionModel& model, const Options& o, const std::vector<std::int32_t>& ids)
{
    ScanOptions so;
    so.memLen = o.memLen;
    so.segmentLen = o.tgtLen;
    so.terms = o.terms ? "a,b,c,d" : "";
    const auto t2 = Clock::now();
    RelposScanner scanner(model, so);
    scanner.feed(ids);
    const auto r = scanner.finish();
    const double secs = seconds(t2, Clock::now());
    std::printf("corpus scan (%s): %.1f tokens/s (%.2f s for %lld tokens); WikiText-2 validation (217k tokens) "
                "would take about %.0f s\n",
                o.terms ? "full + terms a, b, c, d" : "full attention", static_cast<double>(r.tokens) / secs, secs,
                static_cast<long long>(r.tokens), 217000.0 / (static_cast<double>(r.tokens) / secs));
}

// The forward with every layer's probabilities copied out, against the FMA peak measured after it.
void timeTxlForward(const AttentionModel& model, const Options& o, const std::vector<std::int32_t>& ids, const RunOptions& ro)
{
    CopyObserver obs(o.terms);
    const auto t1 = Clock::now();
    model.runSplit(ids, o.tgtLen, ro, obs);
    const double s = seconds(t1, Clock::now());
    const double tps = o.tokens / s;
    const double fma = fmaPeak(o.threads).gflops, sgemm = gemmPeakGflops(o.threads);
    const double achieved = flopsPerToken(o) * tps / 1e9;
    std::printf("forward with attention capture: %.1f tokens/s (%.2f s for %d tokens; checksum %.3f)\n", tps, s,
                o.tokens, obs.checksum);
    std::printf("matrix-product rate in the forward pass: %.1f GFLOP/s = %.0f%% of the FMA peak on %d thread(s), "
                "%.1f GFLOP/s (Eigen sgemm: %.1f GFLOP/s)\n",
                achieved, 100.0 * achieved / fma, o.threads, fma, sgemm);
}

int txlBench(const Options& o)
{
    omp_set_num_threads(o.threads);
    Eigen::setNbThreads(o.threads);
    std::printf("instruction set: %s\n", compiledCpuLevel().c_str());
    std::printf("attnscope-bench: %d layers x %d heads, d_model %d, d_head %d, d_inner %d, segment %d, memory %d, "
                "%d tokens, %d thread(s), capture %s\n",
                o.layers, o.heads, o.dModel, o.dHead, o.dInner, o.tgtLen, o.memLen, o.tokens, o.threads,
                o.terms ? "probs+terms" : "probs");
    bench::TransfoXLShape shape;
    shape.layers = o.layers;
    shape.heads = o.heads;
    shape.dModel = o.dModel;
    shape.dHead = o.dHead;
    shape.dInner = o.dInner;
    shape.memLen = o.memLen;
    shape.tgtLen = o.tgtLen;
    shape.vocab = o.vocab;
    const auto dir = bench::randomTransfoXL(shape);
    const auto t0 = Clock::now();
    const auto loaded = loadModel(dir.string());
    std::printf("open model (memory-mapped, %.0f MB): %.3f s\n",
                static_cast<double>(fs::file_size(dir / "model.safetensors")) / 1e6, seconds(t0, Clock::now()));

    std::mt19937 rng(1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(o.tokens));
    for (auto& id : ids)
        id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(o.vocab));
    RunOptions ro;
    ro.memLen = o.memLen;
    {   // warm-up: one segment
        CopyObserver warm(o.terms);
        loaded.model->runSplit(std::span(ids).first(static_cast<std::size_t>(o.tgtLen)), o.tgtLen, ro, warm);
    }
    if (o.scan)
        timeTxlScan(*loaded.model, o, ids);
    else
        timeTxlForward(*loaded.model, o, ids, ro);
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (!attnscope::core::cpuCanRunThisBuild("attnscope-bench"))
        return 1;
    returnLargeBlocksToSystem();
    const Args args(argc, argv);
    for (const Command& c : kCommands)
        if (argc >= 2 && std::string(argv[1]) == c.name)
            return c.run(args);
    if (argc >= 3 && std::string(argv[1]) == "--make-llama")
        return makeLlama(argc, argv);
    Options o;
    if (!parseTxlOptions(argc, argv, o))
        return usage();
    return txlBench(o);
}
