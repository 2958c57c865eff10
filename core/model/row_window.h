// A memory that slides by a segment at a time without copying itself each time: rows are appended after the ones kept
// in a buffer with room to spare, and read as one contiguous block. Only when the room runs out do the kept rows move
// to the front (once every few segments). Transformer-XL's per-layer memory and its keys and values live in
// these; before, each segment copied the whole memory three times per layer (5% of a corpus scan).
#pragma once

#include "model/nn_ops.h"

#include <algorithm>
#include <cstddef>

namespace attnscope::core {

class RowWindow {
public:
    explicit RowWindow(Eigen::Index cols = 0)
        : m_buf(0, cols)
    {
    }
    // A copy holds the kept rows only (states are copied to be kept for edits).
    RowWindow(const RowWindow& o)
        : m_buf(o.m_buf.middleRows(o.m_begin, o.rows()))
        , m_end(o.rows())
    {
    }
    RowWindow& operator=(const RowWindow& o)
    {
        if (this != &o)
            *this = RowWindow(o); // the kept rows, as the copy constructor takes them
        return *this;
    }
    RowWindow(RowWindow&&) noexcept = default;
    RowWindow& operator=(RowWindow&&) noexcept = default;

    Eigen::Index rows() const { return m_end - m_begin; }
    Eigen::Index cols() const { return m_buf.cols(); }
    // The rows, contiguous, row r at data() + r * cols(); null when there are none.
    const float* data() const { return rows() > 0 ? m_buf.row(m_begin).data() : nullptr; }
    std::size_t bytes() const { return static_cast<std::size_t>(m_buf.size()) * sizeof(float); }

    // Keeps the newest `keep` rows (all when there are fewer) and appends `block`'s rows after them.
    template <typename Block>
    void append(const Block& block, Eigen::Index keep)
    {
        keepLast(keep);
        const Eigen::Index n = block.rows(), kept = rows();
        if (m_end + n > m_buf.rows()) {
            if (kept + n > m_buf.rows()) {
                // Room for up to three more such blocks but never more than the kept rows again: the kept rows move
                // about once every few blocks, and a long block (a segment of thousands of tokens) adds no more than
                // the memory itself.
                RowMatrix grown(kept + n + std::min(3 * n, kept), cols());
                grown.topRows(kept) = m_buf.middleRows(m_begin, kept);
                m_buf.swap(grown);
            } else { // to the front: each row moves to a lower address, so copying forwards is safe
                for (Eigen::Index r = 0; r < kept; ++r)
                    std::copy_n(m_buf.row(m_begin + r).data(), cols(), m_buf.row(r).data());
            }
            m_begin = 0;
            m_end = kept;
        }
        m_buf.middleRows(m_end, n) = block;
        m_end += n;
    }
    // Room for `rows` rows in all (the kept ones stay), so appends up to that never reallocate. A window that grows
    // as appends need reallocates (and the kernel faults in) its buffer several times over the first blocks.
    void reserve(Eigen::Index rows)
    {
        if (m_buf.rows() >= rows)
            return;
        const Eigen::Index kept = this->rows();
        RowMatrix grown(std::max(rows, kept), cols());
        grown.topRows(kept) = m_buf.middleRows(m_begin, kept);
        m_buf.swap(grown);
        m_begin = 0;
        m_end = kept;
    }
    // Drops all but the newest `n` rows.
    void keepLast(Eigen::Index n) { m_begin = std::max(m_begin, m_end - std::max<Eigen::Index>(n, 0)); }

private:
    RowMatrix m_buf;
    Eigen::Index m_begin = 0, m_end = 0; // the rows are [m_begin, m_end) of m_buf
};

} // namespace attnscope::core
