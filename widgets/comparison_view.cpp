// ComparisonView: a QCPLayoutGrid of small axis rects sharing one colour scale (range 0..1).
#include "comparison_view.h"

#include "colour_maps.h"
#include "crisp_color_map.h"

#include <cmath>

namespace attnscope::widgets {

namespace {
// A row label that does not cap its row's height (QCPTextElement's maximum height is one line of text, which would
// squeeze every grid of the row into it).
class RowLabel : public QCPTextElement {
public:
    using QCPTextElement::QCPTextElement;
    QSize maximumOuterSizeHint() const override
    {
        QSize s = QCPTextElement::maximumOuterSizeHint();
        s.setHeight(QWIDGETSIZE_MAX);
        return s;
    }
};
} // namespace

ComparisonView::ComparisonView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setData(nullptr);
}

void ComparisonView::setData(ComparisonPtr data)
{
    m_data = std::move(data);
    m_panels = 0;
    m_plot->clearPlottables();
    m_plot->clearItems(); // the head labels belong to axis rects that are about to go
    m_plot->plotLayout()->clear();
    if (!m_data || m_data->grids.empty()) {
        setMinimumSize(0, 0);
        m_plot->plotLayout()->addElement(0, 0, new QCPTextElement(m_plot, tr("Choose models and press Compare")));
        m_plot->replot();
        return;
    }
    m_plot->plotLayout()->addElement(0, 0, new QCPTextElement(m_plot, m_data->title, QFont(font().family(), 11, QFont::Bold)));
    auto* body = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(1, 0, body);
    auto* scale = new QCPColorScale(m_plot);
    scale->setDataRange(QCPRange(0, 1));
    scale->setGradient(makeGradient(ColourMap::Viridis));
    scale->axis()->setLabel(tr("attention"));
    std::size_t maxHeads = 0;
    for (const auto& row : m_data->grids)
        maxHeads = std::max(maxHeads, row.size());
    for (std::size_t r = 0; r < m_data->grids.size(); ++r) {
        auto* label = new RowLabel(m_plot, m_data->rowTitles.value(static_cast<int>(r)), QFont(font().family(), 9, QFont::Bold));
        body->addElement(static_cast<int>(r), 0, label);
        for (std::size_t h = 0; h < maxHeads; ++h) {
            if (h >= m_data->grids[r].size()) {
                body->addElement(static_cast<int>(r), static_cast<int>(h) + 1, new RowLabel(m_plot, QString()));
                continue;
            }
            const auto& g = *m_data->grids[r][h];
            auto* rect = new QCPAxisRect(m_plot, true);
            rect->setAutoMargins(QCP::msNone);
            rect->setMargins(QMargins(2, 14, 2, 2));
            body->addElement(static_cast<int>(r), static_cast<int>(h) + 1, rect);
            for (QCPAxis* a : rect->axes()) {
                a->setTicks(false);
                a->setTickLabels(false);
                a->grid()->setVisible(false);
            }
            QCPAxis* x = rect->axis(QCPAxis::atBottom);
            QCPAxis* y = rect->axis(QCPAxis::atLeft);
            y->setRangeReversed(true);
            auto* map = new CrispColorMap(x, y);
            map->setInterpolate(false);
            map->setCells(m_data->grids[r][h], g.values.data(), g.rows, g.cols);
            map->setColorScale(scale); // shared: every panel uses the same 0..1 colours
            x->setRange(-0.5, g.cols - 0.5);
            y->setRange(-0.5, g.rows - 0.5);
            auto* t = new QCPItemText(m_plot);
            t->setClipToAxisRect(false);
            t->setClipAxisRect(rect);
            t->position->setType(QCPItemPosition::ptAxisRectRatio);
            t->position->setAxisRect(rect);
            t->position->setCoords(0.5, 0);
            t->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
            t->setText(QStringLiteral("H%1").arg(h + 1));
            t->setFont(QFont(font().family(), 8));
            ++m_panels;
        }
    }
    body->setColumnStretchFactor(0, 0.6);
    // Small multiples stay legible: each grid gets at least ~48 px; the dock scrolls beyond that.
    setMinimumSize(160 + static_cast<int>(maxHeads) * 48, 70 + static_cast<int>(m_data->grids.size()) * 56);
    m_plot->plotLayout()->addElement(1, 1, scale);
    scale->setDataRange(QCPRange(0, 1));
    scale->setGradient(makeGradient(ColourMap::Viridis));
    m_plot->replot();
}

} // namespace attnscope::widgets
