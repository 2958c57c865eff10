// TranslationPanel: the controls and readouts of an encoder-decoder model's translation.
#include "compute/compute_controller.h"
#include "ui/translation_panel.h"

#include "views/translation_views.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace attnscope::app {

TranslationPanel::TranslationPanel(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("translationPanel"));
    m_source = new QLineEdit;
    m_source->setObjectName(QStringLiteral("sourceBox"));
    m_source->setPlaceholderText(tr("A sentence to translate"));
    m_target = new QLineEdit;
    m_target->setObjectName(QStringLiteral("targetBox"));
    m_target->setPlaceholderText(tr("Empty: Translate lets the model write it. Typed: the model reads it (teacher forcing)."));
    QFont big = m_source->font();
    big.setPointSizeF(big.pointSizeF() * 1.25);
    m_source->setFont(big);
    m_target->setFont(big);
    m_translate = new QPushButton(tr("Translate"));
    m_translate->setObjectName(QStringLiteral("translateButton"));
    m_translate->setToolTip(tr("The model writes the target token by token (greedy), each new token's cross-attention "
                               "lighting the source words it reads"));
    m_site = new QComboBox;
    m_site->setObjectName(QStringLiteral("siteBox"));
    m_site->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_head = new QComboBox;
    m_head->setObjectName(QStringLiteral("siteHeadBox"));
    m_head->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_alignment = new QLabel;
    m_alignment->setObjectName(QStringLiteral("alignmentLabel"));
    m_alignment->setWordWrap(true);
    m_alignment->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_state = new QLabel;
    m_state->setWordWrap(true);
    m_ranking = new QTableWidget(0, 4);
    m_ranking->setObjectName(QStringLiteral("alignmentHeads"));
    m_ranking->setHorizontalHeaderLabels({tr("Layer"), tr("Head"), tr("Concentration"), tr("Monotonic")});
    m_ranking->horizontalHeaderItem(2)->setToolTip(tr("Mean of each target row's largest weight: 1 when every row reads one source token"));
    m_ranking->horizontalHeaderItem(3)->setToolTip(tr("Share of consecutive target rows whose most-read source token does not move back"));
    m_ranking->verticalHeader()->hide();
    m_ranking->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_ranking->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_ranking->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);

    auto* form = new QFormLayout;
    auto* sourceRow = new QHBoxLayout;
    sourceRow->addWidget(m_source, 1);
    sourceRow->addWidget(m_translate);
    form->addRow(tr("Source"), sourceRow);
    form->addRow(tr("Target"), m_target);
    auto* pick = new QHBoxLayout;
    pick->addWidget(m_site);
    pick->addWidget(m_head);
    pick->addStretch(1);
    form->addRow(tr("Attention"), pick);
    form->addRow(tr("Alignment"), m_alignment);
    auto* left = new QVBoxLayout;
    left->addLayout(form);
    left->addWidget(m_state);
    left->addStretch(1);
    m_details = new QWidget;
    auto* right = new QVBoxLayout(m_details);
    right->setContentsMargins(0, 0, 0, 0);
    right->addWidget(new QLabel(tr("Alignment heads (cross-attention, this translation):")));
    right->addWidget(m_ranking, 1);
    auto* all = new QHBoxLayout(this);
    all->addLayout(left, 3);
    all->addWidget(m_details, 2);

    m_sourceEdited = new QTimer(this);
    m_sourceEdited->setSingleShot(true);
    m_sourceEdited->setInterval(400);
    m_targetEdited = new QTimer(this);
    m_targetEdited->setSingleShot(true);
    m_targetEdited->setInterval(300);
    // A new source is translated again; an edited target is read as typed.
    connect(m_source, &QLineEdit::textEdited, m_sourceEdited, qOverload<>(&QTimer::start));
    connect(m_sourceEdited, &QTimer::timeout, this, [this] {
        m_targetEdited->stop();
        m_target->clear();
        emit translateRequested(source(), QString(), true);
    });
    connect(m_target, &QLineEdit::textEdited, m_targetEdited, qOverload<>(&QTimer::start));
    connect(m_targetEdited, &QTimer::timeout, this, [this] { emit translateRequested(source(), target(), false); });
    connect(m_translate, &QPushButton::clicked, this, [this] {
        if (m_running) {
            emit stopRequested();
            return;
        }
        m_sourceEdited->stop();
        m_targetEdited->stop();
        m_target->clear();
        emit translateRequested(source(), QString(), true);
    });
    auto changed = [this] {
        if (m_updating)
            return;
        if (m_result)
            m_alignment->setText(alignmentText(*m_result, site(), head()));
        emit selectionChanged(site(), head());
    };
    connect(m_site, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_head, qOverload<int>(&QComboBox::currentIndexChanged), this, changed);
    connect(m_ranking, &QTableWidget::cellClicked, this, [this](int row, int) {
        const auto* item = m_ranking->item(row, 0);
        if (item)
            select(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
    });
}

