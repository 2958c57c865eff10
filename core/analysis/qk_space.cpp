// Query-key space: vectors out of the capture, AttentionViz's normalisation, PCA through the covariance's eigenvectors,
// exact t-SNE (van der Maaten & Hinton 2008, with the optimiser settings scikit-learn documents: PCA start, early
// exaggeration 12 for 250 iterations, momentum 0.5 then 0.8, per-parameter gains, learning rate max(n / 48, 50)).
#include "analysis/qk_space.h"

#include "util/csv_field.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <Eigen/Dense>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

namespace attnscope::core {

QkVectors headQkVectors(const TextCapture& capture, int segment, int layer, int head)
{
    const auto& seg = capture.segment(segment);
    if (layer < 0 || layer >= static_cast<int>(seg.layers.size()))
        throw Error(ErrorCode::BadInput, "no layer " + std::to_string(layer + 1) + " in this model");
    const ScoreInputs in = capture.inputs(segment, layer);
    if (head < 0 || head >= in.heads)
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(head + 1) + " in this layer");
    QkVectors v;
    v.dim = in.headDim;
    const int kh = in.keyHead(head);
    for (int i = 0; i < in.qlen; ++i) {
        const float* q = in.queries.row(i) + static_cast<std::size_t>(head) * in.headDim;
        v.queries.insert(v.queries.end(), q, q + in.headDim);
        v.queryPositions.push_back(seg.firstPosition + i);
    }
    for (int j = 0; j < in.klen; ++j) {
        if (!capture.padding.empty()) { // an encoder's padding is no key anyone sees
            const std::int64_t pos = seg.firstPosition - seg.mlen + j;
            if (pos >= 0 && pos < static_cast<std::int64_t>(capture.padding.size()) &&
                capture.padding[static_cast<std::size_t>(pos)])
                continue;
        }
        const float* k = in.keys.row(j) + static_cast<std::size_t>(kh) * in.headDim;
        v.keys.insert(v.keys.end(), k, k + in.headDim);
        v.keyPositions.push_back(seg.firstPosition - seg.mlen + j);
    }
    return v;
}

void normaliseQk(QkVectors& v)
{
    const int d = v.dim, nq = v.nq(), nk = v.nk();
    if (nq == 0 || nk == 0)
        return;
    std::vector<double> mq(static_cast<std::size_t>(d), 0.0), mk(static_cast<std::size_t>(d), 0.0);
    for (int i = 0; i < nq; ++i)
        for (int c = 0; c < d; ++c)
            mq[static_cast<std::size_t>(c)] += v.queries[static_cast<std::size_t>(i) * d + c] / nq;
    for (int j = 0; j < nk; ++j)
        for (int c = 0; c < d; ++c)
            mk[static_cast<std::size_t>(c)] += v.keys[static_cast<std::size_t>(j) * d + c] / nk;
    for (int j = 0; j < nk; ++j)
        for (int c = 0; c < d; ++c)
            v.keys[static_cast<std::size_t>(j) * d + c] += static_cast<float>(mq[static_cast<std::size_t>(c)] - mk[static_cast<std::size_t>(c)]);
    auto meanNorm = [d](const std::vector<float>& rows, int n) {
        double s = 0;
        for (int i = 0; i < n; ++i) {
            double r = 0;
            for (int c = 0; c < d; ++c)
                r += static_cast<double>(rows[static_cast<std::size_t>(i) * d + c]) * rows[static_cast<std::size_t>(i) * d + c];
            s += std::sqrt(r);
        }
        return s / n;
    };
    const double nqNorm = meanNorm(v.queries, nq), nkNorm = meanNorm(v.keys, nk);
    if (nqNorm <= 0 || nkNorm <= 0)
        return;
    const double a = std::sqrt(nqNorm / nkNorm);
    for (auto& x : v.queries)
        x = static_cast<float>(x / a);
    for (auto& x : v.keys)
        x = static_cast<float>(x * a);
}

