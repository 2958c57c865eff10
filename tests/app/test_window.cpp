// The main window as a user meets it: no stale view after a model switch, arrow keys in every focus situation,
// honest labels, presentation mode, sessions with their scan, crisp PDF export, texts from files and drops.
#include "analysis/qk_space.h"
#include "analysis/surprisal.h"
#include "analysis/head_atlas.h"
#include "analysis/logit_attribution.h"
#include "attention_grid_view.h"
#include "compute/compute_controller.h"
#include "head_overview_view.h"
#include "relpos_heatmap_view.h"
#include "qt_catch.h"
#include "test_support.h"
#include "text_attention_view.h"
#include "analysis/attention_grid.h"
#include "ui/atlas_panel.h"
#include "ui/display_panel.h"
#include "export/figure_export.h"
#include "ui/qk_panel.h"
#include "ui/prediction_panel.h"
#include "analysis/token_predictions.h"
#include "qk_matrix_view.h"
#include "qk_scatter_view.h"
#include "figures/paper_figure_view.h"
#include "ui/figure_window.h"
#include "ui/file_dialogs.h"
#include "ui/guide_window.h"
#include "ui/heads_panel.h"
#include "ui/model_panel.h"
#include "ui/main_window.h"
#include "ui/mechanism_window.h"
#include "mechanism_view.h"
#include "ui/relpos_panel.h"
#include "ui/scan_dialog.h"
#include "ui/text_panel.h"
#include "ui/patching_window.h"
#include "ui/head_contexts_window.h"
#include "head_scatter_view.h"
#include "ui/text_box.h"
#include "io/safetensors.h"
#include "util/text_file.h"

#include <qcustomplot.h>
#include <QAbstractItemView>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QTextDocument>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace attnscope;

namespace {
QString caseDir(const char* name)
{
    return QString::fromStdString((test::testdataDir() / name).string());
}

void settle(app::ComputeController& c)
{
    REQUIRE(QTest::qWaitFor([&] { return c.idle(); }, 30000));
    QApplication::processEvents();
}

// A window on `model` showing `text`, with every view filled in.
struct Window {
    app::ComputeController c{{}};
    app::MainWindow w{&c, {}};
    Window(const char* model, const QString& text)
    {
        w.resize(1280, 800);
        w.show();
        REQUIRE(QTest::qWaitForWindowExposed(&w));
        w.activateWindow();
        w.textEdit()->setPlainText(text);
        w.openModel(caseDir(model));
        settle(c);
        REQUIRE(w.result());
    }
};

QString ids(int n)
{
    QString s;
    for (int i = 0; i < n; ++i)
        s += QString::number((i * 7) % 40) + ' ';
    return s;
}
} // namespace

TEST_CASE("opening another model switches or clears every view at once", "[app][window][stale]")
{
    Window win("txl-tiny", ids(12));
    auto& w = win.w;
    REQUIRE(w.grid()->data());
    CHECK(w.grid()->data()->title.contains("txl-tiny"));
    QSignalSpy loaded(&win.c, &app::ComputeController::modelLoaded);
    w.openModel(caseDir("gpt2-tiny"));
    REQUIRE(loaded.wait(10000));
    // The moment the new model is there, nothing of the old one is on screen.
    CHECK_FALSE(w.grid()->data());
    CHECK(w.grid()->placeholder().contains("gpt2-tiny"));
    CHECK_FALSE(w.textView()->pairsTable()->rowCount() > 0);
    CHECK(w.windowTitle().contains("gpt2-tiny"));
    settle(win.c);
    REQUIRE(w.grid()->data());
    CHECK(w.grid()->data()->title.contains("gpt2-tiny"));
    CHECK(w.result()->model->displayName == "gpt2-tiny");
    CHECK(w.headsPanel()->layerBox()->maximum() == 2);
    CHECK(w.headsPanel()->headBox()->maximum() == 4);
    // The term boxes of a model without terms are disabled, and each says why.
    for (int t = 0; t < 4; ++t) {
        CHECK_FALSE(w.displayPanel()->termBox(t)->isEnabled());
        CHECK(w.displayPanel()->termBox(t)->toolTip().contains("no relative score terms"));
    }
}

TEST_CASE("arrow keys step heads wherever the focus does not need them", "[app][window][keys]")
{
    Window win("txl-samelen", ids(12));
    auto& w = win.w;
    auto key = [&](Qt::Key k, Qt::KeyboardModifiers m = Qt::NoModifier) {
        QWidget* target = QApplication::activePopupWidget() ? QApplication::activePopupWidget()->focusWidget()
                                                            : QApplication::focusWidget();
        REQUIRE(target);
        QTest::keyClick(target, k, m);
    };

    SECTION("the grid: Left/Right heads, Up/Down layers, A to the average and back to the same head")
    {
        w.grid()->setFocus();
        key(Qt::Key_Right);
        key(Qt::Key_Right);
        CHECK(w.selection().heads == std::vector<int>{2});
        key(Qt::Key_Down);
        CHECK(w.selection().site == 1);
        key(Qt::Key_Up);
        CHECK(w.selection().site == 0);
        key(Qt::Key_A);
        CHECK(w.selection().heads.empty());
        key(Qt::Key_A);
        CHECK(w.selection().heads == std::vector<int>{2});
    }
    SECTION("the text box keeps its arrows; Alt+arrows step")
    {
        w.textEdit()->setFocus();
        key(Qt::Key_Right);
        key(Qt::Key_A);
        CHECK(w.selection().heads == std::vector<int>{0});
        key(Qt::Key_Right, Qt::AltModifier);
        CHECK(w.selection().heads == std::vector<int>{1});
    }
    SECTION("an open colour list keeps Up and Down")
    {
        QComboBox* colours = w.displayPanel()->colourBox();
        w.dock("displayDock")->raise();
        colours->setFocus();
        colours->showPopup();
        REQUIRE(QTest::qWaitFor([] { return QApplication::activePopupWidget() != nullptr; }, 2000));
        const QString before = colours->view()->currentIndex().data().toString();
        key(Qt::Key_Down);
        CHECK(w.selection().site == 0); // not stepped
        CHECK(colours->view()->currentIndex().data().toString() != before);
        colours->hidePopup();
    }
    SECTION("the layer box steps the same way as everywhere (Up = previous layer)")
    {
        w.setSelection(1, {0});
        w.headsPanel()->layerBox()->setFocus();
        key(Qt::Key_Up);
        CHECK(w.selection().site == 0);
        key(Qt::Key_Down);
        CHECK(w.selection().site == 1);
        key(Qt::Key_Right);
        CHECK(w.selection().heads == std::vector<int>{1});
    }
    SECTION("clicking a thumbnail takes the focus from the text, so arrows then step heads")
    {
        w.textEdit()->setFocus();
        auto* overview = w.headOverview();
        w.dock("headDock")->raise();
        QTest::mouseClick(overview, Qt::LeftButton, Qt::NoModifier, overview->cellRect(1, 2).center());
        CHECK(w.selection().site == 1);
        CHECK(w.selection().heads == std::vector<int>{2});
        CHECK(QApplication::focusWidget() == overview);
        key(Qt::Key_Right);
        CHECK(w.selection().heads == std::vector<int>{3});
    }
    SECTION("after F11 the arrows step heads at once")
    {
        w.headsPanel()->layerBox()->setFocus();
        w.setPresentation(true);
        QApplication::processEvents();
        key(Qt::Key_Down);
        CHECK(w.selection().site == 1);
        w.setPresentation(false);
    }
}

TEST_CASE("labels say what is shown: raw scores, the colour map drawn, no term ticked", "[app][window][labels]")
{
    Window win("txl-adaptive", ids(15));
    auto& w = win.w;
    const auto fullThumb = w.headOverview()->grab().toImage();
    w.setTerms(core::TermSelection{true, true, true, true, true}); // raw scores
    settle(win.c);
    CHECK(w.grid()->data()->diverging);
    CHECK(w.displayPanel()->colourBox()->currentText().contains("diverging"));
    CHECK(w.grid()->colourMap() == widgets::ColourMap::RedBlue);
    CHECK(w.textView()->pairsTable()->horizontalHeaderItem(2)->text() == "score");
    // Thumbnails follow the toggles.
    CHECK(w.headOverview()->grab().toImage() != fullThumb);
    w.setTerms(core::TermSelection{});
    settle(win.c);
    CHECK(w.displayPanel()->colourBox()->currentText() == "Viridis");
    CHECK(w.textView()->pairsTable()->horizontalHeaderItem(2)->text() == "strength %");
    // No term ticked: the grid says so instead of keeping the old picture.
    w.setTerms(core::TermSelection{false, false, false, false});
    settle(win.c);
    CHECK_FALSE(w.grid()->data());
    CHECK(w.grid()->placeholder().contains("term"));
}

