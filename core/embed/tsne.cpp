// t-SNE: input similarities (a Gaussian per point whose width gives the wanted perplexity), then gradient descent on
// KL(P || Q) with Student-t output similarities. The exact path keeps every pair; Barnes-Hut keeps each point's
// 3 x perplexity nearest neighbours for P (attraction) and summarises far groups of points by their centre of mass in a
// quadtree for the repulsion.
#include "embed/tsne.h"

#include "embed/neighbours.h"
#include "embed/pca.h"
#include "embed/point_data.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace attnscope::core {

namespace {

void checkStop(const StopToken* stop)
{
    if (stop && stop->stopRequested())
        throw Error(ErrorCode::Cancelled, "t-SNE cancelled");
}

// One point's conditional probabilities p(j|i) over `count` squared distances: bisection on the Gaussian's precision
// until the entropy (nats) is log(perplexity). Writes `row` (sums to 1).
void conditionalRow(const double* dist2, int count, double perplexity, double* row)
{
    const double target = std::log(perplexity);
    double beta = 1, lo = 0, hi = std::numeric_limits<double>::infinity();
    double minD = std::numeric_limits<double>::infinity();
    for (int j = 0; j < count; ++j)
        minD = std::min(minD, dist2[j]);
    for (int it = 0; it < 100; ++it) {
        double sum = 0, weighted = 0;
        for (int j = 0; j < count; ++j) {
            row[j] = std::exp(-(dist2[j] - minD) * beta);
            sum += row[j];
            weighted += row[j] * (dist2[j] - minD);
        }
        const double entropy = std::log(sum) + beta * weighted / sum;
        for (int j = 0; j < count; ++j)
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

// Exact joint probabilities, dense [n, n]: conditionals over all other points, symmetrised, / 2n.
std::vector<double> denseJointP(const std::vector<float>& data, int n, int dim, double perplexity, const StopToken* stop)
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
    std::vector<double> others(static_cast<std::size_t>(n)), row(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        if ((i & 63) == 0)
            checkStop(stop);
        int c = 0;
        for (int j = 0; j < n; ++j)
            if (j != i)
                others[static_cast<std::size_t>(c++)] = d2[static_cast<std::size_t>(i) * n + j];
        conditionalRow(others.data(), c, perplexity, row.data());
        c = 0;
        for (int j = 0; j < n; ++j)
            if (j != i)
                p[static_cast<std::size_t>(i) * n + j] = row[static_cast<std::size_t>(c++)];
    }
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            const double s = (p[static_cast<std::size_t>(i) * n + j] + p[static_cast<std::size_t>(j) * n + i]) / (2.0 * n);
            p[static_cast<std::size_t>(i) * n + j] = p[static_cast<std::size_t>(j) * n + i] = std::max(s, 1e-12);
        }
    return p;
}

// Sparse joint probabilities in compressed rows: conditionals over the nearest neighbours, P + P^T, / its sum.
struct SparseP {
    std::vector<int> start; // [n + 1]
    std::vector<int> column;
    std::vector<double> value;
};

SparseP sparseJointP(const std::vector<float>& data, int n, int dim, double perplexity, const StopToken* stop)
{
    const int k = std::min(n - 1, static_cast<int>(3 * perplexity + 1));
    const Neighbours nb = nearestNeighbours(data, n, dim, k, stop);
    std::vector<double> cond(nb.dist2.size());
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i)
        conditionalRow(nb.dist2.data() + static_cast<std::size_t>(i) * k, k, perplexity,
                       cond.data() + static_cast<std::size_t>(i) * k);
    checkStop(stop);
    // Symmetrise: every (i, j, p) also as (j, i, p), sorted by row then column, equal pairs summed.
    struct Entry { int row, col; double p; };
    std::vector<Entry> entries;
    entries.reserve(nb.index.size() * 2);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < k; ++c) {
            const std::size_t at = static_cast<std::size_t>(i) * k + c;
            entries.push_back({i, nb.index[at], cond[at]});
            entries.push_back({nb.index[at], i, cond[at]});
        }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
    SparseP s;
    s.start.assign(static_cast<std::size_t>(n) + 1, 0);
    double total = 0;
    for (std::size_t e = 0; e < entries.size(); ++e) {
        if (!s.column.empty() && e > 0 && entries[e].row == entries[e - 1].row && entries[e].col == entries[e - 1].col) {
            s.value.back() += entries[e].p;
        } else {
            s.column.push_back(entries[e].col);
            s.value.push_back(entries[e].p);
            ++s.start[static_cast<std::size_t>(entries[e].row) + 1];
        }
        total += entries[e].p;
    }
    for (int i = 0; i < n; ++i)
        s.start[static_cast<std::size_t>(i) + 1] += s.start[static_cast<std::size_t>(i)];
    for (double& v : s.value)
        v /= std::max(total, std::numeric_limits<double>::min());
    return s;
}

