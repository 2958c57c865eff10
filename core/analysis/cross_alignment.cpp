// Alignment heads and word alignments from a capture's cross-attention grids.
#include "analysis/cross_alignment.h"

#include <algorithm>
#include <cmath>

namespace attnscope::core {

std::vector<int> strongestColumns(const AttentionGrid& g)
{
    std::vector<int> out(static_cast<std::size_t>(g.rows), 0);
    for (int i = 0; i < g.rows; ++i) {
        float best = -1;
        for (int j = 0; j < g.cols; ++j) {
            const float v = g.at(i, j);
            if (!std::isnan(v) && v > best) {
                best = v;
                out[static_cast<std::size_t>(i)] = j;
            }
        }
    }
    return out;
}

namespace {
AlignmentHead scoreHead(const AttentionGrid& g, int site, int layer, int head)
{
    AlignmentHead r{site, layer, head, 0, 0};
    const auto cols = strongestColumns(g);
    double mass = 0;
    int forward = 0;
    for (int i = 0; i < g.rows; ++i) {
        mass += g.at(i, cols[static_cast<std::size_t>(i)]);
        if (i > 0 && cols[static_cast<std::size_t>(i)] >= cols[static_cast<std::size_t>(i) - 1])
            ++forward;
    }
    r.concentration = g.rows > 0 ? mass / g.rows : 0;
    r.monotonicity = g.rows > 1 ? static_cast<double>(forward) / (g.rows - 1) : 1.0;
    return r;
}
} // namespace

std::vector<AlignmentHead> rankAlignmentHeads(const TextCapture& capture, int segment)
{
    std::vector<AlignmentHead> out;
    const auto& info = capture.model;
    for (int s = 0; s < info.siteCount(); ++s) {
        const AttentionSite& site = info.site(s);
        if (site.kind != SiteKind::Cross)
            continue;
        for (int h = 0; h < site.heads; ++h)
            out.push_back(scoreHead(attentionGrid(capture, segment, s, {h}), s, site.layer, h));
    }
    std::stable_sort(out.begin(), out.end(), [](const AlignmentHead& x, const AlignmentHead& y) {
        return x.concentration != y.concentration ? x.concentration > y.concentration : x.monotonicity > y.monotonicity;
    });
    return out;
}

} // namespace attnscope::core
