// Dense building blocks shared by the forward passes (row-major Eigen, float32).
#pragma once

#include "io/checkpoint.h"

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace attnscope::core {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const RowVector>;

// A float32 vector (a norm's scale, a bias: Checkpoint::getFloat) as an Eigen row vector.
inline ConstVectorMap asVector(const WeightView& w) { return ConstVectorMap(w.floats(), w.numel()); }

// out = x Wᵀ for a weight W [out, in] (PyTorch's Linear layout, GGUF's) in any stored type, through the product engine
// (linalg/matmul.h); with `accumulate`, out += x Wᵀ (out keeps its shape).
void multiplyTransposed(const RowMatrix& x, const WeightView& w, RowMatrix& out, bool accumulate = false);
// out = x W for a weight W [in, out] (GPT-2's Conv1D layout).
void multiply(const RowMatrix& x, const WeightView& w, RowMatrix& out);
// Row r of a weight as float32 into out [cols] (embedding lookups); refuses a row holding NaN or infinity by name.
void weightRow(const WeightView& w, std::int64_t r, float* out);

// log(sum_j exp(row[j])) in double, shifted by the maximum: the log of the softmax's normaliser (a log-probability is
// row[j] minus it).
double logSumExp(const float* row, std::size_t n);

// Row-wise LayerNorm with biased variance: out = (x - mean) / sqrt(var + eps) * gamma + beta.
void layerNormRows(const RowMatrix& x, const WeightView& gamma, const WeightView& beta, float eps, RowMatrix& out);

// Direct logit attribution's pieces, shared by the families.
// The heads' outputs of one position, headMixRow [heads * headDim], as [heads, heads * headDim]: row h keeps head h's
// slice and zeros elsewhere, so one product with the output projection gives every head's part.
RowMatrix headSlices(const float* headMixRow, int heads, int headDim);
// The unembedding row `u` [n] read through a final norm whose scale is frozen at the residual `x` [n]: with
// g = u * gamma, RMSNorm gives direction g / rms(x); LayerNorm (layerNorm) gives (g - mean(g)) / sigma(x), the
// centring moved onto the direction, and constant u . beta. So logit(x) = direction . x + constant, exactly.
void frozenNormDirection(const float* x, const float* u, const WeightView& gamma, const WeightView& beta, float eps,
                         bool layerNorm, int n, std::vector<float>& direction, double& constant);
// The same for row `token` of the unembedding `unembed` [vocab, n]; false for a token outside it.
bool unembeddingDirection(const WeightView& unembed, std::int32_t token, const float* x, const WeightView& gamma,
                          const WeightView& beta, float eps, bool layerNorm, int n, std::vector<float>& direction,
                          double& constant);

// GPT-2's tanh approximation of GELU, in place.
void geluNewInPlace(RowMatrix& x);
// Exact GELU (erf), in place.
void geluErfInPlace(RowMatrix& x);

// Softmax of `scores` [n] over entries where mask[j] == 0; masked outputs are exactly 0.
void maskedSoftmax(const float* scores, const std::uint8_t* mask, int n, float* out);

} // namespace attnscope::core
