// Candidate distances come from one float matrix product per block of rows (|a|^2 + |b|^2 - 2 a.b); the k kept are
// then measured again in double, so cancellation in the product cannot reorder close neighbours' distances.
#include "embed/neighbours.h"

#include "embed/point_data.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <Eigen/Core>
#include <algorithm>

namespace attnscope::core {

Neighbours nearestNeighbours(const std::vector<float>& data, int n, int dim, int k, const StopToken* stop)
{
    checkPointData(data, n, dim, "nearest neighbours");
    Neighbours out;
    out.k = std::max(0, std::min(k, n - 1));
    if (out.k == 0)
        return out;
    using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::Map<const RowMatrix> x(data.data(), n, dim);
    const Eigen::VectorXf norms = x.rowwise().squaredNorm();
    out.index.resize(static_cast<std::size_t>(n) * out.k);
    out.dist2.resize(out.index.size());
    constexpr int kBlock = 256;
    for (int b0 = 0; b0 < n; b0 += kBlock) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "nearest neighbours cancelled");
        const int rows = std::min(kBlock, n - b0);
        RowMatrix d = -2.0f * (x.middleRows(b0, rows) * x.transpose()); // row-major: each row is scanned below
        d.colwise() += norms.segment(b0, rows);
        d.rowwise() += norms.transpose();
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; ++r) {
            const int i = b0 + r;
            // A few spare candidates, so the exact re-measure below can still reorder near-ties at the edge. A max-heap
            // of the closest so far: most of a long row fails one comparison with its top.
            const int keep = std::min(n - 1, out.k + 8);
            std::vector<std::pair<float, int>> heap;
            heap.reserve(static_cast<std::size_t>(keep) + 1);
            for (int j = 0; j < n; ++j) {
                if (j == i) // never the point itself
                    continue;
                const std::pair<float, int> candidate{d(r, j), j};
                if (static_cast<int>(heap.size()) < keep) {
                    heap.push_back(candidate);
                    std::push_heap(heap.begin(), heap.end());
                } else if (candidate < heap.front()) {
                    std::pop_heap(heap.begin(), heap.end());
                    heap.back() = candidate;
                    std::push_heap(heap.begin(), heap.end());
                }
            }
            std::vector<int> order;
            for (const auto& [dist, j] : heap)
                order.push_back(j);
            std::vector<std::pair<double, int>> exact(static_cast<std::size_t>(keep));
            const float* a = data.data() + static_cast<std::size_t>(i) * dim;
            for (int c = 0; c < keep; ++c) {
                const float* bRow = data.data() + static_cast<std::size_t>(order[static_cast<std::size_t>(c)]) * dim;
                double s = 0;
                for (int t = 0; t < dim; ++t) {
                    const double diff = static_cast<double>(a[t]) - bRow[t];
                    s += diff * diff;
                }
                exact[static_cast<std::size_t>(c)] = {s, order[static_cast<std::size_t>(c)]};
            }
            std::sort(exact.begin(), exact.end());
            for (int c = 0; c < out.k; ++c) {
                out.index[static_cast<std::size_t>(i) * out.k + c] = exact[static_cast<std::size_t>(c)].second;
                out.dist2[static_cast<std::size_t>(i) * out.k + c] = exact[static_cast<std::size_t>(c)].first;
            }
        }
    }
    return out;
}

} // namespace attnscope::core
