// AttentionGridView: QCPColorMap for the cells plus one custom layerable that paints values, highlights, the
// memory separator and the locked row for visible cells only (one item per cell would not scale).
#include "attention_grid_view.h"
#include "label_text.h"
#include "position_set.h"

#include "crisp_color_map.h"
#include "key_strip_panel.h"

#include <QHelpEvent>
#include <QToolTip>
#include <algorithm>
#include <functional>
#include <cmath>
#include <utility>

namespace attnscope::widgets {

namespace {
constexpr double kMinVisibleCells = 4; // the deepest zoom shows this many cells across

// Cut first, then touched (line breaks shown as ↵).
QString elide(const QString& s, int maxChars)
{
    return cutLabel(s, maxChars).replace('\n', QStringLiteral("↵"));
}
} // namespace

// The cells in view ([r0, r1] x [c0, c1]), their size in pixels and where each one is drawn.
struct VisibleCells {
    int r0, r1, c0, c1;
    double cellW, cellH;
    std::function<QRectF(int, int)> rect;
};

// Paints per-cell decorations above the colour map, only for cells in view.
class GridOverlay : public QCPLayerable {
public:
    GridOverlay(QCustomPlot* plot, AttentionGridView* view)
        : QCPLayerable(plot, QStringLiteral("overlay"))
        , m_view(view)
    {
    }

protected:
    void applyDefaultAntialiasingHint(QCPPainter* painter) const override { painter->setAntialiasing(false); }
    QRect clipRect() const override { return mParentPlot->axisRect()->rect(); }

