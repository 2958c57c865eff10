// QkScatterView: equal-aspect scatter (distances must not be stretched), painted with QPainter.
#include "qk_scatter_view.h"

#include "colour_maps.h"
#include "position_set.h"

#include <QHash>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::widgets {

namespace {
const QColor kQuery(230, 120, 30), kKey(40, 100, 200);
const QColor kMarked(0, 150, 140); // teal, as the marks in the grid and the text view
// Ten distinguishable colours for the most frequent tokens (Tableau's categorical palette).
const QColor kTokenColours[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                                {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
constexpr int kTokenClasses = 10;
const QColor kOtherToken(205, 205, 205);
}

QkScatterView::QkScatterView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setMinimumSize(160, 90); // small enough that the bottom tabs can shrink to the Text tab
    m_placeholder = tr("No query-key space yet");
}

void QkScatterView::setData(QkScatterPtr data)
{
    const QkScatterPtr previous = std::exchange(m_data, std::move(data));
    m_hover = -1;
    // A picture still converging brings the same tokens again: they are counted once, and only for the Token colouring.
    const bool sameTokens = previous && m_data && previous->positions == m_data->positions && previous->labels == m_data->labels;
    if (!sameTokens) {
        m_tokenClass.clear();
        m_topTokens.clear();
    }
    if (m_colouring == Colouring::Token)
        countTokens();
    if (m_data && !m_data->x.empty()) {
        const auto [xa, xb] = std::minmax_element(m_data->x.begin(), m_data->x.end());
        const auto [ya, yb] = std::minmax_element(m_data->y.begin(), m_data->y.end());
        m_x0 = *xa, m_x1 = *xb, m_y0 = *ya, m_y1 = *yb;
    }
    update();
}

void QkScatterView::setColouring(Colouring c)
{
    m_colouring = c;
    if (c == Colouring::Token)
        countTokens();
    update();
}

void QkScatterView::countTokens()
{
    if (!m_data || m_tokenClass.size() == m_data->positions.size())
        return; // counted for these points already
    // The most frequent token texts among the points (whitespace trimmed: " the" and "the" are one word to a reader).
    m_topTokens.clear();
    QHash<QString, int> counts;
    for (int i = 0; i < static_cast<int>(m_data->positions.size()); ++i)
        if (m_data->positions[static_cast<std::size_t>(i)] >= 0)
            ++counts[m_data->labels.value(i).trimmed()];
    std::vector<std::pair<int, QString>> byCount;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        if (it.value() > 1) // a token seen once has nothing to gather with
            byCount.emplace_back(-it.value(), it.key());
    std::sort(byCount.begin(), byCount.end());
    for (std::size_t k = 0; k < byCount.size() && k < kTokenClasses; ++k)
        m_topTokens << byCount[k].second;
    m_tokenClass.assign(m_data->positions.size(), -1);
    for (int i = 0; i < static_cast<int>(m_data->positions.size()); ++i)
        if (m_data->positions[static_cast<std::size_t>(i)] >= 0)
            m_tokenClass[static_cast<std::size_t>(i)] = static_cast<int>(m_topTokens.indexOf(m_data->labels.value(i).trimmed()));
}

void QkScatterView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    m_data.reset();
    update();
}

void QkScatterView::setSelectedPosition(int position)
{
    m_selected = position;
    update();
}

void QkScatterView::setMarkedPositions(std::vector<int> positions)
{
    m_marked = sortedPositions(std::move(positions));
    update();
}

QString QkScatterView::context(int i) const
{
    // Token text by position from the points themselves (keys cover every position a query can see).
    const int pos = m_data->positions[static_cast<std::size_t>(i)];
    QString before, after;
    for (int d = 1; d <= 4; ++d) {
        for (std::size_t j = 0; j < m_data->positions.size(); ++j)
            if (m_data->positions[j] == pos - d) {
                before.prepend(m_data->labels.value(static_cast<int>(j)).left(16) + QLatin1Char(' '));
                break;
            }
        if (d > 2)
            continue;
        for (std::size_t j = 0; j < m_data->positions.size(); ++j)
            if (m_data->positions[j] == pos + d) {
                after += QLatin1Char(' ') + m_data->labels.value(static_cast<int>(j)).left(16);
                break;
            }
    }
    return before + QStringLiteral("[") + m_data->labels.value(i).left(24) + QStringLiteral("]") + after;
}

