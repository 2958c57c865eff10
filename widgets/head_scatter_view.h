// The all-heads scatter: every head a point at two metrics, its colour a third (viridis, with a legend of the colour's
// range); hover names the head and its values, a click emits the head's index.
#pragma once

#include "head_scatter_data.h"

#include <QWidget>

namespace attnscope::widgets {

class HeadScatterView : public QWidget {
    Q_OBJECT
public:
    explicit HeadScatterView(QWidget* parent = nullptr);
    void setData(HeadScatterPtr data);
    const HeadScatterPtr& data() const { return m_data; }
    void setSelected(int index); // ringed; -1: none
    QSize sizeHint() const override { return {520, 420}; }

signals:
    void pointClicked(int index);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mousePressEvent(QMouseEvent*) override;

private:
    QRectF plotRect() const;
    QPointF toScreen(int i) const;
    int pointAt(const QPointF& p) const;
    HeadScatterPtr m_data;
    double m_x0 = 0, m_x1 = 1, m_y0 = 0, m_y1 = 1, m_c0 = 0, m_c1 = 1;
    int m_selected = -1;
};

} // namespace attnscope::widgets
