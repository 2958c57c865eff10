// makeThumbnails: nearest-neighbour downsampling of each head's grid, coloured with Viridis.
#include "ui/thumbnails.h"

#include "analysis/attention_grid.h"
#include "colour_maps.h"
#include "ui/grid_builder.h"

#include <cmath>

namespace attnscope::app {

widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, int segment, int maxSide)
{
    auto t = std::make_shared<widgets::HeadThumbnails>();
    if (capture.segments.empty())
        return t;
    const int seg = segment < 0 ? autoSegment(capture) : segment;
    t->layers = capture.model.layers;
    t->heads = capture.model.heads;
    for (int l = 0; l < t->layers; ++l)
        for (int h = 0; h < t->heads; ++h) {
            const auto g = core::attentionGrid(capture, seg, l, {h});
            const int w = std::min(g.cols, maxSide), hgt = std::min(g.rows, maxSide);
            QImage img(w, hgt, QImage::Format_RGB32);
            for (int y = 0; y < hgt; ++y)
                for (int x = 0; x < w; ++x) {
                    const float v = g.at(y * g.rows / hgt, x * g.cols / w);
                    img.setPixel(x, y, std::isnan(v) ? qRgb(235, 235, 235)
                                                     : widgets::colourAt(widgets::ColourMap::Viridis, std::sqrt(v)).rgb());
                }
            t->images.push_back(img);
        }
    return t;
}

} // namespace attnscope::app
