// MainWindow's menus: each action asks what it needs (a path, a size) and hands the work to a controller (files,
// analyses, the layout); the recent-models list.
#include "builtin_paths.h"
#include "model/model_loader.h"
#include "ui/figure_size_dialog.h"
#include "ui/file_dialogs.h"
#include "ui/guide_window.h"
#include "ui/main_window.h"
#include "ui/relpos_panel.h"
#include "ui/scan_dialog.h"
#include "ui/window_layout.h"
#include "util/cpu_features.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>

namespace attnscope::app {

namespace {
constexpr int kMaxRecent = 8;
}

void MainWindow::buildMenus()
{
    buildFileMenu();
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, [this] {
        // The Text tab or the Translation tab: the one the open model reads (as opening it chose).
        const auto& m = m_parts.compute->model();
        const bool translates = m && m->info().typedReadStream() >= 0;
        m_parts.layout->resetLayout([this, translates](const QDockWidget* d) {
            return d->objectName() == QLatin1String("textDock") ? !translates : m_docks->used(d);
        });
        m_docks->fitBottomTabs();
    });
    QAction* present = view->addAction(tr("&Presentation Mode"));
    present->setCheckable(true);
    present->setShortcut(QKeySequence(Qt::Key_F11));
    present->setShortcutContext(Qt::ApplicationShortcut);
    connect(present, &QAction::toggled, this, &MainWindow::setPresentation);
    addAction(present); // the shortcut works while the menu bar is hidden in full screen
    buildAnalysisMenu();
    QMenu* paper = menuBar()->addMenu(tr("&Paper Figures"));
    paper->addAction(tr("Fig. &5: every head by relative distance"), this, [this] { m_analyses->showPaperFigure(5); });
    paper->addAction(tr("Fig. &6: the widest heads' memory attention"), this, [this] { m_analyses->showPaperFigure(6); });
    paper->addAction(tr("Fig. &7: terms (a), (b), (d) alone; rotary bands alone"), this, [this] { m_analyses->showPaperFigure(7); });
    buildHelpMenu();
}

