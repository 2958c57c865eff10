// Token-by-token attention grid (QCustomPlot): rows = queries, columns = keys (memory first), values in cells,
// masked cells blank, top-fraction highlight, labels that stay readable at any zoom. Draws only; emits intent.
#pragma once

#include <memory>

#include "colour_maps.h"
#include "grid_data.h"

#include <QPointer>
#include <QSharedPointer>
#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPColorScale;
class QCPAxisTickerText;
class QCPMarginGroup;
class QCPTextElement;

namespace attnscope::widgets {

class GridOverlay;
class CrispColorMap;
class KeyStripPanel;

enum class Normalisation { Unit, PerGridMax, Log };

class AttentionGridView : public QWidget {
    Q_OBJECT
public:
    explicit AttentionGridView(QWidget* parent = nullptr);
    ~AttentionGridView() override;

    void setData(GridDataPtr data);
    const GridDataPtr& data() const { return m_data; }
    // What the empty grid says (e.g. "Computing attention…", or why there is nothing to show).
    void setPlaceholder(const QString& text);
    const QString& placeholder() const { return m_placeholder; }
    // The shown grid no longer matches the text (its computation was cancelled): the title says so in grey until the
    // next setData.
    // Marks the grid as belonging to an earlier text (greyed title with `why`, "Run to update" by default); new data
    // clears the mark.
    void setStale(bool stale, const QString& why = QString());
    bool isStale() const { return m_stale; }

    void setColourMap(ColourMap map);
    ColourMap colourMap() const { return m_colourMap; }
    void setNormalisation(Normalisation n);
    Normalisation normalisation() const { return m_normalisation; }
    void setShowValues(bool on);
    bool showValues() const { return m_showValues; }
    void setShowHighlight(bool on);
    bool showHighlight() const { return m_showHighlight; }
    // Larger fonts and thicker lines for a projector.
    void setPresentation(bool on);
    // Labels, title and values at `points` (9 on screen): an exported figure sized for the width it is printed at.
    void setTextSize(double points);
    // Locks a row (-1 = none); a locked row is outlined.
    void setLockedRow(int row);
    int lockedRow() const { return m_lockedRow; }
    // Marks the rows and columns of these token positions (tokens picked in another view, e.g. a lasso in query-key
    // space) with bars along the grid's left and top edges; empty: none.
    void setMarkedPositions(std::vector<int> positions);
    const std::vector<int>& markedPositions() const { return m_marked; }
    // Marks one cell (e.g. a pair picked in the text view) and scrolls it into view; (-1, -1) = none.
    void setFocusCell(int row, int col);
    QPoint focusCell() const { return m_focusCell; }
    void resetView();

    // For export and tests.
    QCustomPlot* plot() const { return m_plot; }
    // Tick labels currently shown on the key (x) / query (y) axis, position -> text.
    QMap<double, QString> visibleLabels(Qt::Orientation o) const;
    // Cell under a widget position, or (-1, -1).
    QPoint cellAt(const QPoint& widgetPos) const;
    // Text printed in a cell when values are on ("0.42"); empty for masked cells.
    static QString cellText(float value);
    // Point size of the cell values for cells of this size (0 = too small to print).
    double valueFontSize(double cellWidth, double cellHeight) const;

signals:
    void cellHovered(int row, int col); // (-1, -1) when the mouse leaves the cells
    void cellClicked(int row, int col, Qt::KeyboardModifiers modifiers);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void applyTextSize(double points, bool bold);
    void rebuild();
    void updateColours();
    // Tick labels for the cells' current size; true when they changed (a replot is then needed to draw them).
    bool updateTicks();
    QString tooltipFor(int row, int col) const;

    QCustomPlot* m_plot = nullptr;
    CrispColorMap* m_map = nullptr;
    QCPColorScale* m_scale = nullptr;
    QCPMarginGroup* m_margins = nullptr;
    QCPTextElement* m_title = nullptr;
    GridOverlay* m_overlay = nullptr;
    std::unique_ptr<KeyStripPanel> m_strip; // the keys' picture under the cells (a spectrogram), when the data has one
    QSharedPointer<QCPAxisTickerText> m_xTicker, m_yTicker;
    GridDataPtr m_data;
    ColourMap m_colourMap = ColourMap::Viridis;
    Normalisation m_normalisation = Normalisation::Unit;
    bool m_showValues = true;
    bool m_showHighlight = true;
    bool m_presentation = false;
    double m_valueTextScale = 1; // setTextSize's points over the screen's 9
    int m_lockedRow = -1;
    std::vector<int> m_marked; // sorted token positions
    QPoint m_focusCell{-1, -1};
    QString m_placeholder;
    bool m_stale = false;
    QPoint m_pressPos;          // a press that moves further than a few pixels is a pan, not a click
    bool m_pressOnCell = false;
    friend class GridOverlay;
};

} // namespace attnscope::widgets
