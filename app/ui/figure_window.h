// A window that shows one figure (a paper figure or an analysis view) at a readable size, with an Export button
// (PDF, SVG or PNG); clicks on its grids are passed on.
#pragma once

#include "views/paper_figures.h"

#include <QWidget>

namespace attnscope::app {

class PaperFigureView;

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
