// Widgets offscreen: a known grid gives the expected labels and cell texts; clicks select; masked cells blank.
#include "attention_grid_view.h"
#include "cell_pyramid.h"
#include "head_overview_view.h"
#include "prediction_view.h"
#include "qk_scatter_view.h"
#include "relpos_heatmap_view.h"
#include "text_attention_view.h"

#include <QDir>
#include <QHeaderView>
#include <QSvgGenerator>

#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <QToolTip>
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

using namespace attnscope::widgets;

namespace {
// Thumbnails of `layers` x `heads` plain 8 x 8 images.
std::shared_ptr<HeadThumbnails> plainThumbnails(int layers, int heads)
{
    auto t = std::make_shared<HeadThumbnails>();
    t->layers = layers;
    t->heads = heads;
    for (int i = 0; i < layers * heads; ++i) {
        QImage img(8, 8, QImage::Format_RGB32);
        img.fill(Qt::darkBlue);
        t->images.push_back(img);
    }
    return t;
}

GridDataPtr sampleGrid()
{
    auto g = std::make_shared<GridData>();
    g->title = QStringLiteral("test · layer 1 · head 1");
    g->rows = 3;
    g->cols = 4;
    g->memoryCols = 1;
    g->rowLabels = {"b", "c", "d"};
    g->colLabels = {"a", "b", "c", "d"};
    g->rowPositions = {1, 2, 3};
    g->colPositions = {0, 1, 2, 3};
    const float nan = std::nanf("");
    g->values = {0.25f, 0.75f, nan, nan, //
                 0.1f, 0.2f, 0.7f, nan,  //
                 0.4f, 0.3f, 0.2f, 0.1f};
    g->highlight = {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0};
    return g;
}
// A grid view on screen (offscreen platform) with its layout settled.
void show(AttentionGridView& view, GridDataPtr data, QSize size = {800, 600})
{
    view.resize(size);
    view.show();
    view.setData(std::move(data));
    QApplication::processEvents();
    view.plot()->replot();
}
} // namespace

TEST_CASE("grid view shows every token label and formats cells", "[widgets]")
{
    AttentionGridView view;
    show(view, sampleGrid());
    const auto x = view.visibleLabels(Qt::Horizontal);
    const auto y = view.visibleLabels(Qt::Vertical);
    CHECK(x.size() == 4);
    CHECK(x.value(0) == "a");
    CHECK(x.value(3) == "d");
    CHECK(y.size() == 3);
    CHECK(y.value(2) == "d");
    CHECK(AttentionGridView::cellText(0.754f) == "0.75");
    CHECK(AttentionGridView::cellText(std::nanf("")).isEmpty());
}

TEST_CASE("grid view maps clicks to cells and reports them", "[widgets]")
{
    AttentionGridView view;
    show(view, sampleGrid());
    QSignalSpy spy(&view, &AttentionGridView::cellClicked);
    // Centre of cell (row 1, col 2) in widget coordinates.
    const QPoint p(static_cast<int>(view.plot()->xAxis->coordToPixel(2)), static_cast<int>(view.plot()->yAxis->coordToPixel(1)));
    CHECK(view.cellAt(view.plot()->mapTo(&view, p)) == QPoint(2, 1));
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, p);
    REQUIRE(spy.count() == 1);
    CHECK(spy.at(0).at(0).toInt() == 1);
    CHECK(spy.at(0).at(1).toInt() == 2);
    CHECK(view.cellAt(QPoint(1, 1)) == QPoint(-1, -1)); // outside the cells
}

