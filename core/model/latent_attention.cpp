// LatentAttention: the projections of DeepSeek's multi-head latent attention.
#include "model/latent_attention.h"

namespace attnscope::core {

LatentAttention::LatentAttention(const LlamaConfig::LatentAttention& shape, int heads, float eps)
    : m_shape(shape)
    , m_heads(heads)
    , m_eps(eps)
{
}

namespace {
// The rotary rows of one head stored in interleaved pairs (2i, 2i + 1) from `first`, in rotate_half order (i, i + d/2).
void appendRotaryPairs(std::vector<std::int32_t>& rows, int first, int dims)
{
    for (int j = 0; j < 2; ++j)
        for (int i = 0; i < dims / 2; ++i)
            rows.push_back(first + 2 * i + j);
}
} // namespace

std::vector<std::int32_t> LatentAttention::queryRows() const
{
    const int dn = m_shape.nopeDim, dr = m_shape.ropeDim, d = dn + dr;
    std::vector<std::int32_t> rows;
    for (int h = 0; h < m_heads; ++h) {
        appendRotaryPairs(rows, h * d + dn, dr);
        for (int n = 0; n < dn; ++n)
            rows.push_back(h * d + n);
    }
    return rows;
}

std::vector<std::int32_t> LatentAttention::latentRows() const
{
    std::vector<std::int32_t> rows(static_cast<std::size_t>(m_shape.kvRank));
    for (int r = 0; r < m_shape.kvRank; ++r)
        rows[static_cast<std::size_t>(r)] = r;
    return rows;
}

std::vector<std::int32_t> LatentAttention::ropeKeyRows() const
{
    std::vector<std::int32_t> rows;
    appendRotaryPairs(rows, m_shape.kvRank, m_shape.ropeDim);
    return rows;
}

std::vector<std::int32_t> LatentAttention::kvBRows(bool values) const
{
    const int dn = m_shape.nopeDim, dv = m_shape.valueDim;
    std::vector<std::int32_t> rows;
    for (int h = 0; h < m_heads; ++h)
        for (int i = 0; i < (values ? dv : dn); ++i)
            rows.push_back(h * (dn + dv) + (values ? dn : 0) + i);
    return rows;
}

void LatentAttention::queries(const RowMatrix& x, const LatentWeights& w, RowMatrix& q) const
{
    if (!w.qA) {
        multiplyTransposed(x, w.q, q);
        return;
    }
    RowMatrix compressed;
    multiplyTransposed(x, w.qA, compressed);
    rmsNormGroupsInPlace(compressed, 1, w.qANorm, m_eps);
    multiplyTransposed(compressed, w.qB, q);
}

void LatentAttention::compress(const RowMatrix& x, const LatentWeights& w, RowMatrix& rows) const
{
    RowMatrix latent, ropeKey;
    multiplyTransposed(x, w.latent, latent);
    rmsNormGroupsInPlace(latent, 1, w.latentNorm, m_eps);
    multiplyTransposed(x, w.ropeKey, ropeKey);
    rows.resize(x.rows(), cacheWidth());
    rows.leftCols(m_shape.kvRank) = latent;
    rows.rightCols(m_shape.ropeDim) = ropeKey;
}

void LatentAttention::expand(const float* cached, int k, const LatentWeights& w, RowMatrix& keys, RowMatrix& values) const
{
    const int H = m_heads, dn = m_shape.nopeDim, dr = m_shape.ropeDim, d = dn + dr;
    const auto rows = ConstMatrixMap(cached, k, cacheWidth());
    const RowMatrix latent = rows.leftCols(m_shape.kvRank);
    RowMatrix content;
    if (w.keyContent) {
        multiplyTransposed(latent, w.keyContent, content);
    } else { // llama.cpp's split layout: one [kvRank, nopeDim] product per head
        content.resize(k, static_cast<Eigen::Index>(H) * dn);
        RowMatrix one;
        for (int h = 0; h < H; ++h) {
            multiply(latent, w.keyContentByHead[static_cast<std::size_t>(h)], one);
            content.middleCols(static_cast<Eigen::Index>(h) * dn, dn) = one;
        }
    }
    multiplyTransposed(latent, w.value, values);
    keys.resize(k, static_cast<Eigen::Index>(H) * d);
    for (int h = 0; h < H; ++h) {
        keys.middleCols(static_cast<Eigen::Index>(h) * d, dr) = rows.rightCols(dr);
        keys.middleCols(static_cast<Eigen::Index>(h) * d + dr, dn) = content.middleCols(static_cast<Eigen::Index>(h) * dn, dn);
    }
}

} // namespace attnscope::core
