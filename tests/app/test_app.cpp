// The app layer: compute controller (load, run, stale results dropped, cancel, failed load keeps the model),
// keyboard stepping in the main window, figure and data export, and the app binary end to end (headless).
#include "analysis/attention_grid.h"
#include "attention_grid_view.h"
#include "comparison_view.h"
#include "compute/compute_controller.h"
#include "test_support.h"
#include "relpos_heatmap_view.h"
#include "ui/main_window.h"
#include "ui/relpos_panel.h"
#include "ui/session.h"
#include "export/data_export.h"
#include "headless/headless_export.h"
#include "views/grid_builder.h"
#include "views/analysis_figures.h"
#include "views/thumbnails.h"
#include "figures/paper_figure_view.h"
#include "analysis/logit_lens.h"
#include "run/text_capture.h"
#include "util/text_file.h"
#include <nlohmann/json.hpp>
#include "model/model_loader.h"

#include <QImage>
#include <qcustomplot.h>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>
#include <catch2/catch.hpp>
#include <cmath>
#include <future>
#include <map>
#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <QFileInfo>

using namespace attnscope;

namespace {
QString caseDir(const char* name)
{
    return QString::fromStdString((test::testdataDir() / name).string());
}

// Waits until every request to the compute threads has been delivered (grids are computed there too).
void settle(app::ComputeController& c)
{
    REQUIRE(QTest::qWaitFor([&] { return c.idle(); }, 20000));
    QApplication::processEvents();
}

app::ModelBundlePtr loadInto(app::ComputeController& c, const QString& spec)
{
    QSignalSpy loaded(&c, &app::ComputeController::modelLoaded);
    c.loadModel(spec);
    REQUIRE(loaded.wait(10000));
    return c.model();
}
} // namespace

