// ModelPanel implementation.
#include "ui/model_panel.h"

#include "util/memory_info.h"

#include <QFormLayout>
#include <QLabel>
#include <QLocale>

namespace attnscope::app {

ModelPanel::ModelPanel(QWidget* parent)
    : QWidget(parent)
    , m_form(new QFormLayout(this))
{
    // The dock is narrow: a value too long for the line beside its name goes under it, whole.
    m_form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    setModel(nullptr);
}

void ModelPanel::setModel(const ModelBundlePtr& m)
{
    while (m_form->rowCount() > 0)
        m_form->removeRow(0);
    // Descriptions wrap onto a second line in a narrow dock (never cut); a path is elided in the middle instead,
    // where its ends say the most. The full text is in the tooltip either way.
    auto add = [this](const QString& k, const QString& v, bool path = false) {
        auto* l = new QLabel(path ? fontMetrics().elidedText(v, Qt::ElideMiddle, 220) : v, this);
        l->setWordWrap(!path);
        l->setToolTip(v);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        l->setObjectName(k);
        m_form->addRow(k, l);
    };
    if (!m) {
        add(tr("Model"), tr("none loaded (File > Open Model)"));
        return;
    }
    const auto& i = m->info();
    add(tr("Name"), m->displayName);
    add(tr("Family"), QString::fromUtf8(core::familyName(i.family)));
    add(tr("Layers × heads"), tr("%1 × %2").arg(i.layers).arg(i.heads));
    if (i.kvHeads > 0 && i.kvHeads != i.heads)
        add(tr("Key/value heads"), tr("%1, each shared by %2 query heads (grouped-query)").arg(i.kvHeads).arg(i.heads / i.kvHeads));
    add(tr("Model width"), tr("%1 (head size %2)").arg(i.dModel).arg(i.dHead));
    if (!i.positions.empty())
        add(tr("Positions"), QString::fromStdString(i.positions));
    add(tr("Memory length"), i.defaultMemLen > 0 ? QString::number(i.defaultMemLen) : tr("none"));
    add(tr("Segment length"), QString::number(i.defaultSegmentLen));
    add(tr("Parameters"), QLocale().toString(static_cast<qlonglong>(i.parameterCount)));
    if (!i.weightTypes.empty()) // as stored and memory-mapped: nothing is converted
        add(tr("Weights"), tr("%1 · %2 mapped").arg(QString::fromStdString(i.weightTypes),
                                                    QString::fromStdString(core::formatBytes(i.weightBytes))));
    add(tr("Tokenizer"), QString::fromStdString(m->tokenizer->kind()));
    add(tr("Source"), QString::fromStdString(m->loaded.ggufPath.empty() ? m->loaded.folder : m->loaded.ggufPath), true);
}

QList<QPair<QString, QString>> ModelPanel::rows() const
{
    QList<QPair<QString, QString>> out;
    for (int r = 0; r < m_form->rowCount(); ++r) {
        auto* label = qobject_cast<QLabel*>(m_form->itemAt(r, QFormLayout::LabelRole)->widget());
        auto* value = qobject_cast<QLabel*>(m_form->itemAt(r, QFormLayout::FieldRole)->widget());
        if (label && value)
            out.append({label->text(), value->toolTip()});
    }
    return out;
}

} // namespace attnscope::app
