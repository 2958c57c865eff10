// The head overview's data: one small cached image per layer x head, built off the GUI thread.
#pragma once

#include <QImage>
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
};
using HeadThumbnailsPtr = std::shared_ptr<const HeadThumbnails>;

} // namespace attnscope::widgets
