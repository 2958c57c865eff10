// MechanismWindow (mechanism_window.h).
#include "ui/mechanism_window.h"

#include "compute/compute_controller.h"
#include "export/figure_export.h"
#include "mechanism_view.h"
#include "ui/file_dialogs.h"
#include "views/mechanism_builder.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnscope::app {

MechanismWindow::MechanismWindow(ComputeController* compute, QWidget* parent)
    : QWidget(parent, Qt::Tool) // in front of the main window while the grid is clicked
    , m_compute(compute)
    , m_view(new widgets::MechanismView)
    , m_previous(new QPushButton(tr("◀ Previous")))
    , m_next(new QPushButton(tr("Next step ▶")))
    , m_hint(new QLabel(tr("Follows the grid: the selected head, and the query row you click (else the last).")))
{
    setWindowTitle(tr("How this head computes"));
    setObjectName(QStringLiteral("mechanismWindow"));
    m_view->setPlaceholder(tr("Type or open a text; this window follows the grid's head and query."));
    auto* save = new QPushButton(tr("Export Step…"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_previous);
    buttons->addWidget(m_next);
    buttons->addWidget(m_hint, 1);
    buttons->addWidget(save);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_view, 1);
    layout->addLayout(buttons);
    m_hint->setWordWrap(true);
    for (auto* b : {m_previous, m_next, save})
        b->setFocusPolicy(Qt::NoFocus); // Space steps the view, never presses a button twice
    setFocusPolicy(Qt::StrongFocus);
    connect(m_previous, &QPushButton::clicked, this, [this] { m_view->setStep(m_view->step() - 1); });
    connect(m_next, &QPushButton::clicked, this, [this] { m_view->setStep(m_view->step() + 1); });
    connect(m_view, &widgets::MechanismView::stepChanged, this, &MechanismWindow::updateButtons);
    connect(save, &QPushButton::clicked, this, [this] {
        const QString path = askFigurePath(this, tr("Export this step"), QStringLiteral("mechanism-step"));
        if (path.isEmpty())
            return;
        const QString err = exportStep(path);
        if (err.isEmpty())
            m_hint->setText(tr("Saved %1").arg(path));
        else
            QMessageBox::warning(this, tr("Export failed"), err);
    });
    connect(m_compute, &ComputeController::explanationReady, this, &MechanismWindow::showExplanation);
    resize(1000, 680);
    updateButtons();
}

void MechanismWindow::follow(int layer, int head, std::int64_t position)
{
    if (layer == m_layer && head == m_head && position == m_position && m_view->data())
        return;
    m_layer = layer;
    m_head = head;
    m_position = position;
    m_compute->requestExplanation(layer, head, position);
}

void MechanismWindow::showExplanation(const ExplanationResultPtr& r)
{
    if (!r || r->explanation.layer != m_layer || r->explanation.head != m_head || r->explanation.position != m_position)
        return; // an answer to an earlier question
    const auto& bundle = r->text->model;
    const auto tokenizer = bundle->tokenizer;
    m_view->setData(mechanismSteps(r->explanation, *r->text->capture, bundle->displayName, [tokenizer](std::int32_t id) {
        return tokenizer ? QString::fromStdString(tokenizer->pieceOf(id)) : QStringLiteral("<%1>").arg(id);
    }));
    updateButtons();
}

void MechanismWindow::updateButtons()
{
    m_previous->setEnabled(m_view->step() > 0);
    m_next->setEnabled(m_view->step() + 1 < m_view->stepCount());
}

QString MechanismWindow::exportStep(const QString& path)
{
    m_view->setKeyHint(false); // a slide, not the window: no key to press
    const QString err = exportWidget(m_view, path);
    m_view->setKeyHint(true);
    return err;
}

void MechanismWindow::keyPressEvent(QKeyEvent* e)
{
    const bool back = e->key() == Qt::Key_Left || e->key() == Qt::Key_Backspace ||
                      (e->key() == Qt::Key_Space && (e->modifiers() & Qt::ShiftModifier));
    if (back)
        m_view->setStep(m_view->step() - 1);
    else if (e->key() == Qt::Key_Space || e->key() == Qt::Key_Right)
        m_view->setStep(m_view->step() + 1);
    else
        QWidget::keyPressEvent(e);
}

} // namespace attnscope::app
