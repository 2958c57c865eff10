// PatchingWindow (patching_window.h).
#include "ui/patching_window.h"

#include "compute/compute_controller.h"
#include "figures/paper_figure_view.h"
#include "run/patch_prompts.h"
#include "ui/figure_window.h"
#include "views/patching_figures.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QVBoxLayout>

#include <cmath>

namespace attnscope::app {

namespace {
struct ComponentChoice {
    const char* label;
    core::PatchComponent component;
};
const ComponentChoice kComponents[] = {
    {QT_TRANSLATE_NOOP("PatchingWindow", "Head outputs"), core::PatchComponent::HeadOutput},
    {QT_TRANSLATE_NOOP("PatchingWindow", "Queries"), core::PatchComponent::Queries},
    {QT_TRANSLATE_NOOP("PatchingWindow", "Keys (per key/value group)"), core::PatchComponent::Keys},
    {QT_TRANSLATE_NOOP("PatchingWindow", "Values (per key/value group)"), core::PatchComponent::Values},
    {QT_TRANSLATE_NOOP("PatchingWindow", "Attention patterns"), core::PatchComponent::Pattern},
    {QT_TRANSLATE_NOOP("PatchingWindow", "Residual stream (per position)"), core::PatchComponent::Residual},
};
// The receivers' inputs path patching changes, in the order of the window's list.
const core::PatchComponent kInputs[] = {core::PatchComponent::Queries, core::PatchComponent::Keys, core::PatchComponent::Values};
} // namespace

PatchingWindow::PatchingWindow(ComputeController* compute, QWidget* parent)
    : QWidget(parent, Qt::Window)
    , m_compute(compute)
    , m_clean(new QLineEdit(this))
    , m_corrupt(new QLineEdit(this))
    , m_answer(new QLineEdit(this))
    , m_wrong(new QLineEdit(this))
    , m_mode(new QComboBox(this))
    , m_component(new QComboBox(this))
    , m_perPosition(new QCheckBox(tr("Per position"), this))
    , m_noising(new QCheckBox(tr("Noising"), this))
    , m_coarse(new QCheckBox(tr("Coarse to fine, from |score|"), this))
    , m_threshold(new QDoubleSpinBox(this))
    , m_senders(new QLineEdit(this))
    , m_receivers(new QLineEdit(this))
    , m_input(new QComboBox(this))
    , m_headOnly(new QCheckBox(tr("Receiver head only"), this))
    , m_freezeMlps(new QCheckBox(tr("Direct path (MLPs frozen)"), this))
    , m_componentOptions(componentOptions())
    , m_pathOptions(pathOptions())
    , m_run(new QPushButton(tr("Patch"), this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
    , m_exportFigure(new QPushButton(tr("Export Figure…"), this))
    , m_exportData(new QPushButton(tr("Export Data…"), this))
    , m_status(new QLabel(this))
    , m_view(new PaperFigureView(this))
{
    setAttribute(Qt::WA_DeleteOnClose);
    setWindowTitle(tr("Activation Patching — attnscope"));
    m_clean->setPlaceholderText(tr("the clean prompt, e.g. When John and Mary went to the shops, John gave a bag to"));
    m_corrupt->setPlaceholderText(tr("the corrupted prompt: the same number of tokens, e.g. the names swapped"));
    m_answer->setPlaceholderText(tr("answer (one token)"));
    m_wrong->setPlaceholderText(tr("wrong answer"));
    m_answer->setToolTip(tr("The metric is logit[answer] − logit[wrong] at the last position. A word of one token, or a token id."));
    m_wrong->setToolTip(m_answer->toolTip());
    m_mode->addItem(tr("Every component"));
    m_mode->addItem(tr("Paths: senders → receivers"));
    m_mode->setToolTip(tr("Every component: each head (or query, key, value, pattern, position) patched in turn.\n"
                          "Paths: each sender head's effect reaching the receivers' queries, keys or values only "
                          "(path patching, Wang et al. 2022)."));
    m_noising->setToolTip(tr("Patch the corrupted activation into the clean run instead of the clean one into the corrupted run"));
    m_status->setWordWrap(true);
    m_cancel->setEnabled(false);
    m_exportFigure->setEnabled(false);
    m_exportData->setEnabled(false);

    buildLayout();

    setTabOrder(m_clean, m_corrupt); // the prompts first, then the answers
    setTabOrder(m_corrupt, m_answer);
    setTabOrder(m_answer, m_wrong);
    setTabOrder(m_wrong, m_mode);
    connect(m_mode, &QComboBox::currentIndexChanged, this, &PatchingWindow::showModeOptions);
    showModeOptions();
    connect(m_run, &QPushButton::clicked, this, &PatchingWindow::run);
    for (QLineEdit* e : {m_clean, m_corrupt, m_answer, m_wrong, m_senders, m_receivers})
        connect(e, &QLineEdit::returnPressed, this, &PatchingWindow::run);
    connect(m_cancel, &QPushButton::clicked, compute, [compute] { compute->cancel(JobKind::Patching); });
    connect(m_clean, &QLineEdit::textChanged, this, &PatchingWindow::updateTokenCounts);
    connect(m_corrupt, &QLineEdit::textChanged, this, &PatchingWindow::updateTokenCounts);
    connect(compute, &ComputeController::patchingUpdated, this, &PatchingWindow::showResult);
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind == JobKind::PromptPair && !f.cancelled())
            m_status->setText(tr("Both prompts: %1").arg(f.message));
        if (f.kind != JobKind::Patching)
            return;
        m_run->setEnabled(true);
        m_cancel->setEnabled(false);
        m_status->setText(f.cancelled() ? tr("Cancelled.") : tr("Patching failed: %1").arg(f.message));
    });
    connect(m_view, &PaperFigureView::cellClicked, this, [this](int, int row, int col) {
        if (!m_result)
            return;
        const auto cell = patchingCellAt(*m_result, row, col);
        if (cell.layer < 0)
            return;
        emit headWanted(cell.layer, cell.head);
        m_status->setText(tr("Capturing layer %1 head %2 on both prompts…").arg(cell.layer + 1).arg(cell.head + 1));
        m_compute->requestPromptPair(m_result, cell.layer, cell.head);
    });
    connect(compute, &ComputeController::promptPairReady, this, [this](FigurePtr f) {
        m_status->setText(f->title);
        auto* w = new FigureWindow(*f, this);
        w->show();
    });
    connect(m_exportFigure, &QPushButton::clicked, this, [this] { askAndExportFigure(this, *m_view); });
    connect(m_exportData, &QPushButton::clicked, this, [this] { askAndExportGridData(this, m_view->figure()); });
    const QRect avail = (parent && parent->screen() ? parent->screen() : QGuiApplication::primaryScreen())->availableGeometry();
    resize(std::min(1100, avail.width() - 40), std::min(760, avail.height() - 60));
}

