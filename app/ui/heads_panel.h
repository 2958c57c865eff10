// The Heads dock: layer and head selectors, "average of the layer", the segment, and the overview of every head.
// The layer and head boxes are steppers: the arrow keys step there exactly as everywhere else (key_router.h).
#pragma once

#include "thumbnail_data.h"
#include "model/attention_model.h"
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

    // The model's sites (a row each) and what each one's grids are (heads; a convolution's channels), for the
    // spin boxes' ranges and the grouped-query note.
    void setModelShape(const core::ModelInfo& info);
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
    QLabel* m_headLabel;
    ViewSelection m_shown;
    bool m_updating = false;
    // Per site: its grids' count and noun, and whether the grouped-query note applies (attention sites).
    struct SiteShape {
        int heads = 1;
        QString noun;
        bool grouped = false;
    };
    std::vector<SiteShape> m_sites;
    void showSiteShape(int site);
};

} // namespace attnscope::app
