// A colour map of cells that stays fast and sharp at any size. On screen and in PNG the cells are drawn from cached
// 256 x 256 tiles of the level of detail that matches the zoom (CellPyramid), so a 4096 x 4096 grid redraws in a few
// milliseconds after a zoom or pan. Into SVG and PDF it paints every visible cell as a filled rectangle when there are
// few (exact colours, any zoom), otherwise one losslessly stored image with whole pixels per cell (QCustomPlot's own
// path embeds one pixel per cell as JPEG in PDF, which viewers blur). Colours follow the map's gradient, data range
// and scale type. Cell (r, c) is centred on key c and value r. Include only from .cpp files: it pulls in
// <qcustomplot.h>.
#pragma once

#include "cell_pyramid.h"

#include <qcustomplot.h>

#include <cstdint>
#include <map>
#include <tuple>

namespace attnscope::widgets {

class CrispColorMap : public QCPColorMap {
public:
    CrispColorMap(QCPAxis* keyAxis, QCPAxis* valueAxis);
    // The cells, [rows, cols] row-major, NaN = blank, kept alive by `owner` (not copied). With `signedValues` a
    // zoomed-out pixel shows the value furthest from 0, otherwise the largest.
    void setCells(std::shared_ptr<const void> owner, const float* values, int rows, int cols, bool signedValues = false);
    void setCells(std::vector<float> values, int rows, int cols, bool signedValues = false);
    int rows() const { return m_cells.rows(); }
    int cols() const { return m_cells.cols(); }

    // Up to this many visible cells are drawn as vector rectangles in SVG/PDF.
    static constexpr int kMaxVectorCells = 40000;
    static constexpr int kTileSide = 256;
    // Level of detail of the last raster draw, rows and columns (0 = one image pixel per cell); for tests.
    std::pair<int, int> lastLevels() const { return m_lastLevels; }

protected:
    void draw(QCPPainter* painter) override;

private:
    struct Colouring {
        QCPColorGradient gradient;
        QCPRange range;
        bool log = false;
        bool operator==(const Colouring& o) const { return gradient == o.gradient && range == o.range && log == o.log; }
    };
    struct Tile {
        QImage image;
        std::uint64_t used = 0;
    };
    void drawTiles(QCPPainter* painter);
    void drawVector(QCPPainter* painter);
    const QImage& tile(int rowLevel, int colLevel, int tx, int ty);
    // Colours of n cells (NaN transparent) into a scan line.
    void colourize(const float* values, int n, QRgb* line);

    CellPyramid m_cells;
    Colouring m_colouring;
    std::map<std::tuple<int, int, int, int>, Tile> m_tiles; // (row level, column level, tile column, tile row)
    std::uint64_t m_clock = 0;
    std::vector<double> m_scratch;
    std::pair<int, int> m_lastLevels{0, 0};
};

} // namespace attnscope::widgets
