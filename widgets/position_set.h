// Token positions as the views keep the ones marked: sorted, each once, so drawing looks them up by binary search.
#pragma once

#include <algorithm>
#include <vector>

namespace attnscope::widgets {

inline std::vector<int> sortedPositions(std::vector<int> positions)
{
    std::sort(positions.begin(), positions.end());
    positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
    return positions;
}

} // namespace attnscope::widgets
