// Exact k nearest neighbours of every row of a point set (squared Euclidean distances), for the sparse embeddings
// (Barnes-Hut t-SNE, UMAP). Blocked so memory stays O(n k), not O(n^2).
#pragma once

#include <vector>

namespace attnscope::core {

class StopToken;

struct Neighbours {
    int k = 0;
    std::vector<int> index;     // [n, k], nearest first, never the point itself
    std::vector<double> dist2;  // [n, k] squared distances
};

// `data` is [n, dim]; k is clamped to n - 1. Cancels through `stop`.
Neighbours nearestNeighbours(const std::vector<float>& data, int n, int dim, int k, const StopToken* stop = nullptr);

} // namespace attnscope::core