TEST_CASE("grid view draws memory cells in the colour bar's colours", "[widgets]")
{
    auto g = std::make_shared<GridData>(*sampleGrid());
    g->values[8] = g->values[9] = 0.3f; // row 2: the memory key and the first segment key hold the same value
    std::fill(g->highlight.begin(), g->highlight.end(), 0);
    AttentionGridView view;
    view.setShowValues(false);
    show(view, g);
    const QImage img = view.plot()->grab().toImage();
    auto pixel = [&](int col) {
        return img.pixel(static_cast<int>(view.plot()->xAxis->coordToPixel(col)), static_cast<int>(view.plot()->yAxis->coordToPixel(2)));
    };
    CHECK(QColor(pixel(0)) == QColor(pixel(1)));
    CHECK(QColor(pixel(0)) != QColor(pixel(2))); // and the picture does depend on the value
    CHECK(view.plot()->xAxis->label().contains("memory"));
}

TEST_CASE("grid view keeps labels readable when there are many tokens", "[widgets]")
{
    auto g = std::make_shared<GridData>();
    g->rows = g->cols = 400;
    for (int i = 0; i < 400; ++i) {
        g->rowLabels << QStringLiteral("r%1").arg(i);
        g->colLabels << QStringLiteral("c%1").arg(i);
    }
    g->values.assign(400 * 400, 0.001f);
    AttentionGridView view;
    show(view, g, {600, 500});
    const int shown = static_cast<int>(view.visibleLabels(Qt::Vertical).size());
    CHECK(shown > 5);
    CHECK(shown < 60); // thinned to fit
    // Zoom into 20 rows: every label is shown again.
    view.plot()->yAxis->setRange(-0.5, 19.5);
    CHECK(view.visibleLabels(Qt::Vertical).size() == 20);
}

TEST_CASE("head overview: click selects, ctrl-click adds", "[widgets]")
{
    HeadOverviewView view;
    view.setThumbnails(plainThumbnails(2, 3));
    view.resize(300, 200);
    view.show();
    QSignalSpy spy(&view, &HeadOverviewView::headClicked);
    QTest::mouseClick(&view, Qt::LeftButton, Qt::NoModifier, view.cellRect(1, 2).center());
    QTest::mouseClick(&view, Qt::LeftButton, Qt::ControlModifier, view.cellRect(0, 1).center());
    REQUIRE(spy.count() == 2);
    CHECK(spy.at(0).at(0).toInt() == 1);
    CHECK(spy.at(0).at(1).toInt() == 2);
    CHECK_FALSE(spy.at(0).at(2).toBool());
    CHECK(spy.at(1).at(1).toInt() == 1);
    CHECK(spy.at(1).at(2).toBool());
}

TEST_CASE("text view lists the strongest pairs, skipping a token's attention to itself", "[widgets]")
{
    const auto g = sampleGrid();
    const auto pairs = TextAttentionView::strongestPairs(*g, 3, true);
    REQUIRE(pairs.size() == 3);
    // (row 0 "b" -> col 1 "b") = 0.75 is self-attention and skipped; then 0.4 (d->a), 0.3 (d->b), 0.25 (b->a).
    CHECK(pairs[0].value == Approx(0.4f));
    CHECK(pairs[0].row == 2);
    CHECK(pairs[0].col == 0);
    CHECK(pairs[1].value == Approx(0.3f));
    CHECK(pairs[2].value == Approx(0.25f));
    TextAttentionView view;
    view.setData(g);
    CHECK(view.pairsTable()->rowCount() == 6); // 9 unmasked cells minus 3 self pairs (fewer than 20)
    CHECK(view.pairsTable()->item(0, 2)->text() == "40.0");
}

