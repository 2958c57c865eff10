// MechanismView (mechanism_view.h).
#include "mechanism_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace attnscope::widgets {

namespace {

// Blue for negative, white for zero, red for positive: a vector's sign and size at a glance.
QColor diverging(double t)
{
    t = std::clamp(t, -1.0, 1.0);
    const QColor neg(49, 99, 179), pos(200, 55, 45), mid(250, 250, 250);
    const QColor& end = t < 0 ? neg : pos;
    const double a = std::abs(t);
    return QColor::fromRgbF(mid.redF() + a * (end.redF() - mid.redF()), mid.greenF() + a * (end.greenF() - mid.greenF()),
                            mid.blueF() + a * (end.blueF() - mid.blueF()));
}

QString number(double v)
{
    // Short enough for a cell: two significant digits, one decimal from 1 up.
    if (v == 0)
        return QStringLiteral("0");
    return std::abs(v) >= 100 || std::abs(v) < 0.01 ? QString::number(v, 'g', 2)
           : std::abs(v) >= 1                        ? QString::number(v, 'f', 1)
                                                     : QString::number(v, 'f', 2);
}

// The row names' column: as wide as the step's longest name needs, at most 40% of the width (then shortened).
double labelColumn(const MechanismStep& s, const QFont& font, double width)
{
    const QFontMetricsF metrics(font);
    double widest = 0;
    for (const auto& st : s.strips)
        widest = std::max(widest, metrics.horizontalAdvance(st.label));
    for (const auto& b : s.bars)
        widest = std::max(widest, metrics.horizontalAdvance(b.label));
    return std::clamp(widest + 12, std::min(80.0, width * 0.4), width * 0.4);
}

} // namespace

MechanismView::MechanismView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setMinimumSize(480, 320);
    setAutoFillBackground(true);
    QPalette p = palette();
    p.setColor(QPalette::Window, Qt::white);
    setPalette(p);
}

void MechanismView::setData(MechanismDataPtr data)
{
    m_data = std::move(data);
    m_step = std::clamp(m_step, 0, std::max(0, stepCount() - 1));
    update();
    emit stepChanged(m_step);
}

void MechanismView::setStep(int step)
{
    const int s = std::clamp(step, 0, std::max(0, stepCount() - 1));
    if (s == m_step)
        return;
    m_step = s;
    update();
    emit stepChanged(m_step);
}

void MechanismView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    m_data.reset();
    update();
}

