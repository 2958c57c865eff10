// Every head's query-key space at once: a layers x heads matrix of small scatter plots (queries orange, keys blue, or
// coloured by position), so heads with similar geometry stand out; a click on a cell emits that head.
#pragma once

#include "qk_scatter_data.h"

#include <QWidget>

namespace attnscope::widgets {

class QkMatrixView : public QWidget {
    Q_OBJECT
public:
    explicit QkMatrixView(QWidget* parent = nullptr);
    void setData(QkMatrixPtr data);
    const QkMatrixPtr& data() const { return m_data; }
    void setColourByPosition(bool on);
    QSize sizeHint() const override { return {480, 320}; }
    // The size an exported figure takes: square cells of 140 pixels, whatever shape the dock has on screen.
    QSize figureSize() const;

signals:
    void headClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;

private:
    QRectF cellRect(int layer, int head) const;
    QkMatrixPtr m_data;
    bool m_byPosition = false;
};

} // namespace attnscope::widgets