    void draw(QCPPainter* painter) override
    {
        const auto& d = m_view->m_data;
        if (!d || d->rows == 0) {
            painter->setPen(QColor(90, 90, 90));
            QFont f = mParentPlot->font();
            f.setPointSizeF(m_view->m_presentation ? 16 : 11);
            painter->setFont(f);
            const QString text = m_view->m_placeholder.isEmpty() ? QObject::tr("No attention to show yet") : m_view->m_placeholder;
            painter->drawText(clipRect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, text);
            return;
        }
        QCPAxis* x = mParentPlot->xAxis;
        QCPAxis* y = mParentPlot->yAxis;
        const int c0 = std::max(0, static_cast<int>(std::floor(x->range().lower + 0.5)));
        const int c1 = std::min(d->cols - 1, static_cast<int>(std::ceil(x->range().upper - 0.5)));
        const int r0 = std::max(0, static_cast<int>(std::floor(y->range().lower + 0.5)));
        const int r1 = std::min(d->rows - 1, static_cast<int>(std::ceil(y->range().upper - 0.5)));
        const double cellW = std::abs(x->coordToPixel(1) - x->coordToPixel(0));
        const double cellH = std::abs(y->coordToPixel(1) - y->coordToPixel(0));
        auto cellRect = [&](int r, int c) {
            const double left = x->coordToPixel(c - 0.5), right = x->coordToPixel(c + 0.5);
            const double top = y->coordToPixel(r - 0.5), bottom = y->coordToPixel(r + 0.5);
            return QRectF(QPointF(std::min(left, right), std::min(top, bottom)),
                          QPointF(std::max(left, right), std::max(top, bottom)));
        };
        const double lineScale = m_view->m_presentation ? 2.0 : 1.0;

        // Memory columns: a separator line before the first current token. No veil: a tint over the memory would
        // make its colours disagree with the colour bar.
        if (d->memoryCols > 0) {
            const QRectF mem = cellRect(r0, 0).united(cellRect(r1, d->memoryCols - 1));
            // White with a dark core: visible on the dark and on the light end of every colour map.
            const double sx = x->coordToPixel(d->memoryCols - 0.5);
            for (const auto& [colour, width] : {std::pair{QColor(255, 255, 255), 4.0}, std::pair{QColor(20, 20, 20), 1.5}}) {
                painter->setPen(QPen(colour, width * lineScale));
                painter->drawLine(QPointF(sx, mem.top()), QPointF(sx, mem.bottom()));
            }
        }

        // A text pair: lines where text B's rows and columns start (drawn like the memory separator).
        if (d->secondRow > 0 || d->secondCol > 0) {
            const QRectF all = cellRect(r0, 0).united(cellRect(r1, d->cols - 1));
            for (const auto& [colour, width] : {std::pair{QColor(255, 255, 255), 3.0}, std::pair{QColor(20, 20, 20), 1.0}}) {
                painter->setPen(QPen(colour, width * lineScale, Qt::DashLine));
                if (d->secondCol > 0) {
                    const double sx = x->coordToPixel(d->secondCol - 0.5);
                    painter->drawLine(QPointF(sx, all.top()), QPointF(sx, all.bottom()));
                }
                if (d->secondRow > r0 && d->secondRow <= r1) {
                    const double sy = y->coordToPixel(d->secondRow - 0.5);
                    painter->drawLine(QPointF(all.left(), sy), QPointF(all.right(), sy));
                }
            }
        }

        // Cell values, in the largest font (up to the mode's size) that fits "0.00" into a cell.
        QFont font = mParentPlot->font();
        const double valueSize = m_view->m_showValues ? m_view->valueFontSize(cellW, cellH) : 0;
        if (valueSize > 0) {
            font.setPointSizeF(valueSize);
            QFont bold = font;
            bold.setBold(true);
            QCPColorGradient grad = m_view->m_map->gradient(); // color() is non-const: one copy per paint
            const QCPRange range = m_view->m_map->dataRange();
            const bool logScale = m_view->m_map->dataScaleType() == QCPAxis::stLogarithmic;
            for (int r = r0; r <= r1; ++r) {
                float rowMax = -1;
                for (int c = 0; c < d->cols; ++c)
                    if (!std::isnan(d->at(r, c)))
                        rowMax = std::max(rowMax, d->at(r, c));
                for (int c = c0; c <= c1; ++c) {
                    const float v = d->at(r, c);
                    if (std::isnan(v))
                        continue;
                    const QRgb rgb = grad.color(logScale ? std::max(1e-4, double(v)) : double(v), range, logScale);
                    const bool dark = qGray(rgb) < 128;
                    painter->setPen(dark ? Qt::white : Qt::black);
                    const auto at = static_cast<qsizetype>(r) * d->cols + c;
                    if (at < d->cellTexts.size()) { // words in the cells (elided to the cell's width)
                        painter->setFont(font);
                        const QRectF cell = cellRect(r, c);
                        const QString text = QFontMetricsF(font).elidedText(d->cellTexts[at], Qt::ElideRight, cell.width() - 2);
                        painter->drawText(cell, Qt::AlignCenter, text);
                        continue;
                    }
                    painter->setFont(v == rowMax && !d->diverging ? bold : font);
                    painter->drawText(cellRect(r, c), Qt::AlignCenter, AttentionGridView::cellText(v));
                }
            }
        }

        drawHighlight(painter, *d, VisibleCells{r0, r1, c0, c1, cellW, cellH, cellRect});

        const QPoint fc = m_view->m_focusCell;
        if (fc.y() >= 0 && fc.y() < d->rows && fc.x() >= 0 && fc.x() < d->cols) {
            painter->setPen(QPen(QColor(0, 170, 255), 3 * lineScale));
            painter->setBrush(Qt::NoBrush);
            painter->drawRect(cellRect(fc.y(), fc.x()));
        }

        // Marked tokens: teal bars inside the left edge (their rows) and the top edge (their columns).
        if (!m_view->m_marked.empty()) {
            const auto& marked = m_view->m_marked;
            const QRectF area = mParentPlot->axisRect()->rect();
            const double bar = std::clamp(std::min(cellW, cellH) * 0.5, 4.0, 9.0) * (m_view->m_presentation ? 1.5 : 1.0);
            painter->setPen(Qt::NoPen);
            painter->setBrush(QColor(0, 150, 140));
            for (int r = r0; r <= r1; ++r)
                if (std::binary_search(marked.begin(), marked.end(), d->rowPosition(r))) {
                    const QRectF row = cellRect(r, c0);
                    painter->drawRect(QRectF(area.left(), row.top(), bar, std::max(1.0, row.height())));
                }
            for (int c = c0; c <= c1; ++c)
                if (std::binary_search(marked.begin(), marked.end(), d->colPosition(c))) {
                    const QRectF col = cellRect(r0, c);
                    painter->drawRect(QRectF(col.left(), area.top(), std::max(1.0, col.width()), bar));
                }
        }

        if (m_view->m_lockedRow >= 0 && m_view->m_lockedRow < d->rows) {
            painter->setPen(QPen(QColor(255, 140, 0), 2.5 * lineScale));
            painter->setBrush(Qt::NoBrush); // an outline: the highlight's red fill must not carry over
            painter->drawRect(cellRect(m_view->m_lockedRow, 0).united(cellRect(m_view->m_lockedRow, d->cols - 1)));
        }
    }

private:
    // Top-fraction highlight (the paper's Fig. 6) over the cells in view, scaled with the cell and never covering
    // much of it: big cells (few tokens, stepping) get a red corner, mid-sized ones a thin red frame inside the
    // cell, so the colour and the value stay visible; rows under two pixels (a router's hundreds of tokens) a red edge down the cell's left
    // side; other cells too small for a frame a red mark over their middle third. Cells under two pixels both ways
    // (a long text's whole grid) get none: the marks would cover the colours.
    void drawHighlight(QCPPainter* painter, const GridData& d, const VisibleCells& v) const
    {
        const auto& [r0, r1, c0, c1, cellW, cellH, cellRect] = v;
        if (!(m_view->m_showHighlight && !d.highlight.empty() && std::max(cellW, cellH) >= 2))
            return;
        const double side = std::min(cellW, cellH);
        const double presentation = m_view->m_presentation ? 1.5 : 1.0;
        const bool corner = side >= 28, frame = !corner && side >= 7;
        const double w = std::clamp(side / 14, 1.0, 2.0) * presentation;
        const double leg = std::clamp(side * 0.22, 6.0, 14.0) * presentation;
        painter->setPen(frame ? QPen(QColor(230, 25, 35), w) : Qt::NoPen);
        painter->setBrush(frame ? QBrush(Qt::NoBrush) : QBrush(QColor(230, 25, 35)));
        const double inset = w / 2 + (side >= 10 ? 1 : 0);
        for (int r = r0; r <= r1; ++r)
            for (int c = c0; c <= c1; ++c) {
                if (!d.highlight[static_cast<std::size_t>(r) * d.cols + c])
                    continue;
                const QRectF cell = cellRect(r, c);
                if (corner) {
                    const QPointF tr = cell.topRight() + QPointF(-1, 1);
                    painter->drawPolygon(QPolygonF{tr, tr - QPointF(leg, 0), tr + QPointF(0, leg)});
                } else if (frame) {
                    painter->drawRect(cell.adjusted(inset, inset, -inset, -inset));
                } else if (cellH < 2 && cellW >= 6) {
                    // Rows under two pixels (a router's hundreds of tokens): a red edge down the cell's left side,
                    // so a column of chosen cells reads as an outlined column and keeps its colour.
                    painter->drawRect(QRectF(cell.left(), cell.top(), std::max(1.0, cellW / 8), std::max(1.0, cell.height())));
                } else {
                    const QSizeF mark(std::max(1.0, cell.width() / 3), std::max(1.0, cell.height() / 3));
                    painter->drawRect(QRectF(cell.center() - QPointF(mark.width() / 2, mark.height() / 2), mark));
                }
            }
    }

