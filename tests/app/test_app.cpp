// The app layer: compute controller (load, run, stale results dropped, cancel, failed load keeps the model),
// keyboard stepping in the main window, figure and data export, and the app binary end to end (headless).
#include "analysis/attention_grid.h"
#include "attention_grid_view.h"
#include "compute/compute_controller.h"
#include "test_support.h"
#include "ui/main_window.h"

#include <QImage>
#include <qcustomplot.h>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTest>
#include <catch2/catch.hpp>
#include <cmath>
#include <sys/wait.h>

using namespace attnscope;

namespace {
QString caseDir(const char* name)
{
    return QString::fromStdString((test::testdataDir() / name).string());
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
    CHECK(result->thumbnails->images.size() == 6); // 2 layers x 3 heads

    test::TempDir tmp;
    std::filesystem::copy(test::testdataDir() / "txl-tiny", tmp / "broken");
    std::filesystem::permissions(tmp / "broken" / "config.json", std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
    test::writeBytes(tmp / "broken" / "config.json", "{\"model_type\": \"bert\"}");
    QSignalSpy failed(&c, &app::ComputeController::modelFailed);
    c.loadModel(QString::fromStdString((tmp / "broken").string()));
    REQUIRE(failed.wait(10000));
    CHECK(failed.at(0).at(1).toString().contains("bert"));
    CHECK(c.model() == model); // the previous model stays loaded
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
    QSignalSpy failed(&c, &app::ComputeController::textFailed);
    QSignalSpy ready(&c, &app::ComputeController::textReady);
    c.runText(text);
    c.cancel();
    REQUIRE(failed.wait(10000));
    CHECK(failed.at(0).at(1).toBool()); // cancelled
    CHECK(ready.count() == 0);
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
    QApplication::processEvents();
    REQUIRE(w.grid()->data());
    CHECK(w.selection().layer == 0);
    CHECK(w.selection().heads == std::vector<int>{0});

    w.grid()->setFocus();
    QTest::keyClick(w.grid(), Qt::Key_Right);
    CHECK(w.selection().heads == std::vector<int>{1});
    QTest::keyClick(w.grid(), Qt::Key_Left);
    QTest::keyClick(w.grid(), Qt::Key_Left); // wraps to the last head
    CHECK(w.selection().heads == std::vector<int>{3});
    QTest::keyClick(w.grid(), Qt::Key_Down);
    CHECK(w.selection().layer == 1);
    QTest::keyClick(w.grid(), Qt::Key_A);
    CHECK(w.selection().heads.empty());
    CHECK(w.grid()->data()->title.contains("average"));
    // In the text box arrows move the cursor, not the head.
    QTest::keyClick(w.grid(), Qt::Key_A);
    const auto before = w.selection().heads;
    w.textEdit()->setFocus();
    QTest::keyClick(w.textEdit(), Qt::Key_Right);
    CHECK(w.selection().heads == before);

    // Exported data equals the core's numbers for the same selection.
    test::TempDir tmp;
    const QString csv = QString::fromStdString((tmp / "grid.csv").string());
    REQUIRE(w.exportDataTo(csv).isEmpty());
    const auto& capture = *w.result()->capture;
    const int seg = static_cast<int>(capture.segments.size()) - 1;
    const auto expected = core::attentionGrid(capture, seg, w.selection().layer, w.selection().heads);
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
    REQUIRE(w.exportFigureTo(png, 2.0).isEmpty());
    const QImage img(png);
    CHECK(img.width() == 2 * w.grid()->plot()->width());
    CHECK(img.height() == 2 * w.grid()->plot()->height());
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
