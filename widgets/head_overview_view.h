// Overview of all layers x heads as small cached thumbnails; click selects a head, Ctrl-click adds heads
// (the grid then shows their average). Draws only; emits the user's choice.
#pragma once

#include "thumbnail_data.h"

#include <QWidget>
#include <vector>

namespace attnscope::widgets {

class HeadOverviewView : public QWidget {
    Q_OBJECT
public:
    explicit HeadOverviewView(QWidget* parent = nullptr);
    void setThumbnails(HeadThumbnailsPtr thumbs);
    // 0-based; empty heads = all heads of the layer selected (average).
    void setSelection(int layer, const std::vector<int>& heads);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    // The height that shows every layer with thumbnails as large as `width` allows (no taller than needed).
    int heightForWidth(int width) const override;
    bool hasHeightForWidth() const override { return m_thumbs != nullptr; }
    // Cell rectangle of a head (for tests and hit testing).
    QRect cellRect(int layer, int head) const;

signals:
    void headClicked(int layer, int head, bool additive);

protected:
    int labelW() const;
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override; // tooltips of the layer labels (local or global)

private:
    int cellSize() const;
    int windowOf(int layer) const; // the layer's sliding window, 0 for a global one (or a model of one kind)
    int gap() const;          // pixels between thumbnails
    int smallestCell() const; // the least thumbnail side the layout asks for
    HeadThumbnailsPtr m_thumbs;
    int m_layer = 0;
    std::vector<int> m_heads{0};
};

} // namespace attnscope::widgets
