// CrispColorMap: vector cells or a lossless whole-pixel image when the painter is not a raster painter.
#include "crisp_color_map.h"

#include <QPaintEngine>
#include <algorithm>
#include <cmath>
#include <vector>

namespace attnscope::widgets {

void CrispColorMap::draw(QCPPainter* painter)
{
    const QPaintEngine* engine = painter->paintEngine();
    const bool raster = !engine || engine->type() == QPaintEngine::Raster;
    if (raster || !keyAxis() || keyAxis()->orientation() != Qt::Horizontal)
        QCPColorMap::draw(painter);
    else
        drawVector(painter);
}

void CrispColorMap::drawVector(QCPPainter* painter)
{
    QCPColorMapData* d = data();
    const int nx = d->keySize(), ny = d->valueSize();
    if (nx <= 0 || ny <= 0)
        return;
    const QCPRange kr = d->keyRange(), vr = d->valueRange();
    const double kStep = nx > 1 ? (kr.upper - kr.lower) / (nx - 1) : 1.0;
    const double vStep = ny > 1 ? (vr.upper - vr.lower) / (ny - 1) : 1.0;
    // Pixel edges of the cells: cell i spans keys lower + (i - 0.5) step .. lower + (i + 0.5) step.
    std::vector<double> xs(static_cast<std::size_t>(nx) + 1), ys(static_cast<std::size_t>(ny) + 1);
    for (int i = 0; i <= nx; ++i)
        xs[static_cast<std::size_t>(i)] = keyAxis()->coordToPixel(kr.lower + (i - 0.5) * kStep);
    for (int j = 0; j <= ny; ++j)
        ys[static_cast<std::size_t>(j)] = valueAxis()->coordToPixel(vr.lower + (j - 0.5) * vStep);
    // Cells in view.
    const QRectF clip = clipRect();
    auto visibleRange = [](const std::vector<double>& edges, double lo, double hi) {
        int first = -1, last = -1;
        for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
            const double a = std::min(edges[i], edges[i + 1]), b = std::max(edges[i], edges[i + 1]);
            if (b >= lo && a <= hi) {
                if (first < 0)
                    first = static_cast<int>(i);
                last = static_cast<int>(i);
            }
        }
        return std::pair{first, last};
    };
    const auto [x0, x1] = visibleRange(xs, clip.left(), clip.right());
    const auto [y0, y1] = visibleRange(ys, clip.top(), clip.bottom());
    if (x0 < 0 || y0 < 0)
        return;
    const bool logScale = dataScaleType() == QCPAxis::stLogarithmic;
    const QCPRange range = dataRange();
    QCPColorGradient grad = gradient(); // color() is not const
    auto colourOf = [&](int i, int j, bool& blank) -> QRgb {
        const double v = d->cell(i, j);
        blank = std::isnan(v);
        return blank ? 0 : grad.color(v, range, logScale);
    };

    const long long cells = static_cast<long long>(x1 - x0 + 1) * (y1 - y0 + 1);
    painter->save();
    painter->setPen(Qt::NoPen);
    if (cells <= kMaxVectorCells) {
        // One rectangle per cell, overlapping its neighbours by a hair so viewers show no seams.
        painter->setAntialiasing(false);
        for (int j = y0; j <= y1; ++j)
            for (int i = x0; i <= x1; ++i) {
                bool blank = false;
                const QRgb c = colourOf(i, j, blank);
                if (blank)
                    continue;
                QRectF r = QRectF(QPointF(xs[static_cast<std::size_t>(i)], ys[static_cast<std::size_t>(j)]),
                                  QPointF(xs[static_cast<std::size_t>(i) + 1], ys[static_cast<std::size_t>(j) + 1]))
                               .normalized();
                const double pad = std::min(0.3, 0.1 * std::min(r.width(), r.height()));
                painter->fillRect(r.adjusted(0, 0, pad, pad), QColor::fromRgba(c));
            }
    } else {
        // One image, k x k pixels per cell (lossless), laid out in the painter's orientation.
        const int w = x1 - x0 + 1, h = y1 - y0 + 1;
        const QRectF target = QRectF(QPointF(xs[static_cast<std::size_t>(x0)], ys[static_cast<std::size_t>(y0)]),
                                     QPointF(xs[static_cast<std::size_t>(x1) + 1], ys[static_cast<std::size_t>(y1) + 1]))
                                  .normalized();
        const double perCell = std::max(target.width() / w, target.height() / h);
        const int k = std::clamp(static_cast<int>(std::ceil(2 * perCell)), 1, std::max(1, 4096 / std::max(w, h)));
        QImage img(w * k, h * k, QImage::Format_ARGB32);
        img.fill(Qt::transparent);
        const bool xFlip = xs[static_cast<std::size_t>(x1) + 1] < xs[static_cast<std::size_t>(x0)];
        const bool yFlip = ys[static_cast<std::size_t>(y1) + 1] < ys[static_cast<std::size_t>(y0)];
        for (int j = y0; j <= y1; ++j)
            for (int i = x0; i <= x1; ++i) {
                bool blank = false;
                const QRgb c = colourOf(i, j, blank);
                if (blank)
                    continue;
                const int px = (xFlip ? x1 - i : i - x0) * k, py = (yFlip ? y1 - j : j - y0) * k;
                for (int y = 0; y < k; ++y) {
                    auto* line = reinterpret_cast<QRgb*>(img.scanLine(py + y));
                    std::fill(line + px, line + px + k, c);
                }
            }
        painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
        painter->setRenderHint(QPainter::LosslessImageRendering, true);
        painter->drawImage(target, img);
    }
    painter->restore();
}

} // namespace attnscope::widgets