TEST_CASE("text view words are laid out in the font they are drawn in, after a font change too", "[widgets][textview]")
{
    // Enough words that the view's height is at its cap in either font (so no resize lays them out again).
    constexpr int n = 300;
    auto g = std::make_shared<GridData>();
    g->rows = g->cols = n;
    for (int i = 0; i < n; ++i)
        g->rowLabels << QStringLiteral("word%1").arg(i);
    g->colLabels = g->rowLabels;
    for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c)
            g->values.push_back(c <= r ? 1.0f / static_cast<float>(r + 1) : std::nanf(""));
    TextAttentionView fresh, wasLarge;
    for (TextAttentionView* v : {&fresh, &wasLarge})
        v->resize(400, 300);
    const QFont normal = QApplication::font();
    QFont large = normal;
    large.setPointSizeF(large.pointSizeF() * 1.5);
    fresh.setData(g);
    for (TextAttentionView* v : {&fresh, &wasLarge}) {
        v->show();
        REQUIRE(QTest::qWaitForWindowExposed(v));
    }
    // Presentation mode: the dock is hidden and the text computed while the font is large, then the font goes back
    // and the dock comes back at its old size.
    wasLarge.hide();
    QApplication::setFont(large); // as presentation mode does
    wasLarge.setData(g);
    QApplication::processEvents();
    QApplication::setFont(normal);
    wasLarge.show();
    QApplication::processEvents();
    // The words' line (the splitter below may sit elsewhere: it follows the minimum height of the larger font).
    const QRect words(0, 0, 400, 40);
    CHECK(wasLarge.grab(words).toImage() == fresh.grab(words).toImage());
}

namespace {
// A grid of n x n cells with distinct values (no masking).
GridDataPtr squareGrid(int n)
{
    auto g = std::make_shared<GridData>();
    g->rows = g->cols = n;
    for (int i = 0; i < n; ++i) {
        g->rowLabels << QStringLiteral("r%1").arg(i);
        g->colLabels << QStringLiteral("c%1").arg(i);
    }
    for (int i = 0; i < n * n; ++i)
        g->values.push_back(static_cast<float>((i * 7919) % 1000) / 1000.0f);
    return g;
}
// The view exported as SVG, as the app's exporter does it: the plot paints itself into an SVG generator.
QByteArray exportSvg(AttentionGridView& view)
{
    const QString path = QDir::temp().filePath(QStringLiteral("attnscope-widget-export.svg"));
    QFile::remove(path);
    {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(view.plot()->size());
        gen.setViewBox(QRect(QPoint(0, 0), view.plot()->size()));
        QCPPainter painter;
        REQUIRE(painter.begin(&gen));
        view.plot()->toPainter(&painter, view.plot()->width(), view.plot()->height());
        painter.end();
    }
    QFile f(path);
    REQUIRE(f.open(QIODevice::ReadOnly));
    return f.readAll();
}
// Every PNG embedded in an SVG.
std::vector<QImage> svgImages(const QByteArray& svg)
{
    std::vector<QImage> out;
    for (int at = svg.indexOf("data:image/png;base64,"); at >= 0; at = svg.indexOf("data:image/png;base64,", at + 1)) {
        const int end = svg.indexOf('"', at);
        out.push_back(QImage::fromData(QByteArray::fromBase64(svg.mid(at + 22, end - at - 22)), "PNG"));
    }
    return out;
}
} // namespace

TEST_CASE("vector export draws few cells as rectangles and many as a lossless image with a pixel per cell", "[widgets][export]")
{
    AttentionGridView small;
    small.setShowValues(false);
    show(small, squareGrid(12));
    const QByteArray svg = exportSvg(small);
    // 144 cells, each its own filled rectangle (the only picture is the colour bar's gradient, not the 12x12 map).
    CHECK(svg.count("<rect") + svg.count("<path") >= 144);
    for (const QImage& img : svgImages(svg))
        CHECK((img.width() != 12 && img.height() != 12));

    AttentionGridView big;
    big.setShowValues(false);
    big.setShowHighlight(false);
    show(big, squareGrid(300)); // 90,000 cells: an image
    QImage img;
    for (const QImage& i : svgImages(exportSvg(big)))
        if (i.width() >= img.width())
            img = i; // the map: the widest picture (the colour bar is narrow)
    REQUIRE(!img.isNull());
    // Whole pixels per cell, more than one: a viewer's smoothing then only touches the cell borders, not whole
    // cells (QCustomPlot's own path embeds one pixel per cell, which viewers blur when the figure is enlarged).
    CHECK(img.width() > 300);
    CHECK(img.height() > 300);
    CHECK(img.width() % 300 == 0);
    CHECK(img.height() % 300 == 0);
}

