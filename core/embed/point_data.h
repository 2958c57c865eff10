// The one check of the point sets the embeddings take ([n, dim] floats, row-major) before anything is sized from them.
#pragma once

#include "util/error.h"

#include <string>
#include <vector>

namespace attnscope::core {

inline void checkPointData(const std::vector<float>& data, int n, int dim, const char* what)
{
    if (n < 0 || dim < 0 || data.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(dim))
        throw Error(ErrorCode::BadInput, std::string(what) + ": " + std::to_string(data.size()) + " values are not " +
                                             std::to_string(n) + " points of " + std::to_string(dim));
}

} // namespace attnscope::core
