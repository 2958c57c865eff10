// CrispColorMap: level-of-detail tiles on raster painters, vector cells or a lossless whole-pixel image otherwise.
#include "crisp_color_map.h"

#include <QPaintEngine>
#include <algorithm>
#include <cmath>
#include <vector>

namespace attnscope::widgets {

namespace {
constexpr std::size_t kTileBudget = 256; // cached tiles (256 KiB each): 64 MiB at most
}

CrispColorMap::CrispColorMap(QCPAxis* keyAxis, QCPAxis* valueAxis)
    : QCPColorMap(keyAxis, valueAxis)
{
    data()->setSize(1, 1); // the cells live in m_cells; QCustomPlot's own buffer stays one cell
}

void CrispColorMap::setCells(std::shared_ptr<const void> owner, const float* values, int rows, int cols, bool signedValues)
{
    m_cells.reset(std::move(owner), values, rows, cols, signedValues);
    m_tiles.clear();
    data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
}

void CrispColorMap::setCells(std::vector<float> values, int rows, int cols, bool signedValues)
{
    auto owned = std::make_shared<const std::vector<float>>(std::move(values));
    const float* p = owned->data();
    setCells(std::move(owned), p, rows, cols, signedValues);
}

void CrispColorMap::draw(QCPPainter* painter)
{
    if (m_cells.empty() || !keyAxis() || !valueAxis())
        return;
    const QPaintEngine* engine = painter->paintEngine();
    const bool raster = !engine || engine->type() == QPaintEngine::Raster;
    if (raster || keyAxis()->orientation() != Qt::Horizontal)
        drawTiles(painter);
    else
        drawVector(painter);
}

void CrispColorMap::colourize(const float* values, int n, QRgb* line)
{
    const bool log = m_colouring.log;
    const double floor = m_colouring.range.lower;
    m_scratch.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const float v = values[i];
        m_scratch[static_cast<std::size_t>(i)] = std::isnan(v) ? std::nan("") : (log ? std::max(floor, double(v)) : double(v));
    }
    m_colouring.gradient.colorize(m_scratch.data(), m_colouring.range, line, n, 1, log);
    for (int i = 0; i < n; ++i)
        if (std::isnan(values[i]))
            line[i] = 0; // blank: the axis rect's background shows
}