TEST_CASE("grid view: dragging pans without selecting, a click selects", "[widgets]")
{
    AttentionGridView view;
    show(view, sampleGrid());
    QSignalSpy spy(&view, &AttentionGridView::cellClicked);
    const QPoint p(static_cast<int>(view.plot()->xAxis->coordToPixel(1)), static_cast<int>(view.plot()->yAxis->coordToPixel(1)));
    QTest::mousePress(view.plot(), Qt::LeftButton, Qt::NoModifier, p);
    QTest::mouseMove(view.plot(), p + QPoint(40, 30));
    QTest::mouseRelease(view.plot(), Qt::LeftButton, Qt::NoModifier, p + QPoint(40, 30));
    CHECK(spy.count() == 0);
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, p);
    CHECK(spy.count() == 1);
}

TEST_CASE("grid view: the highlight mark scales with the cell and leaves its colour visible", "[widgets]")
{
    // Share of red pixels in the highlighted cell (row 0, col 1) and whether its centre is red, at a view size.
    auto measure = [](QSize size, int lockedRow = -1) {
        auto g = std::make_shared<GridData>(*sampleGrid());
        AttentionGridView view;
        view.setShowValues(false);
        show(view, g, size);
        view.setLockedRow(lockedRow);
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
        const QImage img = view.plot()->grab().toImage();
        QCPAxis* x = view.plot()->xAxis;
        QCPAxis* y = view.plot()->yAxis;
        const QRect cell = QRectF(QPointF(x->coordToPixel(0.5), y->coordToPixel(-0.5)),
                                  QPointF(x->coordToPixel(1.5), y->coordToPixel(0.5))).normalized().toRect().adjusted(1, 1, -1, -1);
        auto isRed = [](QColor c) { return c.red() > 200 && c.green() < 60 && c.blue() < 80; };
        int red = 0;
        for (int py = cell.top(); py <= cell.bottom(); ++py)
            for (int px = cell.left(); px <= cell.right(); ++px)
                red += isRed(img.pixelColor(px, py));
        return std::tuple{static_cast<double>(red) / (cell.width() * cell.height()), isRed(img.pixelColor(cell.center())),
                          std::min(cell.width(), cell.height())};
    };
    // Big cells (few tokens, stepping): a small corner, not a frame around a fifth of the grid.
    const auto [bigShare, bigCentre, bigSide] = measure({800, 600});
    INFO("big cells of " << bigSide << " px: red share " << bigShare);
    REQUIRE(bigSide >= 28);
    CHECK(bigShare > 0);
    CHECK(bigShare < 0.03);
    CHECK_FALSE(bigCentre);
    // The locked row's outline after it is drawn as an outline (the corner's red fill once carried over into it).
    const auto [lockedShare, lockedCentre, lockedSide] = measure({800, 600}, 0);
    CHECK(lockedShare < 0.03);
    CHECK_FALSE(lockedCentre);
    // Mid-sized cells: a thin frame inside the cell, the centre keeps the colour-map colour.
    const auto [midShare, midCentre, midSide] = measure({240, 200});
    INFO("mid cells of " << midSide << " px: red share " << midShare);
    REQUIRE(midSide < 28);
    CHECK(midShare > 0);
    CHECK(midShare < 0.5);
    CHECK_FALSE(midCentre);
}

