// The model's input and what comes back to the window: a model opening (every view cleared, then filled as results
// arrive), the text box's text run as the user types (or a picture, or an encoder-decoder model's source translated),
// the text's token line and perplexity, a session applied once its model and text are ready, and what every failed or
// cancelled job leaves on screen.
#pragma once

#include "compute/compute_controller.h"
#include "ui/session.h"
#include "ui/window_parts.h"

#include <QObject>
#include <QTimer>
#include <optional>

namespace attnscope::app {

class DockFitter;
class Generation;
class SelectionController;

class StreamController : public QObject {
    Q_OBJECT
public:
    StreamController(const WindowParts& parts, SelectionController* selection, DockFitter* docks);

    void setText(const QString& text); // into the text box, and run
    // An encoder-decoder model's source read with the typed target, or (generate) the target written by the model,
    // each written token shown as it comes.
    void requestTranslation(const QString& source, const QString& target, bool generate);
    static constexpr int kTranslationTokens = 64; // the longest target Translate writes
    // An encoder-decoder model's source sentence (the Translation tab's), translated when such a model is open.
    void setSource(const QString& text);
    void requestRun(); // the text box's text, or nothing on screen when it is empty
    // A session read from a file: its model opens now, its text and view are applied when they are ready.
    void openSession(const SessionState& s, std::shared_ptr<const core::ScanResult> scan);

signals:
    void modelShown(const ModelBundlePtr& m);

private:
    void onModelLoaded(const ModelBundlePtr& m);
    void openOnSample(const ModelBundlePtr& m); // the model's own sample text, when the user typed none
    void showImageDock(const ModelBundlePtr& m);
    // A speech model: the text box is its transcript (empty: the prompt alone, Generate transcribes), the grid its
    // last decoder layer's cross-attention over the recording's frames.
    void showSpeech(const ModelBundlePtr& m);
    // An encoder-decoder model replaces the Text tab with the Translation tab and translates its source; a
    // single-stream model brings the Text tab back.
    void showStreams(const ModelBundlePtr& m);
    void showTranslation(const TextResultPtr& r); // a translating model's run: the Translation tab and the status
    void onTextReady(const TextResultPtr& r);
    void onJobFailed(const JobFailure& f); // every failed or cancelled job, by its kind
    void connectSurprisal();
    void markComputing(); // the run is still going: grid, Text View and token count say they are the last text's

    WindowParts m_parts;
    SelectionController* m_selection;
    DockFitter* m_docks;
    Generation* m_generation = nullptr; // Generate, Regenerate and Stop of the Predictions panel
    QString m_lastRunText;  // the text last sent to run: a new text resets stepping
    QString m_sampleShown;  // the model's own sample text the box was last given ("" = none)
    bool m_runPending = false; // a text run asked for and not answered yet
    QTimer m_staleMark; // started with each run: marks the views out of date when the run takes long
    QString m_textBeforeSample; // what the user had typed when a model opened on its own sample, to give back
    QString m_tokenInfo;    // the text panel's token count and memory line, before any perplexity
    bool m_surprisalOn = false; // the Display dock's Surprisal toggle
    std::optional<SessionState> m_pendingSession; // applied when the session's model and text are ready
    ModelBundlePtr m_sessionModel; // that model once loaded: a text of the previous model (still running) is not it
    std::shared_ptr<const core::ScanResult> m_pendingScan;
};

} // namespace attnscope::app