// A quadtree over the current picture: each cell keeps its point count and centre of mass, so a cell far enough
// from a point acts on it as one heavy point.
class QuadTree {
public:
    QuadTree(const std::vector<double>& y, int n)
    {
        double x0 = std::numeric_limits<double>::infinity(), y0 = x0, x1 = -x0, y1 = -x0;
        for (int i = 0; i < n; ++i) {
            x0 = std::min(x0, y[static_cast<std::size_t>(i) * 2]);
            x1 = std::max(x1, y[static_cast<std::size_t>(i) * 2]);
            y0 = std::min(y0, y[static_cast<std::size_t>(i) * 2 + 1]);
            y1 = std::max(y1, y[static_cast<std::size_t>(i) * 2 + 1]);
        }
        const double half = std::max(x1 - x0, y1 - y0) / 2 * (1 + 1e-6) + 1e-12;
        m_nodes.reserve(static_cast<std::size_t>(n) * 2);
        m_nodes.push_back(Node{(x0 + x1) / 2, (y0 + y1) / 2, half});
        for (int i = 0; i < n; ++i)
            insert(y[static_cast<std::size_t>(i) * 2], y[static_cast<std::size_t>(i) * 2 + 1]);
    }

    // Repulsion on a point at (px, py): adds sum over the others of q^2 (p - y_j) to (fx, fy), with q = 1 / (1 + d^2),
    // and returns sum over the others of q (this point's share of the normaliser Z).
    double repulsion(double px, double py, double angle, double& fx, double& fy) const
    {
        const double angle2 = angle * angle;
        double sumQ = 0;
        int stack[4 * kMaxDepth + 8];
        int top = 0;
        stack[top++] = 0;
        while (top > 0) {
            const Node& node = m_nodes[static_cast<std::size_t>(stack[--top])];
            if (node.count == 0)
                continue;
            const double dx = px - node.mx, dy = py - node.my, d2 = dx * dx + dy * dy;
            const double width = 2 * node.half;
            if (node.child < 0 || width * width < angle2 * d2) {
                // A leaf at distance 0 holds this very point (and its exact duplicates: q = 1, no force).
                const double others = node.child < 0 && d2 == 0 ? node.count - 1 : node.count;
                const double q = 1.0 / (1.0 + d2);
                sumQ += others * q;
                fx += others * q * q * dx;
                fy += others * q * q * dy;
            } else {
                for (int c = 0; c < 4; ++c)
                    stack[top++] = node.child + c;
            }
        }
        return sumQ;
    }

private:
    static constexpr int kMaxDepth = 48; // below this, points count as duplicates of the leaf's
    struct Node {
        double cx, cy, half;
        double mx = 0, my = 0; // centre of mass
        int count = 0;
        int child = -1; // first of four consecutive children, -1 for a leaf
        double px = 0, py = 0; // a leaf's point
    };
    void insert(double px, double py)
    {
        int at = 0;
        for (int depth = 0;; ++depth) {
            Node& node = m_nodes[static_cast<std::size_t>(at)];
            ++node.count;
            node.mx += (px - node.mx) / node.count;
            node.my += (py - node.my) / node.count;
            if (node.child < 0) {
                if (node.count == 1) {
                    node.px = px, node.py = py;
                    return;
                }
                if (depth >= kMaxDepth || (node.px == px && node.py == py))
                    return; // duplicates share the leaf
                split(at);
            }
            const Node& parent = m_nodes[static_cast<std::size_t>(at)];
            at = parent.child + quadrant(parent, px, py);
        }
    }
    static int quadrant(const Node& n, double px, double py) { return (px >= n.cx ? 1 : 0) + (py >= n.cy ? 2 : 0); }
    // Turns a leaf holding one point (already counted in it) into four children with that point moved down.
    void split(int at)
    {
        const int first = static_cast<int>(m_nodes.size());
        const Node leaf = m_nodes[static_cast<std::size_t>(at)];
        const double h = leaf.half / 2;
        for (int c = 0; c < 4; ++c)
            m_nodes.push_back(Node{leaf.cx + (c & 1 ? h : -h), leaf.cy + (c & 2 ? h : -h), h});
        Node& moved = m_nodes[static_cast<std::size_t>(first + quadrant(leaf, leaf.px, leaf.py))];
        moved.count = 1;
        moved.mx = moved.px = leaf.px;
        moved.my = moved.py = leaf.py;
        m_nodes[static_cast<std::size_t>(at)].child = first;
    }
    std::vector<Node> m_nodes;
};

