// makeThumbnails: nearest-neighbour downsampling of each head's grid; probabilities in Viridis (square root, so
// weak structure shows), raw scores in the diverging map around 0.
#include "views/thumbnails.h"

#include "analysis/attention_grid.h"
#include "colour_maps.h"
#include "views/grid_builder.h"

#include <algorithm>
#include <cmath>

namespace attnscope::app {

widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, int segment,
                                          const core::TermSelection& terms, int maxSide)
{
    auto t = std::make_shared<widgets::HeadThumbnails>();
    if (capture.segments.empty() || !terms.any())
        return t;
    const int seg = segment < 0 ? autoSegment(capture) : segment;
    t->layers = capture.model.layers;
    t->heads = capture.model.heads;
    t->kvHeads = capture.model.kvHeads;
    for (int l = 0; l < t->layers; ++l)
        for (int h = 0; h < t->heads; ++h) {
            const auto g = core::attentionGrid(capture, seg, l, {h}, terms);
            float maxAbs = 1e-9f;
            if (terms.raw)
                for (float v : g.values)
                    if (!std::isnan(v))
                        maxAbs = std::max(maxAbs, std::abs(v));
            const int w = std::min(g.cols, maxSide), hgt = std::min(g.rows, maxSide);
            QImage img(w, hgt, QImage::Format_RGB32);
            for (int y = 0; y < hgt; ++y)
                for (int x = 0; x < w; ++x) {
                    const float v = g.at(y * g.rows / hgt, x * g.cols / w);
                    QRgb c = qRgb(235, 235, 235);
                    if (!std::isnan(v))
                        c = terms.raw ? widgets::colourAt(widgets::ColourMap::RedBlue, 0.5 + 0.5 * v / maxAbs).rgb()
                                      : widgets::colourAt(widgets::ColourMap::Viridis, std::sqrt(std::max(0.0f, v))).rgb();
                    img.setPixel(x, y, c);
                }
            t->images.push_back(img);
        }
    return t;
}

} // namespace attnscope::app
