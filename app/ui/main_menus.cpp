// MainWindow's menus and the file actions behind them (and behind drag and drop): models, texts, sessions, exports,
// scans, paper figures, help.
#include "views/analysis_figures.h"
#include "attention_grid_view.h"
#include "builtin_paths.h"
#include "model/model_loader.h"
#include "util/cpu_features.h"
#include "comparison_view.h"
#include "export/data_export.h"
#include "export/figure_export.h"
#include "ui/comparison_panel.h"
#include "ui/display_panel.h"
#include "ui/figure_size_dialog.h"
#include "ui/figure_window.h"
#include "ui/patching_window.h"
#include "ui/mechanism_window.h"
#include "run/attention_page.h"
#include "ui/head_contexts_window.h"
#include "ui/file_dialogs.h"
#include "ui/guide_window.h"
#include "ui/main_window.h"

#include "headless/headless_export.h"
#include "views/translation_views.h"
#include "ui/translation_panel.h"

#include "views/analysis_figures.h"
#include "ui/relpos_panel.h"
#include "ui/scan_dialog.h"
#include "ui/text_panel.h"
#include "ui/window_layout.h"
#include "util/error.h"
#include "util/text_file.h"
#include "views/paper_figures.h"

#include <QAction>
#include <QDragEnterEvent>
#include <QMimeData>
#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>

