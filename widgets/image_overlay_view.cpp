// ImageOverlayView: the picture scaled smoothly, the patch values as translucent cells, a colour bar at the right.
#include "image_overlay_view.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace attnscope::widgets {

namespace {
constexpr int kTitle = 44, kBar = 18, kBarGap = 12, kBarLabels = 44, kMargin = 8; // two title lines
}

ImageOverlayView::ImageOverlayView(QWidget* parent)
    : QWidget(parent)
{
    setMinimumSize(200, 160);
    setMouseTracking(false);
}

void ImageOverlayView::setData(ImageOverlayDataPtr data)
{
    m_data = std::move(data);
    update();
}

void ImageOverlayView::setOpacity(double opacity)
{
    m_opacity = std::clamp(opacity, 0.0, 1.0);
    update();
}

void ImageOverlayView::setColourMap(ColourMap map)
{
    m_map = map;
    update();
}

void ImageOverlayView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    m_data.reset();
    update();
}

QRect ImageOverlayView::imageRect(const QRect& area) const
{
    const QRect inner = area.adjusted(kMargin, kTitle, -(kMargin + kBarGap + kBar + kBarLabels), -kMargin);
    if (!m_data || m_data->image.isNull() || inner.width() < 8 || inner.height() < 8)
        return {};
    const QSize s = m_data->image.size().scaled(inner.size(), Qt::KeepAspectRatio);
    return QRect(inner.left() + (inner.width() - s.width()) / 2, inner.top() + (inner.height() - s.height()) / 2,
                 s.width(), s.height());
}

QSize ImageOverlayView::figureSize() const
{
    constexpr int width = 900;
    const int inner = width - 2 * kMargin - kBarGap - kBar - kBarLabels;
    if (!m_data || m_data->image.isNull() || m_data->image.width() == 0)
        return {width, width * 3 / 4};
    const double aspect = static_cast<double>(m_data->image.height()) / m_data->image.width();
    const int n = static_cast<int>(m_data->maps.size());
    if (n <= 1)
        return {width, kTitle + kMargin + static_cast<int>(inner * aspect)};
    const int cols = std::min(n, 3), rows = (n + cols - 1) / cols, label = fontMetrics().height() + 2;
    const int side = (inner - (cols - 1) * 6) / cols;
    return {width, kTitle + kMargin + rows * (static_cast<int>(side * aspect) + label) + (rows - 1) * 6};
}