    AttentionGridView* m_view;
};

AttentionGridView::AttentionGridView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_plot = new QCustomPlot(this);
    // The plot fits whatever room it gets (labels thin out): its natural minimum would widen the window.
    m_plot->setMinimumSize(160, 120);
    layout->addWidget(m_plot);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setNoAntialiasingOnDrag(true);

    m_map = new CrispColorMap(m_plot->xAxis, m_plot->yAxis);
    m_map->setInterpolate(false);
    m_map->setTightBoundary(false);
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), 11, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(1, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    m_margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, m_margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, m_margins);

    m_xTicker.reset(new QCPAxisTickerText);
    m_yTicker.reset(new QCPAxisTickerText);
    m_plot->xAxis->setTicker(m_xTicker);
    m_plot->yAxis->setTicker(m_yTicker);
    m_plot->xAxis->setTickLabelRotation(-60);
    m_plot->yAxis->setRangeReversed(true); // first query on top, as in the paper's figures
    m_plot->xAxis->setLabel(tr("key (attended-to) tokens"));
    m_plot->yAxis->setLabel(tr("query tokens"));
    for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) {
        a->grid()->setVisible(false);
        a->setSubTicks(false);
        a->setTickLength(0, 3);
    }
    m_plot->axisRect()->setRangeZoomAxes(m_plot->xAxis, m_plot->yAxis);
    // Labels depend on the pixels per cell: recompute them whenever the layout is settled (also when a figure is
    // exported at another size, which re-lays out the plot) and when the visible range changes.
    // The axes took their ticks before this layout, so labels that change here are drawn by one more (queued) replot:
    // without it a grid laid out small first (a window opening, a partial result) kept its sparse labels when it grew.
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] {
        if (updateTicks())
            m_plot->replot(QCustomPlot::rpQueuedReplot);
    });
    // Zoom stops where a few cells fill the view (further in shows nothing) and where the whole grid fits with a
    // margin (further out only shrinks it).
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis})
        connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, axis](const QCPRange& r) {
            const int cells = !m_data ? 1 : axis == m_plot->xAxis ? m_data->shownCols() : m_data->shownRows();
            const double lo = std::min(kMinVisibleCells, static_cast<double>(std::max(cells, 1))), hi = 1.5 * std::max(cells, 1) + 1;
            if (r.size() < lo - 1e-9 || r.size() > hi + 1e-9) {
                axis->setRange(r.center(), std::clamp(r.size(), lo, hi), Qt::AlignCenter); // re-enters once, in range
                return;
            }
            updateTicks();
        });

    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop | QCP::msLeft | QCP::msRight, m_margins);
    m_strip = std::make_unique<KeyStripPanel>(m_plot, m_plot->xAxis, m_margins);
    m_overlay = new GridOverlay(m_plot, this);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
        const QPoint cell = cellAt(m_plot->mapTo(this, e->pos()));
        emit cellHovered(cell.y(), cell.x());
    });
    // A click is a press and release at (nearly) the same place; a drag pans and selects nothing.
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        m_pressPos = e->pos();
        m_pressOnCell = e->button() == Qt::LeftButton && cellAt(m_plot->mapTo(this, e->pos())).x() >= 0;
    });
    connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
        if (!m_pressOnCell || e->button() != Qt::LeftButton)
            return;
        m_pressOnCell = false;
        if ((e->pos() - m_pressPos).manhattanLength() > 4)
            return;
        const QPoint cell = cellAt(m_plot->mapTo(this, e->pos()));
        if (cell.x() >= 0)
            emit cellClicked(cell.y(), cell.x(), e->modifiers());
    });
    rebuild(); // start empty (transparent), not with QCustomPlot's default zero-filled map
}

