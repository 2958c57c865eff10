// CellPyramid: 2 x 2 cells, pairs of rows or pairs of columns pooled, one level at a time.
#include "cell_pyramid.h"

#include <algorithm>
#include <cmath>

namespace attnscope::widgets {

void CellPyramid::reset(std::shared_ptr<const void> owner, const float* values, int rows, int cols, bool signedValues)
{
    m_owner = std::move(owner);
    m_values = values;
    m_rows = values ? rows : 0;
    m_cols = values ? cols : 0;
    m_signed = signedValues;
    m_pooled.clear();
}

int CellPyramid::rows(int rowLevel) const
{
    return rowLevel <= 0 ? m_rows : ((m_rows - 1) >> rowLevel) + 1;
}

int CellPyramid::cols(int colLevel) const
{
    return colLevel <= 0 ? m_cols : ((m_cols - 1) >> colLevel) + 1;
}

int CellPyramid::rowLevels() const
{
    int n = 1;
    while (rows(n - 1) > 1)
        ++n;
    return n;
}

int CellPyramid::colLevels() const
{
    int n = 1;
    while (cols(n - 1) > 1)
        ++n;
    return n;
}

const float* CellPyramid::level(int rowLevel, int colLevel)
{
    if (empty())
        return m_values;
    rowLevel = std::clamp(rowLevel, 0, rowLevels() - 1);
    colLevel = std::clamp(colLevel, 0, colLevels() - 1);
    if (rowLevel == 0 && colLevel == 0)
        return m_values;
    const auto key = std::make_pair(rowLevel, colLevel);
    if (const auto it = m_pooled.find(key); it != m_pooled.end())
        return it->second.data();
    // The stronger of two cells; NaN (blank) loses to anything.
    const bool isSigned = m_signed;
    auto stronger = [isSigned](float a, float b) {
        if (std::isnan(a))
            return b;
        if (std::isnan(b))
            return a;
        return (isSigned ? std::abs(b) > std::abs(a) : b > a) ? b : a;
    };
    // From the level one step finer in each direction that pools here: 2 x 2 cells (a square grid's chain, as
    // small as it can be), or pairs of rows, or pairs of columns.
    const int fineRow = std::max(rowLevel - 1, 0), fineCol = std::max(colLevel - 1, 0);
    const bool pairRows = rowLevel > 0, pairCols = colLevel > 0;
    const float* src = level(fineRow, fineCol);
    const int sr = rows(fineRow), sc = cols(fineCol), dr = rows(rowLevel), dc = cols(colLevel);
    std::vector<float> out(static_cast<std::size_t>(dr) * dc);
    for (int r = 0; r < dr; ++r) {
        const int r0 = pairRows ? 2 * r : r;
        const float* a = src + static_cast<std::size_t>(r0) * sc;
        const float* b = pairRows && r0 + 1 < sr ? a + sc : a;
        float* o = out.data() + static_cast<std::size_t>(r) * dc;
        for (int c = 0; c < dc; ++c) {
            const int c0 = pairCols ? 2 * c : c, c1 = pairCols ? std::min(2 * c + 1, sc - 1) : c;
            o[c] = stronger(stronger(a[c0], a[c1]), stronger(b[c0], b[c1]));
        }
    }
    return m_pooled.emplace(key, std::move(out)).first->second.data();
}

} // namespace attnscope::widgets