// The prompts and answers, the mode and its options, the figure, the status and the export buttons, top to bottom.
void PatchingWindow::buildLayout()
{
    auto* form = new QGridLayout;
    form->addWidget(new QLabel(tr("Clean"), this), 0, 0);
    form->addWidget(m_clean, 0, 1);
    form->addWidget(new QLabel(tr("Answer"), this), 0, 2);
    form->addWidget(m_answer, 0, 3);
    form->addWidget(new QLabel(tr("Corrupted"), this), 1, 0);
    form->addWidget(m_corrupt, 1, 1);
    form->addWidget(new QLabel(tr("Wrong"), this), 1, 2);
    form->addWidget(m_wrong, 1, 3);
    form->setColumnStretch(1, 1);
    auto* options = new QHBoxLayout;
    options->addWidget(new QLabel(tr("Patch"), this));
    options->addWidget(m_mode);
    options->addWidget(m_noising);
    options->addStretch(1);
    options->addWidget(m_run);
    options->addWidget(m_cancel);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_status, 1);
    buttons->addWidget(m_exportData);
    buttons->addWidget(m_exportFigure);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(options);
    layout->addWidget(m_componentOptions);
    layout->addWidget(m_pathOptions);
    layout->addWidget(m_view, 1);
    layout->addLayout(buttons);
}

