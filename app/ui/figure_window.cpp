// FigureWindow implementation.
#include "ui/figure_window.h"

#include "export/data_export.h"
#include "ui/figure_size_dialog.h"
#include "figures/paper_figure_view.h"
#include "ui/file_dialogs.h"

#include <QGuiApplication>
#include <QHBoxLayout>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QVBoxLayout>

namespace attnscope::app {

QString askAndExportFigure(QWidget* parent, const PaperFigureView& view)
{
    const auto& figure = view.figure();
    const QString path = askFigurePath(parent, QObject::tr("Export %1").arg(figure.displayName()), figure.fileStem());
    if (path.isEmpty())
        return {};
    // The figure's readable size, not the window's (a window squeezed to the screen would give a squeezed figure).
    const auto size = askFigureSize(parent, path, FigureSizeChoice{view.readableSize(), false});
    if (!size)
        return {};
    if (const QString err = view.exportTo(path, *size); !err.isEmpty()) {
        QMessageBox::warning(parent, QObject::tr("Export failed"), err);
        return {};
    }
    return path;
}

QString askAndExportGridData(QWidget* parent, const PaperFigure& figure)
{
    if (figure.grids.empty())
        return {};
    const QString path = askDataPath(parent, QObject::tr("Export %1 data").arg(figure.displayName()), figure.fileStem());
    if (path.isEmpty())
        return {};
    if (const QString err = exportGridData(*figure.grids.front(), path); !err.isEmpty()) {
        QMessageBox::warning(parent, QObject::tr("Export failed"), err);
        return {};
    }
    return path;
}

FigureWindow::FigureWindow(const PaperFigure& figure, QWidget* parent)
    : QWidget(parent, Qt::Window)
    , m_view(new PaperFigureView(this))
{
    setAttribute(Qt::WA_DeleteOnClose);
    setWindowTitle(tr("%1 — attnscope").arg(figure.displayName()));
    m_view->setFigure(figure);
    auto* exportButton = new QPushButton(tr("Export Figure…"), this);
    auto* close = new QPushButton(tr("Close"), this);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    if (figure.grids.size() == 1) {
        // An analysis grid (rollout, ablation, similarity) also exports its numbers, as the token grid does.
        auto* exportData = new QPushButton(tr("Export Data…"), this);
        buttons->addWidget(exportData);
        connect(exportData, &QPushButton::clicked, this, [this, figure] {
            if (const QString path = askAndExportGridData(this, figure); !path.isEmpty())
                emit saved(path);
        });
    }
    buttons->addWidget(exportButton);
    buttons->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_view, 1);
    layout->addLayout(buttons);
    connect(close, &QPushButton::clicked, this, &QWidget::close);
    connect(m_view, &PaperFigureView::cellClicked, this, &FigureWindow::cellClicked);
    connect(exportButton, &QPushButton::clicked, this, [this] {
        if (const QString path = askAndExportFigure(this, *m_view); !path.isEmpty())
            emit saved(path);
    });
    // Readable, but never larger than the screen.
    const QRect avail = (parent && parent->screen() ? parent->screen() : QGuiApplication::primaryScreen())->availableGeometry();
    const QSize want = m_view->readableSize() + QSize(24, 60);
    resize(std::min(want.width(), avail.width() - 40), std::min(want.height(), avail.height() - 60));
}

} // namespace attnscope::app
