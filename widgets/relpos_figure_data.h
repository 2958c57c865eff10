// The data of a layer x relative-position figure (the Transformer-XL paper's Figs. 5 and 7): one panel per profile.
#pragma once

#include <QString>
#include <memory>
#include <vector>

namespace attnscope::widgets {

struct RelposFigurePanel {
    QString title;             // e.g. "full attention", "term (b)"
    int layers = 0, heads = 0, distances = 0;
    std::vector<float> values; // [layers * heads, distances], layer-major
};

struct RelposFigureData {
    QString title;
    std::vector<RelposFigurePanel> panels;
    // Display order of the head rows (indices into layer-major rows); empty = by layer.
    std::vector<int> rowOrder;
    bool log = false;          // logarithmic colour scale
    int maxDistance = -1;      // show distances 0..maxDistance (-1: all)
};
using RelposFigurePtr = std::shared_ptr<const RelposFigureData>;

} // namespace attnscope::widgets
