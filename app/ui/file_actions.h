// The File menu's work (and drag and drop's): texts and pictures opened into the text box, sessions saved and
// reopened, the grid exported as a figure, its data, every head of its layer, or an offline HTML page. Each returns
// "" or the problem, naming the file; the menu shows it.
#pragma once

#include "export/figure_export.h"
#include "ui/window_parts.h"

#include <QObject>
#include <QString>

namespace attnscope::app {

class AnalysisLauncher;
class SelectionController;
class StreamController;

class FileActions : public QObject {
    Q_OBJECT
public:
    FileActions(const WindowParts& parts, SelectionController* selection, StreamController* streams,
                AnalysisLauncher* analyses);

    QString openTextFile(const QString& path);
    // A picture for the open vision model (a text model says it reads text, in a box).
    void openImage(const QString& path);
    // A recording for the open speech model (Whisper): heard with the transcript in the text box.
    void openAudio(const QString& path);
    // A dropped file: a text file becomes the text, a picture the picture, a session reopens; anything else is taken
    // as a model (folder, config, .gguf, PyTorch checkpoint).
    QString openDropped(const QString& path);
    QString saveSession(const QString& path);
    QString openSession(const QString& path);
    // The grid as a figure: no screen state, `size` or 1000 wide with square cells.
    QString exportFigureTo(const QString& path, const FigureSize& size = {});
    QString exportDataTo(const QString& path);
    // One figure per head of the current layer into `folder`.
    QString exportAllHeadsTo(const QString& folder, const QString& extension = QStringLiteral("png"));
    // The shown layer with all its heads as a page anyone opens offline (needs a text or a translation).
    QString exportPageTo(const QString& path);
    bool canExportPage() const;

private:
    void showImageDock(); // the Image dock in front
    WindowParts m_parts;
    SelectionController* m_selection;
    StreamController* m_streams;
    AnalysisLauncher* m_analyses;
};

} // namespace attnscope::app
