// HeadScatterView (head_scatter_view.h).
#include "head_scatter_view.h"

#include "colour_maps.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <cmath>
#include <limits>

namespace attnscope::widgets {

namespace {
// The finite range of `v`, widened a little (and around a single value) so points sit inside the frame.
void rangeOf(const std::vector<double>& v, double& lo, double& hi)
{
    lo = std::numeric_limits<double>::infinity();
    hi = -lo;
    for (double x : v)
        if (std::isfinite(x)) {
            lo = std::min(lo, x);
            hi = std::max(hi, x);
        }
    if (!std::isfinite(lo)) {
        lo = 0;
        hi = 1;
    }
    const double pad = hi > lo ? 0.05 * (hi - lo) : 0.5;
    lo -= pad;
    hi += pad;
}
} // namespace

HeadScatterView::HeadScatterView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setMinimumSize(320, 260);
}

void HeadScatterView::setData(HeadScatterPtr data)
{
    m_data = std::move(data);
    if (m_data) {
        rangeOf(m_data->x, m_x0, m_x1);
        rangeOf(m_data->y, m_y0, m_y1);
        rangeOf(m_data->colour, m_c0, m_c1);
    }
    update();
}

void HeadScatterView::setSelected(int index)
{
    m_selected = index;
    update();
}

QRectF HeadScatterView::plotRect() const
{
    const QFontMetrics fm(font());
    return QRectF(fm.horizontalAdvance(QStringLiteral("-0.000")) + fm.height() + 10, fm.height() * 2 + 6,
                  width() - (fm.horizontalAdvance(QStringLiteral("-0.000")) + fm.height() + 10) - 100,
                  height() - fm.height() * 5 - 12);
}

QPointF HeadScatterView::toScreen(int i) const
{
    const QRectF r = plotRect();
    const double x = m_data->x[static_cast<std::size_t>(i)], y = m_data->y[static_cast<std::size_t>(i)];
    return {r.left() + (x - m_x0) / (m_x1 - m_x0) * r.width(), r.bottom() - (y - m_y0) / (m_y1 - m_y0) * r.height()};
}

int HeadScatterView::pointAt(const QPointF& p) const
{
    if (!m_data)
        return -1;
    int best = -1;
    double bestD = 8.0 * 8.0;
    for (int i = 0; i < static_cast<int>(m_data->x.size()); ++i) {
        if (!std::isfinite(m_data->x[static_cast<std::size_t>(i)]) || !std::isfinite(m_data->y[static_cast<std::size_t>(i)]))
            continue;
        const QPointF d = toScreen(i) - p;
        const double dd = d.x() * d.x() + d.y() * d.y();
        if (dd < bestD) {
            bestD = dd;
            best = i;
        }
    }
    return best;
}

void HeadScatterView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    p.setRenderHint(QPainter::Antialiasing);
    if (!m_data) {
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("Run a corpus pass to see every head here."));
        return;
    }
    const QFontMetrics fm(font());
    const QRectF r = plotRect();
    p.setPen(Qt::black);
    p.drawText(QRectF(0, 2, width(), fm.height() + 2), Qt::AlignHCenter, m_data->title);
    p.setPen(QColor(120, 120, 120));
    p.drawRect(r);
    // Five ticks on each axis.
    for (int t = 0; t <= 4; ++t) {
        const double fx = m_x0 + (m_x1 - m_x0) * t / 4, fy = m_y0 + (m_y1 - m_y0) * t / 4;
        const double sx = r.left() + r.width() * t / 4, sy = r.bottom() - r.height() * t / 4;
        p.drawLine(QPointF(sx, r.bottom()), QPointF(sx, r.bottom() + 4));
        p.drawLine(QPointF(r.left() - 4, sy), QPointF(r.left(), sy));
        p.drawText(QRectF(sx - 40, r.bottom() + 5, 80, fm.height()), Qt::AlignHCenter, QString::number(fx, 'g', 3));
        p.drawText(QRectF(0, sy - fm.height() / 2.0, r.left() - 6, fm.height()), Qt::AlignRight, QString::number(fy, 'g', 3));
    }
    p.setPen(Qt::black);
    p.drawText(QRectF(r.left(), r.bottom() + fm.height() + 8, r.width(), fm.height() + 2), Qt::AlignHCenter, m_data->xName);
    p.save();
    p.translate(fm.height() * 0.9, r.center().y());
    p.rotate(-90);
    p.drawText(QRectF(-r.height() / 2, -fm.height(), r.height(), fm.height() + 2), Qt::AlignHCenter, m_data->yName);
    p.restore();
    // The colour legend at the right.
    const QRectF bar(r.right() + 14, r.top(), 14, r.height());
    for (int k = 0; k < static_cast<int>(bar.height()); ++k)
        p.fillRect(QRectF(bar.left(), bar.bottom() - k - 1, bar.width(), 1), colourAt(ColourMap::Viridis, k / bar.height()));
    p.setPen(QColor(80, 80, 80));
    p.drawText(QRectF(bar.right() + 2, bar.top() - 2, 60, fm.height()), Qt::AlignLeft, QString::number(m_c1, 'g', 3));
    p.drawText(QRectF(bar.right() + 2, bar.bottom() - fm.height(), 60, fm.height()), Qt::AlignLeft, QString::number(m_c0, 'g', 3));
    p.save();
    p.translate(bar.right() + fm.horizontalAdvance(QStringLiteral("0.0000")) + 6, r.center().y());
    p.rotate(90);
    p.drawText(QRectF(-r.height() / 2, -fm.height(), r.height(), fm.height() + 2), Qt::AlignHCenter, m_data->colourName);
    p.restore();
    for (int i = 0; i < static_cast<int>(m_data->x.size()); ++i) {
        if (!std::isfinite(m_data->x[static_cast<std::size_t>(i)]) || !std::isfinite(m_data->y[static_cast<std::size_t>(i)]))
            continue;
        const double c = m_data->colour[static_cast<std::size_t>(i)];
        const QColor fill = std::isfinite(c) ? colourAt(ColourMap::Viridis, (c - m_c0) / (m_c1 - m_c0)) : QColor(200, 200, 200);
        p.setPen(QPen(QColor(40, 40, 40), 0.6));
        p.setBrush(fill);
        p.drawEllipse(toScreen(i), 5, 5);
    }
    if (m_selected >= 0 && m_selected < static_cast<int>(m_data->x.size()) && std::isfinite(m_data->x[static_cast<std::size_t>(m_selected)])) {
        p.setPen(QPen(QColor(230, 90, 0), 2.5));
        p.setBrush(Qt::NoBrush);
        p.drawEllipse(toScreen(m_selected), 9, 9);
    }
}

void HeadScatterView::mouseMoveEvent(QMouseEvent* e)
{
    const int i = pointAt(e->position());
    if (i < 0) {
        QToolTip::hideText();
        return;
    }
    const auto at = static_cast<std::size_t>(i);
    QToolTip::showText(e->globalPosition().toPoint(),
                       QStringLiteral("<b>%1</b><br>%2: %3<br>%4: %5<br>%6: %7")
                           .arg(m_data->labels.value(i), m_data->xName, QString::number(m_data->x[at], 'g', 4), m_data->yName,
                                QString::number(m_data->y[at], 'g', 4), m_data->colourName, QString::number(m_data->colour[at], 'g', 4)),
                       this);
}

void HeadScatterView::mousePressEvent(QMouseEvent* e)
{
    const int i = pointAt(e->position());
    if (i >= 0) {
        setSelected(i);
        emit pointClicked(i);
    }
}

} // namespace attnscope::widgets
