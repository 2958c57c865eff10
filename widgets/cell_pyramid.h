// Levels of detail of a grid of cells for drawing: level 0 is the cells themselves (not copied), level k pools
// 2^k x 2^k cells into one, keeping the strongest (the largest value, or for signed data the one furthest from 0),
// so a one-key spike of attention stays visible when a 4096 x 4096 grid is drawn in 800 pixels. NaN = blank.
#pragma once

#include <memory>
#include <vector>

namespace attnscope::widgets {

class CellPyramid {
public:
    // `values` [rows, cols] row-major stay owned by `owner`, which is kept alive.
    void reset(std::shared_ptr<const void> owner, const float* values, int rows, int cols, bool signedValues);
    bool empty() const { return m_rows == 0 || m_cols == 0; }
    int rows(int level = 0) const;
    int cols(int level = 0) const;
    // The coarsest level needed is built on first use.
    const float* level(int level);
    int levelCount() const; // levels until the grid is one cell wide and high
    float cell(int r, int c) const { return m_values[static_cast<std::size_t>(r) * static_cast<std::size_t>(m_cols) + c]; }

private:
    std::shared_ptr<const void> m_owner;
    const float* m_values = nullptr;
    int m_rows = 0, m_cols = 0;
    bool m_signed = false;
    std::vector<std::vector<float>> m_pooled; // levels 1..
};

} // namespace attnscope::widgets
