// Generation in the window: the Predictions panel's Generate, Regenerate and Stop, one token per step. A step takes the
// logits after the text's last token (the compute controller's nextTokenReady), chooses a token with the panel's
// sampling, appends it to the text and runs the text again (the capture reuses every earlier token's keys, so only
// the new token runs); the next logits continue the run until it has written what was asked or the user edits.
#pragma once

#include "audio/speech_settings.h"
#include "data/results.h"

#include <QObject>
#include <functional>
#include <random>

namespace attnscope::app {

class ComputeController;
class PredictionPanel;
class TextPanel;

class Generation : public QObject {
    Q_OBJECT
public:
    // `runText`: runs the text box's text (the window's one way to do so, stepping and previews included);
    // `status`: a line for the status bar.
    Generation(ComputeController* compute, PredictionPanel* predictions, TextPanel* text, std::function<void()> runText,
               std::function<void(const QString&)> status, QObject* parent = nullptr);
    // Generate in Predictions: writes `tokens` more tokens after the computed text, or says why it cannot.
    void generate(int tokens);
    // Writes `tokens` more tokens after the text.
    void start(int tokens);
    // Cuts the text after token `position` (from 0) and writes as many tokens again (at most 50): another continuation.
    void regenerateFrom(int position);
    void stop();
    bool running() const { return m_left > 0; }

signals:
    void started(); // a run begins: the window unlocks the grid's row (the bars follow the text's end)

private:
    void step(const NextTokenResultPtr& next);

    ComputeController* m_compute;
    PredictionPanel* m_predictions;
    TextPanel* m_text;
    std::function<void()> m_runText;
    std::function<void(const QString&)> m_status;
    int m_left = 0;              // tokens still to write
    // A speech model's generation settings, read once per model (not per written token).
    const ModelBundle* m_speechModel = nullptr;
    core::SpeechSettings m_speech;
    std::mt19937_64 m_generator; // the sampler's, seeded when a run starts
};

} // namespace attnscope::app
