// The export size dialog: two spin boxes, a square-cells switch for grids, a density choice for PNG.
#include "ui/figure_size_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QSpinBox>

namespace attnscope::app {

std::optional<FigureSize> askFigureSize(QWidget* parent, const QString& path, const FigureSizeChoice& choice)
{
    const bool png = QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) == 0;
    QDialog dlg(parent);
    dlg.setObjectName(QStringLiteral("figureSizeDialog"));
    dlg.setWindowTitle(QObject::tr("Figure size"));
    auto* form = new QFormLayout(&dlg);
    // PDF pages are measured in points, the others in pixels; both are 1/72 or 1/96 inch at 1x, so one number works.
    const QString unit = png ? QObject::tr(" px") : QObject::tr(" pt");
    auto* width = new QSpinBox(&dlg);
    auto* height = new QSpinBox(&dlg);
    for (QSpinBox* s : {width, height}) {
        s->setRange(100, 20000);
        s->setSingleStep(50);
        s->setSuffix(unit);
    }
    width->setObjectName(QStringLiteral("figureWidth"));
    height->setObjectName(QStringLiteral("figureHeight"));
    width->setValue(choice.proposed.width());
    height->setValue(choice.proposed.height());
    form->addRow(QObject::tr("Width"), width);
    form->addRow(QObject::tr("Height"), height);
    QCheckBox* square = nullptr;
    if (choice.squareCells) {
        square = new QCheckBox(QObject::tr("Square cells (the height follows the width)"), &dlg);
        square->setObjectName(QStringLiteral("figureSquareCells"));
        square->setChecked(true);
        height->setEnabled(false);
        QObject::connect(square, &QCheckBox::toggled, height, [height](bool on) { height->setEnabled(!on); });
        form->addRow(QString(), square);
    }
    // A grid's text, sized for where the figure goes: a paper's column (the figure is scaled down into it), a page's
    // width, or the screen's sizes as they are (a slide).
    QComboBox* printed = nullptr;
    if (choice.squareCells) {
        printed = new QComboBox(&dlg);
        printed->setObjectName(QStringLiteral("figurePrintedWidth"));
        printed->addItems({QObject::tr("one column of a paper (3.3 in)"), QObject::tr("a page's width (7 in)"),
                           QObject::tr("the screen (as shown)")});
        printed->setCurrentIndex(png ? 2 : 0);
        printed->setToolTip(QObject::tr("Labels and values are sized to read at %1 pt once the figure is scaled to "
                                        "this width").arg(kPrintedTextSize));
        form->addRow(QObject::tr("Text sized for"), printed);
    }
    QComboBox* density = nullptr;
    if (png) {
        density = new QComboBox(&dlg);
        density->setObjectName(QStringLiteral("figureDensity"));
        density->addItems({QObject::tr("1x (screen, 96 dpi)"), QObject::tr("2x (print, 192 dpi)"),
                           QObject::tr("3x (poster, 288 dpi)")});
        density->setCurrentIndex(1);
        form->addRow(QObject::tr("Resolution"), density);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    form->addRow(buttons);
    if (dlg.exec() != QDialog::Accepted)
        return std::nullopt;
    FigureSize size;
    size.width = width->value();
    size.height = square && square->isChecked() ? 0 : height->value();
    size.scale = density ? density->currentIndex() + 1 : 1.0;
    if (printed)
        size.printedWidth = printed->currentIndex() == 0 ? kColumnWidth : printed->currentIndex() == 1 ? kPageWidth : 0;
    return size;
}

} // namespace attnscope::app
