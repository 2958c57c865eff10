// attnscope-docshots: drives the real main window through the scenes of the user guide and saves a PNG of the
// window and of each dock into docs/images (run under Xvfb or QT_QPA_PLATFORM=offscreen). Not installed.
#include "attention_grid_view.h"
#include "builtin_paths.h"
#include "compute/compute_controller.h"
#include "ui/main_window.h"
#include "ui/figure_window.h"
#include "ui/relpos_panel.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>
#include <cstdio>

using namespace attnscope;

namespace {
QString outDir;

void save(QWidget* w, const QString& name)
{
    QApplication::processEvents();
    QTest::qWait(150);
    const QString path = QDir(outDir).filePath(name + QStringLiteral(".png"));
    w->grab().save(path);
    std::fprintf(stderr, "wrote %s\n", qPrintable(path));
}

QDockWidget* dock(app::MainWindow& w, const char* name)
{
    for (auto* d : w.findChildren<QDockWidget*>())
        if (d->objectName() == QLatin1String(name))
            return d;
    return nullptr;
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
    w.resize(1600, 1000);
    w.show();
    QSignalSpy ready(&compute, &app::ComputeController::textReady);
    QFile sample(QDir(QString::fromStdString(dirs[0])).filePath(QStringLiteral("sample.txt")));
    for (const auto& d : dirs) {
        sample.setFileName(QDir(QString::fromStdString(d)).filePath(QStringLiteral("sample.txt")));
        if (sample.exists())
            break;
    }
    sample.open(QIODevice::ReadOnly);
    w.textEdit()->setPlainText(QString::fromUtf8(sample.readAll()));
    w.openModel(QStringLiteral("builtin:txl-wikitext2"));
    if (!ready.wait(60000))
        return 1;
    w.setSelection(0, {0});
    save(&w, QStringLiteral("main-window"));
    save(w.grid(), QStringLiteral("token-grid"));
    save(dock(w, "headDock"), QStringLiteral("heads-dock"));
    save(dock(w, "textViewDock"), QStringLiteral("text-view-dock"));
    save(dock(w, "textDock"), QStringLiteral("text-dock"));
    save(dock(w, "modelDock"), QStringLiteral("model-dock"));
    save(dock(w, "displayDock"), QStringLiteral("display-dock"));

    // Term toggles: the grid of (b) alone.
    w.setTerms(core::TermSelection{false, true, false, false});
    save(w.grid(), QStringLiteral("token-grid-term-b"));
    w.setTerms(core::TermSelection{});

    // Corpus scan -> Figs. 5, 6 and 7.
    QSignalSpy scanned(&compute, &app::ComputeController::scanFinished);
    w.startScan(corpus, 128, 64, 20000, true);
    if (!scanned.wait(600000))
        return 1;
    auto* rel = dock(w, "relposDock");
    rel->setFloating(true);
    rel->resize(1500, 700);
    w.showPaperFigure(5);
    save(rel, QStringLiteral("paper-fig5"));
    w.showPaperFigure(7);
    save(rel, QStringLiteral("paper-fig7"));
    w.showPaperFigure(6);
    for (QWidget* top : QApplication::topLevelWidgets())
        if (top->windowTitle().startsWith(QLatin1String("Fig. 6"))) {
            save(top, QStringLiteral("paper-fig6"));
            top->close();
        }
    w.showPaperFigure(5);
    rel->setFloating(false);

    // Model comparison of the teaching models.
    QSignalSpy compared(&compute, &app::ComputeController::comparisonReady);
    w.textEdit()->setPlainText(QStringLiteral("the lobster is blue , only becoming red on cooking ."));
    if (!ready.wait(60000))
        return 1;
    QStringList heads;
    for (int h = 1; h <= 8; ++h)
        heads << QStringLiteral("builtin:heads-%1").arg(h);
    w.compareModels(heads);
    if (!compared.wait(60000))
        return 1;
    auto* cmp = dock(w, "compareDock");
    cmp->setFloating(true);
    cmp->resize(1500, 950);
    save(cmp, QStringLiteral("compare-heads-1-8"));
    cmp->setFloating(false);

    // Presentation mode.
    w.setPresentation(true);
    save(&w, QStringLiteral("presentation-mode"));
    w.setPresentation(false);
    return 0;
}
