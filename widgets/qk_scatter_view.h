// The query-key space plot: queries (circles) and keys (squares) of one head, coloured by kind or by position in the
// text; hover names a point, a click selects a token (emitted) and shows a selected query's strongest keys as lines.
#pragma once

#include "qk_scatter_data.h"

#include <QWidget>

namespace attnscope::widgets {

class QkScatterView : public QWidget {
    Q_OBJECT
public:
    enum class Colouring { Kind, Position };
    explicit QkScatterView(QWidget* parent = nullptr);
    void setData(QkScatterPtr data);
    const QkScatterPtr& data() const { return m_data; }
    void setColouring(Colouring c);
    void setPlaceholder(const QString& text);
    // Highlights every point of this token position (-1: none).
    void setSelectedPosition(int position);
    QSize sizeHint() const override { return {480, 320}; }

signals:
    void positionClicked(int position); // absolute token position, -1 for a click on empty space

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mousePressEvent(QMouseEvent*) override;

private:
    QRectF plotRect() const;
    QPointF toScreen(int i) const;
    int pointAt(const QPointF& p) const;

    QkScatterPtr m_data;
    QString m_placeholder;
    Colouring m_colouring = Colouring::Kind;
    int m_selected = -1;
    int m_hover = -1;
    float m_x0 = 0, m_x1 = 1, m_y0 = 0, m_y1 = 1;
};

} // namespace attnscope::widgets
