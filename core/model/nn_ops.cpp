// nn_ops: LayerNorm, GELU and masked softmax.
#include "model/nn_ops.h"

#include <array>

#include "linalg/matmul.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <bit>
#include <cstdint>
#include <limits>

namespace attnscope::core {

namespace {
// The engine takes the inner size from the weight: activations of another width would be read out of bounds.
void checkWidth(const RowMatrix& x, std::int64_t inner, const WeightView& w)
{
    if (x.cols() != inner)
        throw Error(ErrorCode::ShapeMismatch,
                    "a product of " + std::to_string(x.cols()) + "-wide activations with the weight " + w.describe() +
                        ", which takes " + std::to_string(inner),
                    w.source ? w.source->file() : "", w.source ? w.source->name() : "");
}
} // namespace

void multiplyTransposed(const RowMatrix& x, const WeightView& w, RowMatrix& out, bool accumulate,
                        const ProductEpilogue& then)
{
    checkWidth(x, w.cols(), w);
    if (!accumulate)
        out.resize(x.rows(), w.rows());
    matmulTransposed(x.data(), x.cols(), x.rows(), w, out.data(), out.cols(), accumulate, then);
}

void linear(const RowMatrix& x, const WeightView& w, const WeightView& b, RowMatrix& out)
{
    multiplyTransposed(x, w, out);
    if (b)
        out.rowwise() += asVector(b);
}

void multiply(const RowMatrix& x, const WeightView& w, RowMatrix& out)
{
    checkWidth(x, w.rows(), w);
    out.resize(x.rows(), w.cols());
    matmul(x.data(), x.cols(), x.rows(), w, out.data(), out.cols());
}

void weightRow(const WeightView& w, std::int64_t r, float* out)
{
    const std::int64_t n = w.cols();
    w.decodeRow(r, 0, n, out);
    for (std::int64_t c = 0; c < n; ++c)
        if (!std::isfinite(out[c]))
            throw Error(ErrorCode::CorruptFile,
                        "row " + std::to_string(r) + " holds NaN or infinite values: the weights are damaged",
                        w.source ? w.source->file() : "", w.source ? w.source->name() : "");
}

// RMSNorm in place of each of `groups` equal slices of every row (Qwen3: one per head, weights [slice]; OLMo 2 and
// the post norms: the whole row); statistics in double, from a double copy of the slice so Eigen vectorises the sum.
void rmsNormGroupsInPlace(RowMatrix& x, int groups, const WeightView& w, float eps)
{
    const auto g = asVector(w);
    const Eigen::Index width = x.cols() / groups;
    Eigen::ArrayXd xd(width);
    for (Eigen::Index r = 0; r < x.rows(); ++r)
        for (int n = 0; n < groups; ++n) {
            auto slice = x.row(r).segment(n * width, width);
            xd = slice.transpose().array().cast<double>();
            const float inv = static_cast<float>(1.0 / std::sqrt(xd.square().sum() / static_cast<double>(width) + eps));
            slice.array() = (slice.array() * inv) * g.array();
        }
}

void layerNormRows(const RowMatrix& x, const WeightView& gamma, const WeightView& beta, float eps, RowMatrix& out)
{
    const auto g = asVector(gamma);
    const auto b = asVector(beta);
    out.resize(x.rows(), x.cols());
    const double n = static_cast<double>(x.cols());
    // Statistics in double, from a double copy of the row: Eigen vectorises sums of a plain array but not of a cast
    // expression, and a sequential double sum was bound by the adder's latency. Rows are independent: split across
    // threads (on one thread, the norms of a segment kept the other idle between two products).
#pragma omp parallel for schedule(static) if (static_cast<double>(x.rows()) * static_cast<double>(x.cols()) > 3e4)
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        thread_local Eigen::ArrayXd xd;
        xd = x.row(r).transpose().array().cast<double>();
        const double mean = xd.sum() / n;
        xd -= mean;
        const double var = xd.square().sum() / n;
        const double inv = 1.0 / std::sqrt(var + static_cast<double>(eps));
        out.row(r).array() = (xd * inv).cast<float>().transpose() * g.array() + b.array();
    }
}

namespace {

// f(row) for every row of x, the rows split across threads when there are enough elements to pay for it (an
// activation on one thread kept the other idle between two products: a tenth of a ViT's forward).
template <class RowFunction>
void eachRowInPlace(RowMatrix& x, const RowFunction& f)
{
#pragma omp parallel for schedule(static) if (static_cast<double>(x.size()) > 3e4)
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        Eigen::Map<Eigen::ArrayXf> row(x.row(r).data(), x.cols()); // a row of the row-major matrix, contiguous
        f(row);
    }
}

} // namespace

void geluNewInPlace(RowMatrix& x)
{
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    eachRowInPlace(x, [k](auto& z) { // Eigen's vectorised tanh, not a scalar call per element
        z = 0.5f * z * (1.0f + (k * (z + 0.044715f * z.cube())).tanh());
    });
}

