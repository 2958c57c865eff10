// askScanSettings implementation.
#include "ui/scan_dialog.h"

#include "analysis/relpos_scan.h"

#include <QCheckBox>
#include <QComboBox>
#include <QStandardItemModel>
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
    // Causal models: chunks from an empty cache, or (rotary models) a sliding window carried between chunks.
    auto* mode = new QComboBox(&dlg);
    mode->setObjectName(QStringLiteral("scanMode"));
    mode->addItem(QObject::tr("Chunks: each from an empty cache"));
    mode->addItem(QObject::tr("Sliding window: carry the last tokens' keys"));
    const bool canSlide = info.can.canCarryKeys;
    if (!canSlide)
        qobject_cast<QStandardItemModel*>(mode->model())->item(1)->setEnabled(false);
    mode->setToolTip(canSlide ? QObject::tr("Sliding: every query also sees the carried keys of earlier tokens, as "
                                            "Mistral's sliding window does")
                              : QObject::tr("%1's learned positions are absolute: it cannot carry earlier tokens")
                                    .arg(QString::fromUtf8(core::familyName(info.family))));
    auto* mem = new QSpinBox(&dlg);
    mem->setObjectName(QStringLiteral("scanMemory"));
    mem->setRange(relative ? 1 : 0, 100000);
    mem->setValue(relative ? std::max(1, core::defaultScanMemLen(info)) : std::max(1, core::defaultScanSegmentLen(info)));
    mem->setEnabled(relative);
    if (!relative)
        QObject::connect(mode, &QComboBox::currentIndexChanged, mem, [mem](int i) { mem->setEnabled(i == 1); });
    auto* seg = new QSpinBox(&dlg);
    seg->setRange(1, info.maxSegmentLen);
    seg->setValue(core::defaultScanSegmentLen(info));
    auto* maxTok = new QSpinBox(&dlg);
    maxTok->setRange(0, 2000000000);
    maxTok->setSpecialValueText(QObject::tr("all"));
    const bool rotary = !info.rotaryFrequencies.empty();
    auto* terms = new QCheckBox(rotary ? QObject::tr("Also the profile of each rotary frequency band alone")
                                       : QObject::tr("Also the profiles of terms (a), (b), (c), (d) alone"),
                                &dlg);
    terms->setChecked(relative || rotary);
    terms->setEnabled(relative || rotary);
    if (!relative && !rotary)
        terms->setToolTip(QObject::tr("Only Transformer-XL (score terms) and rotary models (frequency bands) split their "
                                      "attention"));
    else if (rotary)
        terms->setToolTip(QObject::tr("The bands of the Display dock's split; Paper Figures > Fig. 7 draws them side by side"));
    form->addRow(sample);
    form->addRow(fileRow);
    if (relative) {
        form->addRow(QObject::tr("Memory length"), mem);
        form->addRow(QObject::tr("Segment length"), seg);
        mode->hide();
    } else {
        form->addRow(QObject::tr("Mode"), mode);
        form->addRow(QObject::tr("Chunk length"), seg);
        form->addRow(QObject::tr("Carried tokens"), mem);
    }
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
    s.memLen = relative || mode->currentIndex() == 1 ? mem->value() : 0;
    s.segmentLen = seg->value();
    s.maxTokens = maxTok->value() > 0 ? maxTok->value() : -1;
    s.terms = terms->isChecked();
    return s;
}

} // namespace attnscope::app