TEST_CASE("grid view: while stepping, the view keeps the whole grid's frame and the cells their size", "[widgets]")
{
    auto g = std::make_shared<GridData>(*sampleGrid());
    AttentionGridView view;
    show(view, g, {600, 500});
    const double cellH = std::abs(view.plot()->yAxis->coordToPixel(1) - view.plot()->yAxis->coordToPixel(0));
    // One row revealed (of three), its keys only: framed in the full grid's shape.
    auto first = std::make_shared<GridData>(*g);
    first->rows = 1;
    first->cols = 2;
    first->rowLabels = {"b"};
    first->colLabels = {"a", "b"};
    first->values = {0.25f, 0.75f};
    first->highlight = {0, 1};
    first->frameRows = g->rows;
    first->frameCols = g->cols;
    view.setData(first);
    QApplication::processEvents();
    CHECK(view.plot()->yAxis->range().size() == Approx(g->rows));
    CHECK(view.plot()->xAxis->range().size() == Approx(g->cols));
    CHECK(std::abs(view.plot()->yAxis->coordToPixel(1) - view.plot()->yAxis->coordToPixel(0)) == Approx(cellH).margin(1));
}

TEST_CASE("text view says score for raw scores and reports a clicked pair", "[widgets]")
{
    auto g = std::make_shared<GridData>(*sampleGrid());
    g->diverging = true;
    g->values = {1.5f, -2.0f, std::nanf(""), std::nanf(""), 3.25f, 0.5f, -1.0f, std::nanf(""), 0.1f, 0.2f, 0.3f, 0.4f};
    TextAttentionView view;
    view.resize(400, 400);
    view.show();
    view.setData(g);
    CHECK(view.pairsTable()->horizontalHeaderItem(2)->text() == "score");
    CHECK(view.pairsTable()->item(0, 2)->text() == "3.25");
    QSignalSpy spy(&view, &TextAttentionView::pairActivated);
    QApplication::processEvents();
    const QRect r = view.pairsTable()->visualItemRect(view.pairsTable()->item(0, 0));
    QTest::mouseClick(view.pairsTable()->viewport(), Qt::LeftButton, Qt::NoModifier, r.center());
    REQUIRE(spy.count() == 1);
    CHECK(spy.at(0).at(0).toInt() == 1); // row 1 ("c") ...
    CHECK(spy.at(0).at(1).toInt() == 0); // ... to col 0 ("a"): 3.25
    g->diverging = false;
    view.setData(std::make_shared<GridData>(*sampleGrid()));
    CHECK(view.pairsTable()->horizontalHeaderItem(2)->text() == "strength %");
}

TEST_CASE("relative-position heatmap keeps rows readable: minimum height grows with the heads", "[widgets]")
{
    auto f = std::make_shared<RelposFigureData>();
    RelposFigurePanel p;
    p.layers = 6;
    p.heads = 8;
    p.distances = 50;
    p.values.assign(48 * 50, 0.02f);
    f->panels.push_back(p);
    RelposHeatmapView view;
    view.setData(f);
    CHECK(view.minimumSizeHint().height() >= 48 * RelposHeatmapView::kMinRowHeight);
    view.resize(600, view.minimumSizeHint().height());
    view.show();
    QApplication::processEvents();
    view.plot()->replot();
    const QStringList labels = view.visibleRowLabels();
    CHECK(labels.size() >= 4);   // thinned to what fits one-pixel rows (a label every twelve heads) ...
    CHECK(labels.size() <= 48);
    CHECK(labels.contains("L1 H1"));
    view.resize(600, 1200); // room for every row
    QApplication::processEvents();
    view.plot()->replot();
    CHECK(view.visibleRowLabels().size() == 48);
}

namespace {
// n x n causal grid of zeros with one strong cell.
GridDataPtr bigGridWithSpike(int n, int spikeRow, int spikeCol)
{
    auto g = std::make_shared<GridData>();
    g->rows = g->cols = n;
    g->values.assign(static_cast<std::size_t>(n) * n, std::nanf(""));
    for (int r = 0; r < n; ++r)
        for (int c = 0; c <= r; ++c)
            g->values[static_cast<std::size_t>(r) * n + c] = 0.0f;
    g->values[static_cast<std::size_t>(spikeRow) * n + spikeCol] = 1.0f;
    for (int i = 0; i < n; ++i) {
        g->rowLabels << QStringLiteral("r%1").arg(i);
        g->colLabels << QStringLiteral("c%1").arg(i);
    }
    return g;
}
} // namespace

