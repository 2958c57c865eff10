// Eigen's own single-precision GEMM on square matrices, timed after one warm-up product.
#include "util/gemm_peak.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>

namespace attnscope::core {

double gemmPeakGflops(int threads, int n, int repeats)
{
    const int before = Eigen::nbThreads();
    Eigen::setNbThreads(threads);
    const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
    Eigen::MatrixXf c(n, n);
    c.noalias() = a * b; // warm-up: packing buffers, threads
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        c.noalias() = a * b;
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    Eigen::setNbThreads(before);
    return 2.0 * n * n * static_cast<double>(n) / best / 1e9;
}

} // namespace attnscope::core
