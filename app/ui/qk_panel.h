// The Query-Key Space dock: the selected head's queries and keys embedded in 2-D (PCA or t-SNE) with AttentionViz's
// normalisation, coloured by kind or position; a click selects a token, a lasso marks several (shown in the grid and
// the text view).
// It wires itself to the compute controller (attach): it asks for the shown head's embedding (or every head's) when it
// is on screen and the head, text or method changes, and shows what arrives or what failed.
#pragma once

#include "analysis/qk_space.h"
#include "qk_scatter_data.h"
#include "views/view_selection.h"

#include <QWidget>

#include <functional>
#include <tuple>
#include <vector>

class QComboBox;
class QToolButton;

class QCheckBox;
class QStackedWidget;

namespace attnscope::widgets {
class QkScatterView;
class QkMatrixView;
}

namespace attnscope::app {

class ComputeController;

class QkPanel : public QWidget {
    Q_OBJECT
public:
    explicit QkPanel(QWidget* parent = nullptr);
    // From now on the panel follows `compute`'s text and `selection()` for the head and segment.
    void attach(ComputeController* compute, std::function<ViewSelection()> selection);
    // The head, the text or the method changed: compute what the panel shows (nothing while it is not on screen; the
    // all-heads matrix only for a new text, segment or method).
    void refresh();
    core::QkMethod method() const;
    bool allHeads() const; // the layers x heads matrix instead of one head
    // The corpus file whose first tokens the plot embeds instead of the text; empty: the text.
    QString corpus() const;
    // Transformer-XL: offer the position part (queries against the relative encodings R) beside the keys.
    void setPositionPartAvailable(bool available);
    bool positionPart() const; // the position part is chosen (and available)
    void setData(widgets::QkScatterPtr data);
    void setMatrix(widgets::QkMatrixPtr data);
    widgets::QkMatrixView* matrixView() const { return m_matrix; }
    void setMessage(const QString& message);
    void setEnlarged(bool large); // the Enlarge button follows the dock (docked back by its title bar too)
    widgets::QkScatterView* view() const { return m_view; }

    // The shown plot (one head or every head) as a figure file in its own shape; "" or a message naming the file.
    QString exportFigure(const QString& path);

signals:
    void methodChanged();                // recompute with the other method
    void positionClicked(int position);  // a token chosen in the plot (-1: none)
    void positionsMarked(const std::vector<int>& positions); // a lasso's tokens (empty: cleared)
    void exported(const QString& path);  // a figure or the points were saved
    void headChosen(int layer, int head); // a head clicked in the matrix (the panel goes back to one head)
    void enlargeToggled(bool large);      // the plot in a large window of its own, or back in its tab

protected:
    void showEvent(QShowEvent* event) override;

private:
    void finishExport(const QString& path, const QString& error);
    ComputeController* m_compute = nullptr;
    std::function<ViewSelection()> m_selection;
    std::tuple<const void*, int, core::QkMethod> m_matrixKey{nullptr, -1, core::QkMethod::Pca}; // what the matrix shows
    void chooseCorpus();
    QComboBox* m_source;
    int m_lastSource = 0; // the source shown before "Corpus file…" was picked
    QComboBox* m_method;
    QComboBox* m_part;
    QComboBox* m_colour;
    QToolButton* m_enlarge;
    QCheckBox* m_allHeads;
    widgets::QkScatterView* m_view;
    widgets::QkMatrixView* m_matrix;
    QStackedWidget* m_stack;
};

} // namespace attnscope::app
