// Widgets offscreen: a known grid gives the expected labels and cell texts; clicks select; masked cells blank.
#include "attention_grid_view.h"
#include "head_overview_view.h"
#include "text_attention_view.h"

#include <QSignalSpy>
#include <QTableWidget>
#include <QTest>
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

using namespace attnscope::widgets;

namespace {
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
    auto t = std::make_shared<HeadThumbnails>();
    t->layers = 2;
    t->heads = 3;
    for (int i = 0; i < 6; ++i) {
        QImage img(8, 8, QImage::Format_RGB32);
        img.fill(Qt::darkBlue);
        t->images.push_back(img);
    }
    view.setThumbnails(t);
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
