// A window that shows one figure (a paper figure or an analysis view) at a readable size, with an Export button
// (PDF, SVG or PNG); clicks on its grids are passed on.
#pragma once

#include "views/paper_figures.h"

#include <QWidget>

namespace attnscope::app {

class PaperFigureView;

// Asks for a file and a size and writes the view's figure (PNG, SVG, PDF); returns the path written, or "" (cancelled
// or failed, a message shown).
QString askAndExportFigure(QWidget* parent, const PaperFigureView& view);
// Asks for a file and writes the figure's first grid as data (CSV, NPY, JSON); the path written, or "".
QString askAndExportGridData(QWidget* parent, const PaperFigure& figure);

class FigureWindow : public QWidget {
    Q_OBJECT
public:
    explicit FigureWindow(const PaperFigure& figure, QWidget* parent = nullptr);
    PaperFigureView* view() const { return m_view; }

signals:
    void saved(const QString& path);
    void cellClicked(int grid, int row, int col); // a cell of one of the figure's grids

private:
    PaperFigureView* m_view;
};

} // namespace attnscope::app