const QImage& CrispColorMap::tile(int rowLevel, int colLevel, int tx, int ty)
{
    const auto key = std::make_tuple(rowLevel, colLevel, tx, ty);
    auto it = m_tiles.find(key);
    if (it == m_tiles.end()) {
        if (m_tiles.size() >= kTileBudget) { // drop the least recently used
            auto oldest = std::min_element(m_tiles.begin(), m_tiles.end(),
                                           [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
            m_tiles.erase(oldest);
        }
        const float* cells = m_cells.level(rowLevel, colLevel);
        const int lc = m_cells.cols(colLevel), lr = m_cells.rows(rowLevel);
        const int w = std::min(kTileSide, lc - tx * kTileSide), h = std::min(kTileSide, lr - ty * kTileSide);
        QImage img(w, h, QImage::Format_ARGB32_Premultiplied);
        for (int y = 0; y < h; ++y)
            colourize(cells + static_cast<std::size_t>(ty * kTileSide + y) * lc + static_cast<std::size_t>(tx) * kTileSide, w,
                      reinterpret_cast<QRgb*>(img.scanLine(y)));
        it = m_tiles.emplace(key, Tile{std::move(img), 0}).first;
    }
    it->second.used = ++m_clock;
    return it->second.image;
}

void CrispColorMap::drawTiles(QCPPainter* painter)
{
    const Colouring now{gradient(), dataRange(), dataScaleType() == QCPAxis::stLogarithmic};
    if (!(now == m_colouring)) {
        m_colouring = now;
        m_tiles.clear();
    }
    QCPAxis* x = keyAxis();
    QCPAxis* y = valueAxis();
    const int rows = m_cells.rows(), cols = m_cells.cols();
    // Cells in view.
    const QRect clip = clipRect();
    const double k0 = x->pixelToCoord(clip.left()), k1 = x->pixelToCoord(clip.right());
    const double v0 = y->pixelToCoord(clip.top()), v1 = y->pixelToCoord(clip.bottom());
    const int c0 = std::max(0, static_cast<int>(std::floor(std::min(k0, k1) + 0.5)));
    const int c1 = std::min(cols - 1, static_cast<int>(std::ceil(std::max(k0, k1) - 0.5)));
    const int r0 = std::max(0, static_cast<int>(std::floor(std::min(v0, v1) + 0.5)));
    const int r1 = std::min(rows - 1, static_cast<int>(std::ceil(std::max(v0, v1) - 0.5)));
    if (c0 > c1 || r0 > r1)
        return;
    // In each direction the finest level whose pooled cells are at least a screen pixel: then no pooled cell is
    // skipped when the image is scaled to the screen, so every spike shows, and a direction with room (a router's
    // few experts across) keeps its cells apart.
    const double cellW = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
    const double cellH = std::abs(y->coordToPixel(1) - y->coordToPixel(0));
    auto levelFor = [](double cellPixels, int levels) {
        const double cellsPerPixel = 1.0 / std::max(1e-9, cellPixels);
        int level = 0;
        while (level + 1 < levels && std::ldexp(1.0, level) < cellsPerPixel)
            ++level;
        return level;
    };
    int ly = levelFor(cellH, m_cells.rowLevels()), lx = levelFor(cellW, m_cells.colLevels());
    // Cells of about the same shape (within a factor of 2) share the square levels: one chain, built once while
    // zooming (rectangular levels for a 1000 x 800 view of a square grid made the slowest redraw 60 ms instead of
    // 8). Only clearly oblong cells (a router's tokens x experts) get levels of their own per direction.
    if (const double aspect = cellW / std::max(1e-9, cellH); aspect > 0.5 && aspect < 2)
        ly = lx = std::max(ly, lx);
    m_lastLevels = {ly, lx};

    painter->save();
    painter->setRenderHint(QPainter::SmoothPixmapTransform, false);
    painter->setRenderHint(QPainter::Antialiasing, false);
    // Pooled cells at the far edges may reach past the grid: clip to it.
    const QRectF gridRect = QRectF(QPointF(x->coordToPixel(-0.5), y->coordToPixel(-0.5)),
                                   QPointF(x->coordToPixel(cols - 0.5), y->coordToPixel(rows - 0.5)))
                                .normalized();
    painter->setClipRect(gridRect.intersected(QRectF(clip)), Qt::IntersectClip);
    const int spanX = kTileSide << lx, spanY = kTileSide << ly; // cells per tile side
    for (int ty = r0 / spanY; ty <= r1 / spanY; ++ty)
        for (int tx = c0 / spanX; tx <= c1 / spanX; ++tx) {
            const QImage& img = tile(ly, lx, tx, ty);
            // Image pixel (i, j) covers cells from (tx * spanX + i * 2^lx, ty * spanY + j * 2^ly) on: map its corners.
            const double left = x->coordToPixel(tx * spanX - 0.5), top = y->coordToPixel(ty * spanY - 0.5);
            const double right = x->coordToPixel(tx * spanX + (img.width() << lx) - 0.5);
            const double bottom = y->coordToPixel(ty * spanY + (img.height() << ly) - 0.5);
            painter->save();
            QTransform t;
            t.translate(left, top);
            t.scale((right - left) / img.width(), (bottom - top) / img.height());
            painter->setTransform(t, true);
            painter->drawImage(QPointF(0, 0), img);
            painter->restore();
        }
    painter->restore();
}

void CrispColorMap::drawVector(QCPPainter* painter)
{
    const int nx = m_cells.cols(), ny = m_cells.rows();
    // Pixel edges of the cells: cell i spans keys i - 0.5 .. i + 0.5.
    std::vector<double> xs(static_cast<std::size_t>(nx) + 1), ys(static_cast<std::size_t>(ny) + 1);
    for (int i = 0; i <= nx; ++i)
        xs[static_cast<std::size_t>(i)] = keyAxis()->coordToPixel(i - 0.5);
    for (int j = 0; j <= ny; ++j)
        ys[static_cast<std::size_t>(j)] = valueAxis()->coordToPixel(j - 0.5);
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
    m_colouring = Colouring{gradient(), dataRange(), dataScaleType() == QCPAxis::stLogarithmic};
    m_tiles.clear();
    auto colourOf = [&](int i, int j, bool& blank) -> QRgb {
        const float v = m_cells.cell(j, i);
        blank = std::isnan(v);
        QRgb c = 0;
        if (!blank)
            colourize(&v, 1, &c);
        return c;
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
                for (int yy = 0; yy < k; ++yy) {
                    auto* line = reinterpret_cast<QRgb*>(img.scanLine(py + yy));
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
