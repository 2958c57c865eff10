// UMAP: a fuzzy neighbour graph (each point's distances shifted by its nearest neighbour's and scaled so the
// memberships sum to log2(k)), made symmetric by the fuzzy union a + b - ab, then laid out by stochastic gradient
// descent on the cross-entropy between that graph and low-dimensional memberships 1 / (1 + a d^2b): each edge pulls
// its ends together as often as its weight says, and random other points push away.
#include "embed/umap.h"

#include "embed/neighbours.h"
#include "embed/pca.h"
#include "embed/point_data.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace attnscope::core {

namespace {

constexpr double kA = 1.5769434603113077, kB = 0.8950608779109733; // umap-learn's fit for min_dist 0.1, spread 1

struct Edge {
    int from, to;
    double weight;
};

// The symmetric fuzzy graph over the k nearest neighbours.
std::vector<Edge> fuzzyGraph(const std::vector<float>& data, int n, int dim, int k, const StopToken* stop)
{
    const Neighbours nb = nearestNeighbours(data, n, dim, k, stop);
    std::vector<Edge> directed; // (i, j, membership) for j among i's neighbours, sorted by (i, j) below
    directed.reserve(nb.index.size());
    const double target = std::log2(static_cast<double>(k + 1)); // umap-learn counts the point itself among its k
    for (int i = 0; i < n; ++i) {
        const double* d2 = nb.dist2.data() + static_cast<std::size_t>(i) * nb.k;
        std::vector<double> d(static_cast<std::size_t>(nb.k));
        for (int c = 0; c < nb.k; ++c)
            d[static_cast<std::size_t>(c)] = std::sqrt(d2[c]);
        double rho = 0;
        for (double v : d)
            if (v > 0) {
                rho = v;
                break;
            }
        // Bisection on sigma so that sum_j exp(-(d_j - rho) / sigma) = log2(k).
        double lo = 0, hi = std::numeric_limits<double>::infinity(), sigma = 1;
        for (int it = 0; it < 64; ++it) {
            double sum = 0;
            for (double v : d)
                sum += v - rho > 0 ? std::exp(-(v - rho) / sigma) : 1.0;
            if (std::abs(sum - target) < 1e-5)
                break;
            if (sum > target) {
                hi = sigma;
                sigma = (lo + hi) / 2;
            } else {
                lo = sigma;
                sigma = std::isinf(hi) ? sigma * 2 : (lo + hi) / 2;
            }
        }
        // As umap-learn: sigma no smaller than a thousandth of the mean distance.
        double mean = 0;
        for (double v : d)
            mean += v / nb.k;
        sigma = std::max(sigma, 1e-3 * mean);
        for (int c = 0; c < nb.k; ++c) {
            const double v = d[static_cast<std::size_t>(c)];
            const double w = v - rho <= 0 || sigma <= 0 ? 1.0 : std::exp(-(v - rho) / sigma);
            directed.push_back({i, nb.index[static_cast<std::size_t>(i) * nb.k + c], w});
        }
    }
    auto order = [](const Edge& a, const Edge& b) { return a.from != b.from ? a.from < b.from : a.to < b.to; };
    std::sort(directed.begin(), directed.end(), order);
    // Both directions of every pair, as umap-learn's symmetric matrix holds them (each moves both ends).
    std::vector<Edge> edges;
    edges.reserve(directed.size() * 2);
    for (const Edge& e : directed) {
        const Edge reverse{e.to, e.from, 0.0};
        const auto back = std::lower_bound(directed.begin(), directed.end(), reverse, order);
        const bool found = back != directed.end() && back->from == e.to && back->to == e.from;
        const double wb = found ? back->weight : 0.0;
        const double both = e.weight + wb - e.weight * wb;
        edges.push_back({e.from, e.to, both});
        if (!found)
            edges.push_back({e.to, e.from, both});
    }
    std::sort(edges.begin(), edges.end(), order);
    return edges;
}

// The start: PCA scaled so its largest coordinate is 10, plus a little seeded noise, then each axis to [0, 10].
std::vector<double> initialLayout(const std::vector<float>& data, int n, int dim, std::mt19937& rng)
{
    const auto pca = pca2(data, n, dim);
    double big = 0;
    for (float v : pca)
        big = std::max(big, static_cast<double>(std::abs(v)));
    std::normal_distribution<double> noise(0.0, 1e-4);
    std::vector<double> y(pca.size());
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = (big > 0 ? pca[i] * 10.0 / big : 0.0) + noise(rng);
    for (int axis = 0; axis < 2; ++axis) {
        double lo = y[static_cast<std::size_t>(axis)], hi = lo;
        for (int i = 0; i < n; ++i) {
            lo = std::min(lo, y[static_cast<std::size_t>(i) * 2 + axis]);
            hi = std::max(hi, y[static_cast<std::size_t>(i) * 2 + axis]);
        }
        for (int i = 0; i < n; ++i) {
            double& v = y[static_cast<std::size_t>(i) * 2 + axis];
            v = hi > lo ? 10.0 * (v - lo) / (hi - lo) : 0.0;
        }
    }
    return y;
}

double clip(double v)
{
    return std::clamp(v, -4.0, 4.0);
}

// d^b for the curve: 2^(b log2 d) with both halves by short polynomials on the float's exponent and mantissa (relative
// error about 1e-5; the descent is noisy by design and umap-learn computes it in float32). No calls, so the
// hundreds of millions of updates of a few thousand points stay cheap.
double powB(double d2)
{
    const float x = static_cast<float>(d2);
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const float exponent = static_cast<float>(static_cast<int>((bits >> 23) & 0xff) - 127);
    const float m = std::bit_cast<float>((bits & 0x7fffffu) | 0x3f800000u) - 1.0f; // mantissa - 1 in [0, 1)
    // log2(1 + m) on [0, 1)
    const float log2m = m * (1.4425449f + m * (-0.7181452f + m * (0.4575485f + m * (-0.2779042f + m * (0.1217970f +
                        m * -0.0258411f)))));
    const float t = static_cast<float>(kB) * (exponent + log2m);
    // 2^t = 2^floor(t) * 2^frac(t)
    const float whole = std::floor(t);
    const float f = t - whole;
    const float pow2f = 1.0f + f * (0.6931472f + f * (0.2402265f + f * (0.0555041f + f * (0.0096181f + f * 0.0013334f))));
    const int scale = std::clamp(static_cast<int>(whole), -126, 127);
    return pow2f * std::bit_cast<float>(static_cast<std::uint32_t>(scale + 127) << 23);
}

// The negative samples' points: a small fast generator (millions of draws), seeded, the same on every platform.
struct SplitMix {
    std::uint64_t state;
    std::uint64_t next()
    {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

} // namespace

int umapEpochs(int n, const UmapOptions& options)
{
    return options.epochs > 0 ? options.epochs : n <= kUmapLongRunPoints ? 500 : 200;
}

std::vector<float> umap2(const std::vector<float>& data, int n, int dim, const UmapOptions& options, const StopToken* stop,
                         const EmbeddingProgress& progress)
{
    checkPointData(data, n, dim, "UMAP");
    if (n < 4)
        throw Error(ErrorCode::BadInput, "UMAP needs at least 4 points");
    const int k = std::clamp(options.neighbours - 1, 1, n - 1); // the point itself is the first of umap-learn's k
    const int epochs = umapEpochs(n, options);
    auto edges = fuzzyGraph(data, n, dim, k, stop);
    double maxWeight = 0;
    for (const auto& e : edges)
        maxWeight = std::max(maxWeight, e.weight);
    // Edges too weak to be sampled once in all epochs are dropped (as umap-learn does).
    std::erase_if(edges, [&](const Edge& e) { return e.weight < maxWeight / epochs; });
    std::mt19937 rng(options.seed);
    std::vector<double> y = initialLayout(data, n, dim, rng);
    constexpr int kNegative = 5;
    std::vector<double> every(edges.size()), next(edges.size()), everyNegative(edges.size()), nextNegative(edges.size());
    for (std::size_t e = 0; e < edges.size(); ++e) {
        every[e] = next[e] = maxWeight / edges[e].weight;
        everyNegative[e] = nextNegative[e] = every[e] / kNegative;
    }
    SplitMix pick{options.seed};
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "UMAP cancelled");
        const double alpha = 1.0 - static_cast<double>(epoch - 1) / epochs;
        for (std::size_t e = 0; e < edges.size(); ++e) {
            if (next[e] > epoch)
                continue;
            double* a = y.data() + static_cast<std::size_t>(edges[e].from) * 2;
            double* b = y.data() + static_cast<std::size_t>(edges[e].to) * 2;
            double dx = a[0] - b[0], dy = a[1] - b[1], d2 = dx * dx + dy * dy;
            if (d2 > 0) { // attraction along the edge, both ends moved
                const double pb = powB(d2);
                const double coeff = -2.0 * kA * kB * pb / d2 / (kA * pb + 1.0);
                const double gx = clip(coeff * dx) * alpha, gy = clip(coeff * dy) * alpha;
                a[0] += gx, a[1] += gy;
                b[0] -= gx, b[1] -= gy;
            }
            next[e] += every[e];
            // Repulsion from random points, as many as are due since the last time.
            const int negatives = static_cast<int>((epoch - nextNegative[e]) / everyNegative[e]);
            for (int s = 0; s < negatives; ++s) {
                const int other = static_cast<int>(pick.next() % static_cast<std::uint64_t>(n));
                if (other == edges[e].from)
                    continue;
                const double* c = y.data() + static_cast<std::size_t>(other) * 2;
                dx = a[0] - c[0], dy = a[1] - c[1], d2 = dx * dx + dy * dy;
                if (d2 <= 0)
                    continue;
                const double coeff = 2.0 * kB / ((0.001 + d2) * (kA * powB(d2) + 1.0));
                a[0] += clip(coeff * dx) * alpha;
                a[1] += clip(coeff * dy) * alpha;
            }
            nextNegative[e] += negatives * everyNegative[e];
        }
        if (progress && epoch % kUmapProgressEvery == 0 && epoch < epochs)
            progress(epoch, epochs, std::vector<float>(y.begin(), y.end()));
    }
    return {y.begin(), y.end()};
}

} // namespace attnscope::core