TEST_CASE("a 4096 x 4096 grid: a one-cell spike stays visible zoomed out, labels appear zoomed in, zoom stops at four cells",
          "[widgets][big]")
{
    const int n = 4096, sr = 3000, sc = 1234;
    AttentionGridView view;
    show(view, bigGridWithSpike(n, sr, sc), {900, 800});
    // Zoomed out a pixel covers several cells: the pooled level keeps the spike's colour (Viridis' top is yellow).
    const QImage img = view.plot()->toPixmap().toImage();
    const QRect rect = view.plot()->axisRect()->rect();
    const int px = static_cast<int>(view.plot()->xAxis->coordToPixel(sc)), py = static_cast<int>(view.plot()->yAxis->coordToPixel(sr));
    bool bright = false;
    for (int y = py - 2; y <= py + 2; ++y)
        for (int x = px - 2; x <= px + 2; ++x)
            if (rect.contains(x, y) && qRed(img.pixel(x, y)) > 200 && qGreen(img.pixel(x, y)) > 200)
                bright = true;
    CHECK(bright);
    CHECK(view.visibleLabels(Qt::Horizontal).size() < 100); // thinned to what fits

    // Zoomed in to 40 cells: every row and column is labelled.
    view.plot()->xAxis->setRange(sc - 20, sc + 20);
    view.plot()->yAxis->setRange(sr - 20, sr + 20);
    view.plot()->replot();
    CHECK(view.visibleLabels(Qt::Horizontal).size() >= 35);
    CHECK(view.visibleLabels(Qt::Horizontal).value(sc) == QStringLiteral("c%1").arg(sc));
    // Hover and click find the cell under the mouse at this zoom.
    const QPoint spike(static_cast<int>(view.plot()->xAxis->coordToPixel(sc)), static_cast<int>(view.plot()->yAxis->coordToPixel(sr)));
    CHECK(view.cellAt(view.plot()->mapTo(&view, spike)) == QPoint(sc, sr));

    // Deeper than four cells across is refused: the range snaps back around its centre.
    view.plot()->xAxis->setRange(sc - 0.2, sc + 0.2);
    CHECK(view.plot()->xAxis->range().size() == Approx(4.0));
    CHECK(view.plot()->xAxis->range().center() == Approx(sc));
}

TEST_CASE("grid view: an emptied grid drops its labels, a stale one says so until new data comes", "[widgets]")
{
    AttentionGridView view;
    show(view, sampleGrid());
    view.setStale(true);
    CHECK(view.isStale());
    view.setData(sampleGrid());
    CHECK_FALSE(view.isStale());
    view.setData(nullptr);
    QApplication::processEvents();
    view.plot()->replot();
    CHECK(view.visibleLabels(Qt::Horizontal).isEmpty());
    CHECK(view.visibleLabels(Qt::Vertical).isEmpty());
    view.setStale(true); // nothing shown: nothing to call out of date
    CHECK_FALSE(view.isStale());
}

