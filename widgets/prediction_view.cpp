// PredictionView: one QCPBars on a text ticker, value labels as item texts.
#include "prediction_view.h"

#include <QVBoxLayout>
#include <algorithm>
#include <numeric>
#include <qcustomplot.h>

namespace attnscope::widgets {

PredictionView::PredictionView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    setMinimumHeight(90); // small enough that the bottom tabs can shrink to the Text tab
    // The plot's own minimum follows its widest label: a narrow side panel would scroll sideways. The bars fit the
    // width they get (the title breaks, the ticks thin out).
    m_plot->setMinimumWidth(160);
    redraw();
}

void PredictionView::setData(PredictionPtr bars)
{
    m_data = std::move(bars);
    redraw();
}

void PredictionView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange) {
        m_plot->setFont(font()); // axes and labels are made from the plot's font at each redraw
        redraw();
    }
}

void PredictionView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (m_data) // the tick count follows the width
        redraw();
}

void PredictionView::setPlaceholder(const QString& text)
{
    m_placeholder = text;
    redraw();
}

QString PredictionView::fittedTitle(const QString& title, const QFont& font, int width)
{
    // One line always: a narrow panel (presentation mode's side panel) drops the parenthesis ("(token 15)"), then
    // elides.
    const QFontMetrics metrics(font);
    if (metrics.horizontalAdvance(title) <= width)
        return title;
    const QString shorter = title.section(QStringLiteral(" ("), 0, 0);
    return metrics.elidedText(shorter, Qt::ElideRight, width);
}

// Probability ticks that never collide: as many as fit the axis's width at its font, and in a narrow panel just 0
// and one round value.
void PredictionView::setProbabilityTicks(QCPAxis* prob, int axisW)
{
    const int tickRoom = QFontMetrics(prob->tickLabelFont()).horizontalAdvance(QStringLiteral("0.25")) * 2;
    if (axisW >= 3 * tickRoom) {
        prob->ticker()->setTickCount(std::min(5, axisW / std::max(1, tickRoom)));
        return;
    }
    auto ends = QSharedPointer<QCPAxisTickerText>::create();
    ends->addTick(0, QStringLiteral("0"));
    const double upper = prob->range().upper, round[] = {0.5, 0.25, 0.1, 0.05, 0.02, 0.01};
    for (double v : round)
        if (v <= upper * 0.9) {
            ends->addTick(v, QString::number(v));
            break;
        }
    prob->setTicker(ends);
}

