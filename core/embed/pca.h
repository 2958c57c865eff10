// Principal component analysis to two dimensions: the exact, instant projection of the query-key views.
#pragma once

#include <vector>

namespace attnscope::core {

// The two leading principal axes of the rows of `data` ([n, dim]): coordinates of each row (centred), [n, 2]. Each
// axis is oriented so its largest component is positive (a fixed picture for the same data).
std::vector<float> pca2(const std::vector<float>& data, int n, int dim);

} // namespace attnscope::core