AttentionGridView::~AttentionGridView() = default;

QString AttentionGridView::cellText(float value)
{
    return std::isnan(value) ? QString() : QString::number(static_cast<double>(value), 'f', 2);
}

double AttentionGridView::valueFontSize(double cellWidth, double cellHeight) const
{
    const double largest = (m_presentation ? 14 : 8) * m_valueTextScale;
    QFont f = m_plot->font();
    for (double size = largest; size >= 6.5; size -= 0.5) {
        f.setPointSizeF(size);
        f.setBold(true); // the row maximum is bold: it must fit too
        const QFontMetricsF fm(f);
        if (cellWidth >= fm.horizontalAdvance(QStringLiteral("0.00")) + 4 && cellHeight >= fm.height() + 1)
            return size;
    }
    return 0;
}

void AttentionGridView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setFocusCell(int row, int col)
{
    m_focusCell = QPoint(col, row);
    if (m_data && row >= 0 && col >= 0) {
        // Bring the cell into view without changing the zoom.
        for (auto [axis, at] : {std::pair{m_plot->xAxis, col}, std::pair{m_plot->yAxis, row}}) {
            const QCPRange r = axis->range();
            if (at - 0.5 < r.lower || at + 0.5 > r.upper)
                axis->setRange(at - r.size() / 2, at + r.size() / 2);
        }
    }
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setStale(bool stale, const QString& why)
{
    m_stale = stale && m_data;
    const QString note = why.isEmpty() ? tr("out of date: Run to update") : why;
    m_title->setText(!m_data ? QString() : m_stale ? tr("%1 · %2").arg(m_data->title, note) : m_data->title);
    m_title->setTextColor(m_stale ? QColor(130, 130, 130) : palette().color(QPalette::WindowText));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setData(GridDataPtr data)
{
    m_stale = false;
    m_title->setTextColor(palette().color(QPalette::WindowText));
    const bool sameShape = m_data && data && m_data->shownRows() == data->shownRows() && m_data->shownCols() == data->shownCols();
    m_data = std::move(data);
    if (m_lockedRow >= (m_data ? m_data->rows : 0))
        m_lockedRow = -1;
    if (!sameShape)
        m_focusCell = QPoint(-1, -1);
    rebuild();
    if (!sameShape)
        resetView(); // keep the user's zoom while only values change (head stepping, live typing)
    else
        m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::rebuild()
{
    const int rows = m_data ? m_data->rows : 0, cols = m_data ? m_data->cols : 0;
    m_title->setText(m_data ? m_data->title : QString());
    m_plot->xAxis->setLabel(m_data && !m_data->colAxis.isEmpty() ? m_data->colAxis
                            : m_data && m_data->memoryCols > 0 ? tr("key (attended-to) tokens: memory | current segment")
                                                               : tr("key (attended-to) tokens"));
    m_plot->yAxis->setLabel(m_data && !m_data->rowAxis.isEmpty() ? m_data->rowAxis : tr("query tokens"));
    if (!m_data || rows == 0) {
        // An empty panel shows its message, not the titles of axes with nothing on them.
        m_plot->xAxis->setLabel(QString());
        m_plot->yAxis->setLabel(QString());
        m_strip->show(nullptr, m_xTicker, QString());
        m_xTicker->clear(); // no labels of a text that is gone
        m_yTicker->clear();
        m_map->setCells(nullptr, nullptr, 0, 0);
        m_map->setDataRange(QCPRange(0, 1)); // an empty grid's colour bar reads like a probability's
        m_scale->axis()->setLabel(QString());
        updateColours();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    // The map draws the grid's own values (shared, not copied): a 4096 x 4096 grid is 64 MB once.
    m_map->setCells(m_data, m_data->values.data(), rows, cols, m_data->diverging);
    float maxv = 0, maxAbs = 0;
    for (float v : m_data->values)
        if (!std::isnan(v)) {
            maxv = std::max(maxv, v);
            maxAbs = std::max(maxAbs, std::abs(v));
        }
    const bool log = m_normalisation == Normalisation::Log && !m_data->diverging;
    m_map->setDataScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_scale->axis()->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (log)
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    else
        m_scale->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    if (m_data->diverging)
        m_map->setDataRange(QCPRange(-std::max(maxAbs, 1e-6f), std::max(maxAbs, 1e-6f)));
    else if (log)
        m_map->setDataRange(QCPRange(1e-4, 1.0));
    else if (m_normalisation == Normalisation::PerGridMax || m_data->fromZero)
        m_map->setDataRange(QCPRange(0, std::max(maxv, 1e-6f)));
    else
        m_map->setDataRange(QCPRange(0, 1));
    m_scale->axis()->setLabel(m_data->valueLabel + (log ? tr(" (log)") : QString()));
    m_strip->show(m_data->keyStrip.get(), m_xTicker, m_plot->xAxis->label());
    updateColours();
    updateTicks();
}

void AttentionGridView::updateColours()
{
    // The map the user chose (the Display dock names it); raw scores only get a range symmetric around 0. A signed
    // implicit map is drawn in the diverging colours whatever is chosen: its sign is what it says.
    const bool signedWeights = m_data && m_data->signedWeights && !isDiverging(m_colourMap);
    m_map->setGradient(makeGradient(signedWeights ? ColourMap::RedBlue : m_colourMap));
    m_plot->axisRect()->setBackground(QBrush(QColor(250, 250, 250))); // masked cells: near-white, not colour
}

bool AttentionGridView::updateTicks()
{
    if (!m_data)
        return false;
    const auto before = std::pair{m_xTicker->ticks(), m_yTicker->ticks()};
    const QFontMetrics fm(m_plot->xAxis->tickLabelFont());
    // Key labels are drawn slanted below the grid: a budget of the plot's height (less in presentation mode, where the
    // class must see the cells) caps their length, so long tokens never take the grid's room.
    const int defaultChars = m_data->labelChars > 0 ? m_data->labelChars : m_presentation ? 16 : 14;
    const double slant = std::sin(std::abs(m_plot->xAxis->tickLabelRotation()) * M_PI / 180.0);
    // (the viewport, not the widget: an exported figure is laid out at its own size on a widget never shown)
    const double budget = m_plot->viewport().height() * (m_presentation ? 0.14 : 0.18);
    const int keyChars = std::clamp(static_cast<int>(budget / std::max(1.0, fm.averageCharWidth() * slant)), 4, defaultChars);
    auto fill = [&](QCPAxis* axis, QCPAxisTickerText* ticker, const QStringList& labels, int count, double pixels,
                    int maxChars) {
        ticker->clear();
        if (count == 0 || pixels < 2)
            return; // not laid out yet: labels come with the first layout (afterLayout)
        const QCPRange r = axis->range();
        const double perCell = pixels / std::max(1e-9, r.size());
        // Show every label if they fit, else every k-th, recomputed for the visible range at each zoom.
        // (a label may use most of its line's height: the line spacing's leading is room to spare)
        const int step = std::max(1, static_cast<int>(std::ceil(0.85 * fm.height() / std::max(perCell, 1e-9))));
        const int lo = std::max(0, static_cast<int>(std::ceil(r.lower)));
        const int hi = std::min(count - 1, static_cast<int>(std::floor(r.upper)));
        for (int i = lo; i <= hi; ++i)
            if (i % step == 0)
                ticker->addTick(i, elide(labels.value(i), maxChars));
    };
    fill(m_plot->xAxis, m_xTicker.data(), m_data->colLabels, m_data->cols, m_plot->axisRect()->width(), keyChars);
    fill(m_plot->yAxis, m_yTicker.data(), m_data->rowLabels, m_data->rows, m_plot->axisRect()->height(), defaultChars);
    return before != std::pair{m_xTicker->ticks(), m_yTicker->ticks()};
}

void AttentionGridView::resetView()
{
    const int rows = m_data ? m_data->shownRows() : 1, cols = m_data ? m_data->shownCols() : 1;
    m_plot->xAxis->setRange(-0.5, cols - 0.5);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    updateTicks();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setColourMap(ColourMap map)
{
    m_colourMap = map;
    updateColours();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setNormalisation(Normalisation n)
{
    m_normalisation = n;
    rebuild();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setShowValues(bool on)
{
    m_showValues = on;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setShowHighlight(bool on)
{
    m_showHighlight = on;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setMarkedPositions(std::vector<int> positions)
{
    m_marked = sortedPositions(std::move(positions));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setLockedRow(int row)
{
    m_lockedRow = row;
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionGridView::setPresentation(bool on)
{
    m_presentation = on;
    applyTextSize(on ? 15 : 9, on);
}

void AttentionGridView::setTextSize(double points)
{
    m_valueTextScale = points / 9;
    applyTextSize(points, m_presentation);
}

void AttentionGridView::applyTextSize(double points, bool bold)
{
    QFont f = font();
    f.setPointSizeF(points);
    QFont labelFont = f;
    labelFont.setBold(bold);
    m_title->setFont(QFont(f.family(), static_cast<int>(std::lround(points * (bold ? 20.0 / 15 : 11.0 / 9))), QFont::Bold));
    for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis, m_scale->axis()}) {
        a->setTickLabelFont(f);
        a->setLabelFont(labelFont);
        a->setBasePen(QPen(Qt::black, std::max(1.0, std::round(points / 7.5))));
    }
    updateTicks();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

QMap<double, QString> AttentionGridView::visibleLabels(Qt::Orientation o) const
{
    return (o == Qt::Horizontal ? m_xTicker : m_yTicker)->ticks();
}

QPoint AttentionGridView::cellAt(const QPoint& widgetPos) const
{
    if (!m_data)
        return {-1, -1};
    const QPoint p = m_plot->mapFrom(this, widgetPos);
    if (!m_plot->axisRect()->rect().contains(p))
        return {-1, -1};
    const int c = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(p.x())));
    const int r = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(p.y())));
    if (r < 0 || c < 0 || r >= m_data->rows || c >= m_data->cols)
        return {-1, -1};
    return {c, r};
}

QString AttentionGridView::tooltipFor(int row, int col) const
{
    const float v = m_data->at(row, col);
    QString s = tr("<b>%1</b> → <b>%2</b>")
                    .arg(elide(m_data->rowLabels.value(row), 40).toHtmlEscaped(),
                         elide(m_data->colLabels.value(col), 40).toHtmlEscaped());
    if (std::isnan(v))
        s += tr("<br>masked (not visible to this query)");
    else
        s += tr("<br>%1 = %2").arg(m_data->valueLabel).arg(static_cast<double>(v), 0, 'f', 4);
    if (m_data->rowPosition(row) >= 0 && m_data->colPosition(col) >= 0) // both tokens (not an expert, a layer)
        s += tr("<br>relative distance %1").arg(m_data->rowPosition(row) - m_data->colPosition(col));
    if (col < m_data->memoryCols)
        s += tr("<br><i>memory token</i>");
    if (const auto at = static_cast<qsizetype>(row) * m_data->cols + col; at < m_data->cellTips.size())
        s += QStringLiteral("<br>") + m_data->cellTips[at];
    return s;
}

bool AttentionGridView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::ToolTip && m_data) {
        auto* he = static_cast<QHelpEvent*>(event);
        const QPoint cell = cellAt(m_plot->mapTo(this, he->pos()));
        if (cell.x() >= 0)
            QToolTip::showText(he->globalPos(), tooltipFor(cell.y(), cell.x()), m_plot);
        else
            QToolTip::hideText();
        return true;
    }
    if (watched == m_plot && event->type() == QEvent::Leave)
        emit cellHovered(-1, -1);
    if (watched == m_plot && event->type() == QEvent::Resize)
        updateTicks();
    return QWidget::eventFilter(watched, event);
}

} // namespace attnscope::widgets
