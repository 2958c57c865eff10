// The Analysis and Paper Figures menus' work: each analysis of the shown text checked against the model (a clear box
// when it does not apply), asked of the compute controller, and its figure shown in a window whose cells lead back to
// the grid; the patching, heads-over-a-corpus and mechanism windows; corpus scans and model comparison.
#pragma once

#include "compute/compute_controller.h"
#include "export/figure_export.h"
#include "ui/session.h"
#include "ui/window_parts.h"

#include <QObject>
#include <QPointer>

namespace attnscope::app {

class FigureWindow;
class HeadContextsWindow;
class MechanismWindow;
class PatchingWindow;
class SelectionController;
class DockFitter;

class AnalysisLauncher : public QObject {
    Q_OBJECT
public:
    AnalysisLauncher(const WindowParts& parts, SelectionController* selection, DockFitter* docks);

    void showRollout();
    void showWordTimings(); // a speech model's transcript timed over its recording, the heads ranked
    void showLogitLens();
    // Each head's share of the logit of the token after the locked query row (or the text's last token).
    void showLogitAttribution();
    void showAblation();
    // The text by sentences (reasoning traces): the shown head, receiver heads, attention suppression.
    void showSentences();
    void showPositionBias();
    // The paper's figures in a window of their own (5: every head by distance, 6: the widest heads' grids, 7: terms).
    FigureWindow* showPaperFigure(int figure);
    FigureWindow* openFigureWindow(const PaperFigure& figure);
    MechanismWindow* showMechanism(); // "How this head computes", following the grid's head and query
    // The activation-patching window (one at a time), its clean prompt the text on screen when it opens.
    PatchingWindow* showPatching();
    // A session's patching window as it was (not run again until asked); what a session saves of it.
    void restorePatching(const PatchingRequest& request);
    PatchingRequest patchingRequest() const;
    HeadContextsWindow* showHeadContexts(); // every head over a corpus (the text on screen until a file is chosen)
    // Corpus scan on the background thread (empty path: the built-in sample text); the heatmap fills in as it runs.
    void startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms);
    void openScanResult(const QString& path);
    void saveScanResult(const QString& path);
    void compareModels(const QStringList& specs);

private:
    void connectFigures();
    // True when a model has computed a text; otherwise says so in a box titled `analysis`.
    bool haveText(const QString& analysis);
    // An analysis of one text asked of an encoder-decoder model: says where its attention is instead (true).
    bool refusesTwoStreams(const QString& analysis);
    void followMechanism(); // tells the mechanism window the selected head and query when it is open
    PatchingWindow* patchingWindow(); // made on first use
    void selectHead(int layer, int head);

    WindowParts m_parts;
    SelectionController* m_selection;
    DockFitter* m_docks;
    MechanismWindow* m_mechanism = nullptr;
    QPointer<PatchingWindow> m_patching; // deletes itself on close
    QPointer<HeadContextsWindow> m_headContexts;
};

} // namespace attnscope::app