TEST_CASE("Fig. 6 highlight: memory keys only by default, only keys with more than an even share", "[app][window][highlight]")
{
    Window win("txl-tiny", ids(18));
    auto& w = win.w;
    const auto& g = *w.grid()->data();
    REQUIRE(g.memoryCols > 0);
    int marked = 0;
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c)
            if (g.highlight[static_cast<std::size_t>(r) * g.cols + c]) {
                ++marked;
                CHECK(c < g.memoryCols);
                int visible = 0;
                for (int k = 0; k < g.cols; ++k)
                    visible += std::isnan(g.at(r, k)) ? 0 : 1;
                CHECK(g.at(r, c) > 1.0f / static_cast<float>(visible)); // more than an even share
                CHECK(g.at(r, c) >= 0.005f);
            }
    CHECK(marked > 0);
    w.displayPanel()->findChild<QComboBox*>(QStringLiteral("highlightScope"))->setCurrentIndex(1); // "on all keys"
    settle(win.c);
    bool outside = false;
    const auto& all = *w.grid()->data();
    for (int r = 0; r < all.rows; ++r)
        for (int c = all.memoryCols; c < all.cols; ++c)
            outside = outside || all.highlight[static_cast<std::size_t>(r) * all.cols + c];
    CHECK(outside);
}

TEST_CASE("presentation mode: full screen, the text and stepping stay, fonts grow, leaving restores the layout",
          "[app][window][presentation]")
{
    Window win("txl-tiny", ids(12));
    auto& w = win.w;
    w.resize(760, 700); // inside the test screen, so the window manager has nothing to correct
    QApplication::processEvents();
    const QRect before = w.geometry();
    const double font = QApplication::font().pointSizeF();
    QStringList visibleBefore;
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
        if (d->isVisible())
            visibleBefore << d->objectName();
    w.notify(QStringLiteral("a notice"));
    w.setPresentation(true);
    QApplication::processEvents();
    CHECK(w.isFullScreen());
    // One status text at a time: a notice and the status line were drawn over each other after going full screen.
    int statusTexts = 0;
    for (const QLabel* l : w.statusBar()->findChildren<QLabel*>())
        statusTexts += l->isVisible() && !l->text().isEmpty();
    CHECK(statusTexts == 1);
    CHECK(w.statusText() == QStringLiteral("a notice"));
    CHECK(w.dock("textDock")->isVisible());
    CHECK_FALSE(w.dock("displayDock")->isVisible());
    CHECK(QApplication::font().pointSizeF() > font * 1.4);
    // Values stay in the cells: the values font fits the cells it is drawn in.
    const auto* plot = w.grid()->plot();
    const double cellW = std::abs(plot->xAxis->coordToPixel(1) - plot->xAxis->coordToPixel(0));
    const double cellH = std::abs(plot->yAxis->coordToPixel(1) - plot->yAxis->coordToPixel(0));
    CHECK(w.grid()->valueFontSize(cellW, cellH) > 0);
    w.setPresentation(false);
    QApplication::processEvents();
    CHECK_FALSE(w.isFullScreen());
    CHECK(QApplication::font().pointSizeF() == font);
    CHECK(w.geometry() == before);
    QStringList visibleAfter;
    for (QDockWidget* d : w.findChildren<QDockWidget*>())
        if (d->isVisible())
            visibleAfter << d->objectName();
    visibleBefore.sort();
    visibleAfter.sort();
    CHECK(visibleAfter.join(',').toStdString() == visibleBefore.join(',').toStdString());
}

TEST_CASE("presentation mode keeps a predicting model's Predictions beside the grid, leaving puts them back in the tabs",
          "[app][window][presentation]")
{
    Window win("gpt2-tiny", ids(8));
    auto& w = win.w;
    QDockWidget* predictions = w.dock("predictionDock");
    REQUIRE(w.dockWidgetArea(predictions) == Qt::BottomDockWidgetArea);
    w.setPresentation(true);
    QApplication::processEvents();
    CHECK(w.dock("textDock")->isVisible());
    CHECK(predictions->isVisible());
    CHECK(w.dockWidgetArea(predictions) == Qt::RightDockWidgetArea);
    CHECK_FALSE(w.dock("headDock")->isVisible());
    w.setPresentation(false);
    QApplication::processEvents();
    CHECK(w.dockWidgetArea(predictions) == Qt::BottomDockWidgetArea);
}

TEST_CASE("a session round trip restores the view and the corpus scan, bad values are refused or corrected",
          "[app][window][session]")
{
    test::TempDir tmp;
    std::string corpus;
    for (int i = 0; i < 200; ++i)
        corpus += std::to_string((i * 11) % 40) + (i % 20 == 19 ? "\n" : " ");
    test::writeBytes(tmp / "corpus.txt", corpus);
    const QString session = QString::fromStdString((tmp / "lesson").string()); // no extension typed
    {
        Window win("txl-tiny", ids(12));
        QSignalSpy scanned(&win.c, &app::ComputeController::scanFinished);
        win.w.analyses()->startScan(QString::fromStdString((tmp / "corpus.txt").string()), 8, 6, -1, false);
        REQUIRE(scanned.wait(20000));
        win.w.setSelection(1, {2});
        settle(win.c);
        REQUIRE(win.w.saveSession(session).isEmpty());
    }
    CHECK(QFileInfo::exists(session + ".attnscope")); // the extension is added, so Open Session finds it
    Window win("gpt2-tiny", ids(5));
    // A run of the previous model still under way (a typed edit's) comes back before the session's model: the
    // session's view waits for a text of its own model.
    win.c.runText(ids(7), QString(), 0, -1, std::nullopt);
    REQUIRE(win.w.openSession(session + ".attnscope").isEmpty());
    settle(win.c);
    // The session's model loads and its text runs before the selection is put back: under a loaded machine the last
    // step can come after the compute lanes are idle, so wait for it (and fail below if it never comes).
    CHECK(QTest::qWaitFor([&] { return win.w.selection().site == 1 && win.c.idle(); }, 20000));
    CHECK(win.w.selection().site == 1);
    CHECK(win.w.selection().heads == std::vector<int>{2});
    REQUIRE(win.w.relposPanel()->scan());
    CHECK(win.w.relposPanel()->scan()->tokens == 200);
    CHECK(win.w.relposPanel()->showsCorpus()); // the dock shows the scan that came back, not "Current text"

    // A session whose segment is out of range opens, with the segment corrected and a message.
    const QByteArray text = test::readBytes(std::filesystem::path((session + ".attnscope").toStdString())).c_str();
    QByteArray bad = text;
    bad.replace("\"segment\": -1", "\"segment\": 99");
    REQUIRE(bad != text);
    test::writeBytes(tmp / "bad.attnscope", bad.toStdString());
    REQUIRE(win.w.openSession(QString::fromStdString((tmp / "bad.attnscope").string())).isEmpty());
    settle(win.c);
    CHECK(win.w.selection().segment == -1);
    CHECK(win.w.statusText().contains("segment 100 does not exist"));
    REQUIRE(win.w.analyses()->showPaperFigure(6)); // and Fig. 6 opens instead of aborting
    // Wrong types are refused with the key named.
    QByteArray wrong = text;
    wrong.replace("\"layer\": 1", "\"layer\": \"one\"");
    test::writeBytes(tmp / "wrong.attnscope", wrong.toStdString());
    CHECK(win.w.openSession(QString::fromStdString((tmp / "wrong.attnscope").string())).contains("selection.layer"));
}

TEST_CASE("the paper figures open in windows of their own with a readable size", "[app][window][figures]")
{
    Window win("txl-tiny", ids(18));
    test::TempDir tmp;
    std::string corpus;
    for (int i = 0; i < 300; ++i)
        corpus += std::to_string((i * 13) % 40) + " ";
    test::writeBytes(tmp / "c.txt", corpus);
    QSignalSpy scanned(&win.c, &app::ComputeController::scanFinished);
    win.w.analyses()->startScan(QString::fromStdString((tmp / "c.txt").string()), 8, 6, -1, true);
    REQUIRE(scanned.wait(20000));
    for (int fig : {5, 6, 7}) {
        app::FigureWindow* f = win.w.analyses()->showPaperFigure(fig);
        REQUIRE(f);
        CHECK(f->isVisible());
        CHECK(f->windowTitle().startsWith(QStringLiteral("Fig. %1").arg(fig)));
        CHECK(f->width() >= 500);
        const QString pdf = QString::fromStdString((tmp / ("fig" + std::to_string(fig) + ".pdf")).string());
        REQUIRE(f->view()->exportTo(pdf).isEmpty());
        CHECK(QFileInfo(pdf).size() > 1000);
        f->close();
    }
}

TEST_CASE("PDF export of the grid is lossless with at least one pixel per cell", "[app][window][export]")
{
    Window win("txl-tiny", ids(18));
    test::TempDir tmp;
    const QString pdf = QString::fromStdString((tmp / "grid.pdf").string());
    REQUIRE(win.w.exportFigureTo(pdf).isEmpty());
    const std::string bytes = test::readBytes(tmp / "grid.pdf");
    CHECK(bytes.rfind("%PDF-", 0) == 0);
    CHECK(bytes.find("/DCTDecode") == std::string::npos); // no JPEG
    // The cells are vector rectangles here (few cells): no image as small as the grid itself.
    const auto& g = *win.w.grid()->data();
    const QRegularExpression re(QStringLiteral("/Width (\\d+)"));
    for (auto it = re.globalMatch(QString::fromStdString(bytes)); it.hasNext();)
        CHECK(it.next().captured(1).toInt() != g.cols);
}