std::vector<float> pca2(const std::vector<float>& data, int n, int dim)
{
    std::vector<float> out(static_cast<std::size_t>(n) * 2, 0.0f);
    if (n == 0 || dim == 0)
        return out;
    Eigen::MatrixXd x(n, dim);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < dim; ++c)
            x(i, c) = data[static_cast<std::size_t>(i) * dim + c];
    x.rowwise() -= x.colwise().mean();
    const Eigen::MatrixXd cov = x.transpose() * x / std::max(1, n - 1);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(cov);
    const int axes = std::min(2, dim);
    for (int a = 0; a < axes; ++a) {
        Eigen::VectorXd axis = eig.eigenvectors().col(dim - 1 - a); // eigenvalues ascend
        // A fixed orientation: the largest component of each axis is positive.
        Eigen::Index big = 0;
        axis.cwiseAbs().maxCoeff(&big);
        if (axis(big) < 0)
            axis = -axis;
        const Eigen::VectorXd coord = x * axis;
        for (int i = 0; i < n; ++i)
            out[static_cast<std::size_t>(i) * 2 + a] = static_cast<float>(coord(i));
    }
    return out;
}

namespace {

// Joint probabilities of exact t-SNE: per point a Gaussian whose width gives the wanted perplexity (bisection on
// its precision), symmetrised and normalised.
std::vector<double> jointProbabilities(const std::vector<float>& data, int n, int dim, double perplexity,
                                       const StopToken* stop)
{
    std::vector<double> d2(static_cast<std::size_t>(n) * n, 0.0);
#pragma omp parallel for schedule(dynamic, 16) if (n >= 512)
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            double s = 0;
            for (int c = 0; c < dim; ++c) {
                const double t = static_cast<double>(data[static_cast<std::size_t>(i) * dim + c]) - data[static_cast<std::size_t>(j) * dim + c];
                s += t * t;
            }
            d2[static_cast<std::size_t>(i) * n + j] = s;
            d2[static_cast<std::size_t>(j) * n + i] = s;
        }
    std::vector<double> p(static_cast<std::size_t>(n) * n, 0.0);
    const double target = std::log(perplexity);
    for (int i = 0; i < n; ++i) {
        if (stop && (i & 63) == 0 && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "query-key space cancelled");
        double beta = 1, lo = 0, hi = std::numeric_limits<double>::infinity();
        double* row = p.data() + static_cast<std::size_t>(i) * n;
        const double* dist = d2.data() + static_cast<std::size_t>(i) * n;
        double minD = std::numeric_limits<double>::infinity();
        for (int j = 0; j < n; ++j)
            if (j != i)
                minD = std::min(minD, dist[j]);
        for (int it = 0; it < 100; ++it) {
            double sum = 0, weighted = 0;
            for (int j = 0; j < n; ++j) {
                row[j] = j == i ? 0.0 : std::exp(-(dist[j] - minD) * beta);
                sum += row[j];
                weighted += row[j] * (dist[j] - minD);
            }
            const double entropy = std::log(sum) + beta * weighted / sum;
            for (int j = 0; j < n; ++j)
                row[j] /= sum;
            if (std::abs(entropy - target) < 1e-5)
                break;
            if (entropy > target) {
                lo = beta;
                beta = std::isinf(hi) ? beta * 2 : (beta + hi) / 2;
            } else {
                hi = beta;
                beta = (beta + lo) / 2;
            }
        }
    }
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            const double s = (p[static_cast<std::size_t>(i) * n + j] + p[static_cast<std::size_t>(j) * n + i]) / (2.0 * n);
            p[static_cast<std::size_t>(i) * n + j] = p[static_cast<std::size_t>(j) * n + i] = std::max(s, 1e-12);
        }
    return p;
}

