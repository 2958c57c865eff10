// attnscope-docshots: drives the real main window through the scenes of the user guide and saves a PNG of the
// window and of each dock into docs/images (run under Xvfb at 1280x800, a projector's size). Not installed.
#include "attention_grid_view.h"
#include "builtin_paths.h"
#include "compute/compute_controller.h"
#include "figures/paper_figure_view.h"
#include "ui/figure_window.h"
#include "ui/heads_panel.h"
#include "ui/main_window.h"
#include "ui/mechanism_window.h"
#include "mechanism_view.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QScreen>
#include <QSignalSpy>
#include <QTest>
#include <cstdio>

using namespace attnscope;

namespace {
QString outDir;

bool settle(app::ComputeController& c, int ms = 120000)
{
    const bool ok = QTest::qWaitFor([&] { return c.idle(); }, ms);
    QApplication::processEvents();
    QTest::qWait(200);
    return ok;
}

void save(QWidget* w, const QString& name)
{
    QApplication::processEvents();
    QTest::qWait(150);
    const QString path = QDir(outDir).filePath(name + QStringLiteral(".png"));
    w->grab().save(path);
    std::fprintf(stderr, "wrote %s\n", qPrintable(path));
}

QString sampleText(const std::vector<std::string>& dirs)
{
    for (const auto& d : dirs) {
        QFile f(QDir(QString::fromStdString(d)).filePath(QStringLiteral("sample.txt")));
        if (f.open(QIODevice::ReadOnly))
            return QString::fromUtf8(f.readAll());
    }
    return {};
}

// Starts an analysis whose figure window opens when `ready` fires, waits for it, saves the window as `name`.
template <typename Signal>
bool saveAnalysisFigure(app::MainWindow& w, app::ComputeController& compute, Signal ready, void (app::AnalysisLauncher::*start)(),
                        const QString& name, int timeoutMs)
{
    QSignalSpy spy(&compute, ready);
    (w.analyses()->*start)();
    if (!spy.wait(timeoutMs))
        return false;
    settle(compute);
    for (auto* f : w.findChildren<app::FigureWindow*>()) {
        save(f, name);
        f->close();
    }
    return true;
}
} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("attnscope-docshots")); // never the user's settings
    outDir = argc > 1 ? QString::fromLocal8Bit(argv[1]) : QStringLiteral("docs/images");
    const QString corpus = argc > 2 ? QString::fromLocal8Bit(argv[2]) : QString();
    QDir().mkpath(outDir);
    const auto dirs = builtinModelDirs(argv[0]);
    app::ComputeController compute(dirs);
    app::MainWindow w(&compute, dirs);
    w.show();
    w.setGeometry(w.screen()->availableGeometry()); // the whole screen, also without a window manager
    w.setText(sampleText(dirs));
    w.openModel(QStringLiteral("builtin:txl-wikitext2"));
    if (!settle(compute))
        return 1;
    save(&w, QStringLiteral("main-window"));
    save(w.grid(), QStringLiteral("token-grid"));
    for (const char* d : {"headDock", "textViewDock", "textDock", "modelDock", "displayDock"})
        w.dock(d)->raise();
    settle(compute);
    save(w.dock("headDock"), QStringLiteral("heads-dock"));
    save(w.dock("textViewDock"), QStringLiteral("text-view-dock"));
    save(w.dock("textDock"), QStringLiteral("text-dock"));
    save(w.dock("modelDock"), QStringLiteral("model-dock"));
    w.dock("displayDock")->raise();
    save(w.dock("displayDock"), QStringLiteral("display-dock"));

    // Term toggles: the grid of (b) alone.
    w.setTerms(core::TermSelection{false, true, false, false});
    settle(compute);
    save(w.grid(), QStringLiteral("token-grid-term-b"));
    w.setTerms(core::TermSelection{});
    settle(compute);

    // Corpus scan -> Figs. 5, 6 and 7, each in its window.
    w.analyses()->startScan(corpus, 128, 64, 20000, true);
    if (!settle(compute, 900000))
        return 1;
    save(w.dock("relposDock"), QStringLiteral("relpos-dock"));
    save(&w, QStringLiteral("main-window-scan")); // the grid keeps its room beside the scan
    for (int fig : {5, 6, 7}) {
        app::FigureWindow* f = w.analyses()->showPaperFigure(fig);
        if (!f)
            return 1;
        save(f, QStringLiteral("paper-fig%1").arg(fig));
        f->close();
    }

    // Head atlas of the scan: its dock, and the similarity matrix as a figure.
    w.dock("atlasDock")->show();
    w.dock("atlasDock")->raise();
    if (!settle(compute, 600000))
        return 1;
    save(w.dock("atlasDock"), QStringLiteral("atlas-dock"));

    // Model comparison of the teaching models.
    w.setText(QStringLiteral("the lobster is blue , only becoming red on cooking ."));
    settle(compute);
    QStringList heads;
    for (int h = 1; h <= 8; ++h)
        heads << QStringLiteral("builtin:heads-%1").arg(h);
    w.analyses()->compareModels(heads);
    if (!settle(compute))
        return 1;
    save(&w, QStringLiteral("compare-heads-1-8"));

    // Presentation mode.
    w.setPresentation(true);
    settle(compute);
    save(&w, QStringLiteral("presentation-mode"));
    w.setPresentation(false);

    // The built-in Llama-family model: attention rollout and the loss change of zeroing each head on the sample
    // text, and its frequency bands over the corpus (the Fig. 7 counterpart).
    w.dock("compareDock")->hide();
    w.setText(sampleText(dirs));
    w.openModel(QStringLiteral("builtin:llama-wikitext2"));
    if (!settle(compute))
        return 1;
    if (!saveAnalysisFigure(w, compute, &app::ComputeController::rolloutReady, &app::AnalysisLauncher::showRollout,
                            QStringLiteral("attention-rollout"), 120000))
        return 1;
    w.analyses()->startScan(corpus, 0, 256, 20000, true);
    if (!settle(compute, 900000))
        return 1;
    if (app::FigureWindow* f = w.analyses()->showPaperFigure(7)) {
        save(f, QStringLiteral("bands-fig7"));
        f->close();
    } else {
        return 1;
    }
    if (!saveAnalysisFigure(w, compute, &app::ComputeController::ablationReady, &app::AnalysisLauncher::showAblation,
                            QStringLiteral("head-ablation"), 300000))
        return 1;

    // What the model predicts, and one head's queries and keys, as bottom tabs.
    for (const auto& [dock, name] : {std::pair{"predictionDock", "predictions-dock"}, std::pair{"qkDock", "qk-space-dock"}}) {
        w.showDock(dock);
        if (!settle(compute, 120000))
            return 1;
        QTest::qWait(300); // the tab's deferred height
        save(w.dock(dock), QLatin1String(name));
    }

    // A lesson (docs/teaching.md): one sentence, the mechanism of one head step by step, then presenting with
    // Predictions beside the grid.
    w.setText(QStringLiteral("the war ended in 1945 and the army went home . the war ended in"));
    if (!settle(compute))
        return 1;
    w.setSelection(1, {2});
    if (!settle(compute))
        return 1;
    app::MechanismWindow* m = w.analyses()->showMechanism();
    m->resize(1240, 720);
    if (!QTest::qWaitFor([&] { return m->view()->data() != nullptr; }, 60000))
        return 1;
    const auto& steps = m->view()->data()->steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const QString t = steps[i].title;
        const char* name = t.contains(QStringLiteral("Its query"))       ? "mechanism-query"
                           : t.contains(QStringLiteral("Scores"))        ? "mechanism-scores"
                           : t.contains(QStringLiteral("Softmax"))       ? "mechanism-softmax"
                           : t.contains(QStringLiteral("Values"))        ? "mechanism-values"
                           : t.contains(QStringLiteral("residual"))      ? "mechanism-residual"
                           : t.contains(QStringLiteral("prediction"))    ? "mechanism-prediction"
                                                                          : nullptr;
        if (!name)
            continue;
        m->view()->setStep(static_cast<int>(i));
        save(m, QLatin1String(name));
    }
    m->close();
    w.setPresentation(true);
    if (!settle(compute))
        return 1;
    QTest::qWait(500); // the docks' deferred sizes
    save(&w, QStringLiteral("lesson-presenting"));
    w.setPresentation(false);
    return 0;
}
