// The matrix-product rate this build of the core reaches on this machine (single-precision GEMM, Eigen), so a
// benchmark can state how close a forward pass comes to it, measured in the same run by the same library.
#pragma once

namespace attnscope::core {

// Best GFLOP/s of `repeats` n x n x n products on `threads` threads.
double gemmPeakGflops(int threads, int n = 1024, int repeats = 5);

} // namespace attnscope::core