TEST_CASE("query-key plot coloured by token: repeated tokens by frequency, each point of one in its colour", "[widgets][qk]")
{
    auto data = std::make_shared<attnscope::widgets::QkScatterData>();
    const QStringList words{" the", "cat", "the", " sat", "on", " the", "mat", "on", "sat"};
    for (int i = 0; i < words.size(); ++i) {
        data->x.push_back(static_cast<float>(i));
        data->y.push_back(static_cast<float>(i % 3));
        data->positions.push_back(i);
        data->labels << words[i];
    }
    data->positions.push_back(-1); // a relative encoding R: no token
    data->labels << QStringLiteral("R at distance 0");
    data->x.push_back(0.5f);
    data->y.push_back(0.5f);
    data->queries = 5;
    attnscope::widgets::QkScatterView view;
    view.resize(480, 320);
    view.setData(data);
    view.setColouring(attnscope::widgets::QkScatterView::Colouring::Token);
    // "the" three times (spaces trimmed), "sat" and "on" twice; single words and R are the grey rest.
    CHECK(view.frequentTokens() == QStringList({"the", "on", "sat"}));
    // Other points (another head, or a picture while the colouring is something else): counted anew when shown.
    auto other = std::make_shared<attnscope::widgets::QkScatterData>(*data);
    other->labels[1] = QStringLiteral("mat");
    view.setColouring(attnscope::widgets::QkScatterView::Colouring::Kind);
    view.setData(other);
    view.setColouring(attnscope::widgets::QkScatterView::Colouring::Token);
    CHECK(view.frequentTokens() == QStringList({"the", "mat", "on", "sat"}));
    QImage img(view.size(), QImage::Format_ARGB32);
    view.render(&img);
    CHECK(!img.isNull());
}

TEST_CASE("prediction bars: a short panel at a large font shows fewer bars at full size, keeping the token in the text",
          "[widgets][predictions]")
{
    auto data = std::make_shared<attnscope::widgets::PredictionData>();
    data->title = QStringLiteral("after \"of\"");
    for (int i = 0; i < 11; ++i) {
        data->tokens << QStringLiteral("token%1").arg(i);
        data->probabilities.push_back(0.3 / (i + 1));
    }
    data->marked = 10; // the token in the text, ranked last
    attnscope::widgets::PredictionView view;
    QFont big = view.font();
    big.setPointSize(15); // presentation mode
    view.setFont(big);
    auto shownTokens = [&] {
        auto* plot = view.findChild<QCustomPlot*>();
        REQUIRE(plot);
        auto ticker = plot->axisRect()->axis(QCPAxis::atLeft)->ticker().dynamicCast<QCPAxisTickerText>();
        REQUIRE(ticker);
        QStringList out;
        for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it)
            out << it.value();
        return out;
    };
    view.resize(420, 900);
    view.show();
    REQUIRE(QTest::qWaitForWindowExposed(&view));
    view.setData(data);
    CHECK(shownTokens().size() == 11);
    view.resize(420, 260); // the bars follow the size
    QTest::qWait(20);
    const auto few = shownTokens();
    CHECK(few.size() >= 5);
    CHECK(few.size() < 11);
    CHECK(few.contains(QStringLiteral("token10"))); // the token in the text stays
    CHECK(few.contains(QStringLiteral("token0")));
}

TEST_CASE("head overview: sliding-window layers of a mixed model are marked and their labels say local or global",
          "[widgets][overview]")
{
    auto t = plainThumbnails(3, 2);
    t->windows = {4, 0, 4}; // local, global, local (Gemma 2's alternation)
    attnscope::widgets::HeadOverviewView view;
    view.resize(300, 300);
    view.show();
    REQUIRE(QTest::qWaitForWindowExposed(&view));
    view.setThumbnails(t);
    auto tipAt = [&](int layer) {
        const QPoint at(4, view.cellRect(layer, 0).center().y());
        QHelpEvent e(QEvent::ToolTip, at, view.mapToGlobal(at));
        QApplication::sendEvent(&view, &e);
        return QToolTip::text();
    };
    CHECK(tipAt(0).contains("sliding window"));
    CHECK(tipAt(0).contains("4 most recent"));
    CHECK(tipAt(1).contains("global"));
    // The mark: a teal bar left of a local row, none by the global one.
    QImage img(view.size(), QImage::Format_ARGB32);
    view.render(&img);
    const int x = view.cellRect(0, 0).left() - 3;
    CHECK(img.pixelColor(x, view.cellRect(0, 0).center().y()) == QColor(0, 150, 140));
    CHECK(img.pixelColor(x, view.cellRect(1, 0).center().y()) != QColor(0, 150, 140));
}