void MechanismView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    m_cells.clear();
    const QRectF all = rect().adjusted(16, 12, -16, -12);
    QFont base = font();
    if (!m_data || m_data->steps.empty()) {
        p.setPen(QColor(90, 90, 90));
        p.drawText(all, Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    const MechanismStep& s = m_data->steps[static_cast<std::size_t>(m_step)];
    double y = all.top();
    // Header: the head and query, and where the class is in the walk.
    QFont small = base;
    small.setPointSizeF(base.pointSizeF() * 1.0);
    p.setFont(small);
    p.setPen(QColor(90, 90, 90));
    const QString where = m_keyHint ? tr("step %1 of %2 · Space: next").arg(m_step + 1).arg(stepCount())
                                    : tr("step %1 of %2").arg(m_step + 1).arg(stepCount());
    p.drawText(QRectF(all.left(), y, all.width(), 20), Qt::AlignLeft | Qt::AlignVCenter, m_data->title);
    p.drawText(QRectF(all.left(), y, all.width(), 20), Qt::AlignRight | Qt::AlignVCenter, where);
    y += 24;
    QFont title = base;
    title.setPointSizeF(base.pointSizeF() * 1.7);
    title.setBold(true);
    p.setFont(title);
    p.setPen(QColor(25, 25, 25));
    const double titleH = QFontMetricsF(title).height() + 4;
    p.drawText(QRectF(all.left(), y, all.width(), titleH), Qt::AlignLeft | Qt::AlignVCenter, s.title);
    y += titleH;
    QFont body = base;
    body.setPointSizeF(base.pointSizeF() * 1.2);
    p.setFont(body);
    const QRectF textBox(all.left(), y, all.width(), 200);
    const QRectF used = p.boundingRect(textBox, Qt::TextWordWrap, s.explanation);
    p.drawText(textBox, Qt::TextWordWrap, s.explanation);
    y += used.height() + 10;

    const bool both = !s.strips.empty() && !s.bars.empty();
    const double rest = all.bottom() - y;
    const double stripArea = s.strips.empty() ? 0 : both ? rest * 0.55 : rest;
    QFont label = base;
    label.setPointSizeF(base.pointSizeF() * 1.1);
    const double labelW = labelColumn(s, label, all.width());
    // A row's name, right-aligned before its strip or bar, shortened in the middle only when 40% cannot hold it.
    auto rowLabel = [&](const QFont& f, const QString& text, double ry, double rowH) {
        p.setFont(f);
        p.setPen(QColor(25, 25, 25));
        p.drawText(QRectF(all.left(), ry, labelW - 8, rowH), Qt::AlignRight | Qt::AlignVCenter,
                   QFontMetricsF(f).elidedText(text, Qt::ElideMiddle, labelW - 8));
    };

    // Strips: one row per vector, one cell per dimension.
    if (!s.strips.empty()) {
        const double stripsTop = y;
        if (!s.stripsCaption.isEmpty()) {
            p.setFont(small);
            p.setPen(QColor(90, 90, 90));
            p.drawText(QRectF(all.left(), y, all.width(), 18), Qt::AlignLeft | Qt::AlignVCenter, s.stripsCaption);
            y += 20;
        }
        double top = 0;
        for (const auto& st : s.strips)
            for (float v : st.values)
                top = std::max(top, static_cast<double>(std::abs(v)));
        const int n = static_cast<int>(s.strips.size());
        const double avail = stripArea - (s.stripsCaption.isEmpty() ? 0 : 20);
        const int shown = std::min(n, std::max(1, static_cast<int>(avail / 14)));
        // A few vectors get tall strips (read from the back of a room), many get what the height allows.
        const double rowH = std::min(n <= 4 ? 84.0 : 52.0, avail / std::max(1, shown + (shown < n ? 1 : 0)));
        for (int r = 0; r < shown; ++r) {
            const auto& st = s.strips[static_cast<std::size_t>(r)];
            const double ry = y + r * rowH;
            rowLabel(label, st.label, ry, rowH);
            const int dims = static_cast<int>(st.values.size());
            const double cw = (all.width() - labelW) / std::max(1, dims);
            QFont cellFont = base;
            cellFont.setPointSizeF(std::clamp(rowH * 0.3, 6.0, base.pointSizeF()));
            const QFontMetricsF cm(cellFont);
            for (int d = 0; d < dims; ++d) {
                const double v = st.values[static_cast<std::size_t>(d)];
                const QRectF cell(all.left() + labelW + d * cw, ry + 1, cw, rowH - 2);
                p.fillRect(cell, diverging(top > 0 ? v / top : 0));
                m_cells.push_back({cell, tr("%1 · dimension %2: %3").arg(st.label).arg(d + 1).arg(v, 0, 'g', 5)});
                QString text = number(v);
                if (cm.horizontalAdvance(text) + 2 > cw) // one decimal when two do not fit
                    text = QString::number(v, 'f', std::abs(v) >= 10 ? 0 : 1);
                if (rowH >= 14 && cm.horizontalAdvance(text) + 2 <= cw) { // printed where it fits
                    p.setFont(cellFont);
                    p.setPen(std::abs(v) > 0.6 * top ? Qt::white : QColor(30, 30, 30));
                    p.drawText(cell, Qt::AlignCenter, text);
                }
            }
            if (st.emphasised) {
                p.setPen(QPen(QColor(230, 90, 0), 2.5));
                p.setBrush(Qt::NoBrush);
                p.drawRect(QRectF(all.left() + labelW, ry + 1, cw * dims, rowH - 2));
            }
        }
        if (shown < n) {
            p.setFont(small);
            p.setPen(QColor(90, 90, 90));
            p.drawText(QRectF(all.left(), y + shown * rowH, all.width(), rowH), Qt::AlignLeft | Qt::AlignVCenter,
                       tr("… and %1 more").arg(n - shown));
        }
        y = stripsTop + stripArea + 6;
    }

    // Bars: one row per number.
    if (!s.bars.empty()) {
        if (!s.barsCaption.isEmpty()) {
            p.setFont(small);
            p.setPen(QColor(90, 90, 90));
            p.drawText(QRectF(all.left(), y, all.width(), 18), Qt::AlignLeft | Qt::AlignVCenter, s.barsCaption);
            y += 20;
        }
        const int n = static_cast<int>(s.bars.size());
        const double avail = all.bottom() - y;
        const int shown = std::min(n, std::max(1, static_cast<int>(avail / 12)));
        const double rowH = std::min(30.0, avail / std::max(1, shown + (shown < n ? 1 : 0)));
        double lo = 0, hi = 0;
        for (const auto& b : s.bars)
            if (!b.masked) {
                lo = std::min(lo, b.value);
                hi = std::max(hi, b.value);
            }
        if (s.probabilities)
            lo = 0, hi = std::max(hi, 1e-9);
        const double valueW = 70;
        const double barW = all.width() - labelW - valueW;
        const double span = hi - lo > 0 ? hi - lo : 1;
        const double zero = all.left() + labelW + (0 - lo) / span * barW;
        QFont valueFont = label;
        valueFont.setPointSizeF(std::clamp(rowH * 0.45, 6.0, label.pointSizeF()));
        for (int r = 0; r < shown; ++r) {
            const auto& b = s.bars[static_cast<std::size_t>(r)];
            const double ry = y + r * rowH;
            rowLabel(valueFont, b.label, ry, rowH);
            if (b.masked) {
                p.setPen(QColor(150, 150, 150));
                p.drawText(QRectF(all.left() + labelW, ry, barW, rowH), Qt::AlignLeft | Qt::AlignVCenter, tr("masked"));
                continue;
            }
            const double end = all.left() + labelW + (b.value - lo) / span * barW;
            const QRectF bar(std::min(zero, end), ry + rowH * 0.15, std::max(1.0, std::abs(end - zero)), rowH * 0.7);
            p.fillRect(bar, b.emphasised ? QColor(230, 90, 0) : s.probabilities ? QColor(59, 81, 139) : diverging(b.value / std::max(std::abs(lo), std::abs(hi))));
            m_cells.push_back({QRectF(all.left(), ry, all.width(), rowH), tr("%1: %2").arg(b.label).arg(b.value, 0, 'g', 6)});
            p.setPen(QColor(25, 25, 25));
            p.drawText(QRectF(all.right() - valueW, ry, valueW, rowH), Qt::AlignRight | Qt::AlignVCenter,
                       s.probabilities ? QStringLiteral("%1%").arg(100 * b.value, 0, 'f', 1) : number(b.value));
        }
        if (shown < n) {
            p.setFont(small);
            p.setPen(QColor(90, 90, 90));
            p.drawText(QRectF(all.left(), y + shown * rowH, all.width(), rowH), Qt::AlignLeft | Qt::AlignVCenter,
                       tr("… and %1 more").arg(n - shown));
        }
    }
}

void MechanismView::mouseMoveEvent(QMouseEvent* e)
{
    for (const auto& c : m_cells)
        if (c.rect.contains(e->position())) {
            QToolTip::showText(e->globalPosition().toPoint(), c.text, this);
            return;
        }
    QToolTip::hideText();
}

} // namespace attnscope::widgets
