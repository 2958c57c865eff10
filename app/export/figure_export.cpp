// Figure export: every plot paints itself through QCPPainter into a QImage (PNG), QSvgGenerator or QPdfWriter.
#include "export/figure_export.h"

#include "export/data_export.h"

#include "attention_grid_view.h"
#include "views/grid_builder.h"

#include <qcustomplot.h>

#include <QBuffer>
#include <QDir>

#include <QFileInfo>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

namespace attnscope::app {

namespace {
// A plot that is not on screen (headless export, one file per head) has never been laid out at the figure's size;
// lay it out there first so size-dependent parts (thinned token labels) match what is painted.
void layOutOffscreen(QCustomPlot* plot, int w, int h)
{
    if (plot->isVisible())
        return;
    plot->setViewport(QRect(0, 0, w, h)); // a hidden widget's resize is deferred; the viewport is what layout uses
    plot->replot(QCustomPlot::rpImmediateRefresh);
}
} // namespace

// Paints with `paintAll` into a PNG (at `scale`), SVG or PDF chosen by the extension; written atomically.
QString exportPainted(const QString& path, int w, int h, double scale, int dpi,
                      const std::function<void(QCPPainter&)>& paintAll);

QString exportComposite(const std::vector<QCustomPlot*>& plots, const QString& path, const FigureSize& size, bool stacked)
{
    if (plots.empty())
        return QObject::tr("%1: nothing to export").arg(path);
    const int n = static_cast<int>(plots.size());
    const int w = size.width > 0 ? size.width : plots.front()->width() * (stacked ? 1 : n);
    const int h = size.height > 0 ? size.height : plots.front()->height() * (stacked ? n : 1);
    const int eachW = stacked ? w : w / n, eachH = stacked ? h / n : h;
    for (QCustomPlot* plot : plots)
        layOutOffscreen(plot, eachW, eachH);
    // Each plot paints itself (vector where the target is vector) into its slot.
    auto paintAll = [&](QCPPainter& p) {
        p.setRenderHint(QPainter::LosslessImageRendering); // images in PDF stored losslessly, never as JPEG
        for (int i = 0; i < n; ++i) {
            p.save();
            p.translate(stacked ? 0 : i * eachW, stacked ? i * eachH : 0);
            plots[static_cast<std::size_t>(i)]->toPainter(&p, eachW, eachH);
            p.restore();
        }
    };
    return exportPainted(path, w, h, size.scale, plots.front()->logicalDpiX(), [&](QCPPainter& p) { paintAll(p); });
}

QString exportPainted(const QString& path, int w, int h, double scale, int dpi,
                      const std::function<void(QCPPainter&)>& paintAll)
{
    const QString ext = QFileInfo(path).suffix().toLower();
    // Painted into memory, then written whole: a failed write leaves any earlier file of that name intact.
    bool ok = false;
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (ext == QLatin1String("png")) {
        QImage img(static_cast<int>(w * scale), static_cast<int>(h * scale), QImage::Format_ARGB32);
        img.fill(Qt::white);
        QCPPainter p(&img);
        p.scale(scale, scale);
        paintAll(p);
        p.end();
        ok = img.save(&buffer, "PNG");
    } else if (ext == QLatin1String("svg") || ext == QLatin1String("pdf")) {
        std::unique_ptr<QPaintDevice> dev;
        if (ext == QLatin1String("svg")) {
            auto* gen = new QSvgGenerator;
            gen->setOutputDevice(&buffer);
            gen->setSize(QSize(w, h));
            gen->setViewBox(QRect(0, 0, w, h));
            gen->setResolution(dpi); // else text comes out small
            gen->setTitle(QStringLiteral("attnscope figure"));
            dev.reset(gen);
        } else {
            auto* pdf = new QPdfWriter(&buffer);
            pdf->setPageSize(QPageSize(QSizeF(w, h), QPageSize::Point));
            pdf->setPageMargins(QMarginsF(0, 0, 0, 0));
            pdf->setResolution(72); // 1 pixel = 1 point
            dev.reset(pdf);
        }
        QCPPainter p;
        ok = p.begin(dev.get());
        if (ok) {
            paintAll(p);
            p.end();
        }
        dev.reset(); // the writers finish their output when they go
    } else {
        return QObject::tr("%1: unknown figure format \"%2\" (use .png, .svg or .pdf)").arg(path, ext);
    }
    buffer.close();
    if (!ok || bytes.isEmpty())
        return QObject::tr("%1: could not draw the figure").arg(path);
    return saveFileAtomically(path, bytes);
}

QString exportWidget(QWidget* widget, const QString& path, const FigureSize& size)
{
    const QSize original = widget->size();
    const int w = size.width > 0 ? size.width : original.width();
    const int h = size.height > 0 ? size.height : original.height();
    if (QSize(w, h) != original)
        widget->resize(w, h);
    const QString err = exportPainted(path, w, h, size.scale, widget->logicalDpiX(), [&](QCPPainter& p) {
        widget->render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
    });
    if (QSize(w, h) != original)
        widget->resize(original);
    return err;
}

QString exportFigure(QCustomPlot* plot, const QString& path, const FigureSize& size)
{
    return exportComposite({plot}, path, size); // one figure is a composite of one: the same writers
}

namespace {
// An off-screen grid drawn like `style`: its colours, scale, values and highlight, never its screen state.
void drawLike(widgets::AttentionGridView& view, const widgets::AttentionGridView& style)
{
    view.setColourMap(style.colourMap());
    view.setNormalisation(style.normalisation());
    view.setShowValues(style.showValues());
    view.setShowHighlight(style.showHighlight());
}

// Width and height of a grid figure: the asked-for ones, else 1000 wide with square cells.
QSize gridFigureSize(widgets::AttentionGridView& view, const FigureSize& size)
{
    const int w = size.width > 0 ? size.width : kDefaultGridFigureWidth;
    return {w, size.height > 0 ? size.height : squareCellHeight(view, w)};
}
} // namespace

int squareCellHeight(widgets::AttentionGridView& view, int width)
{
    QCustomPlot* plot = view.plot();
    const double cols = std::max(1e-9, plot->xAxis->range().size()), rows = plot->yAxis->range().size();
    // Labels and the colour bar take room that depends on the size: lay out, measure the cells, correct, repeat.
    int h = width;
    for (int pass = 0; pass < 4; ++pass) {
        plot->setViewport(QRect(0, 0, width, h));
        plot->replot(QCustomPlot::rpImmediateRefresh);
        const QRect cells = plot->axisRect()->rect();
        const int next = std::clamp(static_cast<int>(std::lround(h + cells.width() * rows / cols - cells.height())),
                                    width / 4, width * 3);
        if (std::abs(next - h) <= 1)
            break;
        h = next;
    }
    return h;
}

QString exportGrid(const widgets::GridDataPtr& data, const widgets::AttentionGridView& style, const QString& path,
                   const FigureSize& size)
{
    if (!data)
        return QObject::tr("%1: there is no grid to export").arg(path);
    widgets::AttentionGridView view; // off screen: no lock, focus or hover to carry over
    drawLike(view, style);
    view.setData(data);
    if (size.printedWidth > 0) { // text that reads at kPrintedTextSize once the figure is scaled to its printed width
        const int width = size.width > 0 ? size.width : kDefaultGridFigureWidth;
        view.setTextSize(kPrintedTextSize * width / size.printedWidth);
    }
    // A zoomed-in view exports what the user zoomed to; otherwise the whole grid.
    if (style.data() && style.data()->rows == data->rows && style.data()->cols == data->cols) {
        view.plot()->xAxis->setRange(style.plot()->xAxis->range());
        view.plot()->yAxis->setRange(style.plot()->yAxis->range());
    }
    const QSize s = gridFigureSize(view, size);
    view.resize(s);
    return exportFigure(view.plot(), path, FigureSize{s.width(), s.height(), size.scale, 0});
}

QString exportAllHeads(const core::TextCapture& capture, const QString& modelName, const ViewSelection& selection,
                       const widgets::AttentionGridView& style, const QString& folder, const QString& extension)
{
    widgets::AttentionGridView view; // off screen, same settings as the visible grid
    drawLike(view, style);
    ViewSelection sel = selection;
    QSize s;
    for (int h = 0; h < capture.model.heads; ++h) {
        sel.heads = {h};
        view.setData(buildGrid(capture, modelName, sel));
        if (h == 0) // every head has the same shape: one size for all
            s = gridFigureSize(view, {});
        view.resize(s);
        const QString path = QDir(folder).filePath(
            QStringLiteral("%1_layer%2_head%3.%4").arg(modelName).arg(sel.site + 1).arg(h + 1).arg(extension));
        const QString err = exportFigure(view.plot(), path, FigureSize{s.width(), s.height(), 1.0});
        if (!err.isEmpty())
            return err;
    }
    return {};
}

} // namespace attnscope::app