namespace {

// erf(x) / x = kErfC0 + x^2 Q(x^2) on |x| < 1 (kErfC0 = 2 / sqrt(pi) as a float and its remainder), Q's coefficients
// lowest first; erfc(x) exp(x^2) = R(t) on 1 <= x < 4, t = 2 (x - 1) / 3 - 1. Fitted in double on 4,000 Chebyshev
// nodes against mpmath and checked in float32 arithmetic against the correctly rounded erf.
constexpr float kErfC0 = 1.128379225730896f, kErfC0Low = -5.8635382771399236e-08f;
constexpr std::array<float, 8> kErfSmall = {-0.37612637877464294f,    0.11283791810274124f,    -0.026866160333156586f,
                                            0.005223901942372322f,    -0.0008545327000319958f, 0.00011989950144197792f,
                                            -1.4123334949545097e-05f, 1.1142958555865334e-06f};
constexpr std::array<float, 13> kErfLarge = {
    0.21080636978149414f,     -0.11152100563049316f,   0.05611047148704529f,   -0.027005724608898163f,
    0.012489703483879566f,    -0.0055673327296972275f, 0.0024017016403377056f, -0.0010171177564188838f,
    0.00041450810385867953f,  -0.00014394859317690134f, 5.494724973686971e-05f, -3.69287226931192e-05f,
    1.3819088962918613e-05f};

template <std::size_t N>
Eigen::ArrayXf polynomial(const std::array<float, N>& c, const Eigen::ArrayXf& x)
{
    Eigen::ArrayXf r = Eigen::ArrayXf::Constant(x.size(), c[N - 1]);
    for (std::size_t i = N - 1; i-- > 0;)
        r = r * x + c[i];
    return r;
}

} // namespace

void floatErf(float* v, std::int64_t n)
{
    Eigen::Map<Eigen::ArrayXf> x(v, n);
    const Eigen::ArrayXf a = x.abs(), s = a.square();
    // erf(|x|) in both forms for every element (vectorised), then each element takes its own, with x's sign (erf is
    // odd: -0 stays -0).
    const Eigen::ArrayXf small = a * kErfC0Low + (a * s) * polynomial(kErfSmall, s); // erf(|x|) - |x| kErfC0
    const Eigen::ArrayXf large = 1.0f - (-s).exp() * polynomial(kErfLarge, (a - 1.0f) * (2.0f / 3.0f) - 1.0f);
    for (std::int64_t i = 0; i < n; ++i) {
#if defined(__FMA__)
        const float nearZero = std::fma(a[i], kErfC0, small[i]); // one rounding: within an ulp
#else
        const float nearZero = a[i] * kErfC0 + small[i];
#endif
        v[i] = std::copysign(a[i] < 1.0f ? nearZero : a[i] >= 4.0f ? 1.0f : large[i], v[i]);
    }
}

void geluErfInPlace(RowMatrix& x)
{
    eachRowInPlace(x, [](auto& z) {
        thread_local Eigen::ArrayXf e;
        e = z * 0.70710678118654752f;
        floatErf(e.data(), e.size());
        z = 0.5f * z * (1.0f + e);
    });
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

double logSumExp(const float* row, std::size_t n)
{
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < n; ++j)
        mx = std::max(mx, row[j]);
    if (!std::isfinite(mx))
        return mx;
    const double m = mx;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::size_t j = 0; j < n; ++j)
        sum += expNonPositive(static_cast<double>(row[j]) - m);
    return m + std::log(sum);
}

RowMatrix headSlices(const float* headMixRow, int heads, int headDim)
{
    RowMatrix m = RowMatrix::Zero(heads, static_cast<Eigen::Index>(heads) * headDim);
    for (int h = 0; h < heads; ++h)
        m.row(h).segment(static_cast<Eigen::Index>(h) * headDim, headDim) =
            ConstVectorMap(headMixRow + static_cast<std::size_t>(h) * headDim, headDim);
    return m;
}

void frozenNormDirection(const float* x, const float* u, const WeightView& gamma, const WeightView& beta, float eps,
                         bool layerNorm, int n, std::vector<float>& direction, double& constant)
{
    const auto g = asVector(gamma);
    const float* b = beta ? beta.floats() : nullptr;
    double mean = 0, square = 0, gMean = 0;
    for (int i = 0; i < n; ++i) {
        mean += x[i];
        gMean += static_cast<double>(u[i]) * g[i];
    }
    mean /= n;
    gMean /= n;
    for (int i = 0; i < n; ++i) {
        const double c = layerNorm ? x[i] - mean : x[i];
        square += c * c;
    }
    const double inv = 1.0 / std::sqrt(square / n + eps); // the forward's 1 / sigma (LayerNorm) or 1 / rms (RMSNorm)
    direction.resize(static_cast<std::size_t>(n));
    constant = 0;
    for (int i = 0; i < n; ++i) {
        const double gi = static_cast<double>(u[i]) * g[i];
        direction[static_cast<std::size_t>(i)] = static_cast<float>((layerNorm ? gi - gMean : gi) * inv);
        if (b)
            constant += static_cast<double>(u[i]) * b[i];
    }
}

bool unembeddingDirection(const WeightView& unembed, std::int32_t token, const float* x, const WeightView& gamma,
                          const WeightView& beta, float eps, bool layerNorm, int n, std::vector<float>& direction,
                          double& constant)
{
    if (token < 0 || token >= unembed.rows())
        return false;
    std::vector<float> u(static_cast<std::size_t>(n));
    weightRow(unembed, token, u.data());
    frozenNormDirection(x, u.data(), gamma, beta, eps, layerNorm, n, direction, constant);
    return true;
}

} // namespace attnscope::core
