// The Experts dock of a mixture-of-experts model: the selected layer's router over the shown text (tokens x experts,
// the chosen experts outlined), drawn by the token grid's own view, so it zooms, hovers and exports the same way.
// It wires itself to the compute controller: it asks for the routing of the shown text when it is on screen, keeps
// the answer for layer steps, and says what failed.
#pragma once

#include "data/results.h"
#include "grid_data.h"
#include "views/view_selection.h"

#include <QWidget>
#include <functional>

namespace attnscope::widgets {
class AttentionGridView;
}

namespace attnscope::app {

class ComputeController;

class ExpertsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ExpertsPanel(QWidget* parent = nullptr);
    // From now on the panel follows `compute`'s model and text, and `selection()` for the layer and segment.
    void attach(ComputeController* compute, std::function<ViewSelection()> selection);
    // The selection, the text or the model changed: show the router of the selected layer (routing the text first
    // when it has not been). Nothing is computed while the panel is not on screen.
    void refresh();
    void setGrid(widgets::GridDataPtr grid);
    void setMessage(const QString& text);
    widgets::AttentionGridView* view() const { return m_view; }

protected:
    void showEvent(QShowEvent* event) override;

private:
    widgets::AttentionGridView* m_view;
    ComputeController* m_compute = nullptr;
    std::function<ViewSelection()> m_selection;
    RoutingResultPtr m_routing; // the shown text's routing, for layer steps
};

} // namespace attnscope::app
