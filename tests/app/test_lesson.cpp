// The lessons of docs/teaching.md walked through the window on a 1280x800 screen, step by step, checking what each
// step promises the class (the model, the Predictions, the growing grid); and the layout a vision model leaves
// behind for the next model.
#include "builtin_paths.h"
#include "attention_grid_view.h"
#include "compute/compute_controller.h"
#include "export/figure_export.h"
#include "model/model_loader.h"
#include "prediction_view.h"
#include "qt_catch.h"
#include "ui/main_window.h"
#include "ui/prediction_panel.h"
#include "ui/text_panel.h"
#include "views/view_selection.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTableWidget>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QTest>
#include <QToolButton>
#include <catch2/catch.hpp>

using namespace attnscope;

namespace {
const std::vector<std::string> kBuiltins{std::string(ATTNSCOPE_SOURCE_DIR) + "/resources/models"};
const QString kLessonText = QStringLiteral("the war ended in 1945 and the army went home . the war ended in");

void settle(app::ComputeController& c)
{
    REQUIRE(QTest::qWaitFor([&] { return c.idle(); }, 60000));
    QApplication::processEvents();
}

QPushButton* button(const QWidget& w, const char* text)
{
    for (auto* b : w.findChildren<QPushButton*>())
        if (b->text() == QLatin1String(text) && b->isVisible())
            return b;
    return nullptr;
}

int tokenCount(const app::MainWindow& w)
{
    return w.result() ? static_cast<int>(w.result()->capture->tokens.size()) : 0;
}

// Rows the grid shows values in now (stepping reveals fewer than the text's tokens; the frame keeps them all).
int gridRows(const app::MainWindow& w)
{
    return w.grid()->data() ? w.grid()->data()->rows : 0;
}

const widgets::PredictionData* bars(const app::MainWindow& w)
{
    auto* panel = w.findChild<app::PredictionPanel*>();
    return panel ? panel->view()->data().get() : nullptr;
}

// The window on the built-in models, shown on the 1280x800 screen, with `model` open on `text` (a null text: the
// model's own start).
struct Window {
    app::ComputeController c{kBuiltins};
    app::MainWindow w{&c, kBuiltins};
    explicit Window(const QString& model = QString::fromLatin1(core::kDefaultBuiltinSpec), const QString& text = {})
    {
        w.show();
        REQUIRE(QTest::qWaitForWindowExposed(&w));
        w.activateWindow();
        w.openModel(model);
        if (!text.isNull())
            w.setText(text);
        settle(c);
    }
};

// The keyboard as the teacher uses it: a key to whatever has the focus.
void press(Qt::Key k)
{
    QWidget* target = QApplication::focusWidget();
    REQUIRE(target);
    QTest::keyClick(target, k);
    QApplication::processEvents();
}
} // namespace

TEST_CASE("the ten-minute lesson runs as docs/teaching.md writes it", "[app][lesson]")
{
    // Before the class: the app opens on the model the lesson needs (what `make run` opens).
    REQUIRE(QString::fromLatin1(core::kDefaultBuiltinSpec) == QStringLiteral("builtin:llama-wikitext2"));
    Window win;
    auto& w = win.w;
    auto& c = win.c;

    // 1: the sentence typed; one row per token, and Predictions after its last token.
    w.setText(kLessonText);
    settle(c);
    REQUIRE(tokenCount(w) == 15);
    CHECK(gridRows(w) == 15);
    REQUIRE(bars(w));
    CHECK(bars(w)->tokens.size() >= 5);
    // What Generate may write: no control token among the bars (unless it is the token that really follows).
    for (int i = 0; i < static_cast<int>(bars(w)->tokens.size()); ++i)
        if (i != bars(w)->marked) {
            CHECK(bars(w)->tokens[i] != QStringLiteral("<unk>"));
            CHECK(bars(w)->tokens[i] != QStringLiteral("<eos>"));
        }

    // 2: F11 presents: the grid and the Predictions beside it.
    w.grid()->setFocus();
    w.setPresentation(true);
    QApplication::processEvents();
    QTest::qWait(100);
    CHECK(w.isFullScreen());
    CHECK(w.dock("predictionDock")->isVisible());

    // 3, 4: Right steps heads, Down layers.
    w.grid()->setFocus();
    press(Qt::Key_Right);
    CHECK(w.selection().heads == std::vector<int>{1});
    press(Qt::Key_Down);
    CHECK(w.selection().site == 1);
    settle(c);

    // 5: ⏮ then Play: the grid grows a row at a time, Predictions follow the token just revealed.
    w.setRevealRows(1);
    settle(c);
    CHECK(gridRows(w) == 1);
    auto* play = w.textPanel()->findChild<QToolButton*>(QStringLiteral("playButton"));
    REQUIRE(play);
    play->click();
    REQUIRE(QTest::qWaitFor([&] { return gridRows(w) >= 3; }, 10000));
    settle(c);
    REQUIRE(bars(w));
    CHECK(bars(w)->marked >= 0); // the token that really comes, among the bars or with its rank

    // 6: Generate 1 after Play: the token is written and the grid shows every row, the new one too.
    QPushButton* one = button(w, "Generate 1");
    REQUIRE(one);
    one->click();
    REQUIRE(QTest::qWaitFor([&] { return tokenCount(w) == 16 && one->isEnabled(); }, 30000));
    settle(c);
    CHECK_FALSE(w.textPanel()->playing());
    CHECK(w.selection().revealRows == -1);
    CHECK(gridRows(w) == 16);
    // Ctrl+Z right after clicking Generate takes the token back (the box has the keyboard), the typed text stays.
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Z, Qt::ControlModifier);
    CHECK(w.textEdit()->toPlainText() == kLessonText);
    settle(c);

    // 6b: stories-en opens on a story's beginning (not the war sentence) and Generate 10 writes on.
    w.openModel(QStringLiteral("builtin:stories-en"));
    settle(c);
    const QString story = w.textEdit()->toPlainText();
    CHECK(story != kLessonText);
    CHECK_FALSE(story.trimmed().isEmpty());
    CHECK(w.statusText().contains(QStringLiteral("your text comes back")));
    const int before = tokenCount(w);
    QPushButton* ten = button(w, "Generate 10");
    REQUIRE(ten);
    ten->click();
    REQUIRE(QTest::qWaitFor([&] { return tokenCount(w) == before + 10 && ten->isEnabled(); }, 60000));
    settle(c);
    CHECK(gridRows(w) == before + 10);

    // 7: F11 again: the normal window.
    w.setPresentation(false);
    QApplication::processEvents();
    CHECK_FALSE(w.isFullScreen());
}

