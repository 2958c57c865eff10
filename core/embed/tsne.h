// t-SNE (van der Maaten & Hinton 2008) to two dimensions: exact for small sets, Barnes-Hut (van der Maaten 2014) for
// large ones, with the optimiser settings scikit-learn documents (PCA start, early exaggeration 12 for 250
// iterations, momentum 0.5 then 0.8, per-parameter gains, learning rate max(n / 48, 50)).
#pragma once

#include "embed/embedding_progress.h"

#include <vector>

namespace attnscope::core {

class StopToken;

enum class TsneMethod {
    Auto,      // exact up to kExactTsnePoints points, Barnes-Hut above
    Exact,     // O(n^2) per iteration: every pair
    BarnesHut, // sparse inputs (3 x perplexity neighbours) and a quadtree for the repulsion: O(n log n)
};
constexpr int kExactTsnePoints = 1000;
constexpr int kMaxTsnePoints = 50000;

struct TsneOptions {
    double perplexity = 30;
    int iterations = 1000;
    unsigned seed = 1;
    TsneMethod method = TsneMethod::Auto;
    double angle = 0.5; // Barnes-Hut's accuracy: a cell is summarised when its width / distance < angle
};

struct TsneResult {
    std::vector<float> xy; // [n, 2]
    double klDivergence = 0; // final KL(P || Q) without exaggeration (Barnes-Hut: over the sparse P, Z estimated)
    bool exact = true;       // which method ran
};

// The picture is reported every kTsneProgressEvery iterations.
constexpr int kTsneProgressEvery = 50;

// Embeds the rows of `data` ([n, dim]). Refuses fewer than 4 or more than kMaxTsnePoints points by name; the
// perplexity is capped at (n - 1) / 3 as scikit-learn requires. Cancels through `stop`.
TsneResult tsne2(const std::vector<float>& data, int n, int dim, const TsneOptions& options,
                 const StopToken* stop = nullptr, const EmbeddingProgress& progress = {});

} // namespace attnscope::core
