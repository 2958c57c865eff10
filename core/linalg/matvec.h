// Products of one or two activation rows with a stored weight (a generated token, a resumed text): bound by reading
// the weight, so each stored row is read once, straight from its bytes, and dotted with the float32 rows while it is
// in registers. F32, F16, BF16, Q8_0, Q4_K and Q6_K (what BF16/F16/Q8_0/Q4_K_M files hold) have kernels of their own
// that turn 16 stored values at a time into floats and multiply at once; block scales are applied per block, and
// Q4_K's minimums through each 32-element block's sum of x (computed once per product). Other types decode a row
// into float32 pieces first. Arithmetic is float32: the result equals the float32 product of the dequantised weight
// up to the order of operations. On CPUs with AVX-512 VNNI, Q8_0, Q4_K and Q6_K multiply their stored integers by a
// fixed-point copy of the activations instead (64 products per instruction, exact in int32; the copy is within 2^-21
// of each 32-value block's largest value, 8 times float32's rounding), which is what keeps up with the memory.
// Threads take contiguous ranges of output rows; each reads its range as eight equal parts (four with AVX2) side by
// side (row i of every part in one kernel call, the activations loaded once for them), because one stream of reads
// per core stays well below the memory's rate and several at once come close to it; each part asks 2 KB ahead.
#pragma once

#include "linalg/matmul.h"

namespace attnscope::core::linalg_detail {

// The row count up to which the engine takes this path.
constexpr std::int64_t kMatvecRows = 2;

// out[m, n] (row stride ldo) (+)= x[m, :] · W[n, :] for m < M <= kMatvecRows, W [N, K] in its stored type, then the
// epilogue. The weight is checked by the caller (type readable, K matching, finite).
void matvecTransposed(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out,
                      std::int64_t ldo, bool accumulate, const ProductEpilogue& then);

// Whether `type` has a kernel of its own here (the others decode rows first), and whether it is an integer kernel
// (this CPU has AVX-512 VNNI); for tests and benchmarks.
bool hasRowKernel(GgmlType type);
bool hasIntegerKernel(GgmlType type);
// Tests: off makes Q8_0, Q4_K and Q6_K use their float kernels, so both are checked on a machine with VNNI.
void setIntegerKernels(bool on);

} // namespace attnscope::core::linalg_detail