QWidget* PatchingWindow::componentOptions()
{
    for (const auto& c : kComponents)
        m_component->addItem(tr(c.label));
    m_perPosition->setToolTip(tr("One score per position as well (the residual stream is always per position)"));
    m_coarse->setToolTip(tr("A big model has many heads: patch each layer's heads together first, then only the heads of "
                            "the layers whose |score| reaches the threshold, then (per position) only the positions of "
                            "the heads that reach it. Cells left out stay empty. A head another head of its layer "
                            "cancels can be missed: unchecked, every cell is run."));
    m_threshold->setRange(0.01, 1.0);
    m_threshold->setSingleStep(0.05);
    m_threshold->setValue(0.1);
    m_threshold->setEnabled(false);
    connect(m_coarse, &QCheckBox::toggled, m_threshold, &QWidget::setEnabled);
    auto* box = new QWidget(this);
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("Component"), box));
    row->addWidget(m_component);
    row->addWidget(m_perPosition);
    row->addWidget(m_coarse);
    row->addWidget(m_threshold);
    row->addStretch(1);
    return box;
}

QWidget* PatchingWindow::pathOptions()
{
    m_senders->setPlaceholderText(tr("every head before the receivers, or 1.4, 2.1"));
    m_senders->setToolTip(tr("The sender heads as LAYER.HEAD (from 1), separated by commas; empty: every head of every "
                             "layer before the first receiver. Each sender is one cell of the map."));
    m_receivers->setPlaceholderText(tr("e.g. 3.1, 3.2"));
    m_receivers->setToolTip(tr("The receivers as LAYER.HEAD (from 1), separated by commas: query heads for queries; for "
                               "keys and values of a grouped model, key/value groups (or query heads with “Receiver "
                               "head only”)."));
    m_input->addItem(tr("queries"));
    m_input->addItem(tr("keys"));
    m_input->addItem(tr("values"));
    m_input->setToolTip(tr("The receivers' input the sender's path changes; everything else of theirs stays as in the run measured."));
    m_headOnly->setToolTip(tr("Keys and values of a grouped model: only the named query head sees the changed input, not "
                              "its whole key/value group."));
    m_freezeMlps->setToolTip(tr("Unchecked (Wang et al. 2022): the MLPs between sender and receivers are recomputed, so the "
                                "sender reaches the receivers directly and through every MLP on the way.\n"
                                "Checked (the strict direct path): the MLPs are frozen too, so only the sender's own write "
                                "to the residual stream reaches the receivers."));
    auto* box = new QWidget(this);
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("Senders"), box));
    row->addWidget(m_senders, 2);
    row->addWidget(new QLabel(tr("Receivers"), box));
    row->addWidget(m_receivers, 1);
    row->addWidget(m_input);
    row->addWidget(m_headOnly);
    row->addWidget(m_freezeMlps);
    return box;
}

void PatchingWindow::showModeOptions()
{
    const bool path = m_mode->currentIndex() == 1;
    m_componentOptions->setVisible(!path);
    m_pathOptions->setVisible(path);
    if (m_result && !m_result->running)
        return; // the status says what the result on screen is
    m_status->setText(path ? tr("Two prompts of the same length, the two answers, and the receivers. Each cell: how much "
                                "of the clean run's logit difference one sender head restores (1) or leaves corrupted "
                                "(0) through the receivers' queries, keys or values alone.")
                           : tr("Two prompts of the same length that differ where the behaviour should change, and the "
                                "two answers it chooses between. Each cell: how much of the clean run's logit difference "
                                "patching that one component restores (1) or leaves corrupted (0)."));
}

void PatchingWindow::setCleanPrompt(const QString& text)
{
    m_clean->setText(text.simplified());
}

PatchingRequest PatchingWindow::request() const
{
    PatchingRequest r;
    r.clean = m_clean->text();
    r.corrupt = m_corrupt->text();
    r.answer = m_answer->text().trimmed();
    r.wrong = m_wrong->text().trimmed();
    r.mode = m_mode->currentIndex() == 1 ? PatchingRequest::Mode::Path : PatchingRequest::Mode::Components;
    r.noising = m_noising->isChecked();
    r.component = kComponents[std::max(0, m_component->currentIndex())].component;
    r.perPosition = m_perPosition->isChecked();
    r.coarseToFine = m_coarse->isChecked() ? m_threshold->value() : 0.0;
    r.senders = m_senders->text().trimmed();
    r.receivers = m_receivers->text().trimmed();
    r.receiverInput = kInputs[std::max(0, m_input->currentIndex())];
    r.receiverHeadOnly = m_headOnly->isChecked();
    r.freezeMlps = m_freezeMlps->isChecked();
    return r;
}