// Exact t-SNE of the rows; returns [n, 2] and the final KL divergence.
std::vector<float> tsne(const std::vector<float>& data, int n, int dim, const TsneOptions& o, double& kl,
                        const StopToken* stop)
{
    const auto p = jointProbabilities(data, n, dim, o.perplexity, stop);
    // Start: PCA scaled so the first axis has standard deviation 1e-4 (scikit-learn's init="pca").
    std::vector<double> y(static_cast<std::size_t>(n) * 2);
    {
        const auto start = pca2(data, n, dim);
        double var = 0;
        for (int i = 0; i < n; ++i)
            var += static_cast<double>(start[static_cast<std::size_t>(i) * 2]) * start[static_cast<std::size_t>(i) * 2];
        const double sd = std::sqrt(var / std::max(1, n));
        std::mt19937 rng(o.seed);
        std::normal_distribution<double> jitter(0.0, 1e-8);
        for (std::size_t i = 0; i < y.size(); ++i)
            y[i] = (sd > 0 ? start[i] / sd * 1e-4 : 0.0) + jitter(rng);
    }
    std::vector<double> update(y.size(), 0.0), gains(y.size(), 1.0), grad(y.size());
    std::vector<double> num(static_cast<std::size_t>(n) * n);
    const double rate = std::max(n / 12.0 / 4.0, 50.0);
    const int exaggerated = std::min(250, o.iterations);
    for (int it = 0; it < o.iterations; ++it) {
        if (stop && (it & 15) == 0 && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "query-key space cancelled");
        const double exaggeration = it < exaggerated ? 12.0 : 1.0;
        const double momentum = it < exaggerated ? 0.5 : 0.8;
        double z = 0;
#pragma omp parallel for reduction(+ : z) schedule(static) if (n >= 512)
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                if (i == j) {
                    num[static_cast<std::size_t>(i) * n + j] = 0;
                    continue;
                }
                const double dx = y[static_cast<std::size_t>(i) * 2] - y[static_cast<std::size_t>(j) * 2];
                const double dy = y[static_cast<std::size_t>(i) * 2 + 1] - y[static_cast<std::size_t>(j) * 2 + 1];
                const double w = 1.0 / (1.0 + dx * dx + dy * dy);
                num[static_cast<std::size_t>(i) * n + j] = w;
                z += w;
            }
#pragma omp parallel for schedule(static) if (n >= 512)
        for (int i = 0; i < n; ++i) {
            double gx = 0, gy = 0;
            for (int j = 0; j < n; ++j) {
                const double w = num[static_cast<std::size_t>(i) * n + j];
                const double f = (exaggeration * p[static_cast<std::size_t>(i) * n + j] - w / z) * w;
                gx += f * (y[static_cast<std::size_t>(i) * 2] - y[static_cast<std::size_t>(j) * 2]);
                gy += f * (y[static_cast<std::size_t>(i) * 2 + 1] - y[static_cast<std::size_t>(j) * 2 + 1]);
            }
            grad[static_cast<std::size_t>(i) * 2] = 4 * gx;
            grad[static_cast<std::size_t>(i) * 2 + 1] = 4 * gy;
        }
        for (std::size_t k = 0; k < y.size(); ++k) {
            gains[k] = (grad[k] > 0) != (update[k] > 0) ? gains[k] + 0.2 : gains[k] * 0.8;
            gains[k] = std::max(gains[k], 0.01);
            update[k] = momentum * update[k] - rate * gains[k] * grad[k];
            y[k] += update[k];
        }
        if (it + 1 == o.iterations) { // KL(P || Q) at the end, without exaggeration
            kl = 0;
            for (int i = 0; i < n; ++i)
                for (int j = 0; j < n; ++j)
                    if (i != j) {
                        const double pij = p[static_cast<std::size_t>(i) * n + j];
                        const double qij = std::max(num[static_cast<std::size_t>(i) * n + j] / z, 1e-12);
                        kl += pij * std::log(pij / qij);
                    }
        }
    }
    return {y.begin(), y.end()};
}

} // namespace

