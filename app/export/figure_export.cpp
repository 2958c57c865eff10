// exportFigure: QCustomPlot's own PNG/PDF writers; SVG through QSvgGenerator + QCPPainter.
#include "export/figure_export.h"

#include <qcustomplot.h>

#include <QFileInfo>
#include <QSvgGenerator>

namespace attnscope::app {

QString exportFigure(QCustomPlot* plot, const QString& path, const FigureSize& size)
{
    const QString ext = QFileInfo(path).suffix().toLower();
    const int w = size.width > 0 ? size.width : plot->width();
    const int h = size.height > 0 ? size.height : plot->height();
    bool ok = false;
    if (ext == QLatin1String("png")) {
        ok = plot->savePng(path, w, h, size.scale);
    } else if (ext == QLatin1String("pdf")) {
        ok = plot->savePdf(path, w, h, QCP::epNoCosmetic);
    } else if (ext == QLatin1String("svg")) {
        QSvgGenerator gen;
        gen.setFileName(path);
        gen.setSize(QSize(w, h));
        gen.setViewBox(QRect(0, 0, w, h));
        gen.setResolution(plot->logicalDpiX()); // else text comes out small
        gen.setTitle(QStringLiteral("attnscope figure"));
        QCPPainter painter;
        ok = painter.begin(&gen);
        if (ok) {
            plot->toPainter(&painter, w, h);
            painter.end();
        }
    } else {
        return QObject::tr("%1: unknown figure format \"%2\" (use .png, .svg or .pdf)").arg(path, ext);
    }
    if (!ok || !QFileInfo(path).exists() || QFileInfo(path).size() == 0)
        return QObject::tr("%1: could not write the figure (is the folder writable?)").arg(path);
    return {};
}

} // namespace attnscope::app
