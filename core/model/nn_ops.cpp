// nn_ops: LayerNorm, GELU and masked softmax.
#include "model/nn_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {
constexpr Eigen::Index kFewRows = 8;      // up to this many rows: split the weight across threads
constexpr Eigen::Index kChunkColumns = 256; // output features per task
} // namespace

void multiplyTransposed(const RowMatrix& x, const WeightView& w, RowMatrix& out)
{
    const auto W = asMatrix(w);
    out.resize(x.rows(), W.rows());
    if (x.rows() > kFewRows) {
        out.noalias() = x * W.transpose();
        return;
    }
    const Eigen::Index n = W.rows(), chunks = (n + kChunkColumns - 1) / kChunkColumns;
#pragma omp parallel for schedule(static) if (static_cast<double>(W.size()) > 1e5)
    for (Eigen::Index c = 0; c < chunks; ++c) {
        const Eigen::Index j0 = c * kChunkColumns, m = std::min(kChunkColumns, n - j0);
        out.middleCols(j0, m).noalias() = x * W.middleRows(j0, m).transpose();
    }
}

void multiply(const RowMatrix& x, const WeightView& w, RowMatrix& out)
{
    const auto W = asMatrix(w);
    out.resize(x.rows(), W.cols());
    if (x.rows() > kFewRows) {
        out.noalias() = x * W;
        return;
    }
    const Eigen::Index n = W.cols(), chunks = (n + kChunkColumns - 1) / kChunkColumns;
#pragma omp parallel for schedule(static) if (static_cast<double>(W.size()) > 1e5)
    for (Eigen::Index c = 0; c < chunks; ++c) {
        const Eigen::Index j0 = c * kChunkColumns, m = std::min(kChunkColumns, n - j0);
        out.middleCols(j0, m).noalias() = x * W.middleCols(j0, m);
    }
}

void layerNormRows(const RowMatrix& x, const WeightView& gamma, const WeightView& beta, float eps, RowMatrix& out)
{
    const auto g = asVector(gamma);
    const auto b = asVector(beta);
    out.resize(x.rows(), x.cols());
    const double n = static_cast<double>(x.cols());
    // Statistics in double, from a double copy of the row: Eigen vectorises sums of a plain array but not of a cast
    // expression, and a sequential double sum was bound by the adder's latency.
    Eigen::ArrayXd xd(x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        xd = x.row(r).transpose().array().cast<double>();
        const double mean = xd.sum() / n;
        xd -= mean;
        const double var = xd.square().sum() / n;
        const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
        out.row(r).array() = (xd * inv).cast<float>().transpose() * g.array() + b.array();
    }
}

void geluNewInPlace(RowMatrix& x)
{
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    auto z = x.array(); // Eigen's vectorised tanh, not a scalar call per element
    z = 0.5f * z * (1.0f + (k * (z + 0.044715f * z.cube())).tanh());
}

void geluErfInPlace(RowMatrix& x)
{
    x = x.unaryExpr([](float z) { return 0.5f * z * (1.0f + std::erf(z * 0.70710678118654752f)); });
}

void maskedSoftmax(const float* scores, const std::uint8_t* mask, int n, float* out)
{
    float maxv = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < n; ++j)
        if (!mask[j] && scores[j] > maxv)
            maxv = scores[j];
    float sum = 0;
    for (int j = 0; j < n; ++j) {
        const float e = mask[j] ? 0.0f : std::exp(scores[j] - maxv);
        out[j] = e;
        sum += e;
    }
    const float inv = sum > 0 ? 1.0f / sum : 0.0f;
    for (int j = 0; j < n; ++j)
        out[j] *= inv;
}

} // namespace attnscope::core
