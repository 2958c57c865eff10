// AnalysisLauncher implementation.
#include "ui/analysis_launcher.h"

#include "attention_grid_view.h"
#include "headless/headless_export.h"
#include "ui/atlas_panel.h"
#include "ui/comparison_panel.h"
#include "ui/dock_fitter.h"
#include "ui/figure_window.h"
#include "ui/head_contexts_window.h"
#include "ui/mechanism_window.h"
#include "ui/patching_window.h"
#include "ui/relpos_panel.h"
#include "ui/selection_controller.h"
#include "ui/status_area.h"
#include "ui/text_panel.h"
#include "util/error.h"
#include "views/analysis_figures.h"
#include "views/analysis_figures.h"
#include "views/paper_figures.h"

#include <QMainWindow>
#include <QMessageBox>

namespace attnscope::app {

namespace {
QString familyOf(const ModelBundle& m)
{
    return QString::fromUtf8(core::familyName(m.info().family));
}
} // namespace

AnalysisLauncher::AnalysisLauncher(const WindowParts& parts, SelectionController* selection, DockFitter* docks)
    : QObject(parts.window)
    , m_parts(parts)
    , m_selection(selection)
    , m_docks(docks)
{
    connectFigures();
    connect(parts.atlas, &AtlasPanel::atlasWanted, this, [this] { m_parts.compute->requestAtlas(m_parts.relpos->scan()); });
    connect(parts.atlas, &AtlasPanel::figureWanted, this, [this](FigurePtr f) { openFigureWindow(*f); });
    connect(parts.comparison, &ComparisonPanel::compareRequested, this, &AnalysisLauncher::compareModels);
    connect(selection, &SelectionController::queryChanged, this, &AnalysisLauncher::followMechanism);
    connect(parts.compute, &ComputeController::scanFinished, this, [this](ScanResultPtr r) {
        m_parts.status->notify(r->partial ? tr("Scan cancelled after %1 tokens (partial result kept)").arg(r->tokens)
                                          : tr("Scan finished: %1 tokens").arg(r->tokens));
    });
}

void AnalysisLauncher::selectHead(int layer, int head)
{
    m_selection->setSelection(layer, {head});
}

// Each analysis's figure in a window; a click on a cell that is a head (or a layer and position) opens it in the grid.
void AnalysisLauncher::connectFigures()
{
    ComputeController* compute = m_parts.compute;
    connect(compute, &ComputeController::rolloutReady, this, [this](FigurePtr f) { openFigureWindow(*f); });
    connect(compute, &ComputeController::wordTimingsReady, this, [this](FigurePtr f) {
        // The ranking's rows are decoder heads: a click shows that head's cross-attention in the grid.
        auto heads = std::make_shared<std::vector<QString>>();
        for (const auto& label : f->grids.at(1)->rowLabels)
            heads->push_back(label);
        connect(openFigureWindow(*f), &FigureWindow::cellClicked, this, [this, heads](int grid, int row, int) {
            const auto& m = m_parts.compute->model();
            if (grid != 1 || !m || row < 0 || row >= static_cast<int>(heads->size()))
                return;
            QString label = heads->at(static_cast<std::size_t>(row));
            label.remove(QStringLiteral("★ "));
            const auto parts = label.mid(1).split(QStringLiteral(" H")); // "D2 H3"
            const int layer = parts.value(0).toInt() - 1, head = parts.value(1).toInt() - 1;
            for (int s = 0; s < m->info().siteCount(); ++s)
                if (m->info().site(s).kind == core::SiteKind::Cross && m->info().site(s).layer == layer)
                    m_selection->setSelection(s, {head});
        });
    });
    connect(compute, &ComputeController::ablationReady, this, [this](FigurePtr f) {
        // A cell is a head: rows are layers, columns heads.
        connect(openFigureWindow(*f), &FigureWindow::cellClicked, this, [this](int, int row, int col) { selectHead(row, col); });
    });
    connect(compute, &ComputeController::sentencesReady, this, [this](FigurePtr f) {
        // The receiver-head grid (the second) is layers x heads.
        connect(openFigureWindow(*f), &FigureWindow::cellClicked, this, [this](int grid, int row, int col) {
            if (grid == 1)
                selectHead(row, col);
        });
    });
    connect(compute, &ComputeController::attributionReady, this, [this](FigurePtr f) {
        // A head's cell opens that head (the bias and MLP columns are not heads).
        const int heads = m_parts.compute->model() ? m_parts.compute->model()->info().heads : 0;
        connect(openFigureWindow(*f), &FigureWindow::cellClicked, this, [this, heads](int, int row, int col) {
            if (col < heads)
                selectHead(row, col);
        });
    });
    connect(compute, &ComputeController::lensReady, this, [this](FigurePtr f) {
        // A cell is (layer, position): show that layer with the position's row locked, as the grid shows it.
        connect(openFigureWindow(*f), &FigureWindow::cellClicked, this, [this, f](int grid, int row, int col) {
            const auto& m = m_parts.compute->model();
            if (!m || m->info().streams.size() > 1) // an encoder-decoder model's lens: its rows are decoder layers, not sites
                return;
            const int position = f->grids[static_cast<std::size_t>(grid)]->colPosition(col);
            m_selection->setSelection(row, m_selection->selection().heads);
            m_selection->lockPosition(position);
        });
    });
}

FigureWindow* AnalysisLauncher::openFigureWindow(const PaperFigure& figure)
{
    auto* w = new FigureWindow(figure, m_parts.window);
    connect(w, &FigureWindow::saved, this, [this](const QString& path) { m_parts.status->show(tr("Saved %1").arg(path)); });
    w->show();
    return w;
}

bool AnalysisLauncher::refusesTwoStreams(const QString& analysis)
{
    const auto& m = m_parts.compute->model();
    if (!m || m->info().streams.size() == 1)
        return false;
    QMessageBox::information(m_parts.window, analysis,
                             tr("%1 reads one text. %2 is an encoder-decoder model: its source, target and the three "
                                "kinds of attention (encoder, decoder, cross) are in the Translation tab, with the word "
                                "alignment and the alignment heads; Analysis > Position Bias shows a T5 model's learned "
                                "relative positions.")
                                 .arg(analysis, m->displayName));
    return true;
}

bool AnalysisLauncher::haveText(const QString& analysis)
{
    if (refusesTwoStreams(analysis))
        return false;
    if (m_parts.compute->textResult() && m_parts.compute->model())
        return true;
    QMessageBox::information(m_parts.window, analysis, tr("Type or open a text first."));
    return false;
}

void AnalysisLauncher::showWordTimings()
{
    const auto& m = m_parts.compute->model();
    if (!m || !m->info().can.audio) {
        QMessageBox::information(m_parts.window, tr("Word timings"),
                                 tr("Word timings are for speech models (Whisper): open one, then a recording."));
        return;
    }
    const auto r = m_parts.compute->textResult();
    if (!r || !r->capture->audio || r->capture->tokens.size() <= 4) {
        QMessageBox::information(m_parts.window, tr("Word timings"),
                                 tr("Open a recording (File > Open Audio…) and type its transcript or let the model "
                                    "write one (Predictions > Generate)."));
        return;
    }
    m_parts.compute->requestWordTimings();
}

void AnalysisLauncher::showRollout()
{
    const auto& m = m_parts.compute->model();
    if (m && m_parts.compute->textResult() && m->info().typedReadStream() >= 0) {
        m_parts.compute->requestRollout(0, m->info().typedReadStream()); // over the encoder's layers
        return;
    }
    if (!haveText(tr("Attention rollout")))
        return;
    const auto& segment = m_parts.compute->textResult()->capture->segment(m_selection->shownSegment());
    if (segment.mlen > 0) {
        QMessageBox::information(m_parts.window, tr("Attention rollout"),
                                 tr("Rollout is defined for models without memory: this segment also sees %1 earlier "
                                    "tokens. Show the first segment, or use a GPT-2 or Llama-family model.")
                                     .arg(segment.mlen));
        return;
    }
    m_parts.compute->requestRollout(m_selection->selection().segment);
}

void AnalysisLauncher::showLogitLens()
{
    const auto& m = m_parts.compute->model();
    if (m && m_parts.compute->textResult() && m->info().typedReadStream() >= 0) {
        m_parts.compute->requestLogitLens(0); // over the decoder's layers
        return;
    }
    if (!haveText(tr("Logit lens")))
        return;
    if (!m->info().can.nextTokenLoss && !m->info().can.maskedTokens) {
        QMessageBox::information(m_parts.window, tr("Logit lens"),
                                 tr("The logit lens reads each layer through the model's output layer, and %1 is "
                                    "read here without one.")
                                     .arg(familyOf(*m)));
        return;
    }
    m_parts.compute->requestLogitLens(m_selection->selection().segment);
}

void AnalysisLauncher::showLogitAttribution()
{
    if (!haveText(tr("Direct logit attribution")))
        return;
    const auto& m = m_parts.compute->model();
    if (!m->info().can.nextTokenLoss || !m->info().can.causal) { // (Transformer-XL's adaptive softmax: the core says why not)
        QMessageBox::information(m_parts.window, tr("Direct logit attribution"),
                                 tr("Direct logit attribution splits a decoder's next-token logit by head through its "
                                    "final norm and unembedding; %1 models are read here without such a read-out. Open "
                                    "GPT-2 or a Llama-family model.")
                                     .arg(familyOf(*m)));
        return;
    }
    // The locked query row's token, as the Predictions tab reads it; else the text's last.
    m_parts.compute->requestLogitAttribution(m_selection->lockedPosition());
}

void AnalysisLauncher::showAblation()
{
    if (!haveText(tr("Head ablation")))
        return;
    const auto r = m_parts.compute->textResult();
    const auto& m = m_parts.compute->model();
    if (!m->info().can.nextTokenLoss) {
        QMessageBox::information(m_parts.window, tr("Head ablation"),
                                 tr("Head ablation measures the next-token loss, and %1 models are read here without "
                                    "their output softmax: open a model that predicts the next token (a decoder "
                                    "with its language-model head, or Transformer-XL with its adaptive softmax).")
                                     .arg(familyOf(*m)));
        return;
    }
    const int forwards = m->info().layers * m->info().heads + 1;
    // Ask first only when it takes a while: about 2 x parameters x tokens operations per forward, more than a
    // few seconds' worth here.
    const double work = 2.0 * static_cast<double>(m->info().parameterCount) *
                        static_cast<double>(r->capture->tokens.size()) * forwards;
    if (work > 1e12 && QMessageBox::question(m_parts.window, tr("Head ablation"),
                                             tr("This runs the model %1 times over the %2 tokens of the text (once per "
                                                "head, and once intact), with progress and Cancel in the status bar. Start?")
                                                 .arg(forwards)
                                                 .arg(r->capture->tokens.size())) != QMessageBox::Yes)
        return;
    m_parts.compute->requestAblation();
}

void AnalysisLauncher::showSentences()
{
    if (!haveText(tr("Sentences")))
        return;
    m_parts.compute->requestSentences(m_selection->selection().site, m_selection->selection().heads);
}

void AnalysisLauncher::showPositionBias()
{
    const auto& m = m_parts.compute->model();
    if (!m || std::none_of(m->info().sites.begin(), m->info().sites.end(), [](const core::AttentionSite& s) { return s.positionBias; })) {
        QMessageBox::information(m_parts.window, tr("Position bias"),
                                 tr("A learned relative-position bias is T5's (its encoder and decoder add a bias per "
                                    "head and distance to every score); this model has none."));
        return;
    }
    openFigureWindow(positionBiasFigure(*m));
}

FigureWindow* AnalysisLauncher::showPaperFigure(int number)
{
    const auto& model = m_parts.compute->model();
    if (refusesTwoStreams(tr("Fig. %1").arg(number)))
        return nullptr;
    const ScanResultPtr source = m_parts.relpos->currentResult();
    if (!model || !source) {
        QMessageBox::information(m_parts.window, tr("Fig. %1").arg(number),
                                 tr("Fig. %1 needs a relative-position profile: run Analysis > Scan Corpus…, or show the "
                                    "current text's profile in the Relative Position dock.").arg(number));
        return nullptr;
    }
    try {
        const QString what = tr("%1 · %2 tokens").arg(model->displayName).arg(source->tokens);
        PaperFigure f;
        if (number == 6) {
            const auto r = m_parts.compute->textResult();
            if (!r)
                throw core::Error(core::ErrorCode::BadInput, "Fig. 6 needs a computed text");
            f = paperFigure6(*source, *r->capture, model->displayName);
        } else {
            f = paperFigureFromScan(number, *source, what);
        }
        return openFigureWindow(f);
    } catch (const std::exception& e) {
        QMessageBox::information(m_parts.window, tr("Fig. %1").arg(number), QString::fromStdString(e.what()));
        return nullptr;
    }
}

MechanismWindow* AnalysisLauncher::showMechanism()
{
    if (!m_mechanism)
        m_mechanism = new MechanismWindow(m_parts.compute, m_parts.window);
    m_mechanism->show();
    m_mechanism->raise();
    m_mechanism->activateWindow();
    followMechanism();
    return m_mechanism;
}

void AnalysisLauncher::followMechanism()
{
    const auto& g = m_selection->gridData();
    if (!m_mechanism || !m_mechanism->isVisible() || !m_parts.compute->textResult() || !g || m_selection->gridIsPreview() ||
        g->rows == 0)
        return;
    // The query: the row locked in the grid (a click), else the last one shown; the first selected head.
    const int row = m_parts.grid->lockedRow() >= 0 ? m_parts.grid->lockedRow() : g->rows - 1;
    const auto& s = m_selection->selection();
    m_mechanism->follow(s.site, s.heads.empty() ? 0 : s.heads.front(), g->rowPosition(row));
}

PatchingWindow* AnalysisLauncher::patchingWindow()
{
    if (!m_patching) {
        m_patching = new PatchingWindow(m_parts.compute, m_parts.window);
        connect(m_patching, &PatchingWindow::headWanted, this, &AnalysisLauncher::selectHead);
    }
    return m_patching;
}

PatchingWindow* AnalysisLauncher::showPatching()
{
    const auto& m = m_parts.compute->model();
    if (m && !m->info().can.interventions) {
        QMessageBox::information(m_parts.window, tr("Activation patching"),
                                 tr("Activation patching runs a decoder (GPT-2 or a Llama-family model) with one "
                                    "component copied from another prompt's run; %1 is not one.")
                                     .arg(familyOf(*m)));
        return nullptr;
    }
    if (!m_patching)
        patchingWindow()->setCleanPrompt(m_parts.text->text());
    m_patching->show();
    m_patching->raise();
    m_patching->activateWindow();
    return m_patching;
}

void AnalysisLauncher::restorePatching(const PatchingRequest& request)
{
    if (request.clean.isEmpty())
        return;
    patchingWindow()->setRequest(request);
    m_patching->show();
}

PatchingRequest AnalysisLauncher::patchingRequest() const
{
    return m_patching ? m_patching->request() : PatchingRequest{};
}

HeadContextsWindow* AnalysisLauncher::showHeadContexts()
{
    if (refusesTwoStreams(tr("Heads over a corpus")))
        return nullptr;
    if (!m_headContexts) {
        m_headContexts = new HeadContextsWindow(m_parts.compute, m_parts.window);
        connect(m_headContexts, &HeadContextsWindow::headWanted, this, &AnalysisLauncher::selectHead);
    }
    m_headContexts->setCurrentText(m_parts.text->text());
    m_headContexts->show();
    m_headContexts->raise();
    return m_headContexts;
}

void AnalysisLauncher::startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms)
{
    // Extra profiles: Transformer-XL's terms alone, or a rotary model's bands alone (the Display dock's split).
    const auto& bands = m_selection->selection().bands;
    QString extra;
    if (terms && bands)
        for (int b = 1; b <= bands->count(); ++b)
            extra += (b > 1 ? QStringLiteral(",") : QString()) + QString::number(b);
    else if (terms)
        extra = QStringLiteral("a,b,c,d");
    ScanRequest req{textFile, {}, {}, memLen, segmentLen, maxTokens, extra, bands};
    if (textFile.isEmpty()) { // the app's sample text (the one recipe for it), as the window opens with
        req.text = builtinSampleText(m_parts.builtinDirs);
        req.textName = tr("built-in sample");
    }
    m_parts.relpos->setScan(nullptr, true);
    m_parts.relpos->showCorpus();
    m_docks->show("relposDock");
    m_parts.compute->scanCorpus(req);
}

