// askScanSettings implementation.
#include "ui/scan_dialog.h"

#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSettings>
#include <QSpinBox>

namespace attnscope::app {

std::optional<ScanSettings> askScanSettings(QWidget* parent, const core::ModelInfo& info)
{
    QDialog dlg(parent);
    dlg.setWindowTitle(QObject::tr("Scan corpus"));
    auto* form = new QFormLayout(&dlg);
    auto* sample = new QRadioButton(QObject::tr("Built-in sample text"), &dlg);
    auto* fromFile = new QRadioButton(QObject::tr("Text file:"), &dlg);
    auto* path = new QLineEdit(&dlg);
    auto* browse = new QPushButton(QObject::tr("Browse…"), &dlg);
    QSettings settings;
    path->setText(settings.value(QStringLiteral("scan/lastFile")).toString());
    (path->text().isEmpty() ? sample : fromFile)->setChecked(true);
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(fromFile);
    fileRow->addWidget(path, 1);
    fileRow->addWidget(browse);
    // A path typed or pasted means "scan this file".
    QObject::connect(path, &QLineEdit::textEdited, &dlg, [fromFile] { fromFile->setChecked(true); });
    QObject::connect(browse, &QPushButton::clicked, &dlg, [&dlg, path, fromFile] {
        const QString f = QFileDialog::getOpenFileName(&dlg, QObject::tr("Text to scan"), path->text());
        if (!f.isEmpty()) {
            path->setText(f);
            fromFile->setChecked(true);
        }
    });
    const bool relative = info.hasRelativeTerms;
    auto* mem = new QSpinBox(&dlg);
    mem->setRange(relative ? 1 : 0, 100000);
    mem->setValue(std::max(relative ? 1 : 0, info.defaultMemLen));
    mem->setEnabled(relative);
    if (!relative)
        mem->setToolTip(QObject::tr("This model has no memory: every segment is a text of its own"));
    auto* seg = new QSpinBox(&dlg);
    seg->setRange(1, info.maxSegmentLen);
    seg->setValue(std::min(info.defaultSegmentLen, info.maxSegmentLen));
    auto* maxTok = new QSpinBox(&dlg);
    maxTok->setRange(0, 2000000000);
    maxTok->setSpecialValueText(QObject::tr("all"));
    auto* terms = new QCheckBox(QObject::tr("Also the profiles of terms (a), (b), (c), (d) alone"), &dlg);
    terms->setChecked(relative);
    terms->setEnabled(relative);
    if (!relative)
        terms->setToolTip(QObject::tr("Only relative-attention models (Transformer-XL) have score terms"));
    form->addRow(sample);
    form->addRow(fileRow);
    form->addRow(QObject::tr("Memory length"), mem);
    form->addRow(QObject::tr("Segment length"), seg);
    form->addRow(QObject::tr("At most tokens"), maxTok);
    form->addRow(terms);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
    buttons->button(QDialogButtonBox::Ok)->setText(QObject::tr("Scan"));
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dlg, [&dlg, fromFile, path] {
        if (fromFile->isChecked() && !QFileInfo(path->text().trimmed()).isFile()) {
            QMessageBox::warning(&dlg, QObject::tr("Scan corpus"),
                                 QObject::tr("%1: no such file").arg(path->text().trimmed()));
            return;
        }
        dlg.accept();
    });
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    form->addRow(buttons);
    if (dlg.exec() != QDialog::Accepted)
        return std::nullopt;
    ScanSettings s;
    if (fromFile->isChecked()) {
        s.textFile = path->text().trimmed();
        settings.setValue(QStringLiteral("scan/lastFile"), s.textFile);
    }
    s.memLen = mem->value();
    s.segmentLen = seg->value();
    s.maxTokens = maxTok->value() > 0 ? maxTok->value() : -1;
    s.terms = terms->isChecked();
    return s;
}

} // namespace attnscope::app
