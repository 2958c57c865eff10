// PaperFigureView: one relative-position heatmap (Figs. 5, 7) or a row of token grids (Fig. 6).
#include "figures/paper_figure_view.h"

#include "attention_grid_view.h"
#include "relpos_heatmap_view.h"

#include <QHBoxLayout>
#include <algorithm>

namespace attnscope::app {

PaperFigureView::PaperFigureView(QWidget* parent)
    : QWidget(parent)
    , m_row(new QHBoxLayout(this))
{
    m_row->setContentsMargins(0, 0, 0, 0);
}

void PaperFigureView::setFigure(const PaperFigure& figure)
{
    for (QWidget* v : m_views)
        delete v;
    m_views.clear();
    m_plots.clear();
    m_figure = figure;
    m_row->setDirection(figure.stacked ? QBoxLayout::TopToBottom : QBoxLayout::LeftToRight);
    if (figure.heatmap) {
        auto* v = new widgets::RelposHeatmapView(this);
        v->setData(figure.heatmap);
        m_row->addWidget(v);
        m_views.push_back(v);
        m_plots.push_back(v->plot());
    }
    for (const auto& g : figure.grids) {
        auto* v = new widgets::AttentionGridView(this);
        v->setShowValues(figure.values); // Fig. 6 is about where attention goes, at a glance
        if (g->diverging)
            v->setColourMap(widgets::ColourMap::RedBlue);
        v->setData(g);
        const int index = static_cast<int>(m_plots.size()) - (figure.heatmap ? 1 : 0);
        connect(v, &widgets::AttentionGridView::cellClicked, this,
                [this, index](int row, int col, Qt::KeyboardModifiers) { emit cellClicked(index, row, col); });
        m_row->addWidget(v);
        m_views.push_back(v);
        m_plots.push_back(v->plot());
    }
}

QSize PaperFigureView::readableSize() const
{
    if (m_figure.heatmap && !m_figure.heatmap->panels.empty()) {
        const auto& p = m_figure.heatmap->panels.front();
        const int rows = p.layers * p.heads;
        const int panels = static_cast<int>(m_figure.heatmap->panels.size());
        return {std::clamp(520 * panels, 900, 1800), std::clamp(140 + 12 * rows, 500, 1400)};
    }
    if (m_figure.stacked) { // full-width panels: a cell wide enough for a short token at a few dozen positions
        const auto& g = *m_figure.grids.front();
        const int n = static_cast<int>(m_figure.grids.size());
        return {std::clamp(260 + 44 * g.cols, 900, 1800), n * std::clamp(150 + 34 * g.rows, 300, 700)};
    }
    if (m_figure.number == 0 && m_figure.grids.size() == 1) { // an analysis grid: square cells where they fit
        const auto& g = *m_figure.grids.front();
        const int cell = std::clamp(700 / std::max(1, std::max(g.rows, g.cols)), 3, 36);
        return {std::clamp(260 + cell * g.cols, 760, 1400), std::clamp(200 + cell * g.rows, 420, 1100)};
    }
    return {480 * std::max<int>(1, static_cast<int>(m_figure.grids.size())), 560};
}

QString PaperFigureView::exportTo(const QString& path, FigureSize size) const
{
    if (size.width <= 0 || size.height <= 0) {
        const QSize s = readableSize(); // the figure's own size, never the window's squeeze
        size.width = s.width();
        size.height = s.height();
    }
    return exportComposite(m_plots, path, size, m_figure.stacked);
}

} // namespace attnscope::app