QkEmbedding embedQk(const QkVectors& v, QkMethod method, const TsneOptions& tsneOptions, const StopToken* stop)
{
    QkEmbedding e;
    e.queries = v.nq();
    e.keys = v.nk();
    const int n = e.queries + e.keys, d = v.dim;
    std::vector<float> all(v.queries);
    all.insert(all.end(), v.keys.begin(), v.keys.end());
    std::vector<float> xy;
    if (method == QkMethod::Pca) {
        xy = pca2(all, n, d);
    } else {
        if (n > kMaxTsnePoints)
            throw Error(ErrorCode::BadInput, "t-SNE here is exact and takes at most " + std::to_string(kMaxTsnePoints) +
                                                 " points; this head has " + std::to_string(n) + " (use PCA)");
        if (n < 4)
            throw Error(ErrorCode::BadInput, "t-SNE needs at least 4 points");
        TsneOptions o = tsneOptions;
        o.perplexity = std::min(o.perplexity, (n - 1) / 3.0); // as scikit-learn requires
        xy = tsne(all, n, d, o, e.klDivergence, stop);
    }
    e.x.resize(static_cast<std::size_t>(n));
    e.y.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        e.x[static_cast<std::size_t>(i)] = xy[static_cast<std::size_t>(i) * 2];
        e.y[static_cast<std::size_t>(i)] = xy[static_cast<std::size_t>(i) * 2 + 1];
    }
    // Per query, the Pearson correlation over its keys of q.k with minus the distance in the picture (a softmax only
    // compares one query's keys), averaged over the queries; a fixed subset past 400 queries.
    const int qStep = std::max(1, e.queries / 400);
    double total = 0;
    int counted = 0;
    for (int i = 0; i < e.queries; i += qStep) {
        double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        for (int j = 0; j < e.keys; ++j) {
            double dot = 0;
            for (int c = 0; c < d; ++c)
                dot += static_cast<double>(v.queries[static_cast<std::size_t>(i) * d + c]) * v.keys[static_cast<std::size_t>(j) * d + c];
            const std::size_t a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(e.queries + j);
            const double dist = -std::hypot(e.x[a] - e.x[b], e.y[a] - e.y[b]);
            sa += dot, sb += dist, saa += dot * dot, sbb += dist * dist, sab += dot * dist;
        }
        const double m = e.keys;
        const double cov = sab / m - sa / m * sb / m;
        const double va = saa / m - sa / m * sa / m, vb = sbb / m - sb / m * sb / m;
        if (va > 1e-12 && vb > 1e-12) {
            total += cov / std::sqrt(va * vb);
            ++counted;
        }
    }
    e.correlation = counted ? total / counted : 0;
    return e;
}

namespace {
// Every point of the embedding in export order (queries, then keys): kind, 0-based position, token text, index.
template <class F>
void forEachPoint(const QkVectors& v, const QkEmbedding& e, const TextCapture& capture, F&& f)
{
    auto text = [&](std::int64_t pos) {
        return pos >= 0 && pos < static_cast<std::int64_t>(capture.tokens.size()) ? capture.tokens[static_cast<std::size_t>(pos)].text
                                                                                   : std::string();
    };
    for (int i = 0; i < e.queries; ++i) {
        const std::int64_t pos = v.queryPositions[static_cast<std::size_t>(i)];
        f('q', pos, text(pos), static_cast<std::size_t>(i));
    }
    for (int j = 0; j < e.keys; ++j) {
        const std::int64_t pos = v.keyPositions[static_cast<std::size_t>(j)];
        f('k', pos, text(pos), static_cast<std::size_t>(e.queries + j));
    }
}
} // namespace

std::string qkCsv(const QkVectors& v, const QkEmbedding& e, const TextCapture& capture)
{
    std::string out = "kind,position,token,x,y\n";
    char buf[64];
    forEachPoint(v, e, capture, [&](char kind, std::int64_t pos, const std::string& text, std::size_t i) {
        std::snprintf(buf, sizeof buf, "%.6g,%.6g", e.x[i], e.y[i]);
        out += std::string(1, kind) + "," + std::to_string(pos + 1) + "," + csvField(text) + "," + buf + "\n";
    });
    return out;
}

std::string qkJson(const QkVectors& v, const QkEmbedding& e, const TextCapture& capture)
{
    nlohmann::json points = nlohmann::json::array();
    forEachPoint(v, e, capture, [&](char kind, std::int64_t pos, const std::string& text, std::size_t i) {
        points.push_back({{"kind", std::string(1, kind)}, {"position", pos + 1}, {"token", text}, {"x", e.x[i]}, {"y", e.y[i]}});
    });
    const nlohmann::json doc{{"correlation", e.correlation}, {"kl_divergence", e.klDivergence}, {"points", std::move(points)}};
    return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace attnscope::core
