// HeadOverviewView: one paintEvent draws every cached thumbnail (no per-head plots).
#include "head_overview_view.h"

#include <QFontMetrics>
#include <QHelpEvent>
#include <QToolTip>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace attnscope::widgets {

namespace {
constexpr int kMinLabelW = 28, kLabelH = 16;
}

HeadOverviewView::HeadOverviewView(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    // Clicking a thumbnail takes the keyboard focus (out of the text box), so the arrow keys then step heads.
    setFocusPolicy(Qt::ClickFocus);
    setToolTip(tr("Click a head to show it; Ctrl-click to average several."));
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HeadOverviewView::setThumbnails(HeadThumbnailsPtr thumbs)
{
    if (thumbs && thumbs->kvHeads > 0 && thumbs->kvHeads < thumbs->heads)
        setToolTip(tr("Click a head to show it; Ctrl-click to average several.\nHeads on one shaded band share a "
                      "key/value head (%1 query heads per key/value head).")
                       .arg(thumbs->heads / thumbs->kvHeads));
    else
        setToolTip(tr("Click a head to show it; Ctrl-click to average several."));
    const bool reshape = !m_thumbs || !thumbs || m_thumbs->layers != thumbs->layers || m_thumbs->heads != thumbs->heads;
    m_thumbs = std::move(thumbs);
    if (reshape)
        setMinimumSize(minimumSizeHint());
    updateGeometry();
    update();
}

void HeadOverviewView::setSelection(int layer, const std::vector<int>& heads)
{
    m_layer = layer;
    m_heads = heads;
    update();
}

int HeadOverviewView::gap() const
{
    return m_thumbs && m_thumbs->heads > 16 ? 1 : 3; // 32 or 64 heads need the room for the thumbnails themselves
}

int HeadOverviewView::smallestCell() const
{
    // Many heads get small thumbnails rather than a dock wider than the window: 32 heads fit a 300 px dock.
    if (!m_thumbs)
        return 22;
    return m_thumbs->heads > 32 ? 3 : m_thumbs->heads > 16 ? 6 : 22;
}

int HeadOverviewView::cellSize() const
{
    if (!m_thumbs || m_thumbs->heads == 0)
        return 40;
    const int byW = (width() - labelW()) / m_thumbs->heads - gap();
    const int byH = (height() - kLabelH) / m_thumbs->layers - gap();
    return std::clamp(std::min(byW, byH), smallestCell(), 96);
}

QSize HeadOverviewView::sizeHint() const
{
    if (!m_thumbs)
        return {240, 160};
    return {labelW() + m_thumbs->heads * (36 + gap()), kLabelH + m_thumbs->layers * (36 + gap())};
}

int HeadOverviewView::heightForWidth(int width) const
{
    if (!m_thumbs || m_thumbs->heads == 0)
        return sizeHint().height();
    const int side = std::clamp((width - labelW()) / m_thumbs->heads - gap(), smallestCell(), 96);
    return kLabelH + m_thumbs->layers * (side + gap());
}

QSize HeadOverviewView::minimumSizeHint() const
{
    // Thumbnails stay at least 22 px so structure is visible even in a crowded dock (smaller for models with many
    // heads, whose rows would otherwise push the dock's controls off a 1280-pixel screen).
    if (!m_thumbs)
        return {120, 80};
    const int side = smallestCell();
    return {labelW() + m_thumbs->heads * (side + gap()), kLabelH + m_thumbs->layers * (side + gap())};
}

int HeadOverviewView::windowOf(int layer) const
{
    return m_thumbs && layer >= 0 && layer < static_cast<int>(m_thumbs->windows.size())
               ? m_thumbs->windows[static_cast<std::size_t>(layer)]
               : 0;
}

bool HeadOverviewView::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip && m_thumbs && !m_thumbs->sinkMass.empty()) { // a head's sink share and rank
        auto* help = static_cast<QHelpEvent*>(e);
        for (int l = 0; l < m_thumbs->layers; ++l)
            for (int h = 0; h < m_thumbs->heads; ++h)
                if (cellRect(l, h).contains(help->pos())) {
                    const std::size_t i = static_cast<std::size_t>(l * m_thumbs->heads + h);
                    QToolTip::showText(help->globalPos(),
                                       tr("Layer %1 head %2: its learned sink takes %3% of a row on average (rank %4 of "
                                          "%5: the orange bar)")
                                           .arg(l + 1).arg(h + 1).arg(100.0 * m_thumbs->sinkMass[i], 0, 'f', 1)
                                           .arg(m_thumbs->sinkRank[i]).arg(m_thumbs->sinkMass.size()),
                                       this);
                    return true;
                }
    }
    if (e->type() == QEvent::ToolTip && m_thumbs && !m_thumbs->windows.empty()) {
        auto* help = static_cast<QHelpEvent*>(e);
        const int pitch = cellSize() + gap();
        const int layer = (help->pos().y() - kLabelH) / std::max(1, pitch);
        if (help->pos().x() < labelW() && help->pos().y() >= kLabelH && layer < m_thumbs->layers) {
            const int w = windowOf(layer);
            QToolTip::showText(help->globalPos(),
                               w > 0 ? tr("Layer %1: sliding window, each query sees the %2 most recent tokens (local)")
                                           .arg(layer + 1)
                                           .arg(w)
                                     : tr("Layer %1: global, each query sees every earlier token").arg(layer + 1),
                               this);
            return true;
        }
    }
    return QWidget::event(e);
}

int HeadOverviewView::labelW() const
{
    // Rows labelled by name (an encoder-decoder model's sites) get the width their longest label needs.
    int w = kMinLabelW;
    if (m_thumbs)
        for (const auto& l : m_thumbs->rowLabels)
            w = std::max(w, fontMetrics().horizontalAdvance(l) + 8);
    return w;
}

