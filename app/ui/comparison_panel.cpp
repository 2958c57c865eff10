// ComparisonPanel implementation.
#include "model/model_loader.h"
#include "compute/compute_controller.h"
#include "ui/comparison_panel.h"

#include "comparison_view.h"

#include <QApplication>
#include "ui/file_dialogs.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace attnscope::app {

ComparisonPanel::ComparisonPanel(const std::vector<std::string>& builtinNames, QWidget* parent)
    : QWidget(parent)
    , m_list(new QListWidget(this))
    , m_message(new QLabel(this))
    , m_view(new widgets::ComparisonView)
{
    m_view->setObjectName(QStringLiteral("comparison"));
    m_list->setMaximumWidth(220);
    for (const auto& name : builtinNames) {
        const QString n = QString::fromStdString(name);
        addModel(n, QString::fromStdString(core::builtinSpec(n.toStdString())), n.startsWith(QLatin1String("heads-")));
    }
    auto* addFolder = new QPushButton(tr("Add model…"), this);
    addFolder->setToolTip(tr("A model folder, a .gguf file, or a PyTorch checkpoint (.bin, .pt, .pth) with config.json beside it"));
    auto* compare = new QPushButton(tr("Compare"), this);
    m_message->setWordWrap(true);
    // Buttons first: they stay in view however short the dock is.
    auto* side = new QVBoxLayout;
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(compare);
    buttons->addWidget(addFolder);
    side->addLayout(buttons);
    side->addWidget(m_list, 1);
    m_list->setMinimumHeight(40);
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(m_view);
    m_scroll = scroll;
    auto* right = new QVBoxLayout;
    right->addWidget(m_message);
    right->addWidget(scroll, 1);
    auto* layout = new QHBoxLayout(this);
    layout->addLayout(side);
    layout->addLayout(right, 1);
    m_message->hide();

    connect(addFolder, &QPushButton::clicked, this, [this] {
        const QString path = askModelPath(this, tr("Model to compare: a folder, a .gguf file or a PyTorch checkpoint"));
        if (path.isEmpty())
            return;
        addModel(QFileInfo(path).fileName(), path, true);
    });
    connect(compare, &QPushButton::clicked, this, [this] { emit compareRequested(checkedSpecs()); });
}

void ComparisonPanel::addModel(const QString& name, const QString& spec, bool checked)
{
    auto* item = new QListWidgetItem(name, m_list);
    item->setData(Qt::UserRole, spec);
    item->setToolTip(spec);
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
}

QStringList ComparisonPanel::checkedSpecs() const
{
    QStringList specs;
    for (int i = 0; i < m_list->count(); ++i)
        if (m_list->item(i)->checkState() == Qt::Checked)
            specs << m_list->item(i)->data(Qt::UserRole).toString();
    return specs;
}

void ComparisonPanel::setData(widgets::ComparisonPtr comparison)
{
    m_message->hide();
    m_view->setData(std::move(comparison));
    // The view's minimum size follows the number of models and heads; a scroll area only re-reads it on a layout
    // request of its own.
    QEvent relayout(QEvent::LayoutRequest);
    QApplication::sendEvent(m_scroll, &relayout);
}

void ComparisonPanel::setMessage(const QString& message)
{
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty());
}

void ComparisonPanel::attach(ComputeController* compute)
{
    connect(compute, &ComputeController::comparisonReady, this, &ComparisonPanel::setData);
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind != JobKind::Comparison)
            return;
        setData(nullptr);
        setMessage(f.cancelled() ? tr("Comparison cancelled") : tr("Comparison failed: %1").arg(f.message));
    });
}

} // namespace attnscope::app
