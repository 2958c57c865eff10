// nn_ops: LayerNorm, GELU and masked softmax.
#include "model/nn_ops.h"

#include <cmath>
#include <limits>

namespace attnscope::core {

void layerNormRows(const RowMatrix& x, const WeightView& gamma, const WeightView& beta, float eps, RowMatrix& out)
{
    const auto g = asVector(gamma);
    const auto b = asVector(beta);
    out.resize(x.rows(), x.cols());
    const double n = static_cast<double>(x.cols());
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        // Accumulate in double: cheap here and keeps the statistics exact to float precision.
        double mean = 0;
        for (Eigen::Index c = 0; c < x.cols(); ++c)
            mean += x(r, c);
        mean /= n;
        double var = 0;
        for (Eigen::Index c = 0; c < x.cols(); ++c) {
            const double d = x(r, c) - mean;
            var += d * d;
        }
        var /= n;
        const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
        for (Eigen::Index c = 0; c < x.cols(); ++c)
            out(r, c) = static_cast<float>((x(r, c) - mean) * inv) * g[c] + b[c];
    }
}

void geluNewInPlace(RowMatrix& x)
{
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    x = x.unaryExpr([k](float z) { return 0.5f * z * (1.0f + std::tanh(k * (z + 0.044715f * z * z * z))); });
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
