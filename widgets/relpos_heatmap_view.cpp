// RelposHeatmapView: one axis rect + colour map + colour scale per panel; rows reordered on request.
#include "relpos_heatmap_view.h"

#include "crisp_color_map.h"

#include <QHelpEvent>
#include <QToolTip>
#include <cmath>

namespace attnscope::widgets {

RelposHeatmapView::RelposHeatmapView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
        const QPoint c = cellAt(m_plot->mapTo(this, e->pos()));
        if (c.x() >= 0 && m_data && !m_data->panels.empty())
            emit headClicked(c.x() / m_data->panels.front().heads, c.x() % m_data->panels.front().heads);
    });
    connect(m_plot, &QCustomPlot::afterLayout, this, [this] { updateRowLabels(); });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
        const QPoint c = cellAt(m_plot->mapTo(this, e->pos()));
        emit cellHovered(c.x(), c.y());
    });
    rebuild();
}

QString RelposHeatmapView::headLabel(int index, int heads)
{
    return QStringLiteral("L%1 H%2").arg(index / heads + 1).arg(index % heads + 1);
}

void RelposHeatmapView::setData(RelposFigurePtr data)
{
    m_data = std::move(data);
    rebuild();
}

QSize RelposHeatmapView::minimumSizeHint() const
{
    const int rows = m_data && !m_data->panels.empty() ? m_data->panels.front().layers * m_data->panels.front().heads : 0;
    return {260, 110 + rows * kMinRowHeight};
}

QSize RelposHeatmapView::sizeHint() const
{
    return {700, std::max(360, minimumSizeHint().height())};
}

QStringList RelposHeatmapView::visibleRowLabels() const
{
    QStringList out;
    if (!m_rowTickers.empty())
        for (const auto& label : m_rowTickers.front()->ticks())
            out << label;
    return out;
}

void RelposHeatmapView::updateRowLabels()
{
    if (!m_data)
        return;
    for (std::size_t p = 0; p < m_rects.size() && p < m_data->panels.size(); ++p) {
        const auto& panel = m_data->panels[p];
        const int rows = panel.layers * panel.heads;
        QCPAxis* y = m_rects[p]->axis(QCPAxis::atLeft);
        const double perRow = m_rects[p]->height() / std::max(1.0, y->range().size());
        const QFontMetrics fm(y->tickLabelFont());
        // Every label when rows are tall enough, else every k-th (whole layers when rows are in layer order).
        int step = std::max(1, static_cast<int>(std::ceil((fm.height() + 1) / std::max(perRow, 1e-6))));
        if (m_data->rowOrder.empty() && step > 1 && step < panel.heads)
            while (panel.heads % step != 0)
                ++step;
        auto& ticker = m_rowTickers[p];
        ticker->clear();
        for (int r = 0; r < rows; r += step) {
            const int src = m_data->rowOrder.empty() ? r : m_data->rowOrder[static_cast<std::size_t>(r)];
            ticker->addTick(r, headLabel(src, panel.heads));
        }
    }
}

void RelposHeatmapView::setPlaceholder(const QString& text)
{
    if (text == m_placeholder)
        return;
    m_placeholder = text;
    if (!m_data || m_data->panels.empty())
        rebuild();
}