TEST_CASE("figure exports draw the data, not the screen: no locked row, focus or window aspect", "[app][window][export]")
{
    Window win("txl-tiny", ids(18));
    auto& w = win.w;
    test::TempDir tmp;
    const QString plain = QString::fromStdString((tmp / "plain.png").string());
    const QString marked = QString::fromStdString((tmp / "marked.png").string());
    REQUIRE(w.exportFigureTo(plain).isEmpty());
    // Lock a row, focus a cell and squash the window: the figure must not change.
    w.grid()->setLockedRow(3);
    w.grid()->setFocusCell(5, 2);
    w.resize(1280, 420);
    QApplication::processEvents();
    REQUIRE(w.exportFigureTo(marked).isEmpty());
    const QImage a(plain), b(marked);
    REQUIRE(!a.isNull());
    CHECK(a.size() == b.size());
    CHECK(a == b);

    // Square cells by default: the cell area's aspect is the grid's.
    widgets::AttentionGridView view;
    view.setData(w.grid()->data());
    const int h = app::squareCellHeight(view, 900);
    view.plot()->setViewport(QRect(0, 0, 900, h));
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QRect cells = view.plot()->axisRect()->rect();
    const auto& g = *w.grid()->data();
    CHECK(static_cast<double>(cells.width()) / g.cols == Approx(static_cast<double>(cells.height()) / g.rows).epsilon(0.02));
    CHECK(a.width() == app::kDefaultGridFigureWidth);
}

TEST_CASE("texts come from files, drops and the scan dialog's typed path", "[app][window][files]")
{
    Window win("txl-tiny", ids(5));
    test::TempDir tmp;
    test::writeBytes(tmp / "t.txt", "1 2 3 4 5 6 7");
    REQUIRE(win.w.openTextFile(QString::fromStdString((tmp / "t.txt").string())).isEmpty());
    settle(win.c);
    CHECK(win.w.result()->capture->tokens.size() == 7);
    CHECK(win.w.openTextFile(QString::fromStdString((tmp / "none.txt").string())).contains("none.txt"));

    test::writeBytes(tmp / "d.txt", "9 8 7");
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(QString::fromStdString((tmp / "d.txt").string()))});
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&win.w, &enter);
    REQUIRE(enter.isAccepted());
    QApplication::sendEvent(&win.w, &drop);
    settle(win.c);
    CHECK(win.w.textEdit()->toPlainText() == "9 8 7");

    // The scan dialog: a path typed (not browsed) is the one scanned, and is offered again next time.
    const QString typed = QString::fromStdString((tmp / "t.txt").string());
    QTimer::singleShot(100, [typed] {
        auto* dlg = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        REQUIRE(dlg);
        auto* edit = dlg->findChild<QLineEdit*>();
        edit->clear();
        QTest::keyClicks(edit, typed);
        dlg->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->click();
    });
    const auto s = app::askScanSettings(&win.w, win.c.model()->info());
    REQUIRE(s);
    CHECK(s->textFile == typed);
    QTimer::singleShot(100, [] {
        auto* dlg = qobject_cast<QDialog*>(QApplication::activeModalWidget());
        REQUIRE(dlg);
        CHECK(dlg->findChild<QLineEdit*>()->text().endsWith("t.txt"));
        dlg->reject();
    });
    CHECK_FALSE(app::askScanSettings(&win.w, win.c.model()->info()));
}

TEST_CASE("a pair clicked in the text view is shown in the grid, Help opens the bundled guide", "[app][window]")
{
    Window win("txl-tiny", ids(12));
    auto* table = win.w.textView()->pairsTable();
    REQUIRE(table->rowCount() > 0);
    win.w.dock("textViewDock")->raise();
    QApplication::processEvents();
    const QRect r = table->visualItemRect(table->item(0, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, r.center());
    const QPoint cell = win.w.grid()->focusCell();
    CHECK(cell.x() >= 0);
    CHECK(win.w.grid()->lockedRow() == cell.y());

    app::GuideWindow guide(QString::fromStdString((std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "docs" / "user-guide.md").string()));
    CHECK(guide.browser()->toPlainText().contains("attnscope user guide"));
    app::GuideWindow missing(QString{});
    CHECK(missing.browser()->toPlainText().contains("not installed"));
}

TEST_CASE("a Llama-family folder and a GGUF file open like any model", "[app][window][llama]")
{
    for (const char* model : {"llama-gqa", "llama-gqa/model-q8_0.gguf"}) {
        DYNAMIC_SECTION(model)
        {
            Window win(model, QStringLiteral("14 67 46 14 0 12 25 38"));
            auto& w = win.w;
            REQUIRE(w.grid()->data());
            // The folder has no tokenizer (ids typed); the GGUF brings its own vocabulary, which adds BOS.
            const auto& tokens = w.result()->capture->tokens;
            CHECK(w.grid()->data()->rows == static_cast<int>(tokens.size()));
            if (QString(model).endsWith(".gguf"))
                CHECK(tokens.front().id == 1);
            else
                CHECK(tokens.size() == 8);
            CHECK(w.headsPanel()->headBox()->maximum() == 8);
            // Heads that share a key/value head are shown as groups.
            CHECK(w.headsPanel()->findChild<QLabel*>() != nullptr);
            bool groupsNamed = false;
            for (auto* l : w.headsPanel()->findChildren<QLabel*>())
                groupsNamed = groupsNamed || (l->isVisibleTo(w.headsPanel()) && l->text().contains("share 2 key/value heads"));
            CHECK(groupsNamed);
            CHECK(w.headOverview()->toolTip().contains("share a key/value head"));
            // The term boxes are the rotary frequency bands: three equal bands, the fourth box hidden.
            CHECK(w.displayPanel()->termBox(0)->isEnabled());
            CHECK(w.displayPanel()->termBox(0)->text().contains("high"));
            CHECK(w.displayPanel()->termBox(0)->toolTip().contains("Rotary frequency band 1"));
            CHECK_FALSE(w.displayPanel()->termBox(3)->isVisibleTo(w.displayPanel()));
            // Only the low band: the grid is that band's softmax, named so, and equals the core's.
            const auto full = w.grid()->data();
            w.displayPanel()->termBox(0)->setChecked(false);
            w.displayPanel()->termBox(1)->setChecked(false);
            settle(win.c);
            REQUIRE(w.grid()->data() != full);
            CHECK(w.grid()->data()->title.contains("frequency band low"));
            CHECK(w.grid()->data()->valueLabel.contains("softmax of frequency band low"));
            const auto split = core::BandSplit::equal(4, 3);
            core::GridOptions o;
            o.bands = &split;
            o.terms = core::TermSelection{false, false, true, false};
            const auto expected = core::attentionGrid(*w.result()->capture, 0, 0, {0}, o);
            REQUIRE(expected.values.size() == w.grid()->data()->values.size());
            for (std::size_t i = 0; i < expected.values.size(); ++i)
                if (!std::isnan(expected.values[i]))
                    REQUIRE(w.grid()->data()->values[i] == expected.values[i]);
            // A wavelength split makes other bands.
            auto* split2 = w.displayPanel()->findChild<QLineEdit*>("bandSplit");
            REQUIRE(split2);
            REQUIRE(split2->isVisibleTo(w.displayPanel()));
            split2->setText("1000");
            QMetaObject::invokeMethod(split2, "editingFinished");
            settle(win.c);
            CHECK(w.displayPanel()->bands()->count() == 2);
            CHECK(w.grid()->data()->title.contains("layer 1 · head 1")); // back to the full attention
            CHECK_FALSE(w.grid()->data()->title.contains("band"));
            // The model dock names the new fields.
            QStringList rows;
            for (const auto& [k, v] : w.modelPanel()->rows())
                rows << k + "=" + v;
            const QString all = rows.join('\n');
            CHECK(all.contains("Key/value heads=2"));
            CHECK(all.contains("rotary"));
            CHECK(all.contains(QString(model).endsWith(".gguf") ? "Q8_0" : "F32"));
            // Keys step heads as for any model.
            w.grid()->setFocus();
            QTest::keyClick(w.grid(), Qt::Key_Right);
            CHECK(w.selection().heads == std::vector<int>{1});
        }
    }
}

TEST_CASE("the head atlas, rollout and ablation views: computed off the GUI thread, a click opens the head",
          "[app][window][analyses]")
{
    Window win("llama-gqa/model-f32.gguf", QStringLiteral("the cat sat on the mat and the cat sat on the hat"));
    auto& w = win.w;
    // The atlas dock fills in when shown: a row per head, the similarity matrix in clustered order.
    auto* dock = w.findChild<QDockWidget*>("atlasDock");
    REQUIRE(dock);
    dock->show();
    dock->raise();
    auto* atlas = w.atlasPanel();
    // Asked for once its tab is the current one (the next turn of the event loop), then computed: wait for it.
    REQUIRE(QTest::qWaitFor([&] { return atlas->atlas() != nullptr; }, 30000));
    settle(win.c);
    CHECK(atlas->table()->rowCount() == 24);
    REQUIRE(atlas->matrix()->data());
    CHECK(atlas->matrix()->data()->rows == 24);
    CHECK(atlas->atlas()->source == "current text");
    // Every column has numbers (the text repeats tokens; the induction sequence is generated), except attention to
    // [SEP] (a decoder's text has no special token after its BOS) and the learned sink (this model has none).
    const auto& cols = core::atlasColumns();
    for (int c = 1; c < atlas->table()->columnCount(); ++c) {
        const std::string key = cols[static_cast<std::size_t>(c) - 1].key;
        const bool empty = key == "to_sep" || key == "learned_sink" || key == "to_high_norm";
        CHECK((atlas->table()->item(0, c)->text() == QStringLiteral("–")) == empty);
    }
    // A row picks its head.
    const int row = 5;
    const int layer = atlas->table()->item(row, 0)->data(Qt::UserRole).toInt();
    const int head = atlas->table()->item(row, 0)->data(Qt::UserRole + 1).toInt();
    QTest::mouseClick(atlas->table()->viewport(), Qt::LeftButton, {},
                      atlas->table()->visualItemRect(atlas->table()->item(row, 1)).center());
    settle(win.c);
    CHECK(w.selection().site == layer);
    CHECK(w.selection().heads == std::vector<int>{head});
    // The table exports as CSV with a line per head.
    test::TempDir tmp;
    const QString csv = QString::fromStdString((tmp / "atlas.csv").string());
    REQUIRE(atlas->exportTable(csv).isEmpty());
    QFile f(csv);
    REQUIRE(f.open(QIODevice::ReadOnly));
    CHECK(QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts).size() == 25);

    // Rollout: a figure window with one grid over the text's tokens.
    w.analyses()->showRollout();
    settle(win.c);
    auto windows = w.findChildren<app::FigureWindow*>();
    REQUIRE(windows.size() == 1);
    const auto& rollout = windows.front()->view()->figure();
    CHECK(rollout.name == "Attention rollout");
    REQUIRE(rollout.grids.size() == 1);
    CHECK(rollout.grids.front()->rows == static_cast<int>(w.result()->capture->tokens.size()));
    windows.front()->close();
    QApplication::processEvents();

    // Ablation (the menu asks first; here straight to the request): layers x heads, a cell click opens that head.
    win.c.requestAblation();
    settle(win.c);
    windows = w.findChildren<app::FigureWindow*>();
    REQUIRE(windows.size() == 1);
    const auto& ablation = windows.front()->view()->figure();
    REQUIRE(ablation.grids.size() == 1);
    CHECK(ablation.grids.front()->rows == 3);
    CHECK(ablation.grids.front()->cols == 8);
    emit windows.front()->cellClicked(0, 2, 6);
    settle(win.c);
    CHECK(w.selection().site == 2);
    CHECK(w.selection().heads == std::vector<int>{6});
    windows.front()->close();
    QApplication::processEvents();

    // Direct logit attribution after the locked row's token: the core's shares, layers x (heads, bias, MLP).
    w.grid()->setLockedRow(2);
    w.analyses()->showLogitAttribution();
    settle(win.c);
    windows = w.findChildren<app::FigureWindow*>();
    REQUIRE(windows.size() == 1);
    const auto& dla = windows.front()->view()->figure();
    REQUIRE(dla.grids.size() == 1);
    const auto& g = *dla.grids.front();
    const auto expected = core::logitAttribution(*w.result()->model->loaded.model, *w.result()->capture,
                                                 w.grid()->data()->rowPosition(2));
    REQUIRE(g.rows == expected.layers);
    CHECK(g.colLabels.back() == QStringLiteral("MLP"));
    for (int l = 0; l < expected.layers; ++l) {
        for (int h = 0; h < expected.heads; ++h)
            CHECK(g.at(l, h) == Approx(expected.headShare(l, h)).margin(1e-5));
        CHECK(g.at(l, g.cols - 1) == Approx(expected.mlp[static_cast<std::size_t>(l)]).margin(1e-5));
    }
    emit windows.front()->cellClicked(0, 1, 3);
    settle(win.c);
    CHECK(w.selection().site == 1);
    CHECK(w.selection().heads == std::vector<int>{3});
}

