// Writes a QCustomPlot figure to PNG (with a scale factor), SVG or PDF, chosen by the file extension.
#pragma once

#include <QString>
#include <vector>

class QCustomPlot;
class QWidget;

namespace attnscope::core {
struct TextCapture;
}
namespace attnscope::widgets {
class AttentionGridView;
}

namespace attnscope::app {

struct FigureSize {
    int width = 0;   // logical pixels; 0 = the plot's current size
    int height = 0;
    double scale = 1.0; // PNG only: 2.0 doubles the pixel density (print / HiDPI)
};

// Returns an empty string on success, else a message naming the file and the problem.
QString exportFigure(QCustomPlot* plot, const QString& path, const FigureSize& size = {});

// Any widget painted as it draws itself (QPainter-based views such as the query-key space), by extension as above.
QString exportWidget(QWidget* widget, const QString& path, const FigureSize& size = {});

// Several plots side by side in one figure (each gets an equal share of `size`), by extension as above.
QString exportComposite(const std::vector<QCustomPlot*>& plots, const QString& path, const FigureSize& size);

struct ViewSelection;
// One figure per head of `selection`'s layer into `folder` (NAME_layerL_headH.EXT), drawn like `style` (colours,
// scale, values, highlight, size). Returns "" or the first error.
QString exportAllHeads(const core::TextCapture& capture, const QString& modelName, const ViewSelection& selection,
                       const widgets::AttentionGridView& style, const QString& folder, const QString& extension);

} // namespace attnscope::app
