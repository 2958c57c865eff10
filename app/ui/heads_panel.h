// The Heads dock: layer and head selectors, "average of the layer", the segment, and the overview of every head.
// The layer and head boxes are steppers: the arrow keys step there exactly as everywhere else (key_router.h).
#pragma once

#include "thumbnail_data.h"
#include "views/view_selection.h"

#include <QWidget>

class QCheckBox;
class QLabel;
class QSpinBox;

namespace attnscope::widgets {
class HeadOverviewView;
}

namespace attnscope::app {

class HeadsPanel : public QWidget {
    Q_OBJECT
public:
    explicit HeadsPanel(QWidget* parent = nullptr);

    void setModelShape(int layers, int heads, int kvHeads);
    void setSelection(const ViewSelection& selection); // shows it without emitting
    void setSegments(int count, int shown);            // 0-based shown segment
    void setThumbnails(widgets::HeadThumbnailsPtr thumbnails);
    widgets::HeadOverviewView* overview() const { return m_overview; }
    QSpinBox* layerBox() const { return m_layer; }
    QSpinBox* headBox() const { return m_head; }

signals:
    void selectionEdited(int layer, int head, bool average); // 0-based
    void segmentChosen(int segment);                         // 0-based
    // A thumbnail was clicked: that head, or with Ctrl the current layer's heads with it added or removed (averaged).
    void headsChosen(int layer, const std::vector<int>& heads);

private:
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QSpinBox* m_segment;
    QCheckBox* m_average;
    QLabel* m_groups;
    widgets::HeadOverviewView* m_overview;
    ViewSelection m_shown;
    bool m_updating = false;
};

} // namespace attnscope::app