TEST_CASE("Surprisal tints the text view and puts the text's perplexity beside its token count", "[app][window][surprisal]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26 5 35 8"));
    auto& w = win.w;
    auto* box = w.displayPanel()->findChild<QCheckBox*>(QStringLiteral("surprisal"));
    auto* info = w.findChild<QLabel*>(QStringLiteral("tokenInfo"));
    REQUIRE(box);
    REQUIRE(info);
    REQUIRE(box->isEnabled());
    CHECK_FALSE(box->isChecked()); // off by default
    CHECK_FALSE(info->text().contains("perplexity"));
    box->setChecked(true);
    settle(win.c);
    REQUIRE(QTest::qWaitFor([&] { return info->text().contains("perplexity"); }, 30000));
    // The perplexity shown is the core's for the same capture.
    const auto s = core::tokenSurprisal(*w.result()->model->loaded.model, *w.result()->capture);
    CHECK(info->text().contains(QStringLiteral("perplexity %1").arg(s.perplexity, 0, 'f', 1)));
    // A new text keeps it on and recomputes; switching off restores the plain line.
    w.textEdit()->setPlainText(QStringLiteral("3 14 15"));
    settle(win.c);
    CHECK(QTest::qWaitFor([&] { return info->text().startsWith("3 token") && info->text().contains("perplexity"); }, 30000));
    box->setChecked(false);
    CHECK_FALSE(info->text().contains("perplexity"));
    // An encoder has no next-token head: the box is off and says why.
    w.openModel(caseDir("bert-tiny"));
    settle(win.c);
    CHECK_FALSE(box->isEnabled());
    CHECK(box->toolTip().contains("no surprisal"));
}

TEST_CASE("Query-Key Space enlarges into a square window of its own and goes back into its tab", "[app][window][qk]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26 5 35 8 9 7"));
    auto& w = win.w;
    auto* panel = w.findChild<app::QkPanel*>(QStringLiteral("qkPanel"));
    auto* enlarge = panel->findChild<QToolButton*>(QStringLiteral("qkEnlarge"));
    REQUIRE(enlarge);
    QDockWidget* dock = w.dock("qkDock");
    w.showDock("qkDock");
    settle(win.c);
    REQUIRE(QTest::qWaitFor([&] { return panel->view()->data() != nullptr; }, 30000));
    const QSize docked = panel->view()->size();
    enlarge->click();
    QApplication::processEvents();
    CHECK(dock->isFloating());
    // The plot gets the room a bottom tab cannot give it, about square, and the window fits the screen.
    const QSize large = panel->view()->size();
    INFO("docked " << docked.width() << "x" << docked.height() << ", enlarged " << large.width() << "x" << large.height());
    CHECK(large.height() >= docked.height() * 3 / 2);
    CHECK(large.height() >= w.screen()->availableGeometry().height() / 2);
    CHECK(large.width() >= large.height() * 9 / 10);
    CHECK(w.screen()->availableGeometry().contains(dock->frameGeometry()));
    // Unchecked (or docked by its title bar) it is a tab below the grid again, and the button says so.
    enlarge->click();
    QApplication::processEvents();
    CHECK_FALSE(dock->isFloating());
    CHECK(w.dockWidgetArea(dock) == Qt::BottomDockWidgetArea);
    enlarge->click();
    QApplication::processEvents();
    dock->setFloating(false);
    QApplication::processEvents();
    CHECK_FALSE(enlarge->isChecked());
}

