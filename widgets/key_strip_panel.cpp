// KeyStripPanel: a second axis rect under the grid's, its key axis kept equal to the grid's.
#include "key_strip_panel.h"

#include <qcustomplot.h>

#include <algorithm>

namespace attnscope::widgets {

KeyStripPanel::KeyStripPanel(QCustomPlot* plot, QCPAxis* keys, QCPMarginGroup* sides)
    : m_plot(plot)
    , m_keys(keys)
    , m_sides(sides)
{
}

void KeyStripPanel::create()
{
    m_rect = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(m_plot->plotLayout()->rowCount(), 0, m_rect);
    m_rect->setMinimumSize(0, 56);
    m_rect->setMaximumSize(QWIDGETSIZE_MAX, 90);
    m_rect->setMarginGroup(QCP::msLeft | QCP::msRight, m_sides);
    m_rect->axis(QCPAxis::atLeft)->setTicks(false);
    m_rect->axis(QCPAxis::atLeft)->grid()->setVisible(false);
    QCPAxis* bottom = m_rect->axis(QCPAxis::atBottom);
    bottom->grid()->setVisible(false);
    bottom->setSubTicks(false);
    bottom->setTickLength(0, 3);
    bottom->setTickLabelRotation(m_keys->tickLabelRotation());
    m_rect->setRangeDrag(Qt::Horizontal);
    m_rect->setRangeZoom(Qt::Horizontal);
    QObject::connect(m_keys, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), bottom,
                     qOverload<const QCPRange&>(&QCPAxis::setRange));
    QObject::connect(bottom, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_keys,
                     qOverload<const QCPRange&>(&QCPAxis::setRange));
    m_map = new QCPColorMap(bottom, m_rect->axis(QCPAxis::atLeft));
    m_map->setInterpolate(false);
    m_map->setGradient(QCPColorGradient(QCPColorGradient::gpGrayscale).inverted());
    m_padding = new QCPItemRect(m_plot);
    m_padding->setClipAxisRect(m_rect);
    m_padding->setPen(Qt::NoPen);
    m_padding->setBrush(QColor(255, 255, 255, 170));
    m_paddingText = new QCPItemText(m_plot);
    m_paddingText->setClipAxisRect(m_rect);
    m_paddingText->setText(QObject::tr("padding (silence to 30 s)"));
    m_paddingText->setColor(QColor(90, 90, 90));
    for (auto* p : {m_padding->topLeft, m_padding->bottomRight, m_paddingText->position})
        p->setAxes(bottom, m_rect->axis(QCPAxis::atLeft));
}

void KeyStripPanel::remove()
{
    if (!m_rect)
        return;
    m_plot->removeItem(m_padding);
    m_plot->removeItem(m_paddingText);
    m_plot->removePlottable(m_map);
    m_plot->plotLayout()->remove(m_rect);
    m_plot->plotLayout()->simplify();
    m_rect = nullptr;
    m_map = nullptr;
    m_padding = nullptr;
    m_paddingText = nullptr;
}

void KeyStripPanel::show(const KeyStrip* strip, const QSharedPointer<QCPAxisTickerText>& ticker, const QString& keyLabel)
{
    if (!strip || strip->bins < 1 || strip->cols < 1) {
        remove();
        m_keys->setTickLabels(true);
        return;
    }
    if (!m_rect)
        create();
    // The key axis's labels and title move under the strip: the strip sits between the cells and their names.
    m_keys->setTickLabels(false);
    m_keys->setLabel(QString());
    QCPAxis* bottom = m_rect->axis(QCPAxis::atBottom);
    bottom->setTicker(ticker);
    bottom->setLabel(keyLabel);
    bottom->setRange(m_keys->range());
    m_rect->axis(QCPAxis::atLeft)->setLabel(strip->label);
    m_map->data()->setSize(strip->cols, strip->bins);
    m_map->data()->setRange(QCPRange(0, strip->cols - 1), QCPRange(0, strip->bins - 1));
    float lo = 0, hi = 0;
    if (!strip->values.empty()) {
        const auto [mn, mx] = std::minmax_element(strip->values.begin(), strip->values.end());
        lo = *mn;
        hi = *mx;
    }
    for (int b = 0; b < strip->bins; ++b)
        for (int c = 0; c < strip->cols; ++c)
            m_map->data()->setCell(c, b, strip->values[static_cast<std::size_t>(b) * strip->cols + c]);
    m_map->setDataRange(QCPRange(lo, std::max(hi, lo + 1e-6f)));
    m_rect->axis(QCPAxis::atLeft)->setRange(-0.5, strip->bins - 0.5);
    const bool padded = strip->contentCols > 0 && strip->contentCols < strip->cols;
    m_padding->setVisible(padded);
    m_paddingText->setVisible(padded && strip->cols - strip->contentCols > strip->cols / 6);
    m_padding->topLeft->setCoords(strip->contentCols - 0.5, strip->bins - 0.5);
    m_padding->bottomRight->setCoords(strip->cols - 0.5, -0.5);
    m_paddingText->position->setCoords((strip->contentCols + strip->cols) / 2.0, strip->bins / 2.0);
}

} // namespace attnscope::widgets
