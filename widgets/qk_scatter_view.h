// The query-key space plot: queries (circles) and keys (squares) of one head, coloured by kind or by position in the
// text; hover names a point in its context, a click selects a token (emitted) and shows a selected query's strongest
// keys as lines, a drag draws a lasso whose tokens are marked (emitted, to be shown in the grid and the text).
#pragma once

#include "qk_scatter_data.h"

#include <QPolygonF>
#include <QStringList>
#include <QWidget>

#include <vector>

namespace attnscope::widgets {

class QkScatterView : public QWidget {
    Q_OBJECT
public:
    // Kind: query or key; Position: place in the text (or corpus); Token: the ten most frequent tokens each in a colour
    // of their own (a head that treats a token alike gathers its colour), the rest grey.
    enum class Colouring { Kind, Position, Token };
    explicit QkScatterView(QWidget* parent = nullptr);
    void setData(QkScatterPtr data);
    const QkScatterPtr& data() const { return m_data; }
    void setColouring(Colouring c);
    void setPlaceholder(const QString& text);
    // Highlights every point of this token position (-1: none).
    void setSelectedPosition(int position);
    // Rings the points of these token positions (a lasso's, or kept across a recomputation); empty: none.
    void setMarkedPositions(std::vector<int> positions);
    const std::vector<int>& markedPositions() const { return m_marked; }
    // The tokens the Token colouring names (repeated ones, most frequent first, at most ten).
    const QStringList& frequentTokens() const { return m_topTokens; }
    QSize sizeHint() const override { return {480, 320}; }
    // The size an exported figure takes: 900 wide, the plot as tall as the points' own aspect asks (a scatter with
    // equal scales), whatever shape the dock has on screen.
    QSize figureSize() const;

signals:
    void positionClicked(int position); // absolute token position, -1 for a click on empty space
    void positionsMarked(const std::vector<int>& positions); // a lasso's tokens (sorted, unique), empty when cleared

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void mouseReleaseEvent(QMouseEvent*) override;

private:
    QRectF plotRect() const;
    QPointF toScreen(int i) const;
    int pointAt(const QPointF& p) const;
    QString context(int i) const; // the point's token with a few tokens either side
    void countTokens();           // the frequent tokens of the Token colouring (once per set of points)


    QkScatterPtr m_data;
    QString m_placeholder;
    Colouring m_colouring = Colouring::Kind;
    int m_selected = -1;
    int m_hover = -1;
    std::vector<int> m_marked;   // sorted token positions
    QStringList m_topTokens;       // the most frequent token texts, most frequent first (Token colouring)
    std::vector<int> m_tokenClass; // per point: its index in m_topTokens, -1 for the others
    QPolygonF m_lasso;           // while dragging
    QPointF m_pressAt{-1, -1};   // where the button went down (a click unless it moved)
    float m_x0 = 0, m_x1 = 1, m_y0 = 0, m_y1 = 1;
};

} // namespace attnscope::widgets
