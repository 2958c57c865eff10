// Layer x relative-position heatmaps (the Transformer-XL paper's Figs. 5 and 7): one row per head grouped by
// layer, one column per distance; several panels side by side in one QCustomPlot (so a figure exports whole).
// Draws only; emits the head the user hovers or clicks.
#pragma once

#include "colour_maps.h"

#include <QString>
#include <QWidget>
#include <memory>
#include <vector>

class QCustomPlot;
class QCPColorMap;
class QCPAxisRect;

namespace attnscope::widgets {

struct RelposPanel {
    QString title;             // e.g. "full attention", "term (b)"
    int layers = 0, heads = 0, distances = 0;
    std::vector<float> values; // [layers * heads, distances], layer-major
};

struct RelposFigureData {
    QString title;
    std::vector<RelposPanel> panels;
    // Display order of the head rows (indices into layer-major rows); empty = by layer.
    std::vector<int> rowOrder;
    bool log = false;          // logarithmic colour scale
    int maxDistance = -1;      // show distances 0..maxDistance (-1: all)
};
using RelposFigurePtr = std::shared_ptr<const RelposFigureData>;

class RelposHeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit RelposHeatmapView(QWidget* parent = nullptr);
    void setData(RelposFigurePtr data);
    const RelposFigurePtr& data() const { return m_data; }
    QCustomPlot* plot() const { return m_plot; }
    // Row label of a layer-major head index ("L1 H8").
    static QString headLabel(int index, int heads);
    // Head (layer-major index) and distance under a widget position, or (-1, -1).
    QPoint cellAt(const QPoint& widgetPos) const;
    double valueAt(int panel, int headIndex, int distance) const;

signals:
    void headClicked(int layer, int head);
    void cellHovered(int headIndex, int distance); // (-1, -1) when outside

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    int panelAt(const QPoint& plotPos) const;

    QCustomPlot* m_plot;
    RelposFigurePtr m_data;
    std::vector<QCPAxisRect*> m_rects;
    std::vector<QCPColorMap*> m_maps;
};

} // namespace attnscope::widgets
