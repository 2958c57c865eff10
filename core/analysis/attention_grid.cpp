// attentionGrid: head selection, term recombination and the top-fraction highlight.
#include "analysis/attention_grid.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

std::vector<std::uint8_t> topFractionMask(const std::vector<float>& values, int rows, int cols, double fraction,
                                          bool probabilities)
{
    std::vector<std::uint8_t> out(values.size(), 0);
    std::vector<float> row;
    for (int r = 0; r < rows; ++r) {
        row.clear();
        for (int c = 0; c < cols; ++c) {
            const float v = values[static_cast<std::size_t>(r) * cols + c];
            if (!std::isnan(v))
                row.push_back(v);
        }
        if (row.empty())
            continue;
        const auto keep = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(fraction * row.size() - 1e-9)));
        std::nth_element(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep - 1), row.end(), std::greater<>());
        float threshold = row[keep - 1];
        if (probabilities)
            threshold = std::max({threshold, 1.0f / static_cast<float>(row.size()) + 1e-7f, 0.005f});
        for (int c = 0; c < cols; ++c) {
            const float v = values[static_cast<std::size_t>(r) * cols + c];
            if (!std::isnan(v) && v >= threshold)
                out[static_cast<std::size_t>(r) * cols + c] = 1;
        }
    }
    return out;
}

AttentionGrid attentionGrid(const TextCapture& capture, int segment, int layer, const std::vector<int>& headsIn,
                            const TermSelection& terms, double topFraction, bool highlightMemoryOnly)
{
    if (segment < 0 || segment >= static_cast<int>(capture.segments.size()))
        throw Error(ErrorCode::BadInput, "segment " + std::to_string(segment + 1) + " does not exist");
    const auto& seg = capture.segments[static_cast<std::size_t>(segment)];
    const int H = capture.model.heads;
    if (layer < 0 || layer >= static_cast<int>(seg.probs.size()))
        throw Error(ErrorCode::BadInput, "layer " + std::to_string(layer + 1) + " does not exist");
    std::vector<int> heads = headsIn;
    if (heads.empty())
        for (int h = 0; h < H; ++h)
            heads.push_back(h);
    for (int h : heads)
        if (h < 0 || h >= H)
            throw Error(ErrorCode::BadInput, "head " + std::to_string(h + 1) + " does not exist");
    const bool full = terms.isFull() && !terms.raw;
    if (!terms.any())
        throw Error(ErrorCode::BadInput, "no score term is selected: tick at least one of (a), (b), (c), (d)");
    if (!full && !capture.hasTerms())
        throw Error(ErrorCode::BadInput, "this model has no relative score terms");

    AttentionGrid g;
    g.rows = seg.qlen;
    g.cols = seg.klen;
    g.memoryCols = seg.mlen;
    const std::size_t cells = static_cast<std::size_t>(g.rows) * g.cols;
    g.values.assign(cells, 0.0f);
    std::vector<float> span(static_cast<std::size_t>(g.cols));
    std::vector<VisibleSpan> spans(static_cast<std::size_t>(g.rows));
    for (int i = 0; i < g.rows; ++i)
        spans[static_cast<std::size_t>(i)] = visibleSpan(seg.mask.data() + static_cast<std::size_t>(i) * g.cols, g.cols);
    for (int h : heads) {
        const std::size_t off = static_cast<std::size_t>(h) * cells;
        const auto& P = seg.probs[static_cast<std::size_t>(layer)];
        for (int i = 0; i < g.rows; ++i) {
            const auto [lo, len] = spans[static_cast<std::size_t>(i)];
            const std::size_t at = static_cast<std::size_t>(i) * g.cols + lo;
            float* out = g.values.data() + at;
            if (full) {
                for (int t = 0; t < len; ++t)
                    out[t] += P[off + at + t];
                continue;
            }
            const float* termPtr[4];
            for (int t = 0; t < 4; ++t)
                termPtr[t] = seg.terms[t][static_cast<std::size_t>(layer)].data() + off + at;
            termSoftmax(termPtr, terms, len, span.data());
            for (int t = 0; t < len; ++t)
                out[t] += span[static_cast<std::size_t>(t)];
        }
    }
    const float inv = 1.0f / static_cast<float>(heads.size());
    for (std::size_t c = 0; c < cells; ++c)
        g.values[c] = seg.mask[c] ? std::numeric_limits<float>::quiet_NaN() : g.values[c] * inv;

    const auto first = static_cast<int>(seg.firstPosition);
    for (int i = 0; i < g.rows; ++i)
        g.rowTokens.push_back(first + i);
    for (int j = 0; j < g.cols; ++j)
        g.colTokens.push_back(first - seg.mlen + j);
    g.highlight = topFractionMask(g.values, g.rows, g.cols, topFraction, !terms.raw);
    if (highlightMemoryOnly)
        for (int i = 0; i < g.rows; ++i)
            for (int j = g.memoryCols; j < g.cols; ++j)
                g.highlight[static_cast<std::size_t>(i) * g.cols + j] = 0;
    return g;
}

} // namespace attnscope::core
