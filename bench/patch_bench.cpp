// patchHeads (patch_bench.h).
#include "patch_bench.h"

#include "analysis/activation_patching.h"
#include "bench_clock.h"
#include "big_models.h"
#include "model/model_loader.h"
#include "random_models.h"

#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

namespace attnscope::bench {

int patchHeads(const std::string& which, int tokens, int threads, int rounds)
{
    omp_set_num_threads(threads);
    Eigen::setNbThreads(threads);
    std::filesystem::path path;
    if (which == "gpt2-small")
        path = randomGpt2SmallFolder();
    else if (which == "llama-1b-q4km")
        path = bigLlamaModel(bigLlamaShape("llama-3.2-1b"), "q4_k_m", std::filesystem::temp_directory_path() / "attnscope-bench-big", "");
    else {
        std::fprintf(stderr, "attnscope-bench patch: --model gpt2-small or llama-1b-q4km\n");
        return 2;
    }
    const auto loaded = core::loadModel(path.string());
    const auto& info = loaded.model->info();
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> id(0, info.vocabSize - 1);
    core::PatchRequest request;
    for (int t = 0; t < tokens; ++t)
        request.clean.push_back(id(rng));
    request.corrupt = request.clean;
    request.corrupt[static_cast<std::size_t>(tokens / 2)] = id(rng);
    request.metric.answer = id(rng);
    request.metric.wrong = id(rng);
    double best = 1e30;
    int runs = 0;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = Clock::now();
        const auto result = core::patchActivations(*loaded.model, request);
        best = std::min(best, seconds(t0, Clock::now()));
        runs = result.runs;
    }
    std::printf("patch %s: %d layers x %d heads, %d tokens, %d threads\n", which.c_str(), info.layers, info.heads, tokens,
                threads);
    std::printf("patch every head's output (%d patched runs + 2 plain): %.3f s (best of %d)\n", runs, best, rounds);
    return 0;
}

} // namespace attnscope::bench
