// Layer x relative-position heatmaps (the Transformer-XL paper's Figs. 5 and 7): one row per head grouped by
// layer, one column per distance; several panels side by side in one QCustomPlot (so a figure exports whole).
// Draws only; emits the head the user hovers or clicks.
#pragma once

#include "colour_maps.h"
#include "relpos_figure_data.h"

#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPAxisTickerText;
class QCPAxisRect;

namespace attnscope::widgets {

class RelposHeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit RelposHeatmapView(QWidget* parent = nullptr);
    void setData(RelposFigurePtr data);
    // What the view says while it has no data (a scan running, a profile being computed, none asked for yet).
    void setPlaceholder(const QString& text);
    const RelposFigurePtr& data() const { return m_data; }
    QCustomPlot* plot() const { return m_plot; }
    // Row label of a layer-major head index ("L1 H8").
    static QString headLabel(int index, int heads);
    // Head (layer-major index) and distance under a widget position, or (-1, -1).
    QPoint cellAt(const QPoint& widgetPos) const;
    double valueAt(int panel, int headIndex, int distance) const;
    // Every head row gets at least this many pixels: the minimum height grows with the rows (put the view in a
    // scroll area), and row labels are thinned to what fits. One pixel keeps a 48-head model's distance axis in a
    // 1280x800 window's bottom tab (31% of its height) without scrolling (each head still its own band; hovering names it).
    static constexpr int kMinRowHeight = 1;
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;
    // Row labels currently on the first panel's head axis (for tests).
    QStringList visibleRowLabels() const;

signals:
    void headClicked(int layer, int head);
    void cellHovered(int headIndex, int distance); // (-1, -1) when outside

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void updateRowLabels();
    int panelAt(const QPoint& plotPos) const;

    QCustomPlot* m_plot;
    RelposFigurePtr m_data;
    QString m_placeholder;
    std::vector<QCPAxisRect*> m_rects;
    std::vector<QCPColorMap*> m_maps;
    std::vector<QSharedPointer<QCPAxisTickerText>> m_rowTickers;
};

} // namespace attnscope::widgets
