// KvCache: rows live in per-layer vectors, so appending a segment's rows is amortised and needs no second copy.
#include "model/kv_cache.h"

#include "util/error.h"

#include <algorithm>

namespace attnscope::core {

namespace {
// Capacity in whole blocks of rows: a text that grows by a token at a time reallocates rarely, and blocks freed by one
// text fit the next.
constexpr std::size_t kRowBlock = 256;
void reserveRows(std::vector<float>& v, std::size_t rows, std::size_t width)
{
    const std::size_t want = (rows + kRowBlock - 1) / kRowBlock * kRowBlock * width;
    if (v.capacity() < rows * width)
        v.reserve(want);
}
} // namespace

KvCache::KvCache(int layers, int width)
    : KvCache(layers, width, width)
{
}

KvCache::KvCache(int layers, int keyWidth, int valueWidth)
    : KvCache(std::vector<int>(static_cast<std::size_t>(layers), keyWidth),
              std::vector<int>(static_cast<std::size_t>(layers), valueWidth))
{
}

KvCache::KvCache(std::vector<int> keyWidths, std::vector<int> valueWidths)
    : m_width(std::move(keyWidths))
    , m_valueWidth(std::move(valueWidths))
    , m_k(m_width.size())
    , m_v(m_width.size())
{
}

int KvCache::begin(int carry)
{
    if (m_resumed) {
        m_resumed = false;
        return m_k.empty() ? 0 : rows(0);
    }
    for (std::size_t l = 0; l < m_k.size(); ++l) {
        const auto width = static_cast<std::size_t>(m_width[l]), valueWidth = static_cast<std::size_t>(m_valueWidth[l]);
        const std::size_t have = m_k[l].size() / width;
        const std::size_t keep = std::min<std::size_t>(have, static_cast<std::size_t>(std::max(0, carry)));
        const std::size_t drop = have - keep;
        m_k[l].erase(m_k[l].begin(), m_k[l].begin() + static_cast<std::ptrdiff_t>(drop * width));
        m_v[l].erase(m_v[l].begin(), m_v[l].begin() + static_cast<std::ptrdiff_t>(drop * valueWidth));
    }
    m_segmentStart = m_k.empty() ? 0 : rows(0);
    return m_segmentStart;
}

void KvCache::append(int layer, const float* keys, const float* values, int q)
{
    const auto l = static_cast<std::size_t>(layer);
    const auto width = static_cast<std::size_t>(m_width[l]), valueWidth = static_cast<std::size_t>(m_valueWidth[l]);
    const std::size_t n = static_cast<std::size_t>(q) * width;
    const std::size_t nv = static_cast<std::size_t>(q) * valueWidth;
    auto& k = m_k[l];
    auto& v = m_v[l];
    const std::size_t rows = k.size() / width + static_cast<std::size_t>(q);
    reserveRows(k, rows, width);
    k.insert(k.end(), keys, keys + n);
    if (nv > 0) {
        reserveRows(v, rows, valueWidth);
        v.insert(v.end(), values, values + nv);
    }
}

void KvCache::finish()
{
    m_segmentTokens = (m_k.empty() ? 0 : rows(0)) - m_segmentStart;
}

KvCache KvCache::resumedAt(int keep) const
{
    if (keep < 1 || keep >= m_segmentTokens + 1)
        throw Error(ErrorCode::BadInput, "cannot resume a segment of " + std::to_string(m_segmentTokens) +
                                             " tokens after " + std::to_string(keep));
    KvCache out;
    out.m_width = m_width;
    out.m_valueWidth = m_valueWidth;
    out.m_segmentStart = m_segmentStart;
    out.m_resumed = true;
    const auto kept = static_cast<std::size_t>(m_segmentStart + keep);
    const auto rows = kept + 1; // room for the typed token
    for (std::size_t l = 0; l < m_k.size(); ++l) {
        const auto width = static_cast<std::size_t>(m_width[l]), valueWidth = static_cast<std::size_t>(m_valueWidth[l]);
        out.m_k.emplace_back();
        out.m_v.emplace_back();
        reserveRows(out.m_k.back(), rows, width);
        reserveRows(out.m_v.back(), rows, valueWidth);
        const std::size_t n = kept * width;
        out.m_k.back().assign(m_k[l].begin(), m_k[l].begin() + static_cast<std::ptrdiff_t>(n));
        const std::size_t nv = kept * valueWidth;
        out.m_v.back().assign(m_v[l].begin(), m_v[l].begin() + static_cast<std::ptrdiff_t>(nv));
    }
    return out;
}

std::size_t KvCache::bytes() const
{
    std::size_t b = 0;
    for (std::size_t l = 0; l < m_k.size(); ++l)
        b += (m_k[l].capacity() + m_v[l].capacity()) * sizeof(float);
    return b;
}

} // namespace attnscope::core
