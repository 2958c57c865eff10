// Levels of detail of a grid of cells for drawing: level (0, 0) is the cells themselves (not copied), level (ky, kx)
// pools 2^ky rows by 2^kx columns into one cell, keeping the strongest (the largest value, or for signed data the one
// furthest from 0), so a one-key spike of attention stays visible when a 4096 x 4096 grid is drawn in 800 pixels.
// Rows and columns pool apart: a tall, narrow grid (a router's tokens x its few experts) pools its tokens and keeps
// every expert its own column. NaN = blank.
#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace attnscope::widgets {

class CellPyramid {
public:
    // `values` [rows, cols] row-major stay owned by `owner`, which is kept alive.
    void reset(std::shared_ptr<const void> owner, const float* values, int rows, int cols, bool signedValues);
    bool empty() const { return m_rows == 0 || m_cols == 0; }
    int rows(int rowLevel = 0) const; // rows after pooling 2^rowLevel of them into one
    int cols(int colLevel = 0) const;
    // The cells pooled 2^rowLevel x 2^colLevel, [rows(rowLevel), cols(colLevel)]; built on first use.
    const float* level(int rowLevel, int colLevel);
    int rowLevels() const; // levels until the grid is one cell high (at least 1: level 0)
    int colLevels() const;
    float cell(int r, int c) const { return m_values[static_cast<std::size_t>(r) * static_cast<std::size_t>(m_cols) + c]; }

private:
    std::shared_ptr<const void> m_owner;
    const float* m_values = nullptr;
    int m_rows = 0, m_cols = 0;
    bool m_signed = false;
    std::map<std::pair<int, int>, std::vector<float>> m_pooled; // (rowLevel, colLevel) -> cells, but (0, 0)
};

} // namespace attnscope::widgets