TEST_CASE("Query-Key Space follows the selected head, a clicked token locks its row in the grid", "[app][window][qk]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26 5 35 8 9 7"));
    auto& w = win.w;
    auto* panel = w.findChild<app::QkPanel*>(QStringLiteral("qkPanel"));
    REQUIRE(panel);
    w.dock("qkDock")->show();
    w.dock("qkDock")->raise();
    settle(win.c);
    REQUIRE(QTest::qWaitFor([&] { return panel->view()->data() != nullptr; }, 30000));
    const auto first = panel->view()->data();
    CHECK(first->queries == 10);
    CHECK(first->x.size() == 20);
    CHECK(first->title.contains("layer 1 · head 1"));
    CHECK(panel->findChild<QComboBox*>(QStringLiteral("qkPart"))->isHidden()); // Transformer-XL's position part only
    // The plot is the core's PCA of the same head, normalised.
    auto v = core::headQkVectors(*w.result()->capture, 0, 0, 0);
    core::normaliseQk(v);
    const auto e = core::embedQk(v, core::QkMethod::Pca);
    for (std::size_t i = 0; i < e.x.size(); ++i)
        CHECK(first->x[i] == Approx(e.x[i]).margin(1e-5));
    // Another head: the plot follows.
    w.headsPanel()->headBox()->setValue(2);
    settle(win.c);
    REQUIRE(QTest::qWaitFor([&] { return panel->view()->data() != first; }, 30000));
    CHECK(panel->view()->data()->title.contains("head 2"));
    // A click on a query point selects its token: the grid locks that row.
    emit panel->view()->positionClicked(4);
    CHECK(w.grid()->lockedRow() == 4);
    // A lasso around every point marks every token in the plot, the grid and the Text View; a click on empty space
    // clears the marks.
    auto* view = panel->view();
    view->resize(480, 320);
    auto mouse = [view](QEvent::Type type, QPointF at, Qt::MouseButtons buttons) {
        QMouseEvent event(type, at, view->mapToGlobal(at), Qt::LeftButton, buttons, Qt::NoModifier);
        QApplication::sendEvent(view, &event);
    };
    const QPointF corners[] = {{2, 2}, {478, 2}, {478, 318}, {2, 318}, {2, 4}};
    mouse(QEvent::MouseButtonPress, corners[0], Qt::LeftButton);
    for (const QPointF& p : corners)
        mouse(QEvent::MouseMove, p, Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, corners[4], Qt::NoButton);
    const std::vector<int> all{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(view->markedPositions() == all);
    CHECK(w.grid()->markedPositions() == all);
    CHECK(w.textView()->markedPositions() == all);
    mouse(QEvent::MouseButtonPress, {1, 1}, Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, {1, 1}, Qt::NoButton);
    CHECK(w.grid()->markedPositions().empty());
    CHECK(w.textView()->markedPositions().empty());
    // Exports: the figure as drawn (vector and raster), the points as the headless CSV.
    test::TempDir tmp;
    for (const char* ext : {"svg", "png", "pdf"}) {
        const QString path = QString::fromStdString((tmp / (std::string("qk.") + ext)).string());
        CHECK(panel->exportFigure(path).isEmpty());
        CHECK(QFileInfo(path).size() > 1000);
    }
    // In the figure's own shape, not the dock's: 900 wide, the plot as tall as the points' aspect asks.
    const QImage exported(QString::fromStdString((tmp / "qk.png").string()));
    CHECK(exported.width() == 900);
    CHECK(exported.height() == panel->view()->figureSize().height());
    CHECK(exported.height() >= 900 / 2);
    auto v2 = core::headQkVectors(*w.result()->capture, 0, 0, 1);
    core::normaliseQk(v2);
    CHECK(panel->view()->data()->csv == core::qkCsv(v2, core::embedQk(v2, core::QkMethod::Pca), w.result()->capture->tokens));
    // All heads: a layers x heads matrix of the same embeddings; a click on a cell opens that head.
    panel->findChild<QCheckBox*>(QStringLiteral("qkAllHeads"))->setChecked(true);
    settle(win.c);
    REQUIRE(QTest::qWaitFor([&] { return panel->matrixView()->data() != nullptr; }, 30000));
    const auto matrix = panel->matrixView()->data();
    const auto& info = w.result()->model->info();
    REQUIRE(matrix->cells.size() == static_cast<std::size_t>(info.layers * info.heads));
    CHECK(matrix->cells[1]->x == panel->view()->data()->x); // layer 1, head 2: what the single view showed
    emit panel->matrixView()->headClicked(1, 2);
    settle(win.c);
    CHECK(w.headsPanel()->headBox()->value() == 3);
    CHECK_FALSE(panel->allHeads());
    REQUIRE(QTest::qWaitFor([&] { return panel->view()->data()->title.contains("layer 2 · head 3"); }, 30000));
}

TEST_CASE("Generate 10 appends the greedy continuation, regenerating from a token cuts the text there and generates "
          "as many again",
          "[app][window][generate]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26"));
    auto& w = win.w;
    w.showDock("predictionDock");
    settle(win.c);
    auto idsOf = [&] {
        std::vector<std::int32_t> out;
        for (const auto& t : w.result()->capture->tokens)
            out.push_back(t.id);
        return out;
    };
    const auto prompt = idsOf();
    REQUIRE(prompt.size() == 5);
    // The window's path (capture with the cache reused, logits resumed inside the segment) against the core's own
    // generation through its key/value cache.
    const auto expected = core::generateTokens(*w.result()->model->loaded.model, prompt, 10, core::Sampling{}, 0).ids;
    QPushButton* ten = nullptr;
    for (auto* b : w.findChildren<QPushButton*>())
        if (b->text() == QLatin1String("Generate 10"))
            ten = b;
    REQUIRE(ten);
    ten->click();
    auto done = [&](std::size_t n) {
        const bool ok = QTest::qWaitFor([&] { return w.result()->capture->tokens.size() == n && ten->isEnabled(); }, 60000);
        if (!ok)
            WARN("text: " << w.textEdit()->toPlainText().toStdString() << ", tokens " << w.result()->capture->tokens.size()
                          << ", Generate enabled " << ten->isEnabled() << ", status " << w.statusText().toStdString());
        return ok;
    };
    REQUIRE(done(15));
    auto all = idsOf();
    CHECK(std::vector<std::int32_t>(all.begin() + 5, all.end()) == expected);
    // Regenerate from token 8 (position 7): the 7 tokens after it are cut and generated again (greedy: the same).
    auto* panel = w.findChild<app::PredictionPanel*>();
    REQUIRE(panel);
    const auto before = w.result();
    const QString beforeCut = w.textEdit()->toPlainText();
    emit panel->regenerateRequested(7);
    const QString cutText = w.textEdit()->toPlainText();
    CHECK(cutText == QStringLiteral("3 14 15 9 26 17 13 27"));
    REQUIRE(QTest::qWaitFor([&] { return w.result() != before; }, 60000));
    REQUIRE(done(15));
    CHECK(idsOf() == all);
    // The generated tokens and the cut are edits of the box: undoing them passes the cut text, then the text before
    // the cut comes back.
    REQUIRE(w.textEdit()->document()->isUndoAvailable());
    bool sawCut = false, sawBefore = false;
    for (int i = 0; i < 60 && w.textEdit()->document()->isUndoAvailable() && !sawBefore; ++i) {
        w.textEdit()->undo();
        sawCut = sawCut || w.textEdit()->toPlainText() == cutText;
        sawBefore = sawCut && w.textEdit()->toPlainText() == beforeCut;
    }
    CHECK(sawCut);
    CHECK(sawBefore);
}

TEST_CASE("the Heads dock takes the height its thumbnails need, the Display dock under it gets the rest", "[app][window][layout]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26 5 35 8 9 7"));
    auto& w = win.w;
    auto* overview = w.headOverview();
    REQUIRE(QTest::qWaitFor([&] { return overview->hasHeightForWidth(); }, 30000));
    QTest::qWait(50);
    INFO("overview " << overview->width() << "x" << overview->height() << ", needs " << overview->heightForWidth(overview->width()));
    CHECK(overview->height() <= overview->heightForWidth(overview->width()) + 24); // no empty half column
    CHECK(overview->height() >= overview->heightForWidth(overview->width()) - 8); // every layer shown whole
}

