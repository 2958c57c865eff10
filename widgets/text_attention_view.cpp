// TextAttentionView: WordFlow lays words out like text and paints attention tints; a table of top pairs.
#include "text_attention_view.h"

#include "colour_maps.h"
#include "position_set.h"
#include "label_text.h"

#include <QHeaderView>
#include <QMouseEvent>
#include <QPainter>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace attnscope::widgets {

namespace {
// What the view shows of a token: measuring and drawing cost grows with the text, so a 1 MB token is cut first
// (nothing wider than the view can be read anyway).
QString shown(const QString& label)
{
    return cutLabel(label, 120);
}
} // namespace

class WordFlow : public QWidget {
public:
    explicit WordFlow(TextAttentionView* owner)
        : QWidget(owner)
        , m_owner(owner)
    {
        setMouseTracking(true);
        setMinimumHeight(60);
    }
    void setData(GridDataPtr d)
    {
        m_data = std::move(d);
        if (m_focus >= (m_data ? m_data->cols : 0))
            m_focus = -1;
        relayout();
        update();
    }
    int focus() const { return m_focus; }
    void setSurprisal(std::vector<double> bits)
    {
        m_bits = std::move(bits);
        update();
    }
    // Surprisal in bits of the token in column c, NaN when unknown.
    double bitsOf(int c) const
    {
        const int pos = m_data ? m_data->colPosition(c) : -1;
        return pos >= 0 && pos < static_cast<int>(m_bits.size()) ? m_bits[static_cast<std::size_t>(pos)]
                                                                 : std::nan("");
    }
    void setFocusColumn(int c)
    {
        m_focus = c;
        update();
    }
    const std::vector<int>& marked() const { return m_marked; }
    void setMarked(std::vector<int> positions)
    {
        m_marked = sortedPositions(std::move(positions));
        update();
    }
    int rowOfColumn(int col) const
    {
        if (!m_data || col < 0)
            return -1;
        const int pos = m_data->colPosition(col);
        const auto it = std::find(m_data->rowPositions.begin(), m_data->rowPositions.end(), pos);
        return it == m_data->rowPositions.end() ? -1 : static_cast<int>(it - m_data->rowPositions.begin());
    }

protected:
    void resizeEvent(QResizeEvent*) override { relayout(); }
    // Word boxes are measured in the widget's font: a font change (presentation mode's larger one, and back) lays
    // them out again, else words keep the other font's spacing.
    void changeEvent(QEvent* e) override
    {
        if (e->type() == QEvent::FontChange) {
            relayout();
            update();
        }
        QWidget::changeEvent(e);
    }
    void paintEvent(QPaintEvent*) override
    {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        if (!m_data) {
            p.setPen(Qt::gray);
            p.drawText(rect(), Qt::AlignCenter, tr("No text yet"));
            return;
        }
        const int row = rowOfColumn(m_active >= 0 ? m_active : m_focus);
        float rowMax = 0;
        if (row >= 0)
            for (int c = 0; c < m_data->cols; ++c)
                if (!std::isnan(m_data->at(row, c)))
                    rowMax = std::max(rowMax, m_data->at(row, c));
        for (int c = 0; c < m_data->cols; ++c) {
            const QRect r = m_boxes.value(c);
            if (row < 0 && !std::isnan(bitsOf(c))) {
                // Surprisal: 0 bits white, 16 bits and more full violet (a rare word among 65,000 is about 16).
                QColor col(110, 70, 200);
                col.setAlphaF(std::clamp(bitsOf(c) / 16.0, 0.0, 1.0) * 0.8);
                p.fillRect(r.adjusted(-2, 0, 2, 0), col);
            }
            if (row >= 0) {
                const float v = m_data->at(row, c);
                if (!std::isnan(v) && rowMax > 0) {
                    // Strength as colour (scaled to the row's maximum so weak rows stay visible).
                    QColor col = QColor(220, 60, 30);
                    col.setAlphaF(std::clamp(v / rowMax, 0.0f, 1.0f) * 0.85);
                    p.fillRect(r.adjusted(-2, 0, 2, 0), col);
                }
            }
            if (std::binary_search(m_marked.begin(), m_marked.end(), m_data->colPosition(c))) {
                p.setPen(QPen(QColor(0, 150, 140), 2));
                p.setBrush(Qt::NoBrush);
                p.drawRoundedRect(QRectF(r).adjusted(-2, 0, 2, 0), 3, 3);
            }
            const bool isQuery = rowOfColumn(c) >= 0;
            p.setPen(c == (m_active >= 0 ? m_active : m_focus) ? QColor(0, 0, 160) : (isQuery ? Qt::black : Qt::gray));
            QFont f = font();
            f.setBold(c == (m_active >= 0 ? m_active : m_focus));
            f.setItalic(!isQuery);
            p.setFont(f);
            p.drawText(r, Qt::AlignCenter, QFontMetrics(f).elidedText(shown(m_data->colLabels.value(c)), Qt::ElideRight, r.width()));
        }
    }
    void mouseMoveEvent(QMouseEvent* e) override
    {
        const int c = hit(e->pos());
        if (c != m_active) {
            m_active = c;
            setToolTip(c >= 0 && !std::isnan(bitsOf(c))
                           ? tr("%1: surprisal %2 bits (p = %3)")
                                 .arg(shown(m_data->colLabels.value(c)))
                                 .arg(bitsOf(c), 0, 'f', 1)
                                 .arg(std::exp2(-bitsOf(c)), 0, 'g', 3)
                           : QString());
            update();
            emit m_owner->tokenHovered(m_data && c >= 0 ? m_data->colPosition(c) : -1);
        }
    }
    void leaveEvent(QEvent*) override
    {
        m_active = -1;
        update();
        emit m_owner->tokenHovered(-1);
    }
    void mousePressEvent(QMouseEvent* e) override
    {
        const int c = hit(e->pos());
        m_focus = c == m_focus ? -1 : c;
        update();
    }

private:
    int hit(const QPoint& pt) const
    {
        for (int c = 0; c < m_boxes.size(); ++c)
            if (m_boxes[c].adjusted(-2, 0, 2, 0).contains(pt))
                return c;
        return -1;
    }
    void relayout()
    {
        m_boxes.clear();
        if (!m_data)
            return;
        const QFontMetrics fm(font());
        int x = 6, y = 6;
        const int h = fm.height() + 6;
        for (int c = 0; c < m_data->cols; ++c) {
            // A word wider than the view is cut to it (drawn elided) instead of running off the edge.
            const int w = std::min(fm.horizontalAdvance(shown(m_data->colLabels.value(c))) + 8, std::max(40, width() - 12));
            const bool secondText = c == m_data->secondCol && c > 0; // text B of a pair starts a paragraph
            if ((x + w > width() - 6 && x > 6) || secondText) {
                if (secondText)
                    y += h / 2;
                x = 6;
                y += h + 4;
            }
            m_boxes.push_back(QRect(x, y, w, h));
            x += w + 4;
        }
        setMinimumHeight(std::min(y + h + 8, 400));
    }

