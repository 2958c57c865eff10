// RowPages: copy-on-write of the one partial page; full pages are never written again.
#include "attention/row_pages.h"

#include <algorithm>

namespace attnscope::core {

void RowPages::append(const float* src, std::ptrdiff_t stride, int n)
{
    const std::size_t pageFloats = static_cast<std::size_t>(kPageRows) * static_cast<std::size_t>(m_width);
    for (int i = 0; i < n; ++i) {
        const int at = m_rows % kPageRows;
        if (at == 0)
            m_pages.push_back(std::make_shared<std::vector<float>>(pageFloats));
        else if (m_pages.back().use_count() > 1) // shared partial page (from prefix): write to a copy
            m_pages.back() = std::make_shared<std::vector<float>>(*m_pages.back());
        std::copy_n(src + i * stride, m_width, m_pages.back()->data() + static_cast<std::size_t>(at) * m_width);
        ++m_rows;
    }
}

RowPages RowPages::prefix(int n) const
{
    RowPages out(m_width);
    n = std::clamp(n, 0, m_rows);
    const int full = n / kPageRows;
    out.m_pages.assign(m_pages.begin(), m_pages.begin() + full);
    out.m_rows = full * kPageRows;
    if (n > out.m_rows)
        out.m_pages.push_back(m_pages[static_cast<std::size_t>(full)]); // shared until append writes to it
    out.m_rows = n;
    return out;
}

} // namespace attnscope::core
