// Generation: one token per step, through the text box and the compute controller.
#include "ui/generation.h"

#include "analysis/token_predictions.h"
#include "compute/compute_controller.h"
#include "tokenize/tokenizer.h"
#include "ui/prediction_panel.h"
#include "ui/text_panel.h"

#include <algorithm>

namespace attnscope::app {

Generation::Generation(ComputeController* compute, PredictionPanel* predictions, TextPanel* text,
                       std::function<void()> runText, std::function<void(const QString&)> status, QObject* parent)
    : QObject(parent)
    , m_compute(compute)
    , m_predictions(predictions)
    , m_text(text)
    , m_runText(std::move(runText))
    , m_status(std::move(status))
{
    connect(compute, &ComputeController::nextTokenReady, this, &Generation::step);
    connect(predictions, &PredictionPanel::generateRequested, this, &Generation::generate);
    connect(predictions, &PredictionPanel::regenerateRequested, this, &Generation::regenerateFrom);
    connect(predictions, &PredictionPanel::stopRequested, this, &Generation::stop);
    connect(text, &TextPanel::edited, this, &Generation::stop);
}

void Generation::generate(int tokens)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    if (!m->info().can.nextTokenLoss) {
        m_status(tr("%1 does not predict next tokens: it cannot generate").arg(m->displayName));
        return;
    }
    if (!m_compute->textResult()) { // nothing computed: an empty box, or the text still running
        m_status(m_text->text().trimmed().isEmpty()
                     ? tr("Nothing to continue: type the beginning of a text in the Text dock, then Generate")
                     : tr("The text is still being computed: Generate again when its grid is shown"));
        return;
    }
    start(tokens);
    // The box keeps the keyboard: Ctrl+Z right after clicking Generate takes the written token back.
    m_text->editor()->setFocus(Qt::OtherFocusReason);
    m_compute->requestNextToken(-1); // the step follows when the logits after the text arrive
}

void Generation::start(int tokens)
{
    m_left = tokens;
    m_generator.seed(m_predictions->seed());
    m_predictions->setGenerating(true);
    emit started();
}

void Generation::stop()
{
    m_left = 0;
    m_predictions->setGenerating(false);
}

void Generation::step(const NextTokenResultPtr& next)
{
    const auto r = m_compute->textResult();
    // Only the logits after the current text's last token continue a run: the text the box holds now (a text just cut
    // for regeneration has not run yet, and the logits after the longer one must not extend it).
    if (m_left <= 0 || !r || next->text != r || next->position + 1 != static_cast<int>(r->capture->tokens.size()) ||
        r->capture->text != m_text->text().toStdString())
        return;
    auto sampling = m_predictions->sampling();
    if (!m_predictions->allowsControlTokens())
        sampling.excluded = r->model->controlIds;
    std::int32_t end = -1;
    if (r->model->info().can.audio) { // a speech model: its generation config's suppressions, and its end token
        if (m_speechModel != r->model.get()) {
            m_speech = core::readSpeechSettings(r->model->loaded.folder, r->model->info());
            m_speechModel = r->model.get();
        }
        const auto& speech = m_speech;
        sampling.excluded = speech.suppress;
        if (m_text->text().trimmed().isEmpty())
            sampling.excluded.insert(sampling.excluded.end(), speech.suppressAtBegin.begin(), speech.suppressAtBegin.end());
        end = speech.end;
    }
    const auto id = core::chooseToken(next->logits, sampling, m_generator);
    if (id == end) { // the transcript is complete
        stop();
        m_status(tr("The model ended its transcript."));
        return;
    }
    if (--m_left == 0)
        m_predictions->setGenerating(false);
    m_text->appendGenerated(QString::fromStdString(r->model->tokenizer->textOf(id)));
    m_runText();
}

void Generation::regenerateFrom(int position)
{
    const auto r = m_compute->textResult();
    if (!r || !r->model->info().can.nextTokenLoss)
        return;
    const auto& tokens = r->capture->tokens;
    if (position < 0 || position + 1 >= static_cast<int>(tokens.size()))
        return;
    // Where the token ends in the text (a special token added around it has no span: the last one before it that has).
    int p = position;
    while (p >= 0 && tokens[static_cast<std::size_t>(p)].end == 0)
        --p;
    if (p < 0) {
        m_status(tr("Choose a token of the text to regenerate from (a row of the grid)"));
        return;
    }
    const int count = std::clamp(static_cast<int>(tokens.size()) - 1 - position, 1, 50);
    m_text->cutAfter(tokens[static_cast<std::size_t>(p)].end);
    start(count);
    m_status(tr("Regenerating %n token(s) after token %1", "", count).arg(position + 1));
    m_runText(); // the steps follow when the cut text's logits arrive
}

} // namespace attnscope::app
