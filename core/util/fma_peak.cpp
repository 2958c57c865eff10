// Register-only FMA chains per thread (compiled per instruction level: the widest vectors of the build).
#include "util/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <omp.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace attnscope::core {

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr int kChains = 24; // of 32 registers: latency 4 x 2 ports = 8 in flight, with room to spare
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float sum(Vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__FMA__) && defined(__AVX__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr int kChains = 12; // of 16 registers
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float sum(Vec v)
{
    alignas(32) float f[8];
    _mm256_store_ps(f, v);
    float s = 0;
    for (float x : f)
        s += x;
    return s;
}
#else
using Vec = float;
constexpr int kLanes = 1;
constexpr int kChains = 8;
inline Vec splat(float x) { return x; }
inline Vec fma(Vec a, Vec b, Vec c) { return a * b + c; }
inline float sum(Vec v) { return v; }
#endif

// `iterations` rounds of one FMA on each chain; the result is returned so the work cannot be dropped. acc * m + a
// with m just under 1 stays near a / (1 - m): no overflow, no denormals.
float runChains(long iterations, float seed)
{
    Vec acc[kChains];
    for (int i = 0; i < kChains; ++i)
        acc[i] = splat(seed + static_cast<float>(i));
    const Vec m = splat(0.999f), a = splat(0.001f);
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 32
        for (int i = 0; i < kChains; ++i)
            acc[i] = fma(acc[i], m, a);
    }
    float s = 0;
    for (int i = 0; i < kChains; ++i)
        s += sum(acc[i]);
    return s;
}

double flopsPerIteration() { return 2.0 * kLanes * kChains; }

// Wall seconds of every thread running `iterations` rounds at once.
double timedRun(int threads, long iterations, float& sink)
{
    float total = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += runChains(iterations, static_cast<float>(omp_get_thread_num()));
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink += total;
    return secs;
}

} // namespace

FmaPeak fmaPeak(int threads, int repeats, double seconds)
{
    threads = std::max(1, threads);
    float sink = 0;
    // Size the run from a short one (which also wakes the threads and lifts the clock).
    long iterations = 1 << 16;
    double secs = timedRun(threads, iterations, sink);
    while (secs < seconds / 10) {
        iterations *= 4;
        secs = timedRun(threads, iterations, sink);
    }
    iterations = static_cast<long>(static_cast<double>(iterations) * seconds / secs) + 1;
    double best = 1e30;
    for (int r = 0; r < std::max(1, repeats); ++r)
        best = std::min(best, timedRun(threads, iterations, sink));
    FmaPeak p;
    p.gflops = threads * static_cast<double>(iterations) * flopsPerIteration() / best / 1e9;
    p.vectorBits = 32 * kLanes;
    p.chains = kChains;
    volatile float observed = sink; // the chains' results are used, so the compiler keeps every FMA
    (void)observed;
    return p;
}

} // namespace attnscope::core