QSize QkScatterView::figureSize() const
{
    constexpr int width = 900, sides = 24, above = 40, below = 28; // plotRect's margins
    const double w = std::max(1e-9f, m_x1 - m_x0), h = std::max(1e-9f, m_y1 - m_y0);
    const double aspect = std::clamp(h / w, 0.5, 1.5);
    return {width, above + below + static_cast<int>((width - sides) * aspect)};
}

QRectF QkScatterView::plotRect() const
{
    const QRectF area = QRectF(rect()).adjusted(12, 40, -12, -28);
    // Equal scales on both axes: a distance means the same in every direction.
    const double w = std::max(1e-9f, m_x1 - m_x0), h = std::max(1e-9f, m_y1 - m_y0);
    const double s = std::min(area.width() / w, area.height() / h);
    const QSizeF size(w * s, h * s);
    return QRectF(area.center() - QPointF(size.width() / 2, size.height() / 2), size);
}

QPointF QkScatterView::toScreen(int i) const
{
    const QRectF r = plotRect();
    const double w = std::max(1e-9f, m_x1 - m_x0), h = std::max(1e-9f, m_y1 - m_y0);
    return {r.left() + (m_data->x[static_cast<std::size_t>(i)] - m_x0) / w * r.width(),
            r.bottom() - (m_data->y[static_cast<std::size_t>(i)] - m_y0) / h * r.height()};
}

int QkScatterView::pointAt(const QPointF& p) const
{
    if (!m_data)
        return -1;
    int best = -1;
    double bestD = 7 * 7;
    for (int i = 0; i < static_cast<int>(m_data->x.size()); ++i) {
        const QPointF d = toScreen(i) - p;
        const double d2 = d.x() * d.x() + d.y() * d.y();
        if (d2 < bestD)
            best = i, bestD = d2;
    }
    return best;
}

