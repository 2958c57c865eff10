// How an iterative embedding (t-SNE, UMAP) reports its picture while it converges, so a view can draw it.
#pragma once

#include <functional>
#include <vector>

namespace attnscope::core {

// Called on the computing thread every few dozen steps with the steps done, their total and the current [n, 2]
// picture (never with the final one: the embedding returns that).
using EmbeddingProgress = std::function<void(int done, int total, const std::vector<float>& xy)>;

} // namespace attnscope::core