TEST_CASE("Generate with nothing to continue says why", "[app][lesson]")
{
    Window win(QString::fromLatin1(core::kDefaultBuiltinSpec), QStringLiteral(""));
    auto& w = win.w;
    w.showDock("predictionDock");
    QApplication::processEvents();
    QPushButton* one = button(w, "Generate 1");
    REQUIRE(one);
    one->click();
    QApplication::processEvents();
    CHECK(w.statusText().contains(QStringLiteral("type the beginning of a text")));
}

TEST_CASE("a vision model's dock leaves with it: the next model gets the right column and its docks back",
          "[app][lesson][layout]")
{
    Window win(QString::fromLatin1(core::kDefaultBuiltinSpec), kLessonText);
    auto& w = win.w;
    auto& c = win.c;
    QApplication::processEvents();
    const int textViewWidth = w.dock("textViewDock")->width();
    const double gridShare = static_cast<double>(w.grid()->width()) * w.grid()->height() / (w.width() * w.height());
    CHECK_FALSE(w.dock("imageDock")->toggleViewAction()->isVisible()); // View lists only what the model uses
    CHECK_FALSE(w.dock("expertsDock")->isVisible());

    w.openModel(QStringLiteral("builtin:shapes-vit"));
    settle(c);
    QApplication::processEvents();
    CHECK(w.dock("imageDock")->isVisible());
    CHECK(w.dock("imageDock")->toggleViewAction()->isVisible());
    CHECK_FALSE(w.dock("textDock")->findChild<QWidget*>(QStringLiteral("secondText"))->isVisible()); // no sentence B

    w.openModel(QString::fromLatin1(core::kDefaultBuiltinSpec));
    settle(c);
    QApplication::processEvents();
    QTest::qWait(50);
    CHECK_FALSE(w.dock("imageDock")->isVisible());
    INFO("text view " << w.dock("textViewDock")->width() << " px, before the vision model " << textViewWidth);
    CHECK(std::abs(w.dock("textViewDock")->width() - textViewWidth) <= 12);
    const double after = static_cast<double>(w.grid()->width()) * w.grid()->height() / (w.width() * w.height());
    INFO("grid share of the window " << after << ", before " << gridShare);
    CHECK(after >= gridShare - 0.02);

    // Reset Layout lays out the model open now: no Translation or Image tab for a text model.
    for (QAction* a : w.menuBar()->findChildren<QAction*>())
        if (a->text() == QStringLiteral("&Reset Layout"))
            a->trigger();
    QApplication::processEvents();
    CHECK_FALSE(w.dock("imageDock")->isVisible());
    CHECK_FALSE(w.dock("translationDock")->isVisible());
    CHECK(w.dock("textDock")->isVisible());
}

