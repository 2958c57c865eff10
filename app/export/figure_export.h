// Writes a QCustomPlot figure to PNG (with a scale factor), SVG or PDF, chosen by the file extension.
#pragma once

#include <QString>
#include <memory>
#include <vector>

class QCustomPlot;
class QWidget;

namespace attnscope::core {
struct TextCapture;
}
namespace attnscope::widgets {
class AttentionGridView;
struct GridData;
using GridDataPtr = std::shared_ptr<const GridData>;
}

namespace attnscope::app {

struct FigureSize {
    int width = 0;   // logical pixels; 0 = the plot's current size (a grid: 1000)
    int height = 0;  // 0 = the plot's current height (a grid: the height that makes its cells square)
    double scale = 1.0; // PNG only: 2.0 doubles the pixel density (print / HiDPI)
    // The width in points the figure will be printed at (a paper's column: kColumnWidth): its text is sized to read at
    // kPrintedTextSize there. 0: text as on screen.
    double printedWidth = 0;
};

inline constexpr double kColumnWidth = 240;     // one column of a two-column paper (3.3 in), points
inline constexpr double kPageWidth = 504;       // the text width of a page (7 in)
inline constexpr double kPrintedTextSize = 8.5; // points: a paper's figure text

// Width of a grid figure when none is asked for.
inline constexpr int kDefaultGridFigureWidth = 1000;

// Returns an empty string on success, else a message naming the file and the problem.
QString exportFigure(QCustomPlot* plot, const QString& path, const FigureSize& size = {});

// Any widget painted as it draws itself (QPainter-based views such as the query-key space), by extension as above.
QString exportWidget(QWidget* widget, const QString& path, const FigureSize& size = {});

// Several plots side by side in one figure (each gets an equal share of `size`), by extension as above.
// `stacked`: one above another, each the full width and an equal share of the height.
QString exportComposite(const std::vector<QCustomPlot*>& plots, const QString& path, const FigureSize& size,
                        bool stacked = false);

// The token grid `data` as a figure drawn like `style` (colours, scale, values, highlight, the visible range when
// zoomed) but with nothing of the screen's state: no locked row, focus cell or hover, at the figure's own size
// (square cells unless `size` fixes the height), not the widget's.
QString exportGrid(const widgets::GridDataPtr& data, const widgets::AttentionGridView& style, const QString& path,
                   const FigureSize& size);

// The height at which `view`'s cells come out square at `width` (its visible range, its labels), clamped to a page.
int squareCellHeight(widgets::AttentionGridView& view, int width);

struct ViewSelection;
// One figure per head of `selection`'s layer into `folder` (NAME_layerL_headH.EXT), drawn like `style` (colours,
// scale, values, highlight, size). Returns "" or the first error.
QString exportAllHeads(const core::TextCapture& capture, const QString& modelName, const ViewSelection& selection,
                       const widgets::AttentionGridView& style, const QString& folder, const QString& extension);

} // namespace attnscope::app