void TranslationPanel::setModel(const ModelBundlePtr& model)
{
    m_model = model;
    m_result.reset();
    m_updating = true;
    m_site->clear();
    const auto& info = model->info();
    int lastCross = 0;
    for (int s = 0; s < static_cast<int>(info.sites.size()); ++s) {
        m_site->addItem(siteTitle(info, s));
        if (info.sites[static_cast<std::size_t>(s)].kind == core::SiteKind::Cross)
            lastCross = s;
    }
    m_site->addItem(siteTitle(info, allCrossSites(info)));
    m_site->setCurrentIndex(lastCross);
    fillHeads(info.heads);
    m_updating = false;
    // A model's sample sentence replaces an empty source or the previous model's sample, never one the user typed.
    if (!model->sampleSource.isEmpty() && (m_source->text().isEmpty() || m_source->text() == m_sample))
        m_source->setText(model->sampleSource);
    m_sample = model->sampleSource;
    m_target->clear();
    m_alignment->clear();
    m_state->clear();
    m_ranking->setRowCount(0);
}

void TranslationPanel::fillHeads(int heads)
{
    m_head->clear();
    m_head->addItem(tr("mean of heads"));
    for (int h = 0; h < heads; ++h)
        m_head->addItem(tr("head %1").arg(h + 1));
}

void TranslationPanel::showResult(const TranslationResultPtr& r)
{
    m_result = r;
    if (r->translation.typed < static_cast<int>(r->translation.target.size()) && !m_target->hasFocus())
        m_target->setText(r->targetText); // what the model wrote, ready to edit
    m_alignment->setText(alignmentText(*r, site(), head()));
    const int written = static_cast<int>(r->translation.target.size()) - r->translation.typed;
    m_state->setText(r->running ? tr("Writing… %1 tokens so far").arg(written)
                     : written > 0 ? tr("The model wrote %1 tokens%2.")
                                         .arg(written)
                                         .arg(r->translation.finished ? tr(" and ended the sentence") : QString())
                                   : tr("The model read the typed target (teacher forcing): each row is labelled by "
                                        "what it predicts next. After it: %1")
                                         .arg(r->nextChoices));
    if (!r->running)
        showRanking();
}

void TranslationPanel::showRanking()
{
    const auto heads = core::rankAlignmentHeads(m_model->info(), m_result->translation);
    m_ranking->setRowCount(static_cast<int>(heads.size()));
    for (int i = 0; i < static_cast<int>(heads.size()); ++i) {
        const auto& h = heads[static_cast<std::size_t>(i)];
        auto* layer = new QTableWidgetItem(QString::number(h.layer + 1));
        layer->setData(Qt::UserRole, h.site);
        layer->setData(Qt::UserRole + 1, h.head);
        m_ranking->setItem(i, 0, layer);
        m_ranking->setItem(i, 1, new QTableWidgetItem(QString::number(h.head + 1)));
        m_ranking->setItem(i, 2, new QTableWidgetItem(QString::number(h.concentration, 'f', 2)));
        m_ranking->setItem(i, 3, new QTableWidgetItem(QString::number(h.monotonicity, 'f', 2)));
    }
}

void TranslationPanel::showFailure(const QString& message)
{
    m_state->setText(message);
}

void TranslationPanel::setRunning(bool running)
{
    m_running = running;
    m_translate->setText(running ? tr("Stop") : tr("Translate"));
}

void TranslationPanel::setPresentation(bool on)
{
    m_details->setVisible(!on);
    m_state->setVisible(!on);
}

QString TranslationPanel::source() const { return m_source->text(); }
QString TranslationPanel::target() const { return m_target->text(); }
void TranslationPanel::setSource(const QString& text) { m_source->setText(text); }
void TranslationPanel::setTarget(const QString& text) { m_target->setText(text); }
int TranslationPanel::site() const { return std::max(0, m_site->currentIndex()); }
int TranslationPanel::head() const { return m_head->currentIndex() - 1; }

void TranslationPanel::select(int site, int head)
{
    m_updating = true;
    m_site->setCurrentIndex(site);
    m_head->setCurrentIndex(head + 1);
    m_updating = false;
    if (m_result)
        m_alignment->setText(alignmentText(*m_result, this->site(), this->head()));
    emit selectionChanged(this->site(), this->head());
}

void TranslationPanel::attach(ComputeController* compute)
{
    connect(this, &TranslationPanel::translateRequested, compute,
            [this, compute](const QString& source, const QString& target, bool generate) {
                if (source.trimmed().isEmpty())
                    return; // the window says what to type
                setRunning(generate);
                compute->requestTranslation(source, target, generate);
            });
    connect(this, &TranslationPanel::stopRequested, compute, [compute] { compute->cancel(JobKind::Translation); });
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind != JobKind::Translation)
            return;
        setRunning(false);
        showFailure(f.cancelled() ? tr("Stopped.") : f.message);
    });
}

} // namespace attnscope::app
