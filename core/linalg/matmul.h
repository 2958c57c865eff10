// The one matrix-product engine: every product of a weight (any stored type) with float32 activations.
//
// Packed panels: the weight is cut into tiles of NR output features x KC inputs; the packing step decodes the tile
// from its stored type (F32, F16, BF16, or a GGUF block type dequantised there) into float32, laid out for a
// register-blocked micro-kernel (MR x NR accumulators: 12 x 32 with AVX-512, 6 x 16 with AVX2/FMA; which one runs is
// chosen with the core's build, see core/CMakeLists.txt). Threads take column tiles, so each weight tile is decoded
// once per product, and prefetch the stored bytes of their next tile while they multiply the current one. The rows of
// x are packed once per product (in groups of at most 16 MiB) as the micro-kernel reads them: contiguous broadcasts,
// one stream from L2 past a panel held in L1. Arithmetic
// is float32: the result equals the float32 product of the dequantised weight up to the order of summation. A product
// of one or two rows (generation, a resumed text) is bound by reading the weight: linalg/matvec reads each stored row
// once and multiplies it straight from its bytes.
#pragma once

#include "io/weight_view.h"

#include <cstdint>

namespace attnscope::core {

// What happens to each output once its sum is complete, while its tile is still in registers: a bias [N] added
// (after the sum and, with `accumulate`, after what out held), then ReLU. The same values as a pass over out
// afterwards, without that pass (which ran on one thread between two products).
struct ProductEpilogue {
    const float* bias = nullptr; // N floats, or null
    bool relu = false;
};

// out[M, N] (row stride ldo) = x[M, K] (row stride ldx) · Wᵀ for W [N, K] (PyTorch's Linear layout and GGUF's:
// one stored row per output feature). With `accumulate` the product is added to out. N, K from w.
// Throws Error(UnsupportedDtype) for a type nothing can decode, Error(CorruptFile) for non-finite weights.
void matmulTransposed(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out,
                      std::int64_t ldo, bool accumulate = false, const ProductEpilogue& then = {});

// out[M, N] = x[M, K] · W for W [K, N] (GPT-2's Conv1D layout), element types only (F32, F16, BF16, F64).
void matmul(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out, std::int64_t ldo,
            bool accumulate = false, const ProductEpilogue& then = {});

// What the engine was built for, for --version and benchmarks: "AVX-512 12x32", "AVX2/FMA 6x16" or "portable 6x16".
const char* matmulKernelName();

} // namespace attnscope::core