void AnalysisLauncher::openScanResult(const QString& path)
{
    try {
        auto r = std::make_shared<core::ScanResult>(core::ScanResult::load(path.toStdString()));
        m_parts.relpos->setScan(r, false);
        m_parts.relpos->showCorpus();
        m_parts.status->show(tr("Opened scan %1 (%2 tokens)").arg(path).arg(r->tokens));
    } catch (const std::exception& e) {
        QMessageBox::warning(m_parts.window, tr("Could not open scan"), QString::fromStdString(e.what()));
    }
}

void AnalysisLauncher::saveScanResult(const QString& path)
{
    try {
        m_parts.relpos->scan()->save(path.toStdString());
        m_parts.status->show(tr("Saved %1").arg(path));
    } catch (const std::exception& e) {
        QMessageBox::warning(m_parts.window, tr("Could not save scan"), QString::fromStdString(e.what()));
    }
}

void AnalysisLauncher::compareModels(const QStringList& specs)
{
    if (specs.isEmpty()) {
        m_parts.status->show(tr("Tick the models to compare"));
        return;
    }
    m_docks->show("compareDock");
    m_parts.comparison->setMessage(tr("Comparing %n model(s)…", "", static_cast<int>(specs.size())));
    m_parts.compute->compareModels(specs, m_parts.text->text(), m_selection->selection().site);
}

} // namespace attnscope::app
