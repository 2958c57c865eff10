// Draws a PaperFigure (Figs. 5, 6, 7) with the project's views, on screen or off screen, and exports it as one
// figure: used by the figure windows of the GUI and by headless `--paper-figure` export alike.
#pragma once

#include "export/figure_export.h"
#include "views/paper_figures.h"

#include <QWidget>
#include <vector>

class QCustomPlot;
class QHBoxLayout;

namespace attnscope::app {

class PaperFigureView : public QWidget {
    Q_OBJECT
public:
    explicit PaperFigureView(QWidget* parent = nullptr);
    void setFigure(const PaperFigure& figure);
    const PaperFigure& figure() const { return m_figure; }
    // The plots that make up the figure, left to right.
    std::vector<QCustomPlot*> plots() const { return m_plots; }
    // A size at which every label is readable (rows of Figs. 5/7 get about 12 px each).
    QSize readableSize() const;
    // Writes the figure (.png, .svg, .pdf); empty string on success, else the error naming the file.
    QString exportTo(const QString& path, FigureSize size = {}) const;

signals:
    void cellClicked(int grid, int row, int col);

private:
    QHBoxLayout* m_row;
    PaperFigure m_figure;
    std::vector<QWidget*> m_views;
    std::vector<QCustomPlot*> m_plots;
};

} // namespace attnscope::app