void QkScatterView::paintEvent(QPaintEvent* event)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.fillRect(rect(), Qt::white);
    if (!m_data || m_data->x.empty()) {
        p.setPen(Qt::gray);
        p.drawText(rect().adjusted(10, 10, -10, -10), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
        return;
    }
    const auto& d = *m_data;
    const int n = static_cast<int>(d.x.size());
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(Qt::black);
    p.drawText(QRect(8, 4, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, d.title);
    p.setFont(font());
    p.setPen(QColor(80, 80, 80));
    p.drawText(QRect(8, 21, width() - 16, 16), Qt::AlignLeft | Qt::AlignVCenter, d.note);
    // Legend at the bottom.
    const int ly = height() - 18;
    p.setPen(Qt::NoPen);
    if (m_colouring == Colouring::Kind) {
        p.setBrush(kQuery);
        p.drawEllipse(QPointF(14, ly), 4, 4);
        p.setBrush(kKey);
        p.drawRect(QRectF(74, ly - 4, 8, 8));
        p.setPen(Qt::black);
        p.drawText(QRect(22, ly - 8, 50, 16), Qt::AlignLeft | Qt::AlignVCenter, tr("query"));
        p.drawText(QRect(86, ly - 8, std::max(60, width() - 94), 16), Qt::AlignLeft | Qt::AlignVCenter, d.keyName);
    } else if (m_colouring == Colouring::Token) {
        // Chips for the frequent tokens, as many as fit the width, then the grey rest.
        QFontMetrics fm(font());
        int x = 8;
        for (int k = 0; k < m_topTokens.size(); ++k) {
            const QString name = fm.elidedText(m_topTokens[k], Qt::ElideRight, 90);
            const int w = 14 + fm.horizontalAdvance(name) + 10;
            if (x + w > width() - 80)
                break;
            p.setPen(Qt::NoPen);
            p.setBrush(kTokenColours[k]);
            p.drawRect(QRectF(x, ly - 4, 8, 8));
            p.setPen(Qt::black);
            p.drawText(QRect(x + 12, ly - 8, w - 12, 16), Qt::AlignLeft | Qt::AlignVCenter, name);
            x += w;
        }
        p.setPen(Qt::NoPen);
        p.setBrush(kOtherToken);
        p.drawRect(QRectF(x, ly - 4, 8, 8));
        p.setPen(Qt::black);
        p.drawText(QRect(x + 12, ly - 8, 70, 16), Qt::AlignLeft | Qt::AlignVCenter,
                   m_topTokens.isEmpty() ? tr("no token repeats") : tr("others"));
    } else {
        for (int i = 0; i < 100; ++i) {
            p.setBrush(colourAt(ColourMap::Viridis, i / 99.0));
            p.drawRect(QRectF(60 + i, ly - 4, 1.2, 8));
        }
        p.setPen(Qt::black);
        p.drawText(QRect(8, ly - 8, 50, 16), Qt::AlignRight | Qt::AlignVCenter, tr("first"));
        p.drawText(QRect(164, ly - 8, 60, 16), Qt::AlignLeft | Qt::AlignVCenter, tr("last token"));
        p.drawText(QRect(232, ly - 8, 300, 16), Qt::AlignLeft | Qt::AlignVCenter, tr("● query  ■ %1").arg(d.keyName));
    }
    // Position colours span the points that are tokens (a relative encoding R is none: drawn in the key colour).
    int lo = std::numeric_limits<int>::max(), hi = 0;
    for (const int pos : d.positions)
        if (pos >= 0)
            lo = std::min(lo, pos), hi = std::max(hi, pos);
    lo = std::min(lo, hi);
    // A selected query's strongest keys, as lines under the points.
    for (int i = 0; i < d.queries; ++i)
        if (m_selected >= 0 && d.positions[static_cast<std::size_t>(i)] == m_selected && static_cast<std::size_t>(i) < d.topKeys.size())
            for (int r = 0; r < 3; ++r) {
                const int k = d.topKeys[static_cast<std::size_t>(i)][static_cast<std::size_t>(r)];
                if (k < 0)
                    continue;
                p.setPen(QPen(QColor(200, 40, 40, 220 - 60 * r), 2.5 - 0.6 * r));
                p.drawLine(toScreen(i), toScreen(k));
            }
    // Tens of thousands of points (a corpus): smaller and lighter, so density shows instead of one blot; points
    // outside the region being repainted (a hover moves only two) are skipped.
    const double radius = n > 3000 ? 2.0 : n > 600 ? 2.8 : 3.5;
    const int opaque = n > 3000 ? 150 : 230, faint = n > 3000 ? 40 : 70;
    const QRectF dirty = QRectF(event->rect()).adjusted(-8, -8, 8, 8);
    for (int i = 0; i < n; ++i) {
        const QPointF s = toScreen(i);
        if (!dirty.contains(s))
            continue;
        const bool query = i < d.queries;
        const int tokenClass = m_tokenClass.empty() ? -1 : m_tokenClass[static_cast<std::size_t>(i)];
        QColor c = m_colouring == Colouring::Kind    ? (query ? kQuery : kKey)
                   : m_colouring == Colouring::Token ? (tokenClass >= 0 ? kTokenColours[tokenClass] : kOtherToken)
                   : d.positions[static_cast<std::size_t>(i)] < 0
                       ? kKey
                       : colourAt(ColourMap::Viridis, hi > lo ? double(d.positions[static_cast<std::size_t>(i)] - lo) / (hi - lo) : 0.5);
        const bool selected = m_selected >= 0 && d.positions[static_cast<std::size_t>(i)] == m_selected;
        const bool marked = std::binary_search(m_marked.begin(), m_marked.end(), d.positions[static_cast<std::size_t>(i)]);
        c.setAlpha((m_selected >= 0 && !selected) || (!m_marked.empty() && !marked) ? faint : opaque);
        p.setBrush(c);
        p.setPen(selected || i == m_hover ? QPen(Qt::black, 1.5) : marked ? QPen(kMarked, 2) : Qt::NoPen);
        const double r = selected || i == m_hover ? 5.5 : radius;
        if (query)
            p.drawEllipse(s, r, r);
        else
            p.drawRect(QRectF(s.x() - r, s.y() - r, 2 * r, 2 * r));
    }
    if (m_lasso.size() > 1) {
        p.setBrush(QColor(kMarked.red(), kMarked.green(), kMarked.blue(), 30));
        p.setPen(QPen(kMarked, 1.5, Qt::DashLine));
        p.drawPolygon(m_lasso);
    }
    // Few points: every one named (a cluster reads as words); many: names on hover only.
    if (n <= 100) {
        QFont small = font();
        small.setPointSizeF(std::max(6.0, font().pointSizeF() - 2));
        p.setFont(small);
        for (int i = 0; i < n; ++i) {
            p.setPen(i < d.queries ? kQuery.darker(140) : kKey.darker(130));
            p.drawText(toScreen(i) + QPointF(5, -3), d.labels.value(i).left(12));
        }
    }
}

void QkScatterView::mouseMoveEvent(QMouseEvent* e)
{
    if ((e->buttons() & Qt::LeftButton) && m_data && m_pressAt.x() >= 0) {
        // A drag draws the lasso (a few pixels of jitter still count as a click).
        if (m_lasso.isEmpty() && QLineF(m_pressAt, e->position()).length() > 5)
            m_lasso << m_pressAt;
        if (!m_lasso.isEmpty()) {
            m_lasso << e->position();
            QToolTip::hideText();
            update();
            return;
        }
    }
    const int i = pointAt(e->position());
    if (i != m_hover) {
        for (const int changed : {m_hover, i}) // only the two points' neighbourhoods are repainted
            if (changed >= 0)
                update(QRectF(toScreen(changed) - QPointF(9, 9), QSizeF(18, 18)).toAlignedRect());
        m_hover = i;
    }
    if (i >= 0)
        QToolTip::showText(e->globalPosition().toPoint(),
                           m_data->positions[static_cast<std::size_t>(i)] < 0
                               ? m_data->labels.value(i)
                               : tr("%1 · token %2\n%3")
                                     .arg(i < m_data->queries ? tr("query") : m_data->keyName)
                                     .arg(m_data->positions[static_cast<std::size_t>(i)] + 1)
                                     .arg(context(i)),
                           this);
    else
        QToolTip::hideText();
}

void QkScatterView::mousePressEvent(QMouseEvent* e)
{
    m_pressAt = e->button() == Qt::LeftButton ? e->position() : QPointF(-1, -1);
    m_lasso.clear();
}

void QkScatterView::mouseReleaseEvent(QMouseEvent* e)
{
    if (e->button() != Qt::LeftButton || m_pressAt.x() < 0)
        return;
    m_pressAt = QPointF(-1, -1);
    if (m_lasso.size() > 2 && m_data) {
        std::vector<int> inside;
        for (int i = 0; i < static_cast<int>(m_data->x.size()); ++i)
            if (m_lasso.containsPoint(toScreen(i), Qt::OddEvenFill))
                if (m_data->positions[static_cast<std::size_t>(i)] >= 0) // only tokens can be marked
                    inside.push_back(m_data->positions[static_cast<std::size_t>(i)]);
        m_lasso.clear();
        setMarkedPositions(std::move(inside));
        emit positionsMarked(m_marked);
        return;
    }
    m_lasso.clear();
    const int i = pointAt(e->position());
    const int pos = i >= 0 ? m_data->positions[static_cast<std::size_t>(i)] : -1;
    setSelectedPosition(pos == m_selected ? -1 : pos);
    if (pos < 0 && !m_marked.empty()) { // a click on empty space also clears the lasso's marks
        setMarkedPositions({});
        emit positionsMarked(m_marked);
    }
    emit positionClicked(m_selected);
}

} // namespace attnscope::widgets
