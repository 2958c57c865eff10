// Alignment heads and word alignments from a translation's cross-attention.
#include "analysis/cross_alignment.h"

#include <algorithm>

namespace attnscope::core {

std::vector<int> strongestColumns(const SiteAttention& a, int head)
{
    std::vector<int> out(static_cast<std::size_t>(a.rows), 0);
    for (int i = 0; i < a.rows; ++i) {
        double best = -1;
        for (int j = 0; j < a.cols; ++j) {
            double m = 0;
            if (head >= 0)
                m = a.at(head, i, j);
            else
                for (int h = 0; h < a.heads; ++h)
                    m += a.at(h, i, j);
            if (m > best) {
                best = m;
                out[static_cast<std::size_t>(i)] = j;
            }
        }
    }
    return out;
}

std::vector<AlignmentHead> rankAlignmentHeads(const ModelInfo& info, const Translation& t)
{
    std::vector<AlignmentHead> out;
    for (std::size_t s = 0; s < info.sites.size() && s < t.sites.size(); ++s) {
        if (info.sites[s].kind != SiteKind::Cross)
            continue;
        const SiteAttention& a = t.sites[s];
        for (int h = 0; h < a.heads; ++h) {
            AlignmentHead r;
            r.site = static_cast<int>(s);
            r.layer = info.sites[s].layer;
            r.head = h;
            const auto cols = strongestColumns(a, h);
            double mass = 0;
            int forward = 0;
            for (int i = 0; i < a.rows; ++i) {
                mass += a.at(h, i, cols[static_cast<std::size_t>(i)]);
                if (i > 0 && cols[static_cast<std::size_t>(i)] >= cols[static_cast<std::size_t>(i) - 1])
                    ++forward;
            }
            r.concentration = a.rows > 0 ? mass / a.rows : 0;
            r.monotonicity = a.rows > 1 ? static_cast<double>(forward) / (a.rows - 1) : 1.0;
            out.push_back(r);
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const AlignmentHead& x, const AlignmentHead& y) {
        return x.concentration != y.concentration ? x.concentration > y.concentration : x.monotonicity > y.monotonicity;
    });
    return out;
}

} // namespace attnscope::core
