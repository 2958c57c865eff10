// Dense building blocks shared by the forward passes (row-major Eigen, float32).
#pragma once

#include "io/checkpoint.h"

#include <Eigen/Core>
#include <cstdint>

namespace attnscope::core {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const RowVector>;

// Views of checkpoint weights (safetensors is row-major, so these map the bytes in place).
inline ConstMatrixMap asMatrix(const WeightView& w)
{
    const auto rows = w.shape.empty() ? 1 : w.shape[0];
    return ConstMatrixMap(w.data, rows, rows ? w.numel() / rows : 0);
}
inline ConstVectorMap asVector(const WeightView& w) { return ConstVectorMap(w.data, w.numel()); }

// out = x W^T for a weight W [out, in] (PyTorch's Linear layout). A few rows of x (a resumed text's new tokens) are
// matrix-vector products, which Eigen runs on one thread and which are bound by reading W: they are split over
// W's rows across threads instead.
void multiplyTransposed(const RowMatrix& x, const WeightView& w, RowMatrix& out);
// out = x W for a weight W [in, out] (GPT-2's Conv1D layout), split the same way for a few rows.
void multiply(const RowMatrix& x, const WeightView& w, RowMatrix& out);

// Row-wise LayerNorm with biased variance: out = (x - mean) / sqrt(var + eps) * gamma + beta.
void layerNormRows(const RowMatrix& x, const WeightView& gamma, const WeightView& beta, float eps, RowMatrix& out);

// GPT-2's tanh approximation of GELU, in place.
void geluNewInPlace(RowMatrix& x);
// Exact GELU (erf), in place.
void geluErfInPlace(RowMatrix& x);

// Softmax of `scores` [n] over entries where mask[j] == 0; masked outputs are exactly 0.
void maskedSoftmax(const float* scores, const std::uint8_t* mask, int n, float* out);

} // namespace attnscope::core
