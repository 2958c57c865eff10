// The Experts dock of a mixture-of-experts model: the selected layer's router over the shown text (tokens x experts,
// the chosen experts outlined), drawn by the token grid's own view, so it zooms, hovers and exports the same way.
#pragma once

#include "grid_data.h"

#include <QWidget>

namespace attnscope::widgets {
class AttentionGridView;
}

namespace attnscope::app {

class ExpertsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ExpertsPanel(QWidget* parent = nullptr);
    void setGrid(widgets::GridDataPtr grid);
    void setMessage(const QString& text);
    widgets::AttentionGridView* view() const { return m_view; }

private:
    widgets::AttentionGridView* m_view;
};

} // namespace attnscope::app