void MainWindow::buildFileMenu()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open Model…"), QKeySequence::Open, this, [this] {
        const QString path = askModelPath(this, tr("Open a model: its folder (config.json + weights), a .gguf file, or "
                                                   "a PyTorch checkpoint with config.json beside it"));
        if (!path.isEmpty())
            openModel(path);
    });
    file->addAction(tr("Open Model &Folder…"), this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Open model folder (config.json + weights)"));
        if (!path.isEmpty())
            openModel(path);
    });
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    QMenu* builtins = file->addMenu(tr("&Built-in Models"));
    for (const auto& name : core::listBuiltinModels(m_parts.builtinDirs)) {
        const QString spec = QString::fromStdString(core::builtinSpec(name));
        builtins->addAction(QString::fromStdString(name), this, [this, spec] { openModel(spec); });
    }
    if (builtins->isEmpty())
        builtins->addAction(tr("(none installed)"))->setEnabled(false);
    file->addAction(tr("Open &Text…"), this, [this] {
        if (const QString path = askTextFile(this, tr("Open text")); !path.isEmpty())
            reportSave(openTextFile(path), tr("Could not open text"), QString());
    });
    file->addAction(tr("Open &Image…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open image"), QString(),
                                                          tr("Images (*.png *.jpg *.jpeg *.bmp *.webp);;All files (*)"));
        if (!path.isEmpty())
            m_files->openImage(path);
    });
    file->addAction(tr("Open &Audio…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open audio"), QString(),
                                                          tr("Recordings (*.wav *.flac *.ogg *.oga *.aiff *.aif);;All files (*)"));
        if (!path.isEmpty())
            m_files->openAudio(path);
    });
    file->addSeparator();
    file->addAction(tr("Open &Session…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QString(), tr("attnscope sessions (*.attnscope)"));
        if (!path.isEmpty())
            reportSave(openSession(path), tr("Could not open session"), QString());
    });
    file->addAction(tr("Save Sessio&n…"), this, [this] {
        const QString path = askSavePath(this, tr("Save session"), QStringLiteral("session.attnscope"),
                                         tr("attnscope sessions (*.attnscope)"), QStringLiteral("attnscope"));
        if (!path.isEmpty())
            reportSave(saveSession(path), tr("Could not save session"), tr("Saved session %1").arg(path));
    });
    file->addSeparator();
    file->addAction(tr("Export &Figure…"), QKeySequence(tr("Ctrl+Shift+E")), this, [this] {
        const QString path = askFigurePath(this, tr("Export figure"), QStringLiteral("attention"));
        if (path.isEmpty())
            return;
        if (const auto size = askFigureSize(this, path, FigureSizeChoice{{kDefaultGridFigureWidth, 800}, true}))
            reportSave(exportFigureTo(path, *size), tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &Data…"), this, [this] {
        const QString path = askDataPath(this, tr("Export data"), QStringLiteral("attention"));
        if (!path.isEmpty())
            reportSave(exportDataTo(path), tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &Page (HTML)…"), this, [this] {
        if (!m_files->canExportPage()) {
            QMessageBox::information(this, tr("Export page"), tr("Type or open a text first."));
            return;
        }
        QString path = QFileDialog::getSaveFileName(this, tr("Export an interactive page of the shown layer"),
                                                    QStringLiteral("attention.html"), tr("HTML page (*.html)"));
        if (!path.isEmpty() && QFileInfo(path).suffix().isEmpty())
            path += QStringLiteral(".html"); // a browser opens it by its extension
        if (!path.isEmpty())
            reportSave(m_files->exportPageTo(path), tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &All Heads…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for one figure per head"));
        if (!dir.isEmpty())
            reportSave(exportAllHeadsTo(dir), tr("Export failed"),
                       tr("Saved every head of layer %1 to %2").arg(selection().site + 1).arg(dir));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
}

void MainWindow::buildAnalysisMenu()
{
    QMenu* analysis = menuBar()->addMenu(tr("&Analysis"));
    analysis->addAction(tr("&Scan Corpus…"), QKeySequence(tr("Ctrl+Shift+S")), this, [this] {
        const auto& m = m_parts.compute->model();
        if (!m)
            QMessageBox::information(this, tr("Scan corpus"), tr("Open a model first."));
        else if (const auto s = askScanSettings(this, m->info()))
            m_analyses->startScan(s->textFile, s->memLen, s->segmentLen, s->maxTokens, s->terms);
    });
    analysis->addAction(tr("&Open Scan Result…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open scan result"), QString(), tr("Scan results (*.safetensors)"));
        if (!path.isEmpty())
            m_analyses->openScanResult(path);
    });
    analysis->addAction(tr("Sa&ve Scan Result…"), this, [this] {
        if (!m_parts.relpos->scan()) {
            QMessageBox::information(this, tr("Save scan"), tr("There is no corpus scan to save yet."));
            return;
        }
        const QString path = askSavePath(this, tr("Save scan result"), QStringLiteral("scan.safetensors"),
                                         tr("Scan results (*.safetensors)"), QStringLiteral("safetensors"));
        if (!path.isEmpty())
            m_analyses->saveScanResult(path);
    });
    analysis->addSeparator();
    analysis->addAction(tr("Head &Atlas"), this, [this] { showDock("atlasDock"); });
    analysis->addAction(tr("Co&mpare Models"), this, [this] { showDock("compareDock"); });
    analysis->addAction(tr("&Predictions (Next or Masked Tokens)"), this, [this] { showDock("predictionDock"); });
    analysis->addAction(tr("&Query-Key Space"), this, [this] { showDock("qkDock"); });
    analysis->addAction(tr("&Experts (Router of a Mixture-of-Experts Model)"), this, [this] { showDock("expertsDock"); });
    AnalysisLauncher* a = m_analyses;
    analysis->addAction(tr("Attention &Rollout"), a, &AnalysisLauncher::showRollout);
    analysis->addAction(tr("&Word Timings and Alignment Heads (speech)"), a, &AnalysisLauncher::showWordTimings);
    analysis->addAction(tr("&How This Head Computes…"), QKeySequence(Qt::CTRL | Qt::Key_M), a, [a] { a->showMechanism(); });
    analysis->addAction(tr("&Logit Lens"), a, &AnalysisLauncher::showLogitLens);
    analysis->addAction(tr("&Direct Logit Attribution"), a, &AnalysisLauncher::showLogitAttribution);
    analysis->addAction(tr("&Position Bias (T5: heads by signed distance)"), a, &AnalysisLauncher::showPositionBias);
    analysis->addAction(tr("Head A&blation"), a, &AnalysisLauncher::showAblation);
    analysis->addAction(tr("Activation Pa&tching…"), a, [a] { a->showPatching(); });
    analysis->addAction(tr("Heads over a &Corpus…"), a, [a] { a->showHeadContexts(); });
    analysis->addAction(tr("&Sentences (Reasoning Traces)"), a, &AnalysisLauncher::showSentences);
}

void MainWindow::buildHelpMenu()
{
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&User Guide"), QKeySequence::HelpContents, this,
                    [this] { (new GuideWindow(QString::fromStdString(userGuidePath()), this))->show(); });
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

} // namespace attnscope::app
