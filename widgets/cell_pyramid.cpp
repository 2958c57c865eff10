// CellPyramid: 2 x 2 pooling, level by level.
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

int CellPyramid::rows(int level) const
{
    return level <= 0 ? m_rows : ((m_rows - 1) >> level) + 1;
}

int CellPyramid::cols(int level) const
{
    return level <= 0 ? m_cols : ((m_cols - 1) >> level) + 1;
}

int CellPyramid::levelCount() const
{
    int n = 1;
    while (rows(n - 1) > 1 || cols(n - 1) > 1)
        ++n;
    return n;
}

const float* CellPyramid::level(int L)
{
    if (L <= 0 || empty())
        return m_values;
    L = std::min(L, levelCount() - 1);
    // The stronger of two cells; NaN (blank) loses to anything.
    const bool isSigned = m_signed;
    auto stronger = [isSigned](float a, float b) {
        if (std::isnan(a))
            return b;
        if (std::isnan(b))
            return a;
        return (isSigned ? std::abs(b) > std::abs(a) : b > a) ? b : a;
    };
    while (static_cast<int>(m_pooled.size()) < L) {
        const int k = static_cast<int>(m_pooled.size()); // building level k + 1 from level k
        const float* src = k == 0 ? m_values : m_pooled.back().data();
        const int sr = rows(k), sc = cols(k), dr = rows(k + 1), dc = cols(k + 1);
        std::vector<float> out(static_cast<std::size_t>(dr) * dc);
        for (int r = 0; r < dr; ++r) {
            const float* a = src + static_cast<std::size_t>(2 * r) * sc;
            const float* b = 2 * r + 1 < sr ? a + sc : a;
            float* o = out.data() + static_cast<std::size_t>(r) * dc;
            for (int c = 0; c < dc; ++c) {
                const int c2 = std::min(2 * c + 1, sc - 1);
                o[c] = stronger(stronger(a[2 * c], a[c2]), stronger(b[2 * c], b[c2]));
            }
        }
        m_pooled.push_back(std::move(out));
    }
    return m_pooled[static_cast<std::size_t>(L) - 1].data();
}

} // namespace attnscope::widgets