namespace attnscope::app {

namespace {
constexpr int kMaxRecent = 8;
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model…"), this, [this] {
        const QString path = askModelPath(this, tr("Open a model: its folder (config.json + weights), a .gguf file, or "
                                                   "a PyTorch checkpoint with config.json beside it"));
        if (!path.isEmpty())
            openModel(path);
    });
    open->setShortcut(QKeySequence::Open);
    file->addAction(tr("Open Model &Folder…"), this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Open model folder (config.json + weights)"));
        if (!path.isEmpty())
            openModel(path);
    });
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    QMenu* builtins = file->addMenu(tr("&Built-in Models"));
    for (const auto& name : core::listBuiltinModels(m_builtinDirs)) {
        const QString spec = QStringLiteral("builtin:") + QString::fromStdString(name);
        builtins->addAction(QString::fromStdString(name), this, [this, spec] { openModel(spec); });
    }
    if (builtins->isEmpty())
        builtins->addAction(tr("(none installed)"))->setEnabled(false);
    file->addAction(tr("Open &Text…"), this, [this] {
        const QString path = askTextFile(this, tr("Open text"));
        if (path.isEmpty())
            return;
        if (const QString err = openTextFile(path); !err.isEmpty())
            QMessageBox::warning(this, tr("Could not open text"), err);
    });
    file->addAction(tr("Open &Image…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open image"), QString(),
                                                          tr("Images (*.png *.jpg *.jpeg *.bmp *.webp);;All files (*)"));
        if (!path.isEmpty())
            openImage(path);
    });
    file->addSeparator();
    file->addAction(tr("Open &Session…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QString(), tr("attnscope sessions (*.attnscope)"));
        if (path.isEmpty())
            return;
        if (const QString err = openSession(path); !err.isEmpty())
            QMessageBox::warning(this, tr("Could not open session"), err);
    });
    file->addAction(tr("Save Sessio&n…"), this, [this] {
        const QString path = askSavePath(this, tr("Save session"), QStringLiteral("session.attnscope"),
                                         tr("attnscope sessions (*.attnscope)"), QStringLiteral("attnscope"));
        if (!path.isEmpty())
            reportSave(this, saveSession(path), tr("Could not save session"), tr("Saved session %1").arg(path));
    });
    file->addSeparator();
    QAction* exportFig = file->addAction(tr("Export &Figure…"), this, [this] {
        const QString path = askFigurePath(this, tr("Export figure"), QStringLiteral("attention"));
        if (path.isEmpty())
            return;
        const auto size = askFigureSize(this, path, FigureSizeChoice{{kDefaultGridFigureWidth, 800}, true});
        if (size)
            reportSave(this, exportFigureTo(path, *size), tr("Export failed"), tr("Saved %1").arg(path));
    });
    exportFig->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
    file->addAction(tr("Export &Data…"), this, [this] {
        const QString path = askDataPath(this, tr("Export data"), QStringLiteral("attention"));
        if (!path.isEmpty())
            reportSave(this, exportDataTo(path), tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &Page (HTML)…"), this, [this] {
        const auto r = result();
        const auto t = m_compute->model() && m_compute->model()->info().can.encoderDecoder ? m_translationResult : nullptr;
        if (!r && !t) {
            QMessageBox::information(this, tr("Export page"), tr("Type or open a text first."));
            return;
        }
        const QString path = QFileDialog::getSaveFileName(this, tr("Export an interactive page of the shown layer"),
                                                          QStringLiteral("attention.html"), tr("HTML page (*.html)"));
        if (path.isEmpty())
            return;
        // The shown layer with all its heads: a page anyone opens offline, its head buttons switching the grid (an
        // encoder-decoder model: that layer of every stack, with the cross-attention's alignment; a picture: drawn
        // with its token's attention over the patches).
        core::PageOptions o;
        o.layers = {m_selection.layer};
        o.segment = shownSegment();
        QString err;
        try {
            std::string html;
            if (t) {
                std::vector<std::string> source, target;
                for (const auto& s : t->sourceLabels)
                    source.push_back(s.toStdString());
                for (const auto& s : t->targetLabels)
                    target.push_back(s.toStdString());
                html = core::translationPageHtml(t->translation, t->model->info(), source, target,
                                                 t->model->displayName.toStdString(), o);
            } else {
                if (r->image)
                    o.picture = r->image->seen;
                html = core::attentionPageHtml(*r->capture, r->model->displayName.toStdString(), o);
            }
            err = saveFileAtomically(path, QByteArray::fromStdString(html));
        } catch (const std::exception& e) {
            err = QString::fromStdString(e.what());
        }
        reportSave(this, err, tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &All Heads…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for one figure per head"));
        if (!dir.isEmpty())
            reportSave(this, exportAllHeadsTo(dir), tr("Export failed"),
                       tr("Saved every head of layer %1 to %2").arg(m_selection.layer + 1).arg(dir));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, [this] { m_layout->resetLayout(); });
    QAction* present = view->addAction(tr("&Presentation Mode"));
    present->setCheckable(true);
    present->setShortcut(QKeySequence(Qt::Key_F11));
    present->setShortcutContext(Qt::ApplicationShortcut);
    connect(present, &QAction::toggled, this, &MainWindow::setPresentation);
    addAction(present); // the shortcut works while the menu bar is hidden in full screen

    QMenu* analysis = menuBar()->addMenu(tr("&Analysis"));
    analysis->addAction(tr("&Scan Corpus…"), this, [this] {
        const auto& m = m_compute->model();
        if (!m) {
            QMessageBox::information(this, tr("Scan corpus"), tr("Open a model first."));
            return;
        }
        if (const auto s = askScanSettings(this, m->info()))
            startScan(s->textFile, s->memLen, s->segmentLen, s->maxTokens, s->terms);
    })->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
    analysis->addAction(tr("&Open Scan Result…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open scan result"), QString(), tr("Scan results (*.safetensors)"));
        if (path.isEmpty())
            return;
        try {
            auto r = std::make_shared<core::ScanResult>(core::ScanResult::load(path.toStdString()));
            m_relpos->setScan(r, false);
            m_relpos->showCorpus();
            showStatus(tr("Opened scan %1 (%2 tokens)").arg(path).arg(r->tokens));
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Could not open scan"), QString::fromStdString(e.what()));
        }
    });
    analysis->addAction(tr("Sa&ve Scan Result…"), this, [this] {
        if (!m_relpos->scan()) {
            QMessageBox::information(this, tr("Save scan"), tr("There is no corpus scan to save yet."));
            return;
        }
        const QString path = askSavePath(this, tr("Save scan result"), QStringLiteral("scan.safetensors"),
                                         tr("Scan results (*.safetensors)"), QStringLiteral("safetensors"));
        if (path.isEmpty())
            return;
        try {
            m_relpos->scan()->save(path.toStdString());
            showStatus(tr("Saved %1").arg(path));
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Could not save scan"), QString::fromStdString(e.what()));
        }
    });
    analysis->addSeparator();
    analysis->addAction(tr("Head &Atlas"), this, [this] { showDock("atlasDock"); });
    analysis->addAction(tr("&Predictions (Next or Masked Tokens)"), this, [this] { showDock("predictionDock"); });
    analysis->addAction(tr("&Query-Key Space"), this, [this] { showDock("qkDock"); });
    analysis->addAction(tr("&Experts (Router of a Mixture-of-Experts Model)"), this, [this] { showDock("expertsDock"); });
    analysis->addAction(tr("Attention &Rollout"), this, &MainWindow::showRollout);
    analysis->addAction(tr("&How This Head Computes…"), QKeySequence(Qt::CTRL | Qt::Key_M), this, [this] { showMechanism(); });
    analysis->addAction(tr("&Logit Lens"), this, [this] {
        if (m_translationResult && m_compute->model() && m_compute->model()->info().can.encoderDecoder) {
            m_compute->requestTranslationAnalysis(m_translationResult, true); // over the decoder's layers
            return;
        }
        if (!haveText(tr("Logit lens")))
            return;
        const auto& m = m_compute->model();
        if (!m->info().can.nextTokenLoss && !m->info().can.maskedTokens) {
            QMessageBox::information(this, tr("Logit lens"),
                                     tr("The logit lens reads each layer through the model's output layer, and %1 is "
                                        "read here without one.")
                                         .arg(QString::fromUtf8(core::familyName(m->info().family))));
            return;
        }
        m_compute->requestLogitLens(m_selection.segment);
    });
    analysis->addAction(tr("&Direct Logit Attribution"), this, &MainWindow::showLogitAttribution);
    analysis->addAction(tr("&Position Bias (T5: heads by signed distance)"), this, &MainWindow::showPositionBias);
    analysis->addAction(tr("Head A&blation"), this, &MainWindow::showAblation);
    analysis->addAction(tr("Activation Pa&tching…"), this, &MainWindow::showPatching);
    analysis->addAction(tr("Heads over a &Corpus…"), this, &MainWindow::showHeadContexts);
    analysis->addAction(tr("&Sentences (Reasoning Traces)"), this, &MainWindow::showSentences);
    QMenu* paper = menuBar()->addMenu(tr("&Paper Figures"));
    paper->addAction(tr("Fig. &5: every head by relative distance"), this, [this] { showPaperFigure(5); });
    paper->addAction(tr("Fig. &6: the widest heads' memory attention"), this, [this] { showPaperFigure(6); });
    paper->addAction(tr("Fig. &7: terms (a), (b), (d) alone; rotary bands alone"), this, [this] { showPaperFigure(7); });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&User Guide"), this, [this] { (new GuideWindow(QString::fromStdString(userGuidePath()), this))->show(); })
        ->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
        QMessageBox::information(this, tr("Keyboard shortcuts"),
                                 tr("Left / Right: previous / next head\nUp / Down: previous / next layer\n"
                                    "A: average of the layer's heads, and back\n(in the text box, lists and other "
                                    "controls that use arrows: Alt+arrows)\n\n"
                                    "Click a cell: lock its row\nCtrl-click a head thumbnail: average several heads\n"
                                    "Mouse wheel / drag: zoom / pan the grid\n\nF11: presentation mode\n"
                                    "Ctrl+Shift+E: export figure\nCtrl+O: open model\nF1: user guide"));
    });
    help->addAction(tr("&About attnscope"), this, [this] {
        QMessageBox::about(this, tr("About attnscope"),
                           tr("<h3>attnscope %1</h3><p>Look inside transformer attention: token grids, every head "
                              "at a glance, and the Transformer-XL paper's attention figures.</p>"
                              "<p>The built-in models are trained on WikiText-2 (Merity et al. 2016, "
                              "CC BY-SA 3.0); the sample text is an excerpt of its validation set.</p>"
                              "<p>Compute library: %2.</p>")
                               .arg(QApplication::applicationVersion(),
                                    QString::fromStdString(core::compiledCpuLevel())));
    });
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentModels")).toStringList();
    for (const QString& spec : recent)
        m_recentMenu->addAction(spec, this, [this, spec] { openModel(spec); });
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("(empty)"))->setEnabled(false);
}