void PredictionView::redraw()
{
    m_plot->clearPlottables();
    m_plot->clearItems();
    m_plot->plotLayout()->clear();
    auto* rect = new QCPAxisRect(m_plot);
    m_plot->plotLayout()->addElement(0, 0, rect);
    QCPAxis* tokens = rect->axis(QCPAxis::atLeft);
    QCPAxis* prob = rect->axis(QCPAxis::atBottom);
    if (!m_data || m_data->tokens.isEmpty()) {
        tokens->setVisible(false);
        prob->setVisible(false);
        auto* text = new QCPItemText(m_plot);
        text->setClipToAxisRect(false);
        text->position->setType(QCPItemPosition::ptAxisRectRatio);
        text->position->setAxisRect(rect);
        text->position->setCoords(0.5, 0.5);
        text->setText(m_placeholder);
        text->setColor(palette().color(QPalette::PlaceholderText));
        m_plot->replot();
        return;
    }
    // One bar per text line. When the rows are lower than the font (presentation mode's large font in a short panel),
    // fewer bars (at least five, the token in the text kept) at the full font: readable from the back of a room;
    // below five, the names and values shrink to the rows instead of running into each other.
    std::vector<int> shown(m_data->tokens.size());
    std::iota(shown.begin(), shown.end(), 0);
    QFont rowFont = font();
    const int lineHeight = QFontMetrics(rowFont).height();
    const double room = m_plot->height() - 4.0 * lineHeight; // less the title, the axis and its label
    const double row = 0.85 * lineHeight; // names may come a little closer than their line spacing
    const int fit = std::max(5, static_cast<int>(room / std::max(1.0, row)));
    if (fit < static_cast<int>(shown.size())) {
        const bool keepMarked = m_data->marked >= fit - 1;
        shown.resize(static_cast<std::size_t>(keepMarked ? fit - 1 : fit));
        if (keepMarked)
            shown.push_back(m_data->marked);
    }
    const int n = static_cast<int>(shown.size());
    if (room > 0 && row * n > room)
        rowFont.setPointSizeF(std::max(6.0, rowFont.pointSizeF() * room / (row * n)));
    tokens->setTickLabelFont(rowFont);
    // The names take at most 40% of the width, so a long one ("[MASK]" pieces, a long word) never squeezes the bars.
    const QFontMetrics rowMetrics(rowFont);
    const int maxNameW = std::max(40, static_cast<int>(0.4 * m_plot->width()));
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    int namesW = 0;
    for (int i = 0; i < n; ++i) { // most probable at the top
        const QString name = rowMetrics.elidedText(m_data->tokens[shown[static_cast<std::size_t>(i)]], Qt::ElideRight, maxNameW);
        namesW = std::max(namesW, rowMetrics.horizontalAdvance(name));
        ticker->addTick(n - 1 - i, name);
    }
    tokens->setTicker(ticker);
    tokens->setRange(-0.6, n - 0.4);
    tokens->grid()->setVisible(false);
    tokens->setTickLength(0, 0);
    tokens->setSubTicks(false);
    double top = 0;
    for (double p : m_data->probabilities)
        top = std::max(top, p);
    prob->setRange(0, std::max(0.05, std::min(1.0, top * 1.25)));
    // Room right of the axis for the value of a bar that reaches it (a probability near 1).
    rect->setMinimumMargins(QMargins(0, 0, QFontMetrics(rowFont).horizontalAdvance(QStringLiteral("100.0 %")) + 8, 0));
    // (the axis's own width: the plot less the token names and the values' margin)
    setProbabilityTicks(prob, m_plot->width() - namesW - rect->minimumMargins().right() - 24);
    prob->setLabel(tr("probability"));
    auto* plain = new QCPBars(tokens, prob);
    auto* marked = new QCPBars(tokens, prob); // the token actually at the position
    auto* cut = new QCPBars(tokens, prob);    // outside the sampler's cut-offs: never drawn by it
    for (auto* b : {plain, marked, cut}) {
        b->setWidth(0.7);
        b->setPen(Qt::NoPen);
    }
    plain->setBrush(QColor(68, 114, 196));
    marked->setBrush(QColor(237, 125, 49));
    marked->setName(tr("the token in the text"));
    cut->setBrush(QColor(68, 114, 196, 70));
    for (int i = 0; i < n; ++i) {
        const int at = shown[static_cast<std::size_t>(i)];
        const double p = m_data->probabilities[static_cast<std::size_t>(at)];
        const bool excluded = static_cast<std::size_t>(at) < m_data->excluded.size() && m_data->excluded[static_cast<std::size_t>(at)];
        (at == m_data->marked ? marked : excluded ? cut : plain)->addData(n - 1 - i, p);
        auto* label = new QCPItemText(m_plot);
        label->setClipToAxisRect(false);
        label->position->setAxes(prob, tokens);
        label->position->setCoords(p, n - 1 - i);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setPadding(QMargins(4, 0, 0, 0));
        label->setFont(rowFont);
        QString value = p >= 0.001 ? QString::number(100 * p, 'f', 1) + QStringLiteral(" %") : QStringLiteral("<0.1 %");
        if (at == m_data->marked && m_data->markedRank > 0)
            value += tr(" · rank %1").arg(m_data->markedRank);
        label->setText(value);
    }
    const QFont titleFont(font().family(), font().pointSize(), QFont::Bold);
    auto* title = new QCPTextElement(m_plot, fittedTitle(m_data->title, titleFont, m_plot->width() - 8), titleFont);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, title);
    m_plot->replot();
}

} // namespace attnscope::widgets
