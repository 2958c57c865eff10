// File choosers that return a path with the chosen type's extension (a name typed without one gets it added).
#pragma once

#include <QString>

class QWidget;

namespace attnscope::app {

// PNG, SVG or PDF; `baseName` is proposed without extension.
QString askFigurePath(QWidget* parent, const QString& title, const QString& baseName);
// CSV, NPY or JSON.
QString askDataPath(QWidget* parent, const QString& title, const QString& baseName);
// Save dialog for one type: `filter` like "attnscope sessions (*.attnscope)", `extension` like "attnscope".
QString askSavePath(QWidget* parent, const QString& title, const QString& proposed, const QString& filter,
                    const QString& extension);

} // namespace attnscope::app
