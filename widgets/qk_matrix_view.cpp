// QkMatrixView: square cells, each its own equal-aspect scale.
#include "qk_matrix_view.h"

#include "colour_maps.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace attnscope::widgets {

QkMatrixView::QkMatrixView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setMinimumSize(160, 90); // small enough that the bottom tabs can shrink to the Text tab
}

void QkMatrixView::setData(QkMatrixPtr data)
{
    m_data = std::move(data);
    update();
}

void QkMatrixView::setColourByPosition(bool on)
{
    m_byPosition = on;
    update();
}

QSize QkMatrixView::figureSize() const
{
    constexpr int cell = 140; // cellRect's margins: 34 left, 8 right, 40 above, 8 below
    if (!m_data || m_data->layers == 0)
        return sizeHint();
    return {34 + 8 + cell * m_data->heads, 40 + 8 + cell * m_data->layers};
}

QRectF QkMatrixView::cellRect(int layer, int head) const
{
    const QRectF area = QRectF(rect()).adjusted(34, 40, -8, -8);
    const double side = std::max(8.0, std::min(area.width() / m_data->heads, area.height() / m_data->layers));
    return {area.left() + head * side, area.top() + layer * side, side, side};
}

void QkMatrixView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), Qt::white);
    if (!m_data || m_data->layers == 0) {
        p.setPen(Qt::gray);
        p.drawText(rect(), Qt::AlignCenter, tr("Computing every head's query-key space…"));
        return;
    }
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(8, 4, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, m_data->title);
    p.setFont(font());
    for (int h = 0; h < m_data->heads; ++h) {
        const QRectF c = cellRect(0, h);
        if (m_data->heads <= 16 || h % 4 == 0)
            p.drawText(QRectF(c.left(), 22, c.width(), 16), Qt::AlignCenter, tr("H%1").arg(h + 1));
    }
    for (int l = 0; l < m_data->layers; ++l) {
        const QRectF c = cellRect(l, 0);
        p.setPen(Qt::black);
        p.drawText(QRectF(2, c.top(), 30, c.height()), Qt::AlignRight | Qt::AlignVCenter, tr("L%1").arg(l + 1));
        for (int h = 0; h < m_data->heads; ++h) {
            const QRectF cell = cellRect(l, h).adjusted(1, 1, -1, -1);
            p.setPen(QColor(220, 220, 220));
            p.setBrush(Qt::NoBrush);
            p.drawRect(cell);
            const auto& d = m_data->cells[static_cast<std::size_t>(l) * m_data->heads + h];
            if (!d || d->x.empty())
                continue;
            const auto [xa, xb] = std::minmax_element(d->x.begin(), d->x.end());
            const auto [ya, yb] = std::minmax_element(d->y.begin(), d->y.end());
            const double span = std::max({static_cast<double>(*xb - *xa), static_cast<double>(*yb - *ya), 1e-9});
            const QRectF in = cell.adjusted(3, 3, -3, -3);
            const double cx = (*xa + *xb) / 2.0, cy = (*ya + *yb) / 2.0;
            const int lo = *std::min_element(d->positions.begin(), d->positions.end());
            const int hi = *std::max_element(d->positions.begin(), d->positions.end());
            p.setPen(Qt::NoPen);
            for (std::size_t i = 0; i < d->x.size(); ++i) {
                const bool query = static_cast<int>(i) < d->queries;
                QColor col = m_byPosition ? colourAt(ColourMap::Viridis, hi > lo ? double(d->positions[i] - lo) / (hi - lo) : 0.5)
                                          : (query ? QColor(230, 120, 30) : QColor(40, 100, 200));
                col.setAlpha(200);
                p.setBrush(col);
                const QPointF s(in.center().x() + (d->x[i] - cx) / span * in.width(),
                                in.center().y() - (d->y[i] - cy) / span * in.height());
                p.drawEllipse(s, 1.3, 1.3);
            }
        }
    }
}

void QkMatrixView::mousePressEvent(QMouseEvent* e)
{
    if (!m_data)
        return;
    for (int l = 0; l < m_data->layers; ++l)
        for (int h = 0; h < m_data->heads; ++h)
            if (cellRect(l, h).contains(e->position()))
                emit headClicked(l, h);
}

void QkMatrixView::mouseMoveEvent(QMouseEvent* e)
{
    if (!m_data)
        return;
    for (int l = 0; l < m_data->layers; ++l)
        for (int h = 0; h < m_data->heads; ++h)
            if (cellRect(l, h).contains(e->position())) {
                const auto& d = m_data->cells[static_cast<std::size_t>(l) * m_data->heads + h];
                QToolTip::showText(e->globalPosition().toPoint(),
                                   tr("Layer %1, head %2%3: click to open it").arg(l + 1).arg(h + 1)
                                       .arg(d ? QStringLiteral(" · ") + d->note.section(QLatin1Char('='), -1).trimmed().prepend(QStringLiteral("r = ")) : QString()),
                                   this);
                return;
            }
    QToolTip::hideText();
}

} // namespace attnscope::widgets