TEST_CASE("the wheel over an unfocused choice in a scrolling dock scrolls the dock, not the choice", "[app][window][layout]")
{
    Window win("gpt2-tiny", QStringLiteral("3 14 15 9 26"));
    auto& w = win.w;
    auto* scope = w.findChild<QComboBox*>(QStringLiteral("highlightScope"));
    REQUIRE(scope);
    const int before = scope->currentIndex();
    auto wheel = [&] {
        const QPointF at(scope->width() / 2.0, scope->height() / 2.0);
        QWheelEvent e(at, scope->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(scope, &e);
    };
    wheel();
    CHECK(scope->currentIndex() == before);
    scope->setFocus(); // chosen (clicked or tabbed to): the wheel is the control's again
    REQUIRE(QTest::qWaitFor([&] { return scope->hasFocus(); }, 2000));
    wheel();
    CHECK(scope->currentIndex() != before);
}

TEST_CASE("the text box wraps anywhere while it holds a word longer than a line, chosen before layout", "[app][textbox]")
{
    app::TextBox box;
    box.resize(600, 120);
    box.show();
    box.setText(QStringLiteral("an ordinary sentence of short words"));
    CHECK(box.wordWrapMode() == QTextOption::WrapAtWordBoundaryOrAnywhere);
    const QString word(app::TextBox::kLongWord + 1, QLatin1Char('a'));
    box.setText(QStringLiteral("short ") + word + QStringLiteral(" words"));
    CHECK(box.wordWrapMode() == QTextOption::WrapAnywhere);
    // Deleting the long word brings word wrapping back.
    box.setPlainText(QStringLiteral("short words again"));
    CHECK(box.wordWrapMode() == QTextOption::WrapAtWordBoundaryOrAnywhere);
    // A paste decides before the text is inserted (and laid out).
    QTextOption::WrapMode atInsert = QTextOption::WrapAtWordBoundaryOrAnywhere;
    QObject::connect(box.document(), &QTextDocument::contentsChange, &box,
                     [&](int, int, int added) { if (added > app::TextBox::kLongWord) atInsert = box.wordWrapMode(); });
    box.moveCursor(QTextCursor::End);
    QApplication::clipboard()->setText(word);
    box.paste();
    CHECK(box.toPlainText().size() > app::TextBox::kLongWord);
    CHECK(atInsert == QTextOption::WrapAnywhere);
    CHECK(app::TextBox::longestWord(QStringLiteral("ab  abcd\nabc")) == 4);
}

TEST_CASE("the text box shows a long line as short paragraphs and gives the text back as typed", "[app][textbox]")
{
    // A line several pieces long, of short words (so pieces end after a space), and a second line.
    QString line;
    for (int i = 0; line.size() < 3 * app::TextBox::kLongLine; ++i)
        line += QStringLiteral("word%1 ").arg(i);
    const QString text = line + QStringLiteral("\nsecond line");
    app::TextBox box;
    box.resize(600, 120);
    box.show();
    box.setText(text);
    // Paragraphs no longer than a piece, so an edit lays out a piece rather than the whole line.
    CHECK(box.document()->blockCount() >= text.size() / app::TextBox::kPiece);
    for (QTextBlock b = box.document()->begin(); b.isValid(); b = b.next())
        CHECK(b.length() <= app::TextBox::kPiece + 1);
    REQUIRE(box.text() == text);
    CHECK(box.toPlainText() != text); // (the document does hold the soft breaks)
    // Every character of text() is where documentPosition says.
    QTextCursor probe(box.document());
    for (int i = 0; i < text.size(); i += 97) {
        probe.setPosition(box.documentPosition(i));
        probe.setPosition(box.documentPosition(i + 1), QTextCursor::KeepAnchor);
        REQUIRE(probe.selectedText() == text.mid(i, 1));
    }
    const QTextBlock soft = box.document()->begin().next(); // the first line's second piece
    // Backspace at a soft break deletes the character before it, and undo brings it back.
    box.setTextCursor(QTextCursor(soft));
    const int before = soft.position() - 1; // (in text(): the first piece's length)
    QTest::keyClick(&box, Qt::Key_Backspace);
    CHECK(box.text() == QString(text).remove(before - 1, 1));
    box.undo();
    CHECK(box.text() == text);
    // Delete at the end of a piece deletes the character after the break.
    QTextCursor end(box.document()->begin());
    end.movePosition(QTextCursor::EndOfBlock);
    box.setTextCursor(end);
    QTest::keyClick(&box, Qt::Key_Delete);
    CHECK(box.text() == QString(text).remove(before, 1));
    box.undo();
    // Enter inside a piece is one real line break.
    QTextCursor mid(soft);
    mid.movePosition(QTextCursor::NextCharacter, QTextCursor::MoveAnchor, 3);
    box.setTextCursor(mid);
    QTest::keyClick(&box, Qt::Key_Return);
    CHECK(box.text() == QString(text).insert(before + 3, QLatin1Char('\n')));
    box.undo();
    REQUIRE(box.text() == text);
    // A selection across a soft break copies without it; deleting it and undoing gives the text back.
    QTextCursor across(box.document());
    across.setPosition(before + 1 - 10); // (the second piece starts at document position before + 1)
    across.setPosition(before + 1 + 10, QTextCursor::KeepAnchor);
    box.setTextCursor(across);
    box.copy();
    CHECK(QApplication::clipboard()->text() == text.mid(before - 9, 19)); // (nine before the break, ten after)
    QTest::keyClick(&box, Qt::Key_Delete);
    CHECK(box.text() == QString(text).remove(before - 9, 19));
    box.undo();
    CHECK(box.text() == text);
    // A long line pasted into a short text is split as it goes in, at the cursor.
    box.setText(QStringLiteral("ab"));
    QTextCursor at(box.document());
    at.setPosition(1);
    box.setTextCursor(at);
    QApplication::clipboard()->setText(text);
    box.paste();
    CHECK(box.text() == QStringLiteral("a") + text + QStringLiteral("b"));
    CHECK(box.document()->blockCount() > 3);
}

TEST_CASE("the model dialog opens a typed model folder instead of entering it", "[app][files]")
{
    const QString folder = QString::fromStdString(caseDir("gpt2-tiny").toStdString());
    for (const QString& typed : {folder, folder + QStringLiteral("/config.json")}) {
        QTimer::singleShot(0, [typed] {
            auto* dlg = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
            REQUIRE(dlg);
            auto* edit = dlg->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
            REQUIRE(edit);
            edit->setText(typed);
            QTest::keyClick(edit, Qt::Key_Return);
        });
        // A watchdog: if Enter only entered the folder, the dialog would stay open.
        QTimer::singleShot(5000, [] {
            if (QWidget* still = QApplication::activeModalWidget())
                qobject_cast<QDialog*>(still)->reject();
        });
        CHECK(QFileInfo(app::askModelPath(nullptr, QStringLiteral("model"))) == QFileInfo(folder));
    }
}

TEST_CASE("an encoder-decoder model opens in the Translation tab: typed target, every site's grid, back to text",
          "[app][window][seq2seq]")
{
    app::ComputeController c{{}};
    app::MainWindow w{&c, {}};
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    // marian-tiny has no tokenizer files: source and target are typed as token ids.
    const auto dir = test::testdataDir() / "marian-tiny";
    const auto input = core::readJsonFile((dir / "input.json").string());
    QString source, target;
    for (const auto& id : input["input_ids"])
        source += QString::number(id.get<int>()) + ' ';
    const auto& dec = input["decoder_input_ids"];
    for (std::size_t i = 1; i < dec.size(); ++i) // the decoder start token is the model's to add
        target += QString::number(dec[i].get<int>()) + ' ';
    w.setSource(source.trimmed());
    w.openModel(caseDir("marian-tiny"));
    settle(c);
    auto dock = [&](const char* name) { return w.findChild<QDockWidget*>(QLatin1String(name)); };
    CHECK(dock("translationDock")->isVisible());
    CHECK_FALSE(dock("textDock")->isVisible());
    // Translate ran on opening: a generated target, the last decoder layer's cross-attention on the grid.
    REQUIRE(w.grid()->data());
    CHECK(w.grid()->data()->title.contains("decoder layer 2 cross-attention"));
    CHECK(w.grid()->data()->cols == static_cast<int>(input["input_ids"].size()));
    // A typed target is read as typed (teacher forcing): head 1's grid is the reference's cross-attention.
    auto* targetBox = w.findChild<QLineEdit*>(QStringLiteral("targetBox"));
    REQUIRE(targetBox);
    targetBox->setText(target.trimmed());
    emit targetBox->textEdited(targetBox->text());
    QTest::qWait(400);
    settle(c);
    auto* head = w.findChild<QComboBox*>(QStringLiteral("siteHeadBox"));
    REQUIRE(head);
    head->setCurrentIndex(1); // head 1: its grid comes from the compute thread, as every grid does
    settle(c);
    const auto grid = w.grid()->data();
    REQUIRE(grid);
    core::SafetensorsFile expected((dir / "expected.safetensors").string());
    const auto cross = core::readAsFloat(expected, *expected.find("decoder.layer1.cross_attn_prob"));
    const int T = static_cast<int>(dec.size()), S = static_cast<int>(input["input_ids"].size());
    REQUIRE(grid->rows == T);
    REQUIRE(grid->cols == S);
    for (int i = 0; i < T; ++i)
        for (int j = 0; j < S; ++j)
            REQUIRE(grid->at(i, j) == Approx(cross[static_cast<std::size_t>(i) * S + j]).margin(1e-5));
    // The encoder's first layer through the Heads dock's first row.
    w.setSelection(0, {2});
    settle(c);
    REQUIRE(w.grid()->data());
    CHECK(w.grid()->data()->title.contains("encoder layer 1"));
    CHECK(w.grid()->data()->rows == static_cast<int>(input["input_ids"].size()));
    // A session keeps the source, the typed target and the site and head.
    test::TempDir tmp;
    const QString session = QString::fromStdString((tmp / "t.attnscope").string());
    w.setSelection(3, {1}); // marian-tiny's sites: E1, E2, D1 self, D1 cross, ...
    REQUIRE(w.saveSession(session).isEmpty());
    {
        app::ComputeController c2{{}};
        app::MainWindow w2{&c2, {}};
        w2.resize(1280, 800);
        w2.show();
        REQUIRE(w2.openSession(session).isEmpty());
        settle(c2);
        QApplication::processEvents();
        REQUIRE(w2.grid()->data());
        CHECK(w2.grid()->data()->title.contains("decoder layer 1 cross-attention"));
        CHECK(w2.grid()->data()->title.contains("head 2"));
        CHECK(w2.grid()->data()->rows == T); // the typed target, read as typed
        auto* box = w2.findChild<QLineEdit*>(QStringLiteral("targetBox"));
        CHECK(box->text() == target.trimmed());
    }
    {
        // A session of the previous release: its Translation tab's entry past the sites is every decoder layer's
        // cross-attention averaged.
        const QString old = QString::fromStdString((tmp / "old.attnscope").string());
        QFile f(old);
        REQUIRE(f.open(QIODevice::WriteOnly));
        const int sites = static_cast<int>(c.model()->info().sites.size());
        f.write(QStringLiteral("{\"format\": \"attnscope-session/1\", \"model\": \"%1\", \"text\": \"\", "
                               "\"translation\": {\"source\": \"%2\", \"target\": \"\"}, "
                               "\"selection\": {\"layer\": %3, \"heads\": []}}")
                    .arg(caseDir("marian-tiny"), source.trimmed())
                    .arg(sites)
                    .toUtf8());
        f.close();
        app::ComputeController c3{{}};
        app::MainWindow w3{&c3, {}};
        w3.resize(1280, 800);
        w3.show();
        REQUIRE(w3.openSession(old).isEmpty());
        settle(c3);
        QApplication::processEvents();
        REQUIRE(w3.grid()->data());
        CHECK(w3.grid()->data()->title.contains("cross-attention, mean of all decoder layers"));
    }
    // Back to a one-text model: the Text tab returns, the Translation tab goes.
    w.openModel(caseDir("gpt2-tiny"));
    settle(c);
    CHECK(dock("textDock")->isVisible());
    CHECK_FALSE(dock("translationDock")->isVisible());
}

TEST_CASE("the Experts dock shows a mixture-of-experts model's router for the selected layer", "[app][window][experts]")
{
    Window win("qwen3moe-tiny", ids(16));
    auto& w = win.w;
    auto* dock = w.findChild<QDockWidget*>(QStringLiteral("expertsDock"));
    REQUIRE(dock);
    dock->show();
    dock->raise();
    QApplication::processEvents();
    settle(win.c);
    auto* view = w.findChild<widgets::AttentionGridView*>(QStringLiteral("routerGrid"));
    REQUIRE(view);
    // The router runs on the compute thread once the dock is shown: wait for its grid rather than for an idle moment
    // (the request may not be queued yet when the controller is first idle).
    auto routed = [&](const char* title) {
        return QTest::qWaitFor([&] { return view->data() && view->data()->title.contains(title); }, 30000);
    };
    REQUIRE(routed("layer 1"));
    CHECK(view->data()->rows == 16);
    CHECK(view->data()->cols == 8);
    int chosen = 0;
    for (auto h : view->data()->highlight)
        chosen += h;
    CHECK(chosen == 16 * 2); // two experts per token, outlined
    // The layer follows the selection.
    w.setSelection(2, {0});
    settle(win.c);
    CHECK(routed("layer 3"));
    // A dense model has no Experts tab: it hides (the View menu does not list it), and asking for it says why.
    w.openModel(caseDir("llama-tiny"));
    settle(win.c);
    CHECK_FALSE(dock->isVisible());
    CHECK_FALSE(dock->toggleViewAction()->isVisible());
    w.showDock("expertsDock");
    CHECK_FALSE(dock->isVisible());
    CHECK(w.statusText().contains(QStringLiteral("no mixture-of-experts")));
    // Back to a mixture-of-experts model: nothing of the dense model's message stays.
    w.openModel(caseDir("qwen3moe-tiny"));
    settle(win.c);
    w.showDock("expertsDock");
    CHECK(routed("layer"));
}

namespace {
// What the patching window of a new window holds after it opened `session`.
app::PatchingRequest patchingAfterReopening(const QString& session)
{
    Window win("gpt2-tiny", ids(5));
    REQUIRE(win.w.openSession(session).isEmpty());
    settle(win.c);
    auto* p = win.w.analyses()->showPatching();
    REQUIRE(p);
    return p->request();
}
} // namespace

TEST_CASE("activation patching in the window: a heatmap as the CLI computes it, a head opens on both prompts, the "
          "session keeps the prompts", "[app][window][patching]")
{
    test::TempDir tmp;
    const QString session = QString::fromStdString((tmp / "patching.attnscope").string());
    {
        Window win("gpt2-tiny", ids(10));
        auto* p = win.w.analyses()->showPatching();
        REQUIRE(p);
        app::PatchingRequest r;
        r.clean = QStringLiteral("8 42 31 15 7 29 40 11 23 42");
        r.corrupt = QStringLiteral("8 42 31 15 7 3 40 11 23 42");
        r.answer = QStringLiteral("35");
        r.wrong = QStringLiteral("3");
        p->setRequest(r);
        QSignalSpy updated(&win.c, &app::ComputeController::patchingUpdated);
        p->run();
        settle(win.c);
        REQUIRE(p->result());
        CHECK_FALSE(p->result()->running);
        // The same numbers as the core computes for these ids.
        core::PatchRequest direct;
        direct.clean = {8, 42, 31, 15, 7, 29, 40, 11, 23, 42};
        direct.corrupt = {8, 42, 31, 15, 7, 3, 40, 11, 23, 42};
        direct.metric.answer = 35;
        direct.metric.wrong = 3;
        const auto expected = core::patchActivations(*win.c.model()->loaded.model, direct);
        REQUIRE(p->result()->result.scores.size() == expected.scores.size());
        for (std::size_t i = 0; i < expected.scores.size(); ++i)
            CHECK(p->result()->result.scores[i] == Approx(expected.scores[i]));
        const auto& figure = p->view()->figure();
        REQUIRE(figure.grids.size() == 1);
        CHECK(figure.grids[0]->rows == win.c.model()->info().layers);
        CHECK(figure.grids[0]->cols == win.c.model()->info().heads);
        // A click on layer 2 head 3 selects it and opens it on both prompts.
        QSignalSpy pair(&win.c, &app::ComputeController::promptPairReady);
        emit p->view()->cellClicked(0, 1, 2);
        REQUIRE((pair.count() > 0 || pair.wait(10000)));
        CHECK(win.w.selection().site == 1);
        CHECK(win.w.selection().heads == std::vector<int>{2});
        const auto f = pair.takeFirst().at(0).value<app::FigurePtr>();
        REQUIRE(f->grids.size() == 2);
        CHECK(f->grids[0]->rows == 10);
        // Prompts of different lengths: a message that says where they part, no crash.
        r.corrupt = QStringLiteral("8 42 31");
        p->setRequest(r);
        QSignalSpy failed(&win.c, &app::ComputeController::jobFailed);
        p->run();
        REQUIRE((failed.count() > 0 || failed.wait(10000)));
        const auto failure = failed.takeFirst().at(0).value<app::JobFailure>();
        CHECK(failure.kind == app::JobKind::Patching);
        CHECK(failure.message.contains("same length"));
        r.corrupt = QStringLiteral("8 42 31 15 7 3 40 11 23 42");
        r.noising = true;
        p->setRequest(r);
        REQUIRE(win.w.saveSession(session).isEmpty());
    }
    const auto back = patchingAfterReopening(session);
    CHECK(back.clean == QStringLiteral("8 42 31 15 7 29 40 11 23 42"));
    CHECK(back.answer == QStringLiteral("35"));
    CHECK(back.noising);
}

TEST_CASE("path patching in the window: a map of senders as the core scores each, both path definitions, the session "
          "keeps the choice", "[app][window][patching]")
{
    test::TempDir tmp;
    const QString session = QString::fromStdString((tmp / "paths.attnscope").string());
    app::PatchingRequest r;
    r.mode = app::PatchingRequest::Mode::Path;
    r.clean = QStringLiteral("8 42 31 15 7 29 40 11 23 42");
    r.corrupt = QStringLiteral("8 42 31 15 7 3 40 11 23 42");
    r.answer = QStringLiteral("35");
    r.wrong = QStringLiteral("3");
    r.receivers = QStringLiteral("2.1, 2.3");
    r.receiverInput = core::PatchComponent::Keys;
    {
        Window win("gpt2-tiny", ids(10));
        auto* p = win.w.analyses()->showPatching();
        REQUIRE(p);
        const auto& info = win.c.model()->info();
        for (const bool freeze : {false, true}) {
            r.freezeMlps = freeze;
            p->setRequest(r);
            p->run();
            settle(win.c);
            REQUIRE(p->result());
            CHECK_FALSE(p->result()->running);
            const auto& map = p->result()->result;
            REQUIRE(map.scores.size() == static_cast<std::size_t>(info.layers * info.heads));
            // Every head of layer 1 sends; each cell is the core's path score for that sender alone.
            core::PathPatchRequest one;
            one.clean = {8, 42, 31, 15, 7, 29, 40, 11, 23, 42};
            one.corrupt = {8, 42, 31, 15, 7, 3, 40, 11, 23, 42};
            one.metric.answer = 35;
            one.metric.wrong = 3;
            one.input = core::PatchComponent::Keys;
            one.receivers = {{1, 0}, {1, 2}};
            one.freezeMlps = freeze;
            for (int h = 0; h < info.heads; ++h) {
                one.senderHead = h;
                INFO("sender head " << h << " freeze " << freeze);
                CHECK(map.scores[static_cast<std::size_t>(h)] == Approx(core::pathPatch(*win.c.model()->loaded.model, one).score));
            }
            // The map shows the senders' layers only, its title says which path was run.
            const auto& figure = p->view()->figure();
            REQUIRE(figure.grids.size() == 1);
            CHECK(figure.grids[0]->rows == 1);
            CHECK(figure.grids[0]->cols == info.heads);
            CHECK(figure.title.contains(freeze ? QStringLiteral("MLPs frozen") : QStringLiteral("MLPs recomputed")));
        }
        // Receivers that are not LAYER.HEAD: the message names the field, the window stays usable.
        r.receivers = QStringLiteral("2");
        p->setRequest(r);
        QSignalSpy failed(&win.c, &app::ComputeController::jobFailed);
        p->run();
        REQUIRE((failed.count() > 0 || failed.wait(10000)));
        CHECK(failed.takeFirst().at(0).value<app::JobFailure>().message.contains("Receivers expects LAYER.HEAD"));
        r.receivers = QStringLiteral("2.1, 2.3");
        r.senders = QStringLiteral("1.2");
        p->setRequest(r);
        REQUIRE(win.w.saveSession(session).isEmpty());
    }
    const auto back = patchingAfterReopening(session);
    CHECK(back.mode == app::PatchingRequest::Mode::Path);
    CHECK(back.senders == QStringLiteral("1.2"));
    CHECK(back.receivers == QStringLiteral("2.1, 2.3"));
    CHECK(back.receiverInput == core::PatchComponent::Keys);
    CHECK(back.freezeMlps);
    CHECK_FALSE(back.receiverHeadOnly);
}

TEST_CASE("heads over a corpus in the window: the scatter has every head and a click shows its contexts",
          "[app][window][head-contexts]")
{
    Window win("gpt2-tiny", ids(40));
    auto* h = win.w.analyses()->showHeadContexts();
    REQUIRE(h);
    h->run();
    settle(win.c);
    REQUIRE(h->result());
    const auto& info = win.c.model()->info();
    REQUIRE(h->scatter()->data());
    CHECK(h->scatter()->data()->x.size() == static_cast<std::size_t>(info.layers * info.heads));
    QSignalSpy wanted(h, &app::HeadContextsWindow::headWanted);
    h->showHead(3);
    CHECK(h->findChild<QTextBrowser*>()->toPlainText().contains(QStringLiteral("Layer %1").arg(3 / info.heads + 1)));
}

TEST_CASE("Undo after Generate takes back the generated token, not the typed prompt", "[app][window][generate]")
{
    Window win("gpt2-tiny", ids(3));
    auto* box = win.w.textEdit();
    box->setFocus();
    box->selectAll();
    QTest::keyClick(box, Qt::Key_Delete);
    QTest::keyClicks(box, "1 2 3"); // typed: the document merges these keystrokes into one undo step
    settle(win.c);
    win.w.textPanel()->appendGenerated(QStringLiteral(" 4"));
    win.w.textPanel()->appendGenerated(QStringLiteral(" 5"));
    CHECK(box->toPlainText() == QStringLiteral("1 2 3 4 5"));
    box->undo();
    CHECK(box->toPlainText() == QStringLiteral("1 2 3 4"));
    box->undo();
    CHECK(box->toPlainText() == QStringLiteral("1 2 3"));
}

TEST_CASE("stepping belongs to one text: a new text opens whole, an appended token keeps the reveal", "[app][window][stepping]")
{
    Window win("gpt2-tiny", ids(12));
    win.w.setRevealRows(4);
    settle(win.c);
    CHECK(win.w.selection().revealRows == 4);
    win.w.setText(win.w.textEdit()->toPlainText() + QStringLiteral(" 5"));
    settle(win.c);
    CHECK(win.w.selection().revealRows == 4); // the same text, one token longer
    win.w.setText(QStringLiteral("9 8 7 6 5 4 3 2 1"));
    settle(win.c);
    CHECK(win.w.selection().revealRows == -1);
    REQUIRE(win.w.grid()->data());
    CHECK(win.w.grid()->data()->rows == 9);
}

TEST_CASE("How this head computes: the softmax step is the grid's row, the steps follow the head and query, Space "
          "walks them", "[app][window][mechanism]")
{
    for (const char* model : {"llama-gqa", "gpt2-tiny", "gptoss-tiny"}) {
        INFO(model);
        Window win(model, ids(12));
        auto& w = win.w;
        w.setSelection(1, {2});
        settle(win.c);
        auto* m = w.analyses()->showMechanism();
        REQUIRE(m);
        auto* view = m->view();
        REQUIRE(QTest::qWaitFor([&] { return view->data() != nullptr; }, 30000));
        const auto& steps = view->data()->steps;
        CHECK(view->data()->title.contains("layer 2 · head 3"));
        // The softmax step's bars are the grid's last row (the query when no row is locked), key by key.
        const widgets::MechanismStep* softmax = nullptr;
        for (const auto& s : steps)
            if (s.title.contains("Softmax"))
                softmax = &s;
        REQUIRE(softmax);
        const auto grid = w.grid()->data();
        REQUIRE(grid);
        const int row = grid->rows - 1;
        std::vector<float> visible;
        for (int c = 0; c < grid->cols; ++c)
            if (!std::isnan(grid->at(row, c)))
                visible.push_back(grid->at(row, c));
        // (gpt-oss: the grid's sink column and the step's sink bar are the same mass, in their own places.)
        std::vector<double> bars;
        for (const auto& b : softmax->bars)
            bars.push_back(b.value);
        std::sort(bars.begin(), bars.end());
        std::sort(visible.begin(), visible.end());
        REQUIRE(bars.size() == visible.size());
        for (std::size_t k = 0; k < bars.size(); ++k)
            CHECK(bars[k] == Approx(visible[k]).margin(1e-6));
        CHECK(steps.back().title.contains("prediction"));
        // Space walks the steps; a click on another row makes the window explain that query.
        QTest::keyClick(m, Qt::Key_Space);
        CHECK(view->step() == 1);
        QTest::keyClick(m, Qt::Key_Left);
        CHECK(view->step() == 0);
        emit w.grid()->cellClicked(3, 0, Qt::NoModifier);
        REQUIRE(QTest::qWaitFor([&] { return view->data() && view->data()->title.contains("(4)"); }, 30000));
        test::TempDir tmp;
        const QString png = QString::fromStdString((tmp / "step.png").string());
        CHECK(m->exportStep(png).isEmpty());
        CHECK(QFileInfo(png).size() > 1000);
    }
}

TEST_CASE("a speech model listens to an opened recording: the transcript's cross-attention over 20-ms frames",
          "[app][window][whisper]")
{
    const auto dir = test::testdataDir() / "whisper-tiny";
    if (!std::filesystem::exists(dir / "audio.wav"))
        return; // the reference data has no speech case
    app::ComputeController c{{}};
    app::MainWindow w{&c, {}};
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    w.setText(QStringLiteral("the war ended in 1945")); // the app's text is no transcript: the box empties
    w.openModel(caseDir("whisper-tiny"));
    settle(c);
    auto* box = w.findChild<app::TextBox*>();
    REQUIRE(box);
    CHECK(box->toPlainText().isEmpty());
    w.files()->openAudio(QString::fromStdString((dir / "audio.wav").string()));
    settle(c);
    REQUIRE(c.textResult());
    const auto& capture = *c.textResult()->capture;
    const auto input = core::readJsonFile((dir / "input.json").string());
    // The prompt alone: start, language, task, no timestamps; the audio stream is the encoder's frames.
    CHECK(core::idsOf(capture.tokens) == input["prompt_ids"].get<std::vector<std::int32_t>>());
    REQUIRE(capture.streams.front().tokens.size() == 1500);
    CHECK(capture.streams.front().tokens[50].text == "1.00 s");
    // The grid opens on the last decoder layer's cross-attention: the prompt's rows over every frame, as the
    // reference's teacher-forced run of the same first tokens computes them.
    const auto grid = w.grid()->data();
    REQUIRE(grid);
    CHECK(grid->title.contains("decoder layer 2 cross-attention"));
    REQUIRE(grid->cols == 1500);
    REQUIRE(grid->rows == 4);
    core::SafetensorsFile expected((dir / "expected.safetensors").string());
    const auto cross = core::readAsFloat(expected, *expected.find("decoder.layer1.cross_attn_prob"));
    const int T = static_cast<int>(input["decoder_input_ids"].size());
    double worst = 0;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 1500; ++j)
            worst = std::max(worst, static_cast<double>(std::abs(grid->at(i, j) - cross[static_cast<std::size_t>(i) * 1500 + j])));
    CHECK(worst < 1e-5);
    CHECK(T > 4);
    // The recording's spectrogram under the frames, the padding after it marked.
    REQUIRE(grid->keyStrip);
    CHECK(grid->keyStrip->bins == 80);
    CHECK(grid->keyStrip->cols == 1500);
    CHECK(grid->keyStrip->contentCols == (input["num_frames"].get<int>() + 1) / 2);
    // A typed transcript is read after the prompt.
    w.setText(QString::fromStdString(input["text"].get<std::string>()));
    QTest::qWait(400);
    settle(c);
    const auto textTokens = input["text_tokens"].get<std::vector<std::int32_t>>();
    REQUIRE(c.textResult()->capture->tokens.size() == 4 + textTokens.size());
    // Its words timed over the recording: OpenAI's path and the reference's words, every head ranked.
    QSignalSpy timed(&c, &app::ComputeController::wordTimingsReady);
    c.requestWordTimings();
    REQUIRE(timed.wait(30000));
    const auto figure = timed.takeFirst().at(0).value<app::FigurePtr>();
    REQUIRE(figure->grids.size() == 2);
    const auto& matrix = *figure->grids[0];
    CHECK(matrix.rows == static_cast<int>(textTokens.size()) + 1);
    CHECK(matrix.cols == input["dtw_frames"].get<int>());
    core::SafetensorsFile alignment((dir / "alignment.safetensors").string());
    CHECK(std::count(matrix.highlight.begin(), matrix.highlight.end(), 1) ==
          alignment.find("alignment.time_indices")->shape[0]);
    CHECK(figure->title.contains(QStringLiteral("world 0.04–0.40")));
    const auto& ranking = *figure->grids[1];
    CHECK(ranking.rows == 8);
    CHECK(ranking.rowLabels.filter(QStringLiteral("★")).size() == 3); // the generation config's alignment heads
}
