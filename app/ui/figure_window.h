// A window that shows one paper figure at a readable size, with an Export button (PDF, SVG or PNG).
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

private:
    PaperFigureView* m_view;
};

} // namespace attnscope::app
