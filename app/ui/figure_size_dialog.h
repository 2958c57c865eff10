// Asks for a figure's size before it is exported: width and height (or square cells for a grid) and, for PNG, the
// pixel density. The size is the figure's own, not the window's.
#pragma once

#include "export/figure_export.h"

#include <QSize>
#include <QString>
#include <optional>

class QWidget;

namespace attnscope::app {

struct FigureSizeChoice {
    QSize proposed{kDefaultGridFigureWidth, 800}; // shown first
    bool squareCells = false;                      // offer "square cells" (a grid): the height follows the width
};

// The chosen size for writing `path` (its extension decides whether a PNG density is asked), or nothing if cancelled.
std::optional<FigureSize> askFigureSize(QWidget* parent, const QString& path, const FigureSizeChoice& choice);

} // namespace attnscope::app