// Exact gradient of KL(exaggeration * P || Q) into `grad`; returns KL(P || Q) when asked (without exaggeration).
void exactGradient(const std::vector<double>& p, const std::vector<double>& y, int n, double exaggeration,
                   std::vector<double>& num, std::vector<double>& grad, double* kl)
{
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
    if (kl) {
        *kl = 0;
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j)
                if (i != j) {
                    const double pij = p[static_cast<std::size_t>(i) * n + j];
                    const double qij = std::max(num[static_cast<std::size_t>(i) * n + j] / z, 1e-12);
                    *kl += pij * std::log(pij / qij);
                }
    }
}

// Barnes-Hut gradient: attraction over the sparse P exactly, repulsion through the quadtree.
void barnesHutGradient(const SparseP& p, const std::vector<double>& y, int n, double exaggeration, double angle,
                       std::vector<double>& grad, double* kl)
{
    const QuadTree tree(y, n);
    std::vector<double> repulse(static_cast<std::size_t>(n) * 2);
    double z = 0;
#pragma omp parallel for reduction(+ : z) schedule(dynamic, 64)
    for (int i = 0; i < n; ++i) {
        double fx = 0, fy = 0;
        z += tree.repulsion(y[static_cast<std::size_t>(i) * 2], y[static_cast<std::size_t>(i) * 2 + 1], angle, fx, fy);
        repulse[static_cast<std::size_t>(i) * 2] = fx;
        repulse[static_cast<std::size_t>(i) * 2 + 1] = fy;
    }
    double klSum = 0;
#pragma omp parallel for reduction(+ : klSum) schedule(static)
    for (int i = 0; i < n; ++i) {
        double ax = 0, ay = 0;
        const double yx = y[static_cast<std::size_t>(i) * 2], yy = y[static_cast<std::size_t>(i) * 2 + 1];
        for (int e = p.start[static_cast<std::size_t>(i)]; e < p.start[static_cast<std::size_t>(i) + 1]; ++e) {
            const int j = p.column[static_cast<std::size_t>(e)];
            const double dx = yx - y[static_cast<std::size_t>(j) * 2], dy = yy - y[static_cast<std::size_t>(j) * 2 + 1];
            const double q = 1.0 / (1.0 + dx * dx + dy * dy);
            const double pij = p.value[static_cast<std::size_t>(e)];
            ax += pij * q * dx;
            ay += pij * q * dy;
            if (kl)
                klSum += pij * std::log(std::max(pij, 1e-12) / std::max(q / z, 1e-12));
        }
        grad[static_cast<std::size_t>(i) * 2] = 4 * (exaggeration * ax - repulse[static_cast<std::size_t>(i) * 2] / z);
        grad[static_cast<std::size_t>(i) * 2 + 1] = 4 * (exaggeration * ay - repulse[static_cast<std::size_t>(i) * 2 + 1] / z);
    }
    if (kl)
        *kl = klSum;
}

