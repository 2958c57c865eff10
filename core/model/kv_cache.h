// The keys and values a causal model carries between calls: the last segment's cached rows and its own tokens. Keeping
// the whole last segment (not only the rows the next one sees) is what lets an edited text resume a segment part-way.
#pragma once

#include <cstddef>
#include <vector>

namespace attnscope::core {

class KvCache {
public:
    KvCache() = default;
    KvCache(int layers, int width);
    // Keys and values of different widths; valueWidth 0 keeps no values (DeepSeek's MLA caches one latent row per
    // token, passed as the key, and expands keys and values from it).
    KvCache(int layers, int keyWidth, int valueWidth);
    // Each layer its own widths (a hybrid model: a convolution layer keeps other rows than an attention layer).
    KvCache(std::vector<int> keyWidths, std::vector<int> valueWidths);

    // Start of a segment: keep only the newest `carry` rows, unless the cache was cut to resume inside a segment.
    // Returns the rows the segment sees before its own tokens.
    int begin(int carry);
    // Appends layer l's new key and value rows ([q, keyWidth] and [q, valueWidth], row-major; values may be null when
    // valueWidth is 0).
    void append(int layer, const float* keys, const float* values, int q);
    const float* keys(int layer) const { return m_k[static_cast<std::size_t>(layer)].data(); }
    const float* values(int layer) const { return m_v[static_cast<std::size_t>(layer)].data(); }
    int rows(int layer) const
    {
        const auto l = static_cast<std::size_t>(layer);
        return static_cast<int>(m_k[l].size() / static_cast<std::size_t>(m_width[l]));
    }
    // End of a segment: remembers where it began, for resumedAt.
    void finish();
    // A copy holding the last segment's cached rows and its first `keep` tokens, marked to continue that segment.
    KvCache resumedAt(int keep) const;
    // Rows of the last segment that were cached before it, and its own tokens.
    int segmentMemoryRows() const { return m_segmentStart; }
    int segmentTokens() const { return m_segmentTokens; }
    std::size_t bytes() const;

private:
    std::vector<int> m_width;      // of a key row, per layer
    std::vector<int> m_valueWidth; // of a value row, per layer
    int m_segmentStart = 0;  // rows cached before the current / last segment
    int m_segmentTokens = 0; // tokens of the last finished segment
    bool m_resumed = false;
    std::vector<std::vector<float>> m_k, m_v; // per layer [rows, width]
};

} // namespace attnscope::core