void MainWindow::rememberRecent(const QString& spec)
{
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentModels")).toStringList();
    recent.removeAll(spec);
    recent.prepend(spec);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setValue(QStringLiteral("recentModels"), recent);
    rebuildRecentMenu();
}

QString MainWindow::openTextFile(const QString& path)
{
    try {
        setText(QString::fromStdString(core::readTextFile(path.toStdString())));
        showStatus(tr("Opened text %1").arg(path));
        return {};
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

void MainWindow::openImage(const QString& path)
{
    const auto& m = m_compute->model();
    if (!m || !m->info().can.image) {
        QMessageBox::information(this, tr("Open a vision model first"),
                                 tr("%1 reads text. Pictures are for vision models (ViT, DeiT, DINOv2, CLIP's vision "
                                    "tower, the built-in shapes-vit): open one, then the picture.")
                                     .arg(m ? m->displayName : tr("This model")));
        return;
    }
    setText(QFileInfo(path).absoluteFilePath()); // the text box names the picture; the run follows
    showDock("imageDock");
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    // A text file becomes the text; a session reopens; anything else is taken as a model (folder, config, .gguf,
    // PyTorch checkpoint).
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile())
        return;
    const QString path = urls.front().toLocalFile();
    const QString suffix = QFileInfo(path).suffix().toLower();
    QString err;
    static const QStringList images{QStringLiteral("png"), QStringLiteral("jpg"), QStringLiteral("jpeg"),
                                    QStringLiteral("bmp"), QStringLiteral("webp")};
    if (QFileInfo(path).isFile() && (suffix == QLatin1String("txt") || suffix == QLatin1String("text") || suffix == QLatin1String("md")))
        err = openTextFile(path);
    else if (QFileInfo(path).isFile() && images.contains(suffix))
        openImage(path);
    else if (suffix == QLatin1String("attnscope"))
        err = openSession(path);
    else
        openModel(path);
    if (!err.isEmpty())
        QMessageBox::warning(this, tr("Could not open %1").arg(QFileInfo(path).fileName()), err);
}

void MainWindow::compareModels(const QStringList& specs)
{
    if (specs.isEmpty()) {
        showStatus(tr("Tick the models to compare"));
        return;
    }
    showDock("compareDock");
    m_comparison->setMessage(tr("Comparing %n model(s)…", "", static_cast<int>(specs.size())));
    m_compute->compareModels(specs, m_textPanel->text(), m_selection.layer);
}

QString MainWindow::exportFigureTo(const QString& path, const FigureSize& size)
{
    if (!m_gridData)
        return tr("There is no figure to export yet.");
    return exportGrid(m_gridData, *m_grid, path, size);
}

QString MainWindow::exportDataTo(const QString& path)
{
    if (!m_gridData)
        return tr("There is no data to export yet.");
    return exportGridData(*m_gridData, path);
}

QString MainWindow::exportAllHeadsTo(const QString& folder, const QString& extension)
{
    const auto r = result();
    if (!r)
        return tr("There is nothing to export yet.");
    return exportAllHeads(*r->capture, r->model->displayName, m_selection, *m_grid, folder, extension);
}

QString MainWindow::saveSession(const QString& pathIn)
{
    if (!m_compute->model())
        return tr("Open a model before saving a session.");
    const QString path = withSessionExtension(pathIn);
    SessionState s;
    s.model = m_compute->model()->spec;
    s.text = m_textPanel->text();
    s.selection = m_selection;
    s.display = m_displayPanel->settings();
    s.bandSplit = m_displayPanel->bandSplitText();
    if (m_compute->model()->info().can.encoderDecoder) {
        s.source = m_translation->source();
        // A written target comes back by translating again; a typed one is kept as typed.
        const bool typed = m_translationResult && m_translationResult->translation.typed > 1;
        s.target = typed ? m_translation->target() : QString();
        s.selection.layer = m_translation->site();
        s.selection.heads = m_translation->head() >= 0 ? std::vector<int>{m_translation->head()} : std::vector<int>{};
    }
    s.relposOrder = m_relpos->rowOrder();
    s.relposLog = m_relpos->logScale();
    if (m_patching)
        s.patching = m_patching->request();
    if (m_relpos->scan()) {
        // The scan travels as a scan-result file next to the session.
        const QString scanPath = path + QStringLiteral(".scan.safetensors");
        try {
            m_relpos->scan()->save(scanPath.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        s.scanFile = QFileInfo(scanPath).fileName();
    }
    return writeSessionFile(path, s);
}

QString MainWindow::openSession(const QString& path)
{
    SessionState s;
    if (const QString err = readSessionFile(path, s); !err.isEmpty())
        return err;
    std::shared_ptr<const core::ScanResult> scan;
    if (!s.scanFile.isEmpty()) {
        const QString scanPath = QFileInfo(path).dir().filePath(s.scanFile);
        try {
            scan = std::make_shared<core::ScanResult>(core::ScanResult::load(scanPath.toStdString()));
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    }
    // Model, text and scan are applied when the model is loaded; the view when its text is computed.
    m_pendingSession = s;
    m_pendingScan = scan;
    m_textPanel->setTextSilently(s.text);
    if (!s.source.isEmpty())
        m_translation->setSource(s.source);
    if (!s.patching.clean.isEmpty()) { // the patching window as it was, not run again until asked
        patchingWindow()->setRequest(s.patching);
        m_patching->show();
    }
    openModel(s.model);
    return {};
}

void MainWindow::startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms)
{
    // Extra profiles: Transformer-XL's terms alone, or a rotary model's bands alone (the Display dock's split).
    QString extra;
    if (terms && m_selection.bands)
        for (int b = 1; b <= m_selection.bands->count(); ++b)
            extra += (b > 1 ? QStringLiteral(",") : QString()) + QString::number(b);
    else if (terms)
        extra = QStringLiteral("a,b,c,d");
    ScanRequest req{textFile, {}, {}, memLen, segmentLen, maxTokens, extra, m_selection.bands};
    if (textFile.isEmpty()) { // the app's sample text (the one recipe for it), as the window opens with
        req.text = builtinSampleText(m_builtinDirs);
        req.textName = tr("built-in sample");
    }
    m_relpos->setScan(nullptr, true);
    m_relpos->showCorpus();
    showDock("relposDock");
    m_compute->scanCorpus(req);
}

FigureWindow* MainWindow::openFigureWindow(const PaperFigure& figure)
{
    auto* w = new FigureWindow(figure, this);
    connect(w, &FigureWindow::saved, this, [this](const QString& path) { showStatus(tr("Saved %1").arg(path)); });
    w->show();
    return w;
}

void MainWindow::showRollout()
{
    if (m_translationResult && m_compute->model() && m_compute->model()->info().can.encoderDecoder) {
        m_compute->requestTranslationAnalysis(m_translationResult, false); // over the encoder's layers
        return;
    }
    if (!haveText(tr("Attention rollout")))
        return;
    const auto r = result();
    if (r->capture->segment(shownSegment()).mlen > 0) {
        QMessageBox::information(this, tr("Attention rollout"),
                                 tr("Rollout is defined for models without memory: this segment also sees %1 earlier "
                                    "tokens. Show the first segment, or use a GPT-2 or Llama-family model.")
                                     .arg(r->capture->segment(shownSegment()).mlen));
        return;
    }
    m_compute->requestRollout(m_selection.segment);
}

bool MainWindow::haveText(const QString& analysis)
{
    if (refusesTwoStreams(analysis))
        return false;
    if (result() && m_compute->model())
        return true;
    QMessageBox::information(this, analysis, tr("Type or open a text first."));
    return false;
}

void MainWindow::showLogitAttribution()
{
    if (!haveText(tr("Direct logit attribution")))
        return;
    const auto& m = m_compute->model();
    const auto& can = m->info().can;
    if (!can.nextTokenLoss || !can.causal) { // (Transformer-XL's adaptive softmax: the core says why not)
        QMessageBox::information(this, tr("Direct logit attribution"),
                                 tr("Direct logit attribution splits a decoder's next-token logit by head through its "
                                    "final norm and unembedding; %1 models are read here without such a read-out. Open "
                                    "GPT-2 or a Llama-family model.")
                                     .arg(QString::fromUtf8(core::familyName(m->info().family))));
        return;
    }
    // The locked query row's token, as the Predictions tab reads it; else the text's last.
    m_compute->requestLogitAttribution(m_grid->lockedRow() >= 0 && m_gridData ? m_gridData->rowPosition(m_grid->lockedRow())
                                                                              : -1);
}

void MainWindow::showAblation()
{
    if (!haveText(tr("Head ablation")))
        return;
    const auto r = result();
    const auto& m = m_compute->model();
    if (!m->info().can.nextTokenLoss) {
        QMessageBox::information(this, tr("Head ablation"),
                                 tr("Head ablation measures the next-token loss, and %1 models are read here without "
                                    "their output softmax: open a model that predicts the next token (a decoder "
                                    "with its language-model head, or Transformer-XL with its adaptive softmax).")
                                     .arg(QString::fromUtf8(core::familyName(m->info().family))));
        return;
    }
    const int forwards = m->info().layers * m->info().heads + 1;
    // Ask first only when it takes a while: about 2 x parameters x tokens operations per forward, more than a
    // few seconds' worth here.
    const double work = 2.0 * static_cast<double>(m->info().parameterCount) *
                        static_cast<double>(r->capture->tokens.size()) * forwards;
    if (work > 1e12 && QMessageBox::question(this, tr("Head ablation"),
                              tr("This runs the model %1 times over the %2 tokens of the text (once per head, and once "
                                 "intact), with progress and Cancel in the status bar. Start?")
                                  .arg(forwards)
                                  .arg(r->capture->tokens.size())) != QMessageBox::Yes)
        return;
    m_compute->requestAblation();
}

MechanismWindow* MainWindow::showMechanism()
{
    if (!m_mechanism)
        m_mechanism = new MechanismWindow(m_compute, this);
    m_mechanism->show();
    m_mechanism->raise();
    m_mechanism->activateWindow();
    followMechanism();
    return m_mechanism;
}

void MainWindow::followMechanism()
{
    const auto r = result();
    if (!m_mechanism || !m_mechanism->isVisible() || !r || !m_gridData || m_gridIsPreview || m_gridData->rows == 0)
        return;
    // The query: the row locked in the grid (a click), else the last one shown; the first selected head.
    const int row = m_grid->lockedRow() >= 0 ? m_grid->lockedRow() : m_gridData->rows - 1;
    const int head = m_selection.heads.empty() ? 0 : m_selection.heads.front();
    m_mechanism->follow(m_selection.layer, head, m_gridData->rowPosition(row));
}

PatchingWindow* MainWindow::patchingWindow()
{
    if (!m_patching) {
        m_patching = new PatchingWindow(m_compute, this);
        connect(m_patching, &PatchingWindow::headWanted, this, [this](int layer, int head) { setSelection(layer, {head}); });
    }
    return m_patching;
}

PatchingWindow* MainWindow::showPatching()
{
    const auto& m = m_compute->model();
    if (m && !m->info().can.interventions) {
        QMessageBox::information(this, tr("Activation patching"),
                                 tr("Activation patching runs a decoder (GPT-2 or a Llama-family model) with one "
                                    "component copied from another prompt's run; %1 is not one.")
                                     .arg(QString::fromUtf8(core::familyName(m->info().family))));
        return nullptr;
    }
    if (!m_patching)
        patchingWindow()->setCleanPrompt(m_textPanel->text());
    m_patching->show();
    m_patching->raise();
    m_patching->activateWindow();
    return m_patching;
}

void MainWindow::showSentences()
{
    if (refusesTwoStreams(tr("Sentences")) || !haveText(tr("Sentences")))
        return;
    m_compute->requestSentences(m_selection.layer, m_selection.heads);
}

HeadContextsWindow* MainWindow::showHeadContexts()
{
    if (refusesTwoStreams(tr("Heads over a corpus")))
        return nullptr;
    if (!m_headContexts) {
        m_headContexts = new HeadContextsWindow(m_compute, this);
        connect(m_headContexts, &HeadContextsWindow::headWanted, this, [this](int layer, int head) { setSelection(layer, {head}); });
    }
    m_headContexts->setCurrentText(m_textPanel->text());
    m_headContexts->show();
    m_headContexts->raise();
    return m_headContexts;
}

bool MainWindow::refusesTwoStreams(const QString& analysis)
{
    const auto& m = m_compute->model();
    if (!m || !m->info().can.encoderDecoder)
        return false;
    QMessageBox::information(this, analysis,
                             tr("%1 reads one text. %2 is an encoder-decoder model: its source, target and the three "
                                "kinds of attention (encoder, decoder, cross) are in the Translation tab, with the word "
                                "alignment and the alignment heads; Analysis > Position Bias shows a T5 model's learned "
                                "relative positions.")
                                 .arg(analysis, m->displayName));
    return true;
}

void MainWindow::showPositionBias()
{
    const auto& m = m_compute->model();
    if (!m || !m->info().can.encoderDecoder ||
        std::none_of(m->info().sites.begin(), m->info().sites.end(), [](const core::AttentionSite& s) { return s.positionBias; })) {
        QMessageBox::information(this, tr("Position bias"),
                                 tr("A learned relative-position bias is T5's (its encoder and decoder add a bias per "
                                    "head and distance to every score); this model has none."));
        return;
    }
    openFigureWindow(positionBiasFigure(*m));
}

FigureWindow* MainWindow::showPaperFigure(int number)
{
    const auto& model = m_compute->model();
    if (refusesTwoStreams(tr("Fig. %1").arg(number)))
        return nullptr;
    const ScanResultPtr source = m_relpos->currentResult();
    if (!model || !source) {
        QMessageBox::information(this, tr("Fig. %1").arg(number),
                                 tr("Fig. %1 needs a relative-position profile: run Analysis > Scan Corpus…, or show the "
                                    "current text's profile in the Relative Position dock.").arg(number));
        return nullptr;
    }
    try {
        const QString what = tr("%1 · %2 tokens").arg(model->displayName).arg(source->tokens);
        PaperFigure f;
        if (number == 6) {
            const auto r = result();
            if (!r)
                throw core::Error(core::ErrorCode::BadInput, "Fig. 6 needs a computed text");
            f = paperFigure6(*source, *r->capture, model->displayName);
        } else {
            f = paperFigureFromScan(number, *source, what);
        }
        return openFigureWindow(f);
    } catch (const std::exception& e) {
        QMessageBox::information(this, tr("Fig. %1").arg(number), QString::fromStdString(e.what()));
        return nullptr;
    }
}

} // namespace attnscope::app