TEST_CASE("levels of detail pool rows and columns apart: a tall, narrow grid keeps its columns", "[widgets][big]")
{
    // 8 rows x 4 columns, value r * 10 + c; a blank cell in row 0.
    std::vector<float> v(32);
    for (int r = 0; r < 8; ++r)
        for (int c = 0; c < 4; ++c)
            v[static_cast<std::size_t>(r * 4 + c)] = static_cast<float>(r * 10 + c);
    v[1] = std::nanf("");
    CellPyramid p;
    p.reset(nullptr, v.data(), 8, 4, false);
    CHECK(p.rowLevels() == 4);
    CHECK(p.colLevels() == 3);
    const float* rowsPooled = p.level(2, 0); // 4 rows into 1, columns kept
    REQUIRE(p.rows(2) == 2);
    REQUIRE(p.cols(0) == 4);
    CHECK(std::vector<float>(rowsPooled, rowsPooled + 8) == std::vector<float>{30, 31, 32, 33, 70, 71, 72, 73});
    const float* both = p.level(1, 1); // 2 x 2, as a square grid pools
    CHECK(std::vector<float>(both, both + 8) == std::vector<float>{11, 13, 31, 33, 51, 53, 71, 73});
    const float* top = p.level(3, 2);
    CHECK(top[0] == 73);
    // Signed values keep the one furthest from 0.
    std::vector<float> s{-5, 2, 3, -1};
    p.reset(nullptr, s.data(), 4, 1, true);
    CHECK(p.level(2, 0)[0] == -5);
}

TEST_CASE("a router's tokens x experts zoomed out: each expert keeps its own column and its colours show", "[widgets][big]")
{
    // 600 tokens x 8 experts in about 330 pixels of height: two tokens a pixel, every expert a wide column. Expert 4
    // (column 3) has probability 1 and is chosen everywhere; the others 0.
    const int tokens = 600;
    auto g = std::make_shared<GridData>();
    g->rows = tokens;
    g->cols = 8;
    g->values.assign(static_cast<std::size_t>(tokens) * 8, 0.0f);
    g->highlight.assign(g->values.size(), 0);
    for (int r = 0; r < tokens; ++r) {
        g->values[static_cast<std::size_t>(r) * 8 + 3] = 1.0f;
        g->highlight[static_cast<std::size_t>(r) * 8 + 3] = 1;
        g->rowLabels << QStringLiteral("t%1").arg(r);
        g->rowPositions.push_back(r);
    }
    for (int c = 0; c < 8; ++c) {
        g->colLabels << QStringLiteral("E%1").arg(c + 1);
        g->colPositions.push_back(c);
    }
    g->valueLabel = QStringLiteral("router probability");
    AttentionGridView view;
    show(view, g, {800, 420});
    const QImage img = view.plot()->toPixmap().toImage();
    auto at = [&](int col) {
        return img.pixelColor(static_cast<int>(view.plot()->xAxis->coordToPixel(col)),
                              static_cast<int>(view.plot()->yAxis->coordToPixel(tokens / 2)));
    };
    auto yellow = [](const QColor& c) { return c.red() > 200 && c.green() > 200 && c.blue() < 100; };
    CHECK(yellow(at(3)));       // the chosen expert in the colour map's top colour, not covered by red marks
    CHECK_FALSE(yellow(at(2))); // its neighbours stay dark: columns are not pooled together
    CHECK_FALSE(yellow(at(0)));
    CHECK(at(2).red() < 100);
    // The chosen experts stay marked at this zoom: a red edge down the left side of their column.
    const QColor edge = img.pixelColor(static_cast<int>(view.plot()->xAxis->coordToPixel(2.5)) + 1,
                                       static_cast<int>(view.plot()->yAxis->coordToPixel(tokens / 2)));
    CHECK((edge.red() > 180 && edge.green() < 80));
}