void ImageOverlayView::draw(QPainter& p, const QRect& area) const
{
    p.fillRect(area, palette().base());
    if (!m_data) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(area.adjusted(16, 16, -16, -16), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    const auto& d = *m_data;
    QFont titleFont = font();
    titleFont.setBold(true);
    p.setFont(titleFont);
    p.setPen(palette().color(QPalette::Text));
    const int line = kTitle / 2;
    p.drawText(QRect(area.left() + kMargin, area.top() + 2, area.width() - 2 * kMargin, line), Qt::AlignCenter,
               QFontMetrics(titleFont).elidedText(d.title, Qt::ElideRight, area.width() - 2 * kMargin));
    p.setFont(font());
    p.drawText(QRect(area.left() + kMargin, area.top() + line, area.width() - 2 * kMargin, line), Qt::AlignCenter,
               fontMetrics().elidedText(d.subtitle, Qt::ElideRight, area.width() - 2 * kMargin));
    if (!d.maps.empty()) {
        drawMaps(p, area);
        return;
    }
    const QRect img = imageRect(area);
    if (img.isEmpty())
        return;
    // A small picture blown up shows its real pixels (the model's input), a large one is smoothed.
    p.setRenderHint(QPainter::SmoothPixmapTransform, img.width() < 2 * d.image.width());
    p.drawImage(img, d.image);
    // The patch values, each cell from its own edges so the cells tile the picture without gaps.
    const float top = d.maxValue > 0 ? d.maxValue : 1.0f;
    if (d.rows > 0 && d.cols > 0 && d.values.size() == static_cast<std::size_t>(d.rows) * d.cols) {
        p.setOpacity(m_opacity);
        for (int r = 0; r < d.rows; ++r)
            for (int c = 0; c < d.cols; ++c) {
                const int x0 = img.left() + img.width() * c / d.cols, x1 = img.left() + img.width() * (c + 1) / d.cols;
                const int y0 = img.top() + img.height() * r / d.rows, y1 = img.top() + img.height() * (r + 1) / d.rows;
                const double v = std::clamp(static_cast<double>(d.values[static_cast<std::size_t>(r) * d.cols + c]) / top, 0.0, 1.0);
                p.fillRect(QRect(QPoint(x0, y0), QPoint(x1 - 1, y1 - 1)), colourAt(m_map, v));
            }
        p.setOpacity(1.0);
        if (d.selectedPatch >= 0) { // the query patch: a white box with a dark edge, readable on any colour
            const int r = d.selectedPatch / d.cols, c = d.selectedPatch % d.cols;
            const QRect cell(QPoint(img.left() + img.width() * c / d.cols, img.top() + img.height() * r / d.rows),
                             QPoint(img.left() + img.width() * (c + 1) / d.cols - 1, img.top() + img.height() * (r + 1) / d.rows - 1));
            p.setPen(QPen(Qt::black, 4));
            p.drawRect(cell);
            p.setPen(QPen(Qt::white, 2));
            p.drawRect(cell);
        }
    }
    drawColourBar(p, QRect(img.right() + kBarGap, img.top(), kBar, img.height()), top);
}

void ImageOverlayView::drawMaps(QPainter& p, const QRect& area) const
{
    // The picture once per map, in a row (wrapping to as many rows as keep them largest), each labelled.
    const auto& d = *m_data;
    const int n = static_cast<int>(d.maps.size());
    const QRect inner = area.adjusted(kMargin, kTitle, -(kMargin + kBarGap + kBar + kBarLabels), -kMargin);
    const int label = fontMetrics().height() + 2;
    int bestSide = 0, bestCols = 1;
    for (int cols = 1; cols <= n; ++cols) {
        const int rows = (n + cols - 1) / cols;
        const int side = std::min((inner.width() - (cols - 1) * 6) / cols, (inner.height() - rows * label - (rows - 1) * 6) / rows);
        if (side > bestSide) {
            bestSide = side;
            bestCols = cols;
        }
    }
    if (bestSide < 8)
        return;
    float top = 1e-9f;
    for (const auto& m : d.maps)
        for (float v : m.values)
            top = std::max(top, v);
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    for (int i = 0; i < n; ++i) {
        const int r = i / bestCols, c = i % bestCols;
        const QSize s = d.image.size().scaled(bestSide, bestSide, Qt::KeepAspectRatio);
        const QRect img(inner.left() + c * (bestSide + 6), inner.top() + r * (bestSide + label + 6) + label, s.width(), s.height());
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QRect(img.left(), img.top() - label, img.width(), label), Qt::AlignCenter, d.maps[static_cast<std::size_t>(i)].label);
        p.drawImage(img, d.image);
        p.setOpacity(m_opacity);
        const auto& v = d.maps[static_cast<std::size_t>(i)].values;
        for (int y = 0; y < d.rows; ++y)
            for (int x = 0; x < d.cols; ++x) {
                const int x0 = img.left() + img.width() * x / d.cols, x1 = img.left() + img.width() * (x + 1) / d.cols;
                const int y0 = img.top() + img.height() * y / d.rows, y1 = img.top() + img.height() * (y + 1) / d.rows;
                p.fillRect(QRect(QPoint(x0, y0), QPoint(x1 - 1, y1 - 1)),
                           colourAt(m_map, std::clamp(static_cast<double>(v[static_cast<std::size_t>(y) * d.cols + x]) / top, 0.0, 1.0)));
            }
        p.setOpacity(1.0);
    }
    drawColourBar(p, QRect(area.right() - kMargin - kBarLabels - kBar, inner.top(), kBar, inner.height()), top);
}

void ImageOverlayView::drawColourBar(QPainter& p, const QRect& bar, float top) const
{
    // 0 at the bottom, `top` (the largest value shown) at the top.
    for (int y = 0; y < bar.height(); ++y)
        p.fillRect(QRect(bar.left(), bar.bottom() - y, bar.width(), 1), colourAt(m_map, static_cast<double>(y) / std::max(1, bar.height() - 1)));
    p.setPen(palette().color(QPalette::Text));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    p.drawText(QRect(bar.right() + 4, bar.top() - 2, kBarLabels, 18), Qt::AlignLeft | Qt::AlignTop, QString::number(top, 'g', 2));
    p.drawText(QRect(bar.right() + 4, bar.bottom() - 16, kBarLabels, 18), Qt::AlignLeft | Qt::AlignBottom, QStringLiteral("0"));
}

void ImageOverlayView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    draw(p, rect());
}

QImage ImageOverlayView::render(const QSize& size) const
{
    QImage out(size, QImage::Format_RGB32);
    QPainter p(&out);
    draw(p, QRect(QPoint(0, 0), size));
    return out;
}

void ImageOverlayView::mousePressEvent(QMouseEvent* event)
{
    if (m_data && !m_data->maps.empty())
        return; // the side-by-side maps are to look at, not to pick from
    const QRect img = imageRect(rect());
    if (!m_data || img.isEmpty() || !img.contains(event->position().toPoint()) || m_data->rows < 1 || m_data->cols < 1)
        return;
    const QPoint at = event->position().toPoint() - img.topLeft();
    emit patchClicked(std::min(m_data->rows - 1, at.y() * m_data->rows / img.height()),
                      std::min(m_data->cols - 1, at.x() * m_data->cols / img.width()));
}

} // namespace attnscope::widgets
