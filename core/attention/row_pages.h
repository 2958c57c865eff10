// Rows of a [rows, width] float matrix stored in pages of kPageRows rows. Pages are immutable once full and shared
// between the matrices that hold them: the capture of an edited text keeps its predecessor's pages up to the first
// change and adds only the rest. All pages have one size, so memory freed by one text is reused by the next.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace attnscope::core {

class RowPages {
public:
    static constexpr int kPageRows = 128;

    RowPages() = default;
    explicit RowPages(int width)
        : m_width(width)
    {
    }
    int rows() const { return m_rows; }
    int width() const { return m_width; }
    const float* row(int r) const
    {
        return m_pages[static_cast<std::size_t>(r / kPageRows)]->data() + static_cast<std::size_t>(r % kPageRows) * m_width;
    }
    // Rows from r on that are contiguous in memory (to the end of r's page).
    int contiguousFrom(int r) const { return std::min(m_rows, (r / kPageRows + 1) * kPageRows) - r; }

    // Copies n rows, row i at src + i * stride.
    void append(const float* src, std::ptrdiff_t stride, int n);
    // The first n rows: full pages shared, a partial last page copied.
    RowPages prefix(int n) const;
    std::size_t bytes() const { return m_pages.size() * static_cast<std::size_t>(kPageRows) * m_width * sizeof(float); }

private:
    int m_width = 0;
    int m_rows = 0;
    std::vector<std::shared_ptr<std::vector<float>>> m_pages; // each kPageRows * width floats
};

// Where rows of a matrix are: one strided block (a forward pass's buffers) or pages (a capture).
struct RowSource {
    const float* base = nullptr;
    std::ptrdiff_t stride = 0;
    const RowPages* pages = nullptr;

    static RowSource strided(const float* base, std::ptrdiff_t stride) { return {base, stride, nullptr}; }
    static RowSource paged(const RowPages& p) { return {nullptr, p.width(), &p}; }
    explicit operator bool() const { return base || pages; }
    const float* row(int r) const { return pages ? pages->row(r) : base + r * stride; }
    // Rows from r on that sit at row(r) + k * stride (at most `limit`).
    int contiguousFrom(int r, int limit) const { return pages ? std::min(limit, pages->contiguousFrom(r)) : limit; }
};

} // namespace attnscope::core
