// File choosers that return a path with the chosen type's extension (a name typed without one gets it added).
#pragma once

#include <QString>
#include <QStringList>

class QWidget;

namespace attnscope::app {

// PNG, SVG or PDF; `baseName` is proposed without extension.
QString askFigurePath(QWidget* parent, const QString& title, const QString& baseName);
// A model: a folder (typed or chosen; one holding config.json or a .gguf opens as it is instead of being entered), a
// .gguf file, or a checkpoint with config.json beside it. A chosen config.json gives its folder. Empty if cancelled.
QString askModelPath(QWidget* parent, const QString& title);
// A text file to read (a text to analyse, a corpus); empty if cancelled.
QString askTextFile(QWidget* parent, const QString& title);
// CSV, NPY or JSON; `types` narrows the choice (e.g. {"csv", "json"} for a table).
QString askDataPath(QWidget* parent, const QString& title, const QString& baseName, const QStringList& types = {});
// Save dialog for one type: `filter` like "attnscope sessions (*.attnscope)", `extension` like "attnscope".
QString askSavePath(QWidget* parent, const QString& title, const QString& proposed, const QString& filter,
                    const QString& extension);

} // namespace attnscope::app