    TextAttentionView* m_owner;
    GridDataPtr m_data;
    QVector<QRect> m_boxes;
    int m_active = -1; // hovered
    int m_focus = -1;           // clicked
    std::vector<double> m_bits; // surprisal by absolute position
    std::vector<int> m_marked;  // sorted token positions outlined
};

TextAttentionView::TextAttentionView(QWidget* parent)
    : QWidget(parent)
    , m_flow(new WordFlow(this))
    , m_table(new QTableWidget(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_flow);
    split->addWidget(m_table);
    layout->addWidget(split);
    m_table->setColumnCount(3);
    m_table->setHorizontalHeaderLabels({tr("from"), tr("to"), tr("strength %")});
    // The dock is narrow: the words share the width, the number takes what it needs (no horizontal scrolling).
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    m_table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int tableRow, int) {
        const auto* from = m_table->item(tableRow, 0);
        if (from)
            emit pairActivated(from->data(Qt::UserRole).toInt(), from->data(Qt::UserRole + 1).toInt());
    });
}

std::vector<TextAttentionView::Pair> TextAttentionView::strongestPairs(const GridData& g, int count, bool skipSelf)
{
    std::vector<Pair> all;
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c) {
            const float v = g.at(r, c);
            if (std::isnan(v))
                continue;
            if (skipSelf && g.rowPosition(r) == g.colPosition(c))
                continue;
            all.push_back({r, c, v});
        }
    const auto n = std::min<std::size_t>(static_cast<std::size_t>(count), all.size());
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                      [](const Pair& a, const Pair& b) { return a.value > b.value; });
    all.resize(n);
    return all;
}

void TextAttentionView::setData(GridDataPtr grid)
{
    m_data = std::move(grid);
    m_flow->setData(m_data);
    m_table->setRowCount(0);
    if (!m_data)
        return;
    // Raw scores and an implicit map's weights are not shares of attention: say what they are, print them as they are.
    const bool weights = m_data->signedWeights || (m_data->fromZero && !m_data->diverging);
    const bool scores = m_data->diverging || weights;
    m_table->setHorizontalHeaderLabels({tr("from"), tr("to"), weights ? tr("weight") : scores ? tr("score") : tr("strength %")});
    const auto pairs = strongestPairs(*m_data, 20, true);
    m_table->setRowCount(static_cast<int>(pairs.size()));
    for (int i = 0; i < static_cast<int>(pairs.size()); ++i) {
        const auto& p = pairs[static_cast<std::size_t>(i)];
        auto* from = new QTableWidgetItem(shown(m_data->rowLabels.value(p.row)));
        from->setData(Qt::UserRole, p.row);
        from->setData(Qt::UserRole + 1, p.col);
        from->setToolTip(tr("Click to show this pair in the grid"));
        m_table->setItem(i, 0, from);
        m_table->setItem(i, 1, new QTableWidgetItem(shown(m_data->colLabels.value(p.col))));
        auto* v = new QTableWidgetItem(scores ? QString::number(static_cast<double>(p.value), 'f', 2)
                                              : QString::number(100.0 * p.value, 'f', 1));
        v->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(i, 2, v);
    }
}

void TextAttentionView::setSurprisal(std::vector<double> bitsByPosition)
{
    m_flow->setSurprisal(std::move(bitsByPosition));
}

void TextAttentionView::setFocusColumn(int col)
{
    m_flow->setFocusColumn(col);
}

void TextAttentionView::setMarkedPositions(std::vector<int> positions)
{
    m_flow->setMarked(std::move(positions));
}

const std::vector<int>& TextAttentionView::markedPositions() const
{
    return m_flow->marked();
}

int TextAttentionView::focusColumn() const
{
    return m_flow->focus();
}

} // namespace attnscope::widgets