void PatchingWindow::setRequest(const PatchingRequest& r)
{
    m_clean->setText(r.clean);
    m_corrupt->setText(r.corrupt);
    m_answer->setText(r.answer);
    m_wrong->setText(r.wrong);
    for (int i = 0; i < static_cast<int>(std::size(kComponents)); ++i)
        if (kComponents[i].component == r.component)
            m_component->setCurrentIndex(i);
    m_perPosition->setChecked(r.perPosition);
    m_noising->setChecked(r.noising);
    m_coarse->setChecked(r.coarseToFine > 0);
    if (r.coarseToFine > 0)
        m_threshold->setValue(r.coarseToFine);
    m_mode->setCurrentIndex(r.mode == PatchingRequest::Mode::Path ? 1 : 0);
    m_senders->setText(r.senders);
    m_receivers->setText(r.receivers);
    for (int i = 0; i < static_cast<int>(std::size(kInputs)); ++i)
        if (kInputs[i] == r.receiverInput)
            m_input->setCurrentIndex(i);
    m_headOnly->setChecked(r.receiverHeadOnly);
    m_freezeMlps->setChecked(r.freezeMlps);
}

void PatchingWindow::run()
{
    const auto r = request();
    if (!m_compute->model()) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    if (r.clean.trimmed().isEmpty() || r.corrupt.trimmed().isEmpty() || r.answer.isEmpty() || r.wrong.isEmpty()) {
        m_status->setText(tr("Give both prompts and both answers."));
        return;
    }
    if (r.mode == PatchingRequest::Mode::Path && r.receivers.isEmpty()) {
        m_status->setText(tr("Name the receivers (LAYER.HEAD, from 1): the heads whose queries, keys or values the senders' paths reach."));
        m_receivers->setFocus();
        return;
    }
    m_run->setEnabled(false);
    m_cancel->setEnabled(true);
    m_status->setText(tr("Patching…"));
    m_compute->requestPatching(r);
}

void PatchingWindow::showResult(const PatchingResultPtr& result)
{
    m_result = result;
    m_view->setFigure(patchingFigure(*result));
    m_exportFigure->setEnabled(true);
    m_exportData->setEnabled(true);
    if (result->running) {
        m_status->setText(tr("Patched %1 of %2…").arg(result->done).arg(result->total));
        return;
    }
    m_run->setEnabled(true);
    m_cancel->setEnabled(false);
    m_status->setText(doneMessage(*result));
}

QString PatchingWindow::doneMessage(const PatchingResult& result) const
{
    const auto& res = result.result;
    if (res.partial)
        return tr("Cancelled after %1 of %2 cells; blank cells were not run.").arg(result.done).arg(result.total);
    if (result.request.mode == PatchingRequest::Mode::Path) {
        // The sender whose path restores (or, noising, removes) the most.
        int best = -1;
        for (int i = 0; i < static_cast<int>(res.scores.size()); ++i)
            if (std::isfinite(res.scores[i]) && (best < 0 || std::abs(res.scores[i]) > std::abs(res.scores[best])))
                best = i;
        const int heads = res.shape.size() > 1 ? res.shape[1] : 1;
        return best < 0 ? tr("Done.")
                        : tr("Done: %1 senders. The strongest path: from layer %2 head %3 (score %4). Click a sender to "
                             "see it on both prompts.")
                              .arg(res.runs)
                              .arg(best / heads + 1)
                              .arg(best % heads + 1)
                              .arg(res.scores[best], 0, 'f', 2);
    }
    const QString skipped = res.skipped ? tr(" Coarse to fine left %1 cells blank: their layer's (or head's) |score| was "
                                             "below %2.")
                                              .arg(res.skipped)
                                              .arg(result.request.coarseToFine)
                                        : QString();
    return tr("Done: %1 patched runs.%2 Click a head's cell to see it on both prompts.").arg(res.runs).arg(skipped);
}

void PatchingWindow::updateTokenCounts()
{
    const auto model = m_compute->model();
    if (!model || !model->tokenizer)
        return;
    const auto clean = core::promptIds(*model->tokenizer, m_clean->text().toStdString());
    const auto corrupt = core::promptIds(*model->tokenizer, m_corrupt->text().toStdString());
    const std::string problem = core::promptLengthProblem(*model->tokenizer, clean, corrupt);
    m_status->setText(problem.empty() ? tr("Both prompts: %1 tokens.").arg(clean.size()) : QString::fromStdString(problem));
}

} // namespace attnscope::app
