// Dense building blocks shared by the forward passes (row-major Eigen, float32).
#pragma once

#include "io/checkpoint.h"
#include "linalg/matmul.h"

#include <Eigen/Core>
#include <bit>
#include <cstdint>
#include <vector>

namespace attnscope::core {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows first.. of x: x itself when first is 0, else a copy of its last rows in `scratch` (a segment's read-out of
// only its last row, SegmentEndView::firstLogitRow).
inline const RowMatrix& rowsFrom(const RowMatrix& x, int first, RowMatrix& scratch)
{
    if (first <= 0)
        return x;
    scratch = x.bottomRows(x.rows() - first);
    return scratch;
}
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const RowVector>;

// A float32 vector (a norm's scale, a bias: Checkpoint::getFloat) as an Eigen row vector.
inline ConstVectorMap asVector(const WeightView& w) { return ConstVectorMap(w.floats(), w.numel()); }

// out = x Wᵀ for a weight W [out, in] (PyTorch's Linear layout, GGUF's) in any stored type, through the product engine
// (linalg/matmul.h); with `accumulate`, out += x Wᵀ (out keeps its shape); `then` adds a bias and applies ReLU.
void multiplyTransposed(const RowMatrix& x, const WeightView& w, RowMatrix& out, bool accumulate = false,
                        const ProductEpilogue& then = {});
// out = x Wᵀ (+ b when given): a linear layer with an optional bias.
void linear(const RowMatrix& x, const WeightView& w, const WeightView& b, RowMatrix& out);
// out = x W for a weight W [in, out] (GPT-2's Conv1D layout).
void multiply(const RowMatrix& x, const WeightView& w, RowMatrix& out);
// Row r of a weight as float32 into out [cols] (embedding lookups); refuses a row holding NaN or infinity by name.
void weightRow(const WeightView& w, std::int64_t r, float* out);

// log(sum_j exp(row[j])) in double, shifted by the maximum: the log of the softmax's normaliser (a log-probability is
// row[j] minus it).
double logSumExp(const float* row, std::size_t n);
// exp(d) for d <= 0 to about one ulp, without calls or branches, so that loops over a vocabulary vectorise.
inline double expNonPositive(double d)
{
    // exp(d) = 2^k exp(r), k = round(d / ln 2), |r| <= ln 2 / 2; exp(r) by its Taylor series to r^13 (remainder below
    // 1e-17). k is read from the low bits of d / ln 2 + 1.5 * 2^52 (round to nearest without a call), and 2^k built as
    // the bits of a double. Below -700 the term is taken as exp(-700) (~1e-304): nothing beside a largest term of 1.
    constexpr double kLog2e = 1.4426950408889634, kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
    constexpr double kShifter = 6755399441055744.0;
    d = d < -700.0 ? -700.0 : d;
    const double t = d * kLog2e + kShifter;
    const double k = t - kShifter;
    const double r = (d - k * kLn2Hi) - k * kLn2Lo;
    double p = 1.0 / 6227020800.0; // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const std::int64_t ki = std::bit_cast<std::int64_t>(t) - std::bit_cast<std::int64_t>(kShifter);
    return p * std::bit_cast<double>((ki + 1023) << 52);
}


// RMSNorm in place of each of `groups` equal slices of every row, x / sqrt(mean(x^2) + eps) * w (Qwen3: one per head,
// weights [slice]; a whole-row norm: groups 1); statistics in double, from a double copy of the slice.
void rmsNormGroupsInPlace(RowMatrix& x, int groups, const WeightView& w, float eps);

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
// Exact GELU (erf), in place: 0.5 x (1 + erf(x / sqrt 2)) with floatErf.
void geluErfInPlace(RowMatrix& x);
// erf of n floats in place, vectorised: within one ulp of the correctly rounded erf where the machine has FMA (two
// without), as libm's erff is; erf(x) = x (c0 + x^2 Q(x^2)) below |x| = 1, 1 - exp(-x^2) R(|x|) up to 4, and +-1
// beyond (where the float is 1). Q and R are least-squares fits made for this function (docs/performance.md).
void floatErf(float* x, std::int64_t n);

// Softmax of `scores` [n] over entries where mask[j] == 0; masked outputs are exactly 0.
void maskedSoftmax(const float* scores, const std::uint8_t* mask, int n, float* out);

} // namespace attnscope::core