TEST_CASE("the grid keeps 45% of a 1280x800 screen with the text, 40% with an analysis tab up", "[app][lesson][layout]")
{
    Window win(QString::fromLatin1(core::kDefaultBuiltinSpec), kLessonText);
    auto& w = win.w;
    const QRect screen = w.screen()->geometry();
    auto share = [&] {
        QApplication::processEvents();
        QTest::qWait(50);
        return static_cast<double>(w.grid()->width()) * w.grid()->height() / (double(screen.width()) * screen.height());
    };
    INFO("with the text: the grid is " << w.grid()->width() << "x" << w.grid()->height() << ", " << share());
    CHECK(share() >= 0.45);
    for (const char* tab : {"predictionDock", "atlasDock", "relposDock", "qkDock"}) {
        w.showDock(tab);
        INFO(tab << ": the grid is " << w.grid()->width() << "x" << w.grid()->height() << ", " << share());
        CHECK(share() >= 0.40);
    }
}

TEST_CASE("presenting an encoder with its Predictions gives the grid 60% of the screen", "[app][lesson][layout]")
{
    Window win(QStringLiteral("builtin:bert-wikitext2"), QStringLiteral("the war ended in [MASK] and the army went home ."));
    auto& w = win.w;
    w.setPresentation(true);
    QApplication::processEvents();
    QTest::qWait(100);
    REQUIRE(w.dock("predictionDock")->isVisible());
    // The empty Sentence B box gives its row to the grid while presenting.
    CHECK_FALSE(w.dock("textDock")->findChild<QWidget*>(QStringLiteral("secondText"))->isVisible());
    const QRect full = w.screen()->geometry();
    const double area = static_cast<double>(w.grid()->width()) * w.grid()->height() / (double(full.width()) * full.height());
    INFO("grid " << w.grid()->width() << "x" << w.grid()->height() << ": " << area << " of the screen");
    CHECK(area >= 0.6);
    w.setPresentation(false);
    QApplication::processEvents();
    CHECK(w.dock("textDock")->findChild<QWidget*>(QStringLiteral("secondText"))->isVisible());
}

TEST_CASE("an exported grid keeps its short labels whole and sizes its text for a paper's column", "[app][export]")
{
    Window win(QString::fromLatin1(core::kDefaultBuiltinSpec), QStringLiteral("the album was released in japan and later in europe ."));
    auto& w = win.w;
    const QString dir = QDir::tempPath() + QStringLiteral("/attnscope-lesson-export");
    QDir().mkpath(dir);
    auto svgOf = [&](const app::FigureSize& size) {
        const QString path = dir + QStringLiteral("/grid.svg");
        REQUIRE(w.exportFigureTo(path, size).isEmpty());
        QFile f(path);
        REQUIRE(f.open(QIODevice::ReadOnly));
        return QString::fromUtf8(f.readAll());
    };
    // As on screen: every label whole ("album", not "alb…": the labels were cut to a widget never laid out).
    const QString screen = svgOf({});
    CHECK(screen.contains(QStringLiteral(">album<")));
    CHECK_FALSE(screen.contains(QStringLiteral("alb…")));
    // For one column of a paper: the figure is 1000 wide and printed 240 pt wide, so its text is about 35 pt.
    app::FigureSize column;
    column.printedWidth = app::kColumnWidth;
    const QString printed = svgOf(column);
    const QRegularExpression size(QStringLiteral("font-size=\"([0-9.]+)\""));
    double largest = 0;
    for (auto it = size.globalMatch(printed); it.hasNext();)
        largest = std::max(largest, it.next().captured(1).toDouble());
    double screenLargest = 0;
    for (auto it = size.globalMatch(screen); it.hasNext();)
        screenLargest = std::max(screenLargest, it.next().captured(1).toDouble());
    INFO("largest font size: " << largest << " for a column, " << screenLargest << " as on screen");
    CHECK(largest > 3 * screenLargest);
    CHECK(printed.contains(QStringLiteral(">album<")));
    QDir(dir).removeRecursively();
}

TEST_CASE("analyses while presenting: the atlas in a large window, every column in view and a dozen rows",
          "[app][lesson][layout]")
{
    Window win(QString::fromLatin1(core::kDefaultBuiltinSpec), kLessonText);
    auto& w = win.w;
    auto& c = win.c;
    w.setPresentation(true);
    QApplication::processEvents();
    w.showDock("atlasDock");
    auto* table = w.findChild<QTableWidget*>(QStringLiteral("atlasTable"));
    REQUIRE(table);
    REQUIRE(QTest::qWaitFor([&] { return table->rowCount() > 0; }, 60000));
    settle(c);
    QTest::qWait(100);
    CHECK(w.dock("atlasDock")->isFloating());
    CHECK_FALSE(table->horizontalScrollBar()->isVisible()); // the head column never scrolls out of view
    const int rowHeight = table->rowHeight(0);
    const int visibleRows = table->viewport()->height() / std::max(1, rowHeight);
    INFO("the atlas shows " << visibleRows << " rows of " << rowHeight << " px in " << table->viewport()->height());
    CHECK(visibleRows >= 12);
    w.setPresentation(false);
    QApplication::processEvents();
    CHECK_FALSE(w.dock("atlasDock")->isFloating()); // back in its tab
}