QRect HeadOverviewView::cellRect(int layer, int head) const
{
    const int s = cellSize();
    return {labelW() + head * (s + gap()), kLabelH + layer * (s + gap()), s, s};
}

void HeadOverviewView::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    if (!m_thumbs || m_thumbs->layers == 0) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("No heads yet"));
        return;
    }
    QFont f = font();
    f.setPointSizeF(std::max(7.0, f.pointSizeF() - 1));
    p.setFont(f);
    // Grouped-query attention: the heads that share a key/value head sit on one shaded band (and the tooltip says so).
    const int kv = m_thumbs->kvHeads, group = kv > 0 && kv < m_thumbs->heads ? m_thumbs->heads / kv : 0;
    if (group > 0)
        for (int g = 0; g < kv; ++g) {
            const QRect first = cellRect(0, g * group), last = cellRect(0, g * group + group - 1);
            const QRect band(first.left() - 1, 0, last.right() - first.left() + 3, kLabelH - 1);
            p.fillRect(band, g % 2 ? QColor(214, 228, 247) : QColor(232, 214, 247));
        }
    p.setPen(palette().color(QPalette::WindowText));
    // Every n-th label, n a power of two, when the cells are narrower than their labels (no overlapping "H9H10").
    const QFontMetrics fm(f);
    const int pitch = cellSize() + gap();
    auto every = [](int need, int room) {
        int n = 1;
        while (n * room < need && n < 64)
            n *= 2;
        return n;
    };
    const int headStep = every(fm.horizontalAdvance(QStringLiteral("H%1").arg(m_thumbs->heads)) + 4, pitch);
    const int layerStep = every(fm.height(), pitch);
    for (int h = 0; h < m_thumbs->heads; h += headStep) {
        const QRect c = cellRect(0, h);
        const int w = std::max(c.width(), headStep * pitch - gap());
        p.drawText(QRect(c.left(), 0, w, kLabelH), headStep > 1 ? Qt::AlignLeft | Qt::AlignVCenter : Qt::AlignCenter,
                   QStringLiteral("H%1").arg(h + 1));
    }
    for (int l = 0; l < m_thumbs->layers; ++l) {
        const QRect c = cellRect(l, 0);
        const bool local = windowOf(l) > 0;
        if (local) { // a sliding-window layer: a teal bar by its row (the label says which in its tooltip)
            p.fillRect(QRect(labelW() - 4, c.top(), 2, c.height()), QColor(0, 150, 140));
            p.setPen(QColor(0, 120, 112));
        }
        if (l % layerStep == 0)
            p.drawText(QRect(0, c.top() - pitch, labelW() - 5, c.height() + 2 * pitch), Qt::AlignRight | Qt::AlignVCenter,
                       l < m_thumbs->rowLabels.size() ? m_thumbs->rowLabels[l] : QStringLiteral("L%1").arg(l + 1));
        if (local)
            p.setPen(palette().color(QPalette::WindowText));
        for (int h = 0; h < m_thumbs->heads; ++h) {
            const QRect r = cellRect(l, h);
            const auto& img = m_thumbs->images[static_cast<std::size_t>(l * m_thumbs->heads + h)];
            p.drawImage(r, img);
            if (!m_thumbs->sinkMass.empty()) { // the share of attention the head's sink takes, as a bar along its foot
                const std::size_t i = static_cast<std::size_t>(l * m_thumbs->heads + h);
                const float mass = std::clamp(m_thumbs->sinkMass[i], 0.0f, 1.0f);
                const int barH = std::max(2, r.height() / 8);
                p.fillRect(QRect(r.left(), r.bottom() - barH + 1, r.width(), barH), QColor(255, 255, 255, 200));
                p.fillRect(QRect(r.left(), r.bottom() - barH + 1, static_cast<int>(std::lround(mass * r.width())), barH),
                           QColor(230, 90, 0));
                if (m_thumbs->sinkRank[i] <= 3 && r.width() >= 18) { // the three heads that attend to nothing most
                    QFont bold = p.font();
                    bold.setBold(true);
                    bold.setPointSizeF(std::max(6.0, std::min(bold.pointSizeF(), r.height() / 3.5)));
                    p.setFont(bold);
                    p.setPen(Qt::white);
                    p.fillRect(QRect(r.left(), r.top(), r.width() / 2, r.height() / 3), QColor(230, 90, 0));
                    p.drawText(QRect(r.left(), r.top(), r.width() / 2, r.height() / 3), Qt::AlignCenter,
                               QStringLiteral("%1").arg(m_thumbs->sinkRank[i]));
                    p.setFont(font());
                    p.setPen(palette().color(QPalette::WindowText));
                }
            }
            const bool selected = l == m_layer && (m_heads.empty() || std::find(m_heads.begin(), m_heads.end(), h) != m_heads.end());
            if (selected) {
                p.setPen(QPen(QColor(255, 140, 0), 3));
                p.drawRect(r.adjusted(-1, -1, 1, 1));
                p.setPen(palette().color(QPalette::WindowText));
            }
        }
    }
}

void HeadOverviewView::mousePressEvent(QMouseEvent* e)
{
    if (!m_thumbs)
        return;
    for (int l = 0; l < m_thumbs->layers; ++l)
        for (int h = 0; h < m_thumbs->heads; ++h)
            if (cellRect(l, h).contains(e->pos())) {
                emit headClicked(l, h, e->modifiers() & Qt::ControlModifier);
                return;
            }
}

} // namespace attnscope::widgets
