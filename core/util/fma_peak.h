// The machine's single-precision arithmetic peak, measured the way a peak is measured: independent fused multiply-add
// chains held in registers on every thread, no memory traffic, best of several runs. A forward pass's product rate
// over this number is the share of the machine it uses (a library's GEMM rate is a second, lower, reference).
#pragma once

namespace attnscope::core {

struct FmaPeak {
    double gflops = 0; // best run, all threads together
    int vectorBits = 0; // the widest vectors this build issues (512 with AVX-512, 256 with AVX2 + FMA, 32 otherwise)
    int chains = 0;     // independent accumulators per thread: enough to cover the FMA latency on both ports
};

// Best of `repeats` runs of about `seconds` each on `threads` threads.
FmaPeak fmaPeak(int threads, int repeats = 5, double seconds = 0.1);

} // namespace attnscope::core