// The start: PCA scaled so the first axis has standard deviation 1e-4 (scikit-learn's init="pca"), plus a tiny
// seeded jitter so coincident points can separate.
std::vector<double> initialPicture(const std::vector<float>& data, int n, int dim, unsigned seed)
{
    const auto start = pca2(data, n, dim);
    double var = 0;
    for (int i = 0; i < n; ++i)
        var += static_cast<double>(start[static_cast<std::size_t>(i) * 2]) * start[static_cast<std::size_t>(i) * 2];
    const double sd = std::sqrt(var / std::max(1, n));
    std::mt19937 rng(seed);
    std::normal_distribution<double> jitter(0.0, 1e-8);
    std::vector<double> y(static_cast<std::size_t>(n) * 2);
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = (sd > 0 ? start[i] / sd * 1e-4 : 0.0) + jitter(rng);
    return y;
}

// Gradient descent shared by both methods; `gradient(y, exaggeration, grad, kl)` is the method's.
template <class Gradient>
std::vector<double> descend(std::vector<double> y, int n, const TsneOptions& options, Gradient&& gradient, double& kl,
                            const StopToken* stop, const EmbeddingProgress& progress)
{
    const std::size_t size = static_cast<std::size_t>(n) * 2;
    std::vector<double> update(size, 0.0), gains(size, 1.0), grad(size);
    const double rate = std::max(n / 12.0 / 4.0, 50.0);
    const int exaggerated = std::min(250, options.iterations);
    for (int it = 0; it < options.iterations; ++it) {
        if ((it & 15) == 0)
            checkStop(stop);
        const double exaggeration = it < exaggerated ? 12.0 : 1.0;
        const double momentum = it < exaggerated ? 0.5 : 0.8;
        gradient(y, exaggeration, grad, it + 1 == options.iterations ? &kl : nullptr);
        for (std::size_t k = 0; k < size; ++k) {
            gains[k] = (grad[k] > 0) != (update[k] > 0) ? gains[k] + 0.2 : gains[k] * 0.8;
            gains[k] = std::max(gains[k], 0.01);
            update[k] = momentum * update[k] - rate * gains[k] * grad[k];
            y[k] += update[k];
        }
        if (progress && (it + 1) % kTsneProgressEvery == 0 && it + 1 < options.iterations)
            progress(it + 1, options.iterations, std::vector<float>(y.begin(), y.end()));
    }
    return y;
}

} // namespace

TsneResult tsne2(const std::vector<float>& data, int n, int dim, const TsneOptions& options, const StopToken* stop,
                 const EmbeddingProgress& progress)
{
    checkPointData(data, n, dim, "t-SNE");
    if (n < 4)
        throw Error(ErrorCode::BadInput, "t-SNE needs at least 4 points");
    if (n > kMaxTsnePoints)
        throw Error(ErrorCode::BadInput, "t-SNE takes at most " + std::to_string(kMaxTsnePoints) + " points; this set has " +
                                             std::to_string(n) + " (use PCA)");
    TsneResult result;
    result.exact = options.method == TsneMethod::Exact || (options.method == TsneMethod::Auto && n <= kExactTsnePoints);
    const double perplexity = std::min(options.perplexity, (n - 1) / 3.0); // as scikit-learn requires
    std::vector<double> y;
    if (result.exact) {
        const std::vector<double> p = denseJointP(data, n, dim, perplexity, stop);
        std::vector<double> num(p.size());
        y = descend(initialPicture(data, n, dim, options.seed), n, options,
                    [&](const std::vector<double>& at, double exaggeration, std::vector<double>& grad, double* kl) {
                        exactGradient(p, at, n, exaggeration, num, grad, kl);
                    },
                    result.klDivergence, stop, progress);
    } else {
        const SparseP p = sparseJointP(data, n, dim, perplexity, stop);
        y = descend(initialPicture(data, n, dim, options.seed), n, options,
                    [&](const std::vector<double>& at, double exaggeration, std::vector<double>& grad, double* kl) {
                        barnesHutGradient(p, at, n, exaggeration, options.angle, grad, kl);
                    },
                    result.klDivergence, stop, progress);
    }
    result.xy.assign(y.begin(), y.end());
    return result;
}

} // namespace attnscope::core
