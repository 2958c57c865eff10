// The Head Atlas dock: one row per head with sortable columns (figures.md, "Head atlas") and the heads' similarity
// matrix in clustered order. Clicking a row or a matrix cell picks that head. Asks for the atlas while it is seen
// and stale (a new text or scan), shows what it was computed from, exports the table (CSV, JSON) and opens the
// matrix as a figure.
#pragma once

#include "data/results.h"

#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace attnscope::widgets {
class AttentionGridView;
}

namespace attnscope::app {

class ComputeController;

class AtlasPanel : public QWidget {
    Q_OBJECT
public:
    explicit AtlasPanel(QWidget* parent = nullptr);
    // Wires the panel to `compute`: the atlas and its failure.
    void attach(ComputeController* compute);
    // The dock came to the front: the atlas is computed now if it is missing.
    void broughtToFront();

    void setModelName(const QString& name) { m_modelName = name; }
    void invalidate();                    // a new text, scan or model: the atlas is stale
    void setAtlas(AtlasResultPtr atlas);
    void setError(const QString& message);
    const AtlasResultPtr& atlas() const { return m_atlas; }
    QTableWidget* table() const { return m_table; }
    widgets::AttentionGridView* matrix() const { return m_matrix; }
    // Writes the table as CSV or JSON (by the extension); empty on success, else the error.
    QString exportTable(const QString& path) const;

signals:
    void atlasWanted();
    void headSelected(int layer, int head);
    void figureWanted(attnscope::app::FigurePtr figure); // the similarity matrix, for a window of its own

protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void fill();
    // Every column in view, the head column first: their natural widths, or shared out when the table is narrower
    // (no sideways scrolling that would take the head column out of view).
    void fitColumns();

    QLabel* m_info;
    QTableWidget* m_table;
    widgets::AttentionGridView* m_matrix;
    QPushButton* m_export;
    QPushButton* m_figure;
    QPushButton* m_byLayer; // Clark et al.'s Fig. 2
    AtlasResultPtr m_atlas;
    QString m_modelName;
    QString m_fullTitle; // the matrix's title for a figure of its own
    bool m_asked = false;
};

} // namespace attnscope::app