TEST_CASE("controller loads a model, runs text, and keeps the model when a load fails", "[app][controller]")
{
    app::ComputeController c({});
    const auto model = loadInto(c, caseDir("txl-tiny"));
    REQUIRE(model);
    CHECK(model->info().layers == 2);

    QSignalSpy ready(&c, &app::ComputeController::textReady);
    c.runText(QStringLiteral("1 2 3 4 5 6 7 8"));
    REQUIRE(ready.wait(10000));
    const auto result = ready.at(0).at(0).value<app::TextResultPtr>();
    CHECK(result->capture->tokens.size() == 8);
    QSignalSpy thumbs(&c, &app::ComputeController::thumbnailsReady);
    c.requestThumbnails(app::ViewSelection{});
    REQUIRE(thumbs.wait(10000));
    CHECK(thumbs.at(0).at(0).value<widgets::HeadThumbnailsPtr>()->images.size() == 6); // 2 layers x 3 heads

    test::TempDir tmp;
    std::filesystem::copy(test::testdataDir() / "txl-tiny", tmp / "broken");
    std::filesystem::permissions(tmp / "broken" / "config.json", std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
    test::writeBytes(tmp / "broken" / "config.json", "{\"model_type\": \"mamba\"}");
    QSignalSpy failed(&c, &app::ComputeController::jobFailed);
    c.loadModel(QString::fromStdString((tmp / "broken").string()));
    REQUIRE(failed.wait(10000));
    const auto f = failed.at(0).at(0).value<app::JobFailure>();
    CHECK(f.kind == app::JobKind::Load);
    CHECK(f.what.endsWith("broken")); // the spec asked for
    CHECK(f.message.contains("mamba"));
    CHECK(f.code == core::ErrorCode::UnknownModelType);
    CHECK(c.model() == model); // the previous model stays loaded
}

TEST_CASE("a text's grid on screen comes before its other layers are done, equal to the finished text's", "[app][controller]")
{
    app::ComputeController c({});
    c.setPreviewAfter(0); // a test model is fast: every run counts as slow
    loadInto(c, caseDir("llama-gqa"));
    app::ViewSelection sel;
    sel.site = 0;
    sel.heads = {1};
    QSignalSpy preview(&c, &app::ComputeController::gridPreviewReady);
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    c.runText(QStringLiteral("1 2 3 4 5 6 7 8 9 10"), {}, 0, -1, sel);
    REQUIRE(ready.wait(10000));
    REQUIRE(preview.size() == 1); // delivered before the text (one lane, in order)
    const auto early = preview.at(0).at(0).value<widgets::GridDataPtr>();
    QSignalSpy grid(&c, &app::ComputeController::gridReady);
    c.requestGrid(sel);
    REQUIRE(grid.wait(10000));
    const auto finished = grid.at(0).at(0).value<widgets::GridDataPtr>();
    CHECK(early->title == finished->title);
    CHECK(early->rowLabels == finished->rowLabels);
    REQUIRE(early->values.size() == finished->values.size());
    for (std::size_t i = 0; i < early->values.size(); ++i)
        CHECK((early->values[i] == finished->values[i] || (std::isnan(early->values[i]) && std::isnan(finished->values[i]))));

    // The last layer's grid is the finished text's: no preview for it.
    sel.site = c.model()->info().layers - 1;
    preview.clear();
    QSignalSpy again(&c, &app::ComputeController::textReady);
    c.runText(QStringLiteral("1 2 3 4 5 6 7 8 9 10 11"), {}, 0, -1, sel);
    REQUIRE(again.wait(10000));
    CHECK(preview.isEmpty());
}

TEST_CASE("controller drops stale results: only the newest request is delivered", "[app][controller]")
{
    app::ComputeController c({});
    loadInto(c, caseDir("txl-tiny"));
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    c.runText(QStringLiteral("1 2 3"));
    c.runText(QStringLiteral("1 2 3 4"));
    c.runText(QStringLiteral("5 6 7 8 9"));
    REQUIRE(ready.wait(10000));
    QTest::qWait(200); // anything stale would have arrived by now
    REQUIRE(ready.count() == 1);
    CHECK(ready.at(0).at(0).value<app::TextResultPtr>()->capture->tokens.size() == 5);
}

TEST_CASE("controller cancel stops a long run and reports it as cancelled", "[app][controller]")
{
    app::ComputeController c({});
    loadInto(c, caseDir("txl-tiny"));
    QString text;
    for (int i = 0; i < 20000; ++i)
        text += QString::number(i % 40) + ' ';
    QSignalSpy failed(&c, &app::ComputeController::jobFailed);
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    c.runText(text);
    c.cancel();
    REQUIRE(failed.wait(10000));
    CHECK(failed.at(0).at(0).value<app::JobFailure>().kind == app::JobKind::Text);
    CHECK(failed.at(0).at(0).value<app::JobFailure>().cancelled());
    CHECK(ready.count() == 0);
}

TEST_CASE("a GGUF model is named by its own metadata, a folder by its name", "[app][controller]")
{
    app::ComputeController c({});
    CHECK(loadInto(c, caseDir("llama-tiny") + "/model-q8_0.gguf")->displayName == "Llama Tiny"); // general.name
    CHECK(loadInto(c, caseDir("llama-tiny"))->displayName == "llama-tiny");
}

TEST_CASE("cancel reaches every kind of job in the job table", "[app][controller][jobs]")
{
    // Each kind is requested while both compute threads are held, then cancel() and the threads let go: every kind
    // must report itself cancelled once (or, for a kind that keeps what it measured, deliver a partial result). A kind added to the table without a request here fails the last check.
    app::ComputeController c({});
    std::map<app::JobKind, int> cancelled;
    QObject::connect(&c, &app::ComputeController::jobFailed, [&](const app::JobFailure& f) {
        CHECK(f.cancelled());
        CHECK(!f.what.isEmpty());
        ++cancelled[f.kind];
    });
    // The kinds that keep what they measured deliver a partial result instead.
    QObject::connect(&c, &app::ComputeController::scanFinished, [&](const app::ScanResultPtr& r) {
        CHECK(r->partial);
        ++cancelled[app::JobKind::Scan];
    });
    QObject::connect(&c, &app::ComputeController::patchingUpdated, [&](const app::PatchingResultPtr& r) {
        CHECK(r->result.partial);
        if (!r->running)
            ++cancelled[app::JobKind::Patching];
    });
    auto heldAndCancelled = [&](const QString& model, const QString& text, const std::function<void()>& requests) {
        loadInto(c, model);
        if (!text.isEmpty()) { // (an encoder-decoder model reads no single text)
            c.runText(text);
            settle(c);
            REQUIRE(c.textResult());
        }
        std::promise<void> release;
        c.holdLanesUntil(release.get_future().share());
        requests();
        c.cancel();
        release.set_value();
        settle(c);
    };
    const QString ids = QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 8");
    app::ViewSelection sel;
    sel.heads = {0};
    heldAndCancelled(caseDir("gpt2-tiny"), ids, [&] {
        c.loadModel(caseDir("llama-gqa"));
        c.runText(QStringLiteral("1 2 3"));
        c.requestGrid(sel);
        c.requestThumbnails(sel);
        c.requestTextProfile("");
        c.scanCorpus(app::ScanRequest{{}, ids, QStringLiteral("ids"), 0, 4, -1, {}, {}});
        c.compareModels({caseDir("gpt2-tiny")}, ids, 0);
        c.requestAtlas(nullptr);
        c.requestRollout(-1);
        c.requestAblation();
        c.requestNextToken(-1);
        c.requestLogitLens(-1);
        c.requestSurprisal();
        c.requestQkSpace(app::QkRequest{});
        c.requestLogitAttribution(-1);
        c.requestExplanation(0, 0, 3);
        const app::PatchingRequest patch{.clean = ids, .corrupt = QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 7"),
                                         .answer = QStringLiteral("8"), .wrong = QStringLiteral("7")};
        c.requestPatching(patch);
        auto done = std::make_shared<app::PatchingResult>();
        done->model = c.model();
        done->request = patch;
        c.requestPromptPair(done, 0, 0);
        c.requestHeadContexts(app::HeadContextsRequest{{}, ids, {}});
        c.requestSentences(0, {0});
    });
    const auto bert = std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models" / "bert-wikitext2";
    heldAndCancelled(QString::fromStdString(bert.string()), QStringLiteral("the [MASK] was"), [&] { c.requestMaskedFills(); });
    heldAndCancelled(caseDir("qwen3moe-tiny"), QStringLiteral("2 3 4 5"), [&] { c.requestRouting(-1); });
    heldAndCancelled(caseDir("vit-tiny"), QStringLiteral("image.png"), [&] { c.requestImageRollout(); });
    { // a speech model's word timings need its recording beside the transcript
        loadInto(c, caseDir("whisper-tiny"));
        REQUIRE(c.setAudio(caseDir("whisper-tiny") + QStringLiteral("/audio.wav")).isEmpty());
        c.runText(QStringLiteral(" Hello world"));
        settle(c);
        REQUIRE(c.textResult());
        std::promise<void> release;
        c.holdLanesUntil(release.get_future().share());
        c.requestWordTimings();
        c.cancel();
        release.set_value();
        settle(c);
    }
    for (const auto& row : app::kJobKinds) {
        INFO("job kind " << row.name);
        CHECK(cancelled[row.kind] == 1);
    }
}

TEST_CASE("main window: keys step heads and layers, A averages, exports match the core", "[app][window]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    w.show();
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 8"));
    w.openModel(caseDir("txl-samelen"));
    REQUIRE(ready.wait(10000));
    settle(c);
    REQUIRE(w.grid()->data());
    CHECK(w.selection().site == 0);
    CHECK(w.selection().heads == std::vector<int>{0});

    w.grid()->setFocus();
    QTest::keyClick(w.grid(), Qt::Key_Right);
    CHECK(w.selection().heads == std::vector<int>{1});
    QTest::keyClick(w.grid(), Qt::Key_Left);
    QTest::keyClick(w.grid(), Qt::Key_Left); // wraps to the last head
    CHECK(w.selection().heads == std::vector<int>{3});
    QTest::keyClick(w.grid(), Qt::Key_Down);
    CHECK(w.selection().site == 1);
    QTest::keyClick(w.grid(), Qt::Key_A);
    CHECK(w.selection().heads.empty());
    settle(c);
    CHECK(w.grid()->data()->title.contains("average"));
    // In the text box arrows move the cursor, not the head.
    QTest::keyClick(w.grid(), Qt::Key_A);
    const auto before = w.selection().heads;
    w.textEdit()->setFocus();
    QTest::keyClick(w.textEdit(), Qt::Key_Right);
    CHECK(w.selection().heads == before);

    // Exported data equals the core's numbers for the same selection.
    settle(c);
    test::TempDir tmp;
    const QString csv = QString::fromStdString((tmp / "grid.csv").string());
    REQUIRE(w.exportDataTo(csv).isEmpty());
    const auto& capture = *w.result()->capture;
    const int seg = static_cast<int>(capture.segments.size()) - 1;
    const auto expected = core::attentionGrid(capture, seg, w.selection().site, w.selection().heads);
    QFile f(csv);
    REQUIRE(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
    REQUIRE(lines.size() == expected.rows + 1);
    for (int r = 0; r < expected.rows; ++r) {
        const QStringList cells = lines[r + 1].split(',');
        REQUIRE(cells.size() == expected.cols + 1);
        for (int col = 0; col < expected.cols; ++col) {
            const float v = expected.at(r, col);
            if (std::isnan(v))
                CHECK(cells[col + 1].isEmpty());
            else
                CHECK(cells[col + 1].toDouble() == Approx(v).margin(1e-7));
        }
    }
    for (const char* ext : {"npy", "json"}) {
        const QString p = QString::fromStdString((tmp / (std::string("grid.") + ext)).string());
        CHECK(w.exportDataTo(p).isEmpty());
        CHECK(QFileInfo(p).size() > 100);
    }
    const QString npy = QString::fromStdString((tmp / "grid.npy").string());
    CHECK(QFileInfo(npy).size() ==
          128 + static_cast<qint64>(expected.rows) * expected.cols * 4); // 128-byte header + float32 data

    // Figures: PNG at the requested pixel scale, SVG and PDF non-empty and well-formed.
    const QString png = QString::fromStdString((tmp / "fig.png").string());
    REQUIRE(w.exportFigureTo(png, app::FigureSize{0, 0, 2.0}).isEmpty());
    const QImage img(png);
    CHECK(img.width() == 2 * app::kDefaultGridFigureWidth); // the figure's size, not the window's
    REQUIRE(w.exportFigureTo(png, app::FigureSize{700, 500, 1.0}).isEmpty());
    CHECK(QImage(png).size() == QSize(700, 500));
    const QString svg = QString::fromStdString((tmp / "fig.svg").string());
    REQUIRE(w.exportFigureTo(svg).isEmpty());
    QFile s(svg);
    REQUIRE(s.open(QIODevice::ReadOnly));
    const QByteArray svgText = s.readAll();
    CHECK(svgText.contains("<svg"));
    CHECK(svgText.contains("</svg>"));
    const QString pdf = QString::fromStdString((tmp / "fig.pdf").string());
    REQUIRE(w.exportFigureTo(pdf).isEmpty());
    QFile pf(pdf);
    REQUIRE(pf.open(QIODevice::ReadOnly));
    CHECK(pf.read(5) == "%PDF-");
    CHECK(w.exportFigureTo(QString::fromStdString((tmp / "fig.bmpx").string())).contains("unknown figure format"));

    // One figure per head.
    const QString heads = QString::fromStdString((tmp / "heads").string());
    QDir().mkpath(heads);
    REQUIRE(w.exportAllHeadsTo(heads).isEmpty());
    CHECK(QDir(heads).entryList(QDir::Files).size() == 4);
}

TEST_CASE("the app binary exports a figure headlessly", "[app][e2e]")
{
    test::TempDir tmp;
    const auto out = (tmp / "fig.png").string();
    const std::string cmd = std::string("QT_QPA_PLATFORM=offscreen '") + ATTNSCOPE_APP_PATH + "' --model '" +
                            (test::testdataDir() / "gpt2-tiny").string() +
                            "' --text '1 2 3 4 5 6' --layer 2 --head 3 --export '" + out + "' --width 640 --height 480 2>/dev/null";
    REQUIRE(WEXITSTATUS(std::system(cmd.c_str())) == 0);
    const QImage img(QString::fromStdString(out));
    CHECK(img.width() == 640);
    CHECK(img.height() == 480);
    const std::string bad = std::string("QT_QPA_PLATFORM=offscreen '") + ATTNSCOPE_APP_PATH + "' --model '" +
                            (test::testdataDir() / "gpt2-tiny").string() + "' --text '1 2' --layer 9 --export '" + out +
                            "' 2>" + (tmp / "err").string();
    CHECK(WEXITSTATUS(std::system(bad.c_str())) == 1);
    CHECK(test::readBytes(tmp / "err").find("--layer must be 1 .. 2") != std::string::npos);
}

TEST_CASE("term toggles change the grid to the softmax of the chosen terms", "[app][window][terms]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    w.show();
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 8 9 7 9"));
    w.openModel(caseDir("txl-adaptive"));
    REQUIRE(ready.wait(10000));
    settle(c);
    const auto& capture = *w.result()->capture;
    const int seg = static_cast<int>(w.grid()->data()->rowPositions.front()) / capture.segmentLen;

    for (const core::TermSelection t : {core::TermSelection{true, true, false, false}, core::TermSelection{false, true, false, false},
                                        core::TermSelection{false, false, false, true}}) {
        w.setTerms(t);
        settle(c);
        const auto expected = core::attentionGrid(capture, seg, 0, {0}, t);
        const auto& shown = *w.grid()->data();
        REQUIRE(shown.rows == expected.rows);
        REQUIRE(shown.cols == expected.cols);
        for (int i = 0; i < expected.rows * expected.cols; ++i) {
            const float e = expected.values[static_cast<std::size_t>(i)];
            const float a = shown.values[static_cast<std::size_t>(i)];
            if (std::isnan(e))
                CHECK(std::isnan(a));
            else
                CHECK(a == Approx(e).margin(1e-7));
        }
        CHECK(shown.title.contains(QString::fromStdString(t.label())));
    }
    // Sanity of the comparison itself: the (a)+(b) grid differs from full attention.
    const auto full = core::attentionGrid(capture, seg, 0, {0});
    const auto ab = core::attentionGrid(capture, seg, 0, {0}, core::TermSelection{true, true, false, false});
    double diff = 0;
    for (std::size_t i = 0; i < full.values.size(); ++i)
        if (!std::isnan(full.values[i]))
            diff = std::max(diff, static_cast<double>(std::abs(full.values[i] - ab.values[i])));
    CHECK(diff > 1e-3);
    // Raw scores: the terms' sum before softmax, drawn with a diverging map.
    w.setTerms(core::TermSelection{true, true, true, true, true});
    settle(c);
    CHECK(w.grid()->data()->diverging);
    CHECK(w.grid()->data()->valueLabel.contains("before softmax"));
}

TEST_CASE("relative-position heatmap cells equal the scan result, and a cancelled scan leaves the app usable",
          "[app][window][scan]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    w.show();
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18"));
    w.openModel(caseDir("txl-tiny"));
    REQUIRE(ready.wait(10000));

    test::TempDir tmp;
    std::string text;
    for (int i = 0; i < 400; ++i)
        text += std::to_string((i * 7) % 40) + (i % 20 == 19 ? "\n" : " ");
    test::writeBytes(tmp / "ids.txt", text);
    QSignalSpy finished(&c, &app::ComputeController::scanFinished);
    w.analyses()->startScan(QString::fromStdString((tmp / "ids.txt").string()), 8, 6, -1, true);
    REQUIRE(finished.wait(20000));
    const auto scan = finished.at(0).at(0).value<app::ScanResultPtr>();
    REQUIRE(scan->tokens == 400);
    QApplication::processEvents();
    const auto* heat = w.relposPanel()->heatmap();
    REQUIRE(heat->data());
    const auto avg = scan->average("full");
    for (int h = 0; h < scan->layers * scan->heads; ++h)
        for (int d = 0; d < scan->distances; ++d)
            REQUIRE(heat->valueAt(0, h, d) == Approx(avg[static_cast<std::size_t>(h * scan->distances + d)]));

    // A scan cancelled right away keeps a partial result and the window keeps working.
    std::string big;
    for (int i = 0; i < 200000; ++i)
        big += std::to_string(i % 40) + (i % 20 == 19 ? "\n" : " ");
    test::writeBytes(tmp / "big.txt", big);
    finished.clear();
    // Cancelled as soon as it is asked for (not after a wait: a fast machine would finish first); the job's stop
    // token exists from the request on, so the scan stops at its first check.
    w.analyses()->startScan(QString::fromStdString((tmp / "big.txt").string()), 8, 6, -1, false);
    c.cancel();
    REQUIRE(finished.wait(20000));
    const auto partial = finished.at(0).at(0).value<app::ScanResultPtr>();
    CHECK(partial->partial);
    CHECK(partial->tokens < 200000);
    ready.clear();
    w.textEdit()->setPlainText(QStringLiteral("5 6 7"));
    // The new text's result arrives (a result of the text before, still on its way under load, may come first).
    CHECK(QTest::qWaitFor([&] { return w.result() && w.result()->capture->tokens.size() == 3; }, 20000));
}

TEST_CASE("a saved session reopens identically, and stepping reveals one token at a time", "[app][window][session]")
{
    test::TempDir tmp;
    const QString session = QString::fromStdString((tmp / "s.attnscope").string());
    widgets::GridDataPtr savedGrid;
    {
        app::ComputeController c({});
        app::MainWindow w(&c, {});
        w.resize(1280, 800);
        QSignalSpy ready(&c, &app::ComputeController::textReady);
        w.textEdit()->setPlainText(QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 8"));
        w.openModel(caseDir("txl-samelen"));
        REQUIRE(ready.wait(10000));
        w.setSelection(1, {2});
        w.setTerms(core::TermSelection{true, false, false, true});
        settle(c);

        // Stepping: the grid grows by one query row per step (its keys end at the revealed token).
        const int full = w.grid()->data()->rows;
        w.setRevealRows(1);
        settle(c);
        CHECK(w.grid()->data()->rows == 1);
        w.setRevealRows(2);
        settle(c);
        CHECK(w.grid()->data()->rows == 2);
        CHECK(w.grid()->data()->cols == w.grid()->data()->memoryCols + 2);
        w.setRevealRows(-1);
        settle(c);
        CHECK(w.grid()->data()->rows == full);
        w.relposPanel()->setRowOrder(2, true); // farthest-looking heads first, log scale

        REQUIRE(w.saveSession(session).isEmpty());
        savedGrid = w.grid()->data();
    }
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    REQUIRE(w.openSession(session).isEmpty());
    REQUIRE(ready.wait(10000));
    settle(c);
    CHECK(w.textEdit()->toPlainText() == "3 1 4 1 5 9 2 6 5 3 5 8");
    CHECK(w.selection().site == 1);
    CHECK(w.selection().heads == std::vector<int>{2});
    CHECK(w.selection().terms.label() == "a+d");
    CHECK(w.relposPanel()->rowOrder() == 2);
    CHECK(w.relposPanel()->logScale());
    const auto& g = *w.grid()->data();
    CHECK(g.title == savedGrid->title);
    REQUIRE(g.values.size() == savedGrid->values.size());
    for (std::size_t i = 0; i < g.values.size(); ++i)
        CHECK((std::isnan(g.values[i]) ? std::isnan(savedGrid->values[i]) : g.values[i] == savedGrid->values[i]));
    test::writeBytes(tmp / "bad.attnscope", "{\"format\": \"other\"}");
    CHECK(w.openSession(QString::fromStdString((tmp / "bad.attnscope").string())).contains("not an attnscope session"));
}

TEST_CASE("model comparison shows every head of every model with one shared colour scale", "[app][window][compare]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    w.textEdit()->setPlainText(QStringLiteral("1 2 3 4 5 6 7 8 9 10"));
    QSignalSpy ready(&c, &app::ComputeController::comparisonReady);
    w.analyses()->compareModels({caseDir("txl-tiny"), caseDir("txl-samelen"), caseDir("gpt2-tiny")});
    REQUIRE(ready.wait(10000));
    QApplication::processEvents();
    const auto& d = *w.comparison()->data();
    REQUIRE(d.grids.size() == 3);
    CHECK(d.grids[0].size() == 3); // txl-tiny: 3 heads
    CHECK(d.grids[1].size() == 4); // txl-samelen: 4 heads
    CHECK(d.grids[2].size() == 4); // gpt2-tiny: 4 heads
    CHECK(w.comparison()->panelCount() == 11);
    for (const auto& row : d.grids)
        for (const auto& g : row) {
            CHECK(g->rows == 10);
            CHECK(g->colLabels == row.front()->colLabels); // same tokens everywhere
        }
    QSignalSpy failed(&c, &app::ComputeController::jobFailed);
    w.analyses()->compareModels({QStringLiteral("builtin:nope")});
    REQUIRE(failed.wait(10000));
    CHECK(failed.at(0).at(0).value<app::JobFailure>().kind == app::JobKind::Comparison);
    CHECK(failed.at(0).at(0).value<app::JobFailure>().message.contains("nope"));
}

TEST_CASE("every file the app writes fails loudly on a full disk and keeps the old file, its mode and its link",
          "[app][files]")
{
    test::TempDir tmp;
    const QString target = QString::fromStdString((tmp / "real.json").string());
    const QString link = QString::fromStdString((tmp / "link.json").string());
    REQUIRE(app::saveFileAtomically(target, QByteArray("old")).isEmpty());
    QFile::setPermissions(target, QFile::ReadOwner | QFile::WriteOwner); // 0600
    REQUIRE(QFile::link(target, link));

    // A file size limit stands in for a full disk: writes past it fail (EFBIG) instead of being buffered away.
    QString dataError, sessionError;
    {
        const test::FileSizeLimit limit(4096); // an empty session (about 1.1 kB) fits, the 100 kB data does not
        dataError = app::saveFileAtomically(target, QByteArray(100000, 'x'));
        sessionError = app::writeSessionFile(link, app::SessionState{}); // small: fits, so it must succeed
    }
    CHECK(dataError.contains(QStringLiteral("real.json")));
    CHECK(dataError.contains(QStringLiteral("unchanged")));
    CHECK(sessionError.isEmpty());
    // The session went through the link into the real file, which kept its mode; the link is still a link.
    CHECK(QFileInfo(link).isSymLink());
    QFile f(target);
    REQUIRE(f.open(QIODevice::ReadOnly));
    CHECK(f.readAll().contains("format"));
    struct stat st {};
    REQUIRE(::stat(target.toLocal8Bit().constData(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("translation grids through the one grid builder: every site, the all-layers mean, whole words",
          "[app][seq2seq]")
{
    // A translation of marian-tiny's reference source: every site has a grid with the streams' tokens, and the
    // all-layers entry is the mean of the decoder layers' cross-attention.
    const auto bundle = app::loadBundle(QString::fromStdString((test::testdataDir() / "marian-tiny").string()), {});
    const auto& info = bundle->info();
    const auto input = core::readJsonFile((test::testdataDir() / "marian-tiny" / "input.json").string());
    const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
    const auto target = input["decoder_input_ids"].get<std::vector<std::int32_t>>();
    auto tokensOf = [](const std::vector<std::int32_t>& ids) {
        std::vector<core::Token> out;
        for (auto id : ids)
            out.push_back({id, std::to_string(id), 0, 0});
        return out;
    };
    core::CaptureOptions o;
    o.streams.resize(info.streams.size());
    o.streams[static_cast<std::size_t>(info.typedReadStream())].tokens = tokensOf(source);
    const auto capture = core::captureText(*bundle->loaded.model, tokensOf(target), o);
    auto grid = [&](int site, int head, bool average = false, bool words = false) {
        app::ViewSelection s;
        s.site = site;
        s.siteAverage = average;
        s.heads = head < 0 ? std::vector<int>{} : std::vector<int>{head};
        s.wholeWords = words;
        return app::buildGrid(*capture, bundle->displayName, s, nullptr, {}, bundle->targetTokenizer.get());
    };
    std::vector<int> cross;
    for (int s = 0; s < info.siteCount(); ++s) {
        const auto g = grid(s, -1);
        REQUIRE(g);
        const bool encoder = info.site(s).stack == core::Stack::Encoder;
        CHECK(g->rows == static_cast<int>(encoder ? source.size() : target.size()));
        CHECK(g->cols == static_cast<int>(info.site(s).keyStream == 0 ? source.size() : target.size()));
        if (info.site(s).kind == core::SiteKind::Cross)
            cross.push_back(s);
    }
    REQUIRE(cross.size() == 2);
    const auto all = grid(cross.back(), 0, true), last = grid(cross.back(), 0), first = grid(cross.front(), 0);
    CHECK(all->title.contains("mean of all"));
    for (int i = 0; i < all->rows; ++i)
        for (int j = 0; j < all->cols; ++j)
            REQUIRE(all->at(i, j) == Approx((first->at(i, j) + last->at(i, j)) / 2).margin(1e-6));
    // A decoder's rows are labelled by what they write: the next target token (the last row: its prediction).
    CHECK(last->rowLabels.front() == QStringLiteral("→ ") + QString::number(target[1]));
    CHECK(last->rowAxis.contains("writes"));
    // Rows of a whole-word grid still sum to 1 (attention to a word is summed over its pieces).
    const auto words = grid(cross.back(), 0, false, true);
    for (int i = 0; i < words->rows; ++i) {
        double sum = 0;
        for (int j = 0; j < words->cols; ++j)
            sum += words->at(i, j);
        CHECK(sum == Approx(1.0).margin(1e-5));
    }
}

TEST_CASE("a model with attention sinks shows each row's sink share as a last column, rows summing to one",
          "[app][sinks]")
{
    const auto bundle = app::loadBundle(QString::fromStdString((test::testdataDir() / "gptoss-tiny").string()), {});
    const auto input = core::readJsonFile((test::testdataDir() / "gptoss-tiny" / "input.json").string());
    std::vector<core::Token> tokens;
    for (const auto& id : input["token_ids"])
        tokens.push_back(core::Token{id.get<std::int32_t>(), std::to_string(id.get<int>()), 0, 0});
    const auto capture = core::captureText(*bundle->loaded.model, tokens, {});
    app::ViewSelection s;
    s.site = 1;
    s.heads = {2};
    const auto g = app::buildGrid(*capture, bundle->displayName, s);
    REQUIRE(g);
    REQUIRE(g->cols == static_cast<int>(tokens.size()) + 1);
    CHECK(g->colLabels.back().contains("sink"));
    bool someSink = false;
    for (int r = 0; r < g->rows; ++r) {
        double sum = 0;
        for (int c = 0; c < g->cols; ++c)
            if (!std::isnan(g->at(r, c)))
                sum += g->at(r, c);
        CHECK(sum == Approx(1.0).margin(1e-5));
        someSink = someSink || g->at(r, g->cols - 1) > 0.01;
    }
    CHECK(someSink);
    // Raw scores have no sink column (the sink is a logit of the softmax, not a key's score).
    s.terms.raw = true;
    CHECK(app::buildGrid(*capture, bundle->displayName, s)->cols == static_cast<int>(tokens.size()));
}

TEST_CASE("the logit lens names its tokens in the cells at 25 tokens in a 1280x800 window", "[app][lens]")
{
    const auto loaded = core::loadModel(std::string(ATTNSCOPE_SOURCE_DIR) + "/resources/models/llama-wikitext2");
    const auto tok = core::loadModelTokenizer(loaded);
    const auto capture = core::captureText(
        *loaded.model, *tok, "the war ended in 1945 and the city was rebuilt by its people , who had lived there since the old kingdom fell .", {});
    REQUIRE(capture->tokens.size() >= 24);
    const auto lens = core::logitLens(*loaded.model, *capture, 0);
    const auto figure = app::logitLensFigure(lens, *capture, *tok, QStringLiteral("llama-wikitext2"));
    app::PaperFigureView view;
    // What a figure window gets on a 1280x800 screen: its readable size, at most the screen less the window's frame.
    view.setFigure(figure);
    view.resize(std::min(view.readableSize().width(), 1240), std::min(view.readableSize().height(), 680));
    view.show();
    REQUIRE(QTest::qWaitForWindowExposed(&view));
    const auto grids = view.findChildren<widgets::AttentionGridView*>();
    REQUIRE(grids.size() == 2);
    for (auto* g : grids) {
        const auto* d = g->data().get();
        REQUIRE(d);
        const QRect r = g->plot()->axisRect()->rect();
        const double cellW = double(r.width()) / d->cols, cellH = double(r.height()) / d->rows;
        INFO("cells " << cellW << " x " << cellH);
        CHECK(g->valueFontSize(cellW, cellH) > 0); // every cell prints its token (elided to the cell)
        CHECK(d->cellTexts.size() == d->rows * d->cols);
    }
}

TEST_CASE("the head overview ranks a learned-sink model's heads by the mass their sinks take", "[app][sinks]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "gptoss-tiny").string());
    std::vector<core::Token> tokens;
    for (int i = 0; i < 20; ++i)
        tokens.push_back({(i * 7 + 5) % 40, std::to_string(i), 0, 0});
    const auto capture = core::captureText(*loaded.model, std::move(tokens), {});
    const auto thumbs = app::makeThumbnails(*capture, app::ViewSelection{}, 64);
    const auto& info = capture->model;
    REQUIRE(thumbs->sinkMass.size() == static_cast<std::size_t>(info.layers * info.heads));
    // Each head's mass is what its rows leave to the sink: 1 - the row's sum over the keys, averaged over the rows.
    for (int l = 0; l < info.layers; ++l)
        for (int h = 0; h < info.heads; ++h) {
            const auto g = core::attentionGrid(*capture, 0, l, {h});
            double mass = 0;
            for (int r = 0; r < g.rows; ++r) {
                double sum = 0;
                for (int c = 0; c < g.cols; ++c)
                    sum += std::isnan(g.at(r, c)) ? 0.0 : g.at(r, c);
                mass += 1.0 - sum;
            }
            CHECK(thumbs->sinkMass[static_cast<std::size_t>(l * info.heads + h)] == Approx(mass / g.rows).margin(1e-5));
        }
    // Rank 1 is the largest mass, and the ranks are a permutation.
    std::vector<int> ranks = thumbs->sinkRank;
    std::sort(ranks.begin(), ranks.end());
    for (std::size_t i = 0; i < ranks.size(); ++i)
        CHECK(ranks[i] == static_cast<int>(i) + 1);
    const auto top = std::max_element(thumbs->sinkMass.begin(), thumbs->sinkMass.end()) - thumbs->sinkMass.begin();
    CHECK(thumbs->sinkRank[static_cast<std::size_t>(top)] == 1);
    // A model without sinks has no marks.
    const auto llama = core::loadModel((test::testdataDir() / "llama-tiny").string());
    std::vector<core::Token> few{{5, "a", 0, 0}, {6, "b", 0, 0}, {7, "c", 0, 0}};
    CHECK(app::makeThumbnails(*core::captureText(*llama.model, std::move(few), {}), app::ViewSelection{}, 64)->sinkMass.empty());
}

TEST_CASE("attention by token kind has no column for a kind the text lacks", "[app][figures]")
{
    core::TokenAttention decoder; // a decoder's text: no [CLS], no [SEP]
    decoder.punctuation = 0.1;
    decoder.previous = 0.5;
    decoder.next = 0.0;
    auto f = app::tokenKindsFigure({decoder, decoder}, QStringLiteral("m"));
    CHECK(f.grids[0]->colLabels == QStringList{"punct.", "previous", "next"});
    CHECK(f.grids[0]->values == std::vector<float>{0.1f, 0.5f, 0.0f, 0.1f, 0.5f, 0.0f});
    core::TokenAttention encoder = decoder;
    encoder.cls = 0.3;
    encoder.sep = 0.2;
    f = app::tokenKindsFigure({encoder}, QStringLiteral("m"));
    CHECK(f.grids[0]->cols == 5);
    CHECK(f.grids[0]->values.front() == 0.3f);
}

TEST_CASE("a locked row stays on its token when special tokens are hidden and shown again", "[app][window]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("the cat sat on the mat"));
    w.openModel(QString::fromStdString(
        (std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models" / "bert-wikitext2").string()));
    REQUIRE(ready.wait(20000));
    settle(c);
    REQUIRE(w.grid()->data()->rows == 8); // [CLS] the cat sat on the mat [SEP]
    w.grid()->setLockedRow(3);            // "sat", token 3
    emit w.displayPanel()->regroupChanged(false, true);
    settle(c);
    REQUIRE(w.grid()->data()->rows == 6);
    CHECK(w.grid()->lockedRow() == 2);
    CHECK(w.grid()->data()->rowPosition(w.grid()->lockedRow()) == 3);
    emit w.displayPanel()->regroupChanged(false, false);
    settle(c);
    CHECK(w.grid()->lockedRow() == 3);
}

TEST_CASE("the Relative Position heatmap of 48 heads shows its distance axis without scrolling at 1280x800",
          "[app][window][screen]")
{
    const std::vector<std::string> builtins{(std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()};
    app::ComputeController c(builtins);
    app::MainWindow w(&c, builtins);
    w.resize(1280, 800);
    w.show();
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("the cat sat on the mat and the dog sat on the log"));
    w.openModel("builtin:txl-wikitext2"); // 6 layers x 8 heads: 48 rows
    REQUIRE(ready.wait(20000));
    settle(c);
    w.showDock("relposDock");
    REQUIRE(QTest::qWaitFor([&] { return w.relposPanel()->heatmap()->data() != nullptr; }, 20000));
    QTest::qWait(100);
    const auto* view = w.relposPanel()->heatmap();
    const QDockWidget* dock = w.dock("relposDock");
    const int bottom = view->mapTo(dock, QPoint(0, view->height())).y(); // where the axis ends, in the dock
    INFO("heatmap ends at " << bottom << " px of a " << dock->height() << " px dock");
    CHECK(bottom <= dock->height());
}

TEST_CASE("a built-in model with its own sample opens on it, and a typed text comes back with the next model",
          "[app][window][builtin]")
{
    const std::vector<std::string> builtins{(std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()};
    app::ComputeController c(builtins);
    app::MainWindow w(&c, builtins);
    w.resize(1280, 800);
    const QString general = app::builtinSampleText(builtins);
    const QString story = QString::fromStdString(
                              test::readBytes(std::filesystem::path(builtins.front()) / "stories-en" / "sample.txt"))
                              .trimmed();
    w.setText(general);
    auto open = [&](const char* spec) {
        QSignalSpy ready(&c, &app::ComputeController::textReady);
        w.openModel(QString::fromLatin1(spec));
        REQUIRE(ready.wait(20000));
        settle(c);
    };
    open("builtin:stories-en");
    CHECK(w.textEdit()->toPlainText() == story);
    CHECK(w.result()->capture->tokens.size() == static_cast<std::size_t>(story.split(' ').size()));
    open("builtin:llama-wikitext2"); // back to a model without one: the app's sample again
    CHECK(w.textEdit()->toPlainText() == general);
    w.setText(QStringLiteral("the cat sat on the mat"));
    settle(c);
    open("builtin:stories-en"); // a typed text goes aside: the story's vocabulary knows little else
    CHECK(w.textEdit()->toPlainText() == story);
    w.textEdit()->undo(); // one Ctrl+Z away too
    CHECK(w.textEdit()->toPlainText() == "the cat sat on the mat");
    w.textEdit()->redo();
    settle(c);
    open("builtin:llama-wikitext2"); // and back with the next model without a sample of its own
    CHECK(w.textEdit()->toPlainText() == "the cat sat on the mat");
}

TEST_CASE("the 'in the memory' highlight stays in the memory in the whole-word and no-special views too",
          "[app][figures][highlight]")
{
    const auto m = core::loadModel(caseDir("txl-tiny").toStdString());
    const auto tok = core::loadModelTokenizer(m);
    core::CaptureOptions opt;
    opt.segmentLen = 6;
    opt.run.memLen = 6;
    const auto capture = core::captureText(*m.model, *tok, "3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3 2 3", opt);
    app::ViewSelection s;
    s.segment = 1; // the second segment: six memory columns before its own
    s.heads = {0};
    s.highlightScope = app::HighlightScope::Memory;
    for (const auto& [words, special] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
        s.wholeWords = words;
        s.hideSpecial = special;
        const auto g = app::buildGrid(*capture, QStringLiteral("m"), s);
        INFO("whole words " << words << ", without special tokens " << special);
        REQUIRE(g->memoryCols == 6);
        int inMemory = 0, outside = 0;
        for (int r = 0; r < g->rows; ++r)
            for (int c = 0; c < g->cols; ++c)
                (c < g->memoryCols ? inMemory : outside) += g->highlight[static_cast<std::size_t>(r) * g->cols + c];
        CHECK(inMemory > 0);
        CHECK(outside == 0);
    }
}

TEST_CASE("a dock behind another tab computes nothing until it comes to the front", "[app][window][jobs]")
{
    app::ComputeController c({});
    app::MainWindow w(&c, {});
    w.resize(1280, 800);
    w.show();
    REQUIRE(QTest::qWaitForWindowExposed(&w));
    std::map<app::JobKind, int> asked;
    QObject::connect(&c, &app::ComputeController::qkReady, [&] { ++asked[app::JobKind::QkSpace]; });
    QObject::connect(&c, &app::ComputeController::textProfileReady, [&] { ++asked[app::JobKind::TextProfile]; });
    QObject::connect(&c, &app::ComputeController::atlasReady, [&] { ++asked[app::JobKind::Atlas]; });
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    w.textEdit()->setPlainText(QStringLiteral("3 1 4 1 5 9 2 6 5 3 5 8"));
    w.openModel(caseDir("gpt2-tiny"));
    REQUIRE(ready.wait(10000));
    w.showDock("textDock"); // the Text tab in front: Query-Key Space and Relative Position behind it
    settle(c);
    w.setSelection(1, {2});
    settle(c);
    QTest::qWait(200);
    settle(c);
    CHECK(asked[app::JobKind::QkSpace] == 0);
    CHECK(asked[app::JobKind::TextProfile] == 0);
    CHECK(asked[app::JobKind::Atlas] == 0);
    w.showDock("qkDock");
    REQUIRE(QTest::qWaitFor([&] { return asked[app::JobKind::QkSpace] > 0; }, 20000));
    w.showDock("relposDock");
    REQUIRE(QTest::qWaitFor([&] { return asked[app::JobKind::TextProfile] > 0; }, 20000));
    w.showDock("atlasDock");
    REQUIRE(QTest::qWaitFor([&] { return asked[app::JobKind::Atlas] > 0; }, 20000));
}
