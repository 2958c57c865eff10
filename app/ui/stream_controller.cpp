// StreamController implementation.
#include "ui/stream_controller.h"

#include "analysis/surprisal.h"
#include "attention_grid_view.h"
#include "headless/headless_export.h"
#include "image/image_capture.h"
#include "text_attention_view.h"
#include "ui/atlas_panel.h"
#include "ui/display_panel.h"
#include "ui/dock_fitter.h"
#include "ui/generation.h"
#include "ui/heads_panel.h"
#include "ui/model_panel.h"
#include "ui/prediction_panel.h"
#include "ui/qk_panel.h"
#include "ui/relpos_panel.h"
#include "ui/selection_controller.h"
#include "ui/status_area.h"
#include "ui/text_panel.h"
#include "ui/translation_panel.h"
#include "ui/window_layout.h"
#include "util/memory_info.h"

#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>
#include <cmath>

namespace attnscope::app {

StreamController::StreamController(const WindowParts& parts, SelectionController* selection, DockFitter* docks)
    : QObject(parts.window)
    , m_parts(parts)
    , m_selection(selection)
    , m_docks(docks)
{
    ComputeController* compute = parts.compute;
    connect(compute, &ComputeController::modelLoaded, this, &StreamController::onModelLoaded);
    connect(compute, &ComputeController::jobFailed, this, &StreamController::onJobFailed);
    connect(compute, &ComputeController::textReady, this, &StreamController::onTextReady);
    connect(parts.text, &TextPanel::runRequested, this, &StreamController::requestRun);
    connect(parts.translation, &TranslationPanel::translateRequested, this, &StreamController::requestTranslation);
    // A cross-attention grid on screen reads as the word alignment in the Translation tab.
    connect(selection, &SelectionController::gridShown, parts.translation,
            [this] { m_parts.translation->showAlignment(m_selection->gridData().get()); });
    connect(compute, &ComputeController::nextTokenReady, parts.predictions, &PredictionPanel::setNextToken);
    m_generation = new Generation(compute, parts.predictions, parts.text, [this] { requestRun(); },
                                  [this](const QString& s) { m_parts.status->show(s); }, this);
    // Generation writes past whatever stepping revealed: it ends the reveal (and Play), so the grid grows with the
    // written tokens instead of staying at the revealed row.
    connect(m_generation, &Generation::started, this, [this] {
        m_parts.grid->setLockedRow(-1);
        m_parts.text->stopPlaying();
        m_selection->setRevealRows(-1);
    });
    connectSurprisal();
    // Short runs replace the views before anyone notices; a long one marks them out of date after this long.
    m_staleMark.setSingleShot(true);
    m_staleMark.setInterval(400);
    connect(&m_staleMark, &QTimer::timeout, this, &StreamController::markComputing);
}

void StreamController::connectSurprisal()
{
    connect(m_parts.display, &DisplayPanel::surprisalToggled, this, [this](bool on) {
        m_surprisalOn = on;
        if (on) {
            m_parts.compute->requestSurprisal();
        } else {
            m_parts.textView->setSurprisal({});
            m_parts.text->setTokenInfo(m_tokenInfo);
        }
    });
    connect(m_parts.compute, &ComputeController::surprisalReady, this,
            [this](TextResultPtr text, std::shared_ptr<const core::Surprisal> s) {
                if (!m_surprisalOn || text != m_parts.compute->textResult())
                    return; // switched off, or the text changed since
                m_parts.textView->setSurprisal(s->bits);
                if (s->predicted > 0)
                    m_parts.text->setTokenInfo(m_tokenInfo + tr(" · perplexity %1 (%2 bits per token)")
                                                                 .arg(s->perplexity, 0, 'f', 1)
                                                                 .arg(s->meanNats / std::log(2.0), 0, 'f', 2));
            });
}

void StreamController::onModelLoaded(const ModelBundlePtr& m)
{
    // Nothing of the previous model stays on screen: every view clears now and fills in as results arrive.
    const WindowParts& p = m_parts;
    p.status->show(tr("Loaded %1").arg(m->displayName));
    if (m_pendingSession)
        m_sessionModel = m;
    emit modelShown(m);
    m_selection->startModel();
    p.grid->setPlaceholder(tr("Computing attention with %1…").arg(m->displayName));
    p.heads->setThumbnails(nullptr);
    p.heads->setModelShape(m->info());
    m_docks->fitHeadsOnNextThumbnails();
    p.heads->setSelection(m_selection->selection());
    p.heads->setSegments(1, 0);
    p.model->setModel(m);
    p.relpos->setModel(m->info(), m->displayName);
    p.relpos->clear();
    p.atlas->setModelName(m->displayName);
    if (m_pendingScan) {
        p.relpos->setScan(m_pendingScan, false);
        p.relpos->showCorpus(); // the scan came back with the session: show it, not the current text
        m_pendingScan.reset();
    }
    p.display->setModel(m->info());
    // Text encoders read sentence pairs; a picture or a recording is one input.
    p.text->setPairAvailable(!m->info().can.causal && !m->info().can.image && !m->info().can.audio);
    const QString mask = m->info().can.maskedTokens ? QString::fromStdString(core::maskTokenOf(*m->tokenizer)) : QString();
    p.text->setMaskToken(mask);
    p.predictions->setModel(m->info(), mask);
    p.qk->setPositionPartAvailable(m->info().hasRelativeTerms);
    m_selection->takeBands(p.display->bands());
    p.relpos->setTerms(core::TermSelection{});
    p.text->setPlaceholder(m->tokenizer->kind().rfind("token ids", 0) == 0
                               ? tr("This model has no tokenizer files: type token ids, e.g. 3 14 15 9")
                               : tr("Type or paste text; the attention updates as you type."));
    openOnSample(m);
    m_docks->hideUnusedDocks();
    showImageDock(m);
    showStreams(m);
    showSpeech(m);
    if (p.layout->presentation()) // another model while presenting: its Predictions appear (or go) as presentation mode placed them
        m_docks->placePresentationDocks();
}

void StreamController::showSpeech(const ModelBundlePtr& m)
{
    const auto& info = m->info();
    if (!info.can.audio)
        return;
    // The box now holds a transcript: the previous model's text is none (a session brings its own).
    if (!m_pendingSession)
        m_parts.text->setTextSilently(QString());
    m_parts.text->setPlaceholder(tr("The transcript of the recording (File > Open Audio…): type it to read it, or "
                                    "leave it empty and Generate in Predictions to let the model transcribe"));
    int lastCross = 0;
    for (int s = 0; s < info.siteCount(); ++s)
        if (info.site(s).kind == core::SiteKind::Cross)
            lastCross = s;
    m_selection->setSelection(lastCross, {0});
}

void StreamController::openOnSample(const ModelBundlePtr& m)
{
    // A model with a sample text of its own (the stories decoder's story opening: its vocabulary knows little else)
    // opens on it; a text the user typed is kept aside and comes back with the next model that has none.
    const QString now = m_parts.text->text();
    const QString general = builtinSampleText(m_parts.builtinDirs); // read once per model opened
    const bool typed = !now.trimmed().isEmpty() && now != m_sampleShown && now != general;
    if (!m->sampleText.isEmpty()) {
        if (typed) {
            m_textBeforeSample = now;
            m_parts.status->notify(tr("%1 opens on its own sample; your text comes back with the next model that has "
                                    "none (or Ctrl+Z in the Text dock)").arg(m->displayName));
        }
        if (m->sampleText != now)
            m_parts.text->replaceTextUndoably(m->sampleText);
    } else if (!typed && !m_sampleShown.isEmpty()) { // the box shows the previous model's sample: not for this one
        m_parts.text->setTextSilently(m_textBeforeSample.isEmpty() ? general : m_textBeforeSample);
        m_textBeforeSample.clear();
    }
    m_sampleShown = m->sampleText;
}

void StreamController::showImageDock(const ModelBundlePtr& m)
{
    if (!m->info().can.image)
        return; // hidden with the other docks the model does not use
    // The text box names the picture: the model folder's own sample unless it already names an image file.
    m_parts.text->setPlaceholder(tr("Type the path of a PNG or JPEG picture (absolute, or beside the model)"));
    const QDir folder(QString::fromStdString(m->loaded.folder));
    const QString current = m_parts.text->text().trimmed();
    const bool named = !current.isEmpty() && current.size() < 4096 &&
                       QFileInfo(QFileInfo(current).isAbsolute() ? current : folder.filePath(current)).isFile();
    if (!named)
        m_parts.text->setTextSilently(modelPicture(folder.path()));
    m_docks->show("imageDock");
    // The picture is what a vision model is about: give it a good share of the width.
    m_parts.window->resizeDocks({m_docks->dock("imageDock")}, {std::max(360, m_parts.window->width() * 2 / 5)}, Qt::Horizontal);
}

void StreamController::setText(const QString& text)
{
    m_parts.text->setTextSilently(text);
    requestRun();
}

void StreamController::setSource(const QString& text)
{
    m_parts.translation->setSource(text);
    const auto& m = m_parts.compute->model();
    if (m && m->info().typedReadStream() >= 0)
        emit m_parts.translation->translateRequested(text, QString(), true);
}

void StreamController::requestTranslation(const QString& source, const QString& target, bool generate)
{
    const WindowParts& p = m_parts;
    if (source.trimmed().isEmpty()) {
        p.compute->dropText();
        m_selection->showGrid(nullptr);
        p.grid->setPlaceholder(tr("Type a source sentence in the Translation tab to see its attention."));
        return;
    }
    p.grid->setStale(true); // the grid follows with the new translation
    TextRequest request;
    request.source = source;
    request.text = generate ? QString() : target;
    request.generate = generate ? kTranslationTokens : 0;
    p.compute->runText(request);
}

void StreamController::showStreams(const ModelBundlePtr& m)
{
    const WindowParts& p = m_parts;
    if (m->info().typedReadStream() < 0) {
        if (!m_docks->dock("textDock")->isVisible()) { // back from an encoder-decoder model
            m_docks->dock("translationDock")->hide();
            m_docks->show("textDock");
        }
        requestRun();
        return;
    }
    p.compute->dropText();
    m_docks->dock("textDock")->hide();
    m_docks->show("translationDock");
    p.translation->setModel(m);
    p.heads->setModelShape(m->info());
    m_selection->showSite(p.translation->site()); // the last decoder layer's cross-attention, every head
    p.grid->setPlaceholder(tr("Translating with %1…").arg(m->displayName));
    // A session's typed target is read as typed; otherwise the model writes its own.
    const QString target = m_pendingSession ? m_pendingSession->target : QString();
    p.translation->setTarget(target);
    emit p.translation->translateRequested(p.translation->source(), target, target.isEmpty());
}

void StreamController::showTranslation(const TextResultPtr& r)
{
    const WindowParts& p = m_parts;
    if (!r->running)
        p.translation->setRunning(false);
    p.translation->showResult(r);
    const QString written = p.translation->target();
    p.status->show(r->running ? tr("Writing the target…") : tr("%1 → %2").arg(p.translation->source(), written));
}

void StreamController::markComputing()
{
    const WindowParts& p = m_parts;
    const auto shown = p.compute->textResult();
    if (!m_runPending || p.compute->idle() || (shown && QString::fromStdString(shown->capture->text) == m_lastRunText))
        return; // arrived meanwhile (or nothing is running: a run answered from what was computed)
    p.grid->setStale(true, tr("out of date: computing the new text…"));
    p.textView->setEnabled(false); // greyed until the new text's grid arrives
    p.text->setTokenInfo(tr("Computing the new text…"));
}

void StreamController::onTextReady(const TextResultPtr& r)
{
    const WindowParts& p = m_parts;
    m_staleMark.stop();
    m_runPending = false;
    p.textView->setEnabled(true);
    const auto& c = *r->capture;
    if (r->model->info().typedReadStream() >= 0)
        showTranslation(r);
    p.compute->requestMaskedFills(); // an encoder's fillers of the text's [MASK] tokens (none for other models)
    p.compute->requestNextToken(-1);  // a causal model's next tokens after the text (the locked row's: on a click)
    // What the text costs beside the mapped weights, so a user of a big model sees how much room is left.
    m_tokenInfo = tr("%n token(s)", "", static_cast<int>(c.tokens.size())) +
                  (c.segments.size() > 1 ? tr(" in %1 segments of %2").arg(c.segments.size()).arg(c.segmentLen)
                                         : QString()) +
                  tr(" · %1 kept, weights %2 mapped")
                      .arg(QString::fromStdString(core::formatBytes(c.bytes())),
                           QString::fromStdString(core::formatBytes(c.model.weightBytes)));
    p.text->setTokenInfo(m_tokenInfo);
    p.textView->setSurprisal({});  // the previous text's values do not belong to this one
    m_selection->markTokens({});   // nor do tokens marked in it
    if (m_surprisalOn)
        p.compute->requestSurprisal();
    if (m_pendingSession && r->model == m_sessionModel) {
        const SessionState s = *m_pendingSession;
        m_pendingSession.reset();
        m_sessionModel.reset();
        QStringList problems;
        m_selection->applySession(s, problems);
        if (!problems.isEmpty())
            p.status->notify(tr("Session restored with changes: %1").arg(problems.join(QStringLiteral("; "))));
    }
    m_selection->textArrived();
    p.relpos->textChanged();
    p.atlas->invalidate();
}

void StreamController::requestRun()
{
    const WindowParts& p = m_parts;
    if (!p.compute->model())
        return;
    // A speech model hears its recording with an empty transcript too: the prompt's rows over the audio.
    const bool listening = p.compute->model()->info().can.audio && !p.compute->audio().isEmpty();
    if (p.text->text().trimmed().isEmpty() && !listening) {
        // Nothing of the old text stays on screen: grid, text view, thumbnails, segments, status.
        p.compute->dropText();
        p.text->setTokenInfo(tr("Type some text to see its attention."));
        m_selection->showGrid(nullptr);
        p.grid->setPlaceholder(tr("Type some text in the Text dock to see its attention."));
        p.heads->setThumbnails(nullptr);
        p.heads->setSegments(1, 0);
        p.predictions->setFills(nullptr);
        p.status->show(QString());
        return;
    }
    // Stepping belongs to one text: a new one (not the old one extended or cut, as typing at the end and generation
    // do) opens whole instead of as the old reveal position's sliver.
    const QString text = p.text->text();
    if (!text.startsWith(m_lastRunText) && !m_lastRunText.startsWith(text)) {
        m_selection->stopStepping();
        p.grid->setLockedRow(-1); // a row of the old text means nothing in the new one
    }
    m_lastRunText = text;
    m_runPending = true;
    m_staleMark.start(); // a long run (a large text) marks what is on screen as the previous text's
    // The grid on screen comes first for the new text when its layer is done long before the others (a big model).
    p.compute->runText(text, p.text->secondText(), 0, -1, m_selection->selection());
}

void StreamController::openSession(const SessionState& s, std::shared_ptr<const core::ScanResult> scan)
{
    // Model, text and scan are applied when the model is loaded; the view when its text is computed.
    m_pendingSession = s;
    m_sessionModel.reset();
    m_pendingScan = std::move(scan);
    m_parts.text->setTextSilently(s.text);
    if (!s.source.isEmpty())
        m_parts.translation->setSource(s.source);
    m_parts.compute->loadModel(s.model);
}

void StreamController::onJobFailed(const JobFailure& f)
{
    const WindowParts& p = m_parts;
    const QString& msg = f.message;
    switch (f.kind) {
    case JobKind::Load:
        p.status->show(f.cancelled() ? tr("Cancelled opening %1").arg(f.what) : tr("Could not open %1").arg(f.what));
        m_pendingSession.reset();
        m_sessionModel.reset();
        if (!p.compute->model())
            p.grid->setPlaceholder(tr("No model is open: File > Open Model or File > Built-in Models"));
        if (!f.cancelled())
            QMessageBox::warning(p.window, tr("Could not open model"),
                                 tr("The model could not be opened:\n\n%1\n\n%2")
                                     .arg(msg, p.compute->model() ? tr("The previous model stays loaded.")
                                                                  : tr("Open another model from the File menu.")));
        return;
    case JobKind::Text:
        if (!f.cancelled()) { // (a cancelled run was replaced by a newer one, still pending)
            m_staleMark.stop();
            m_runPending = false;
            p.textView->setEnabled(true); // the grid says it is out of date; the words stay readable
        }
        p.status->show(f.cancelled() ? tr("Cancelled") : msg);
        if (!f.cancelled())
            p.text->setTokenInfo(msg);
        if (!f.cancelled() && !m_selection->gridData()) // never leave "Computing attention…" up after the run failed
            p.grid->setPlaceholder(tr("No attention for this text: %1").arg(msg));
        else
            p.grid->setStale(true); // what it shows belongs to the text before the edit
        return;
    case JobKind::Grid: {
        const QString shown = f.cancelled() ? tr("Cancelled. Choose a head or layer to compute its grid.") : msg;
        m_selection->showGrid(nullptr);
        p.grid->setPlaceholder(shown);
        p.status->show(shown);
        emit m_selection->gridShown();
        return;
    }
    case JobKind::Scan:
        if (f.cancelled())
            p.status->notify(tr("Scan cancelled"));
        else
            QMessageBox::warning(p.window, tr("Scan failed"), msg);
        return;
    case JobKind::Comparison: // the Compare Models dock says it; not modal: the other views stay usable
        p.status->show(f.cancelled() ? tr("Comparison cancelled") : tr("Comparison failed: %1").arg(msg));
        return;
    case JobKind::Thumbnails:  // the overview stays as it was; the grid reports the same problem where it is seen
    case JobKind::TextProfile: // the Relative Position dock says it
    case JobKind::MaskedFills: // the Predictions dock says it
    case JobKind::NextToken:
    case JobKind::QkSpace:     // the Query-Key Space dock says it
    case JobKind::Patching:    // their windows say it
    case JobKind::PromptPair:
    case JobKind::HeadContexts:
        return;
    default: // (the Head Atlas and Experts docks say it too)
        break;
    }
    p.status->notify(f.cancelled() ? tr("%1 cancelled").arg(f.what) : tr("%1: %2").arg(f.what, msg));
}

} // namespace attnscope::app
