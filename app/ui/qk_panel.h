// The Query-Key Space dock: the selected head's queries and keys embedded in 2-D (PCA or t-SNE) with AttentionViz's
// normalisation, coloured by kind or position; a click selects a token (shown in the grid and the text view).
// Draws what it is handed; the embedding is computed on the background lane (ComputeController::requestQkSpace).
#pragma once

#include "qk_scatter_data.h"

#include <QWidget>

class QComboBox;

namespace attnscope::widgets {
class QkScatterView;
}

namespace attnscope::app {

class QkPanel : public QWidget {
    Q_OBJECT
public:
    explicit QkPanel(QWidget* parent = nullptr);
    bool tsne() const;
    void setData(widgets::QkScatterPtr data);
    void setMessage(const QString& message);
    widgets::QkScatterView* view() const { return m_view; }

signals:
    void methodChanged();                // recompute with the other method
    void positionClicked(int position);  // a token chosen in the plot (-1: none)
    void exported(const QString& path);  // a figure or the points were saved

private:
    void finishExport(const QString& path, const QString& error);
    QComboBox* m_method;
    QComboBox* m_colour;
    widgets::QkScatterView* m_view;
};

} // namespace attnscope::app
