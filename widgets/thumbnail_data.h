// The head overview's data: one small cached image per layer x head, built off the GUI thread.
#pragma once

#include <QImage>
#include <QStringList>
#include <memory>
#include <vector>

namespace attnscope::widgets {

struct HeadThumbnails {
    int layers = 0, heads = 0;
    int kvHeads = 0;            // grouped-query attention: query heads h*heads/kvHeads.. share a kv head (0 = none)
    std::vector<QImage> images; // layer-major: images[layer * heads + head]
    // Per layer, a sliding window's length when the model mixes sliding-window (local) and global layers (Gemma 2/3);
    // empty when every layer sees the same keys.
    std::vector<int> windows;
    // A name per row instead of "L1", "L2", ...: an encoder-decoder model's sites ("E1", "D1 self", "D1 cross").
    QStringList rowLabels;
    // Models with learned attention sinks (gpt-oss): each head's mean share of a row given to its sink (layer-major),
    // drawn as a bar under the thumbnail and ranked (the heads that attend to nothing most); empty: no sinks.
    std::vector<float> sinkMass;
    // Rank of each head by sinkMass, 1 = the most (layer-major); empty with sinkMass.
    std::vector<int> sinkRank;
};
using HeadThumbnailsPtr = std::shared_ptr<const HeadThumbnails>;

} // namespace attnscope::widgets