void RelposHeatmapView::rebuild()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->plotLayout()->clear();
    m_rects.clear();
    m_maps.clear();
    m_rowTickers.clear();
    updateGeometry(); // the minimum height follows the number of head rows
    if (!m_data || m_data->panels.empty()) {
        auto* empty = new QCPTextElement(
            m_plot, m_placeholder.isEmpty() ? tr("No relative-position profile yet: run a scan (Analysis menu)") : m_placeholder);
        m_plot->plotLayout()->addElement(0, 0, empty);
        m_plot->replot();
        return;
    }
    auto* title = new QCPTextElement(m_plot, m_data->title, QFont(font().family(), 11, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, title);
    auto* row = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, row);
    auto* margins = new QCPMarginGroup(m_plot);

    for (std::size_t p = 0; p < m_data->panels.size(); ++p) {
        const auto& panel = m_data->panels[p];
        const int rows = panel.layers * panel.heads;
        const int D = m_data->maxDistance >= 0 ? std::min(panel.distances, m_data->maxDistance + 1) : panel.distances;
        auto* cell = new QCPLayoutGrid;
        row->addElement(0, static_cast<int>(p), cell);
        cell->addElement(0, 0, new QCPTextElement(m_plot, panel.title, QFont(font().family(), 10)));
        auto* rect = new QCPAxisRect(m_plot);
        cell->addElement(1, 0, rect);
        auto* scale = new QCPColorScale(m_plot);
        cell->addElement(1, 1, scale);
        rect->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
        scale->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
        QCPAxis* x = rect->axis(QCPAxis::atBottom);
        QCPAxis* y = rect->axis(QCPAxis::atLeft);
        x->setLabel(tr("relative distance (0 = the token itself)"));
        y->setRangeReversed(true);
        for (QCPAxis* a : {x, y}) {
            a->grid()->setVisible(false);
            a->setSubTicks(false);
        }
        auto* map = new CrispColorMap(x, y);
        map->setInterpolate(false);
        // Rows in the panel's order (ranked heads, or layer by layer); the log scale's floor is the range's lower end.
        std::vector<float> cells(static_cast<std::size_t>(rows) * D);
        float maxv = 1e-9f;
        for (int r = 0; r < rows; ++r) {
            const int src = m_data->rowOrder.empty() ? r : m_data->rowOrder[static_cast<std::size_t>(r)];
            for (int d = 0; d < D; ++d) {
                const float v = panel.values[static_cast<std::size_t>(src) * panel.distances + d];
                maxv = std::max(maxv, v);
                cells[static_cast<std::size_t>(r) * D + d] = v;
            }
        }
        map->setCells(std::move(cells), rows, D);
        map->setColorScale(scale); // first: attaching a scale replaces the map's gradient with the scale's
        map->setGradient(makeGradient(ColourMap::Viridis));
        if (m_data->log) {
            map->setDataScaleType(QCPAxis::stLogarithmic);
            scale->axis()->setScaleType(QCPAxis::stLogarithmic);
            scale->axis()->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
            map->setDataRange(QCPRange(1e-5, std::max(1e-4f, maxv)));
        } else {
            map->setDataRange(QCPRange(0, maxv));
        }
        scale->axis()->setLabel(m_data->log ? tr("attention (log)") : tr("attention"));
        x->setRange(-0.5, D - 0.5);
        y->setRange(-0.5, rows - 0.5);

        // Row labels "L1 H8": filled in by updateRowLabels once the layout says how tall a row is.
        auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
        y->setTicker(ticker);
        m_rowTickers.push_back(ticker);
        if (m_data->rowOrder.empty())
            for (int l = 1; l < panel.layers; ++l) {
                auto* line = new QCPItemStraightLine(m_plot);
                line->setClipAxisRect(rect);
                line->point1->setAxes(x, y);
                line->point2->setAxes(x, y);
                line->point1->setCoords(0, l * panel.heads - 0.5);
                line->point2->setCoords(1, l * panel.heads - 0.5);
                line->setPen(QPen(QColor(255, 255, 255, 200), 1.5));
            }
        m_rects.push_back(rect);
        m_maps.push_back(map);
    }
    m_plot->replot(); // lays out, which fills the row labels (afterLayout)
    m_plot->replot();
}

int RelposHeatmapView::panelAt(const QPoint& plotPos) const
{
    for (std::size_t i = 0; i < m_rects.size(); ++i)
        if (m_rects[i]->rect().contains(plotPos))
            return static_cast<int>(i);
    return -1;
}

QPoint RelposHeatmapView::cellAt(const QPoint& widgetPos) const
{
    const QPoint pp = m_plot->mapFrom(this, widgetPos);
    const int p = panelAt(pp);
    if (p < 0 || !m_data)
        return {-1, -1};
    const auto& panel = m_data->panels[static_cast<std::size_t>(p)];
    QCPAxisRect* rect = m_rects[static_cast<std::size_t>(p)];
    const int d = static_cast<int>(std::lround(rect->axis(QCPAxis::atBottom)->pixelToCoord(pp.x())));
    const int r = static_cast<int>(std::lround(rect->axis(QCPAxis::atLeft)->pixelToCoord(pp.y())));
    if (r < 0 || r >= panel.layers * panel.heads || d < 0 || d >= panel.distances)
        return {-1, -1};
    const int head = m_data->rowOrder.empty() ? r : m_data->rowOrder[static_cast<std::size_t>(r)];
    return {head, d};
}

double RelposHeatmapView::valueAt(int panel, int headIndex, int distance) const
{
    const auto& p = m_data->panels.at(static_cast<std::size_t>(panel));
    return p.values.at(static_cast<std::size_t>(headIndex) * p.distances + distance);
}

bool RelposHeatmapView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::ToolTip && m_data) {
        auto* he = static_cast<QHelpEvent*>(event);
        const QPoint pp = he->pos();
        const int p = panelAt(pp);
        const QPoint c = cellAt(m_plot->mapTo(this, pp));
        if (p >= 0 && c.x() >= 0) {
            const auto& panel = m_data->panels[static_cast<std::size_t>(p)];
            QToolTip::showText(he->globalPos(),
                               tr("%1 (#%2)<br>distance %3<br>%4 = %5")
                                   .arg(headLabel(c.x(), panel.heads))
                                   .arg(c.x() + 1)
                                   .arg(c.y())
                                   .arg(panel.title)
                                   .arg(valueAt(p, c.x(), c.y()), 0, 'g', 4),
                               m_plot);
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace attnscope::widgets
