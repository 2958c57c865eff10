// A QCPColorMap that stays sharp in vector figures. On screen and in PNG it draws exactly as QCustomPlot does; into
// SVG and PDF it paints every visible cell as a filled rectangle when there are few (exact colours, any zoom), and
// otherwise one losslessly stored image with whole pixels per cell (QCustomPlot's own path embeds one pixel per cell
// as JPEG in PDF, which viewers blur). Include only from .cpp files: it pulls in <qcustomplot.h>.
#pragma once

#include <qcustomplot.h>

namespace attnscope::widgets {

class CrispColorMap : public QCPColorMap {
public:
    using QCPColorMap::QCPColorMap;
    // Up to this many visible cells are drawn as vector rectangles in SVG/PDF.
    static constexpr int kMaxVectorCells = 40000;

protected:
    void draw(QCPPainter* painter) override;

private:
    void drawVector(QCPPainter* painter);
};

} // namespace attnscope::widgets
