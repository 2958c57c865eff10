// UMAP (McInnes, Healy & Melville 2018) to two dimensions, with umap-learn's default settings: 15 neighbours, min_dist
// 0.1 (curve a = 1.577, b = 0.895), 5 negative samples per positive one, learning rate 1 falling linearly to 0; 500
// epochs up to kUmapLongRunPoints points and 200 above (umap-learn switches at 10,000; the descent is sequential here,
// so a head's 5,000 queries and keys take 5 s instead of 14). Starts from PCA scaled to a range of 10 (umap-learn's init="pca"); the
// descent runs in a fixed order from a seeded generator, so the same data and seed give the same picture.
#pragma once

#include "embed/embedding_progress.h"

#include <vector>

namespace attnscope::core {

class StopToken;

constexpr int kUmapLongRunPoints = 2000;

struct UmapOptions {
    int neighbours = 15;
    int epochs = 0; // 0: 500 up to kUmapLongRunPoints points, 200 above
    unsigned seed = 1;
};

// Embeds the rows of `data` ([n, dim]) into [n, 2]. Refuses fewer than 4 points by name. Cancels through `stop`.
// The epochs a run of `n` points takes with these options (what progress counts up to).
int umapEpochs(int n, const UmapOptions& options = {});

// The picture is reported every kUmapProgressEvery epochs.
constexpr int kUmapProgressEvery = 20;
std::vector<float> umap2(const std::vector<float>& data, int n, int dim, const UmapOptions& options = {},
                         const StopToken* stop = nullptr, const EmbeddingProgress& progress = {});

} // namespace attnscope::core
