// TranslationPanel: the controls and readouts of an encoder-decoder model's translation.
#include "compute/compute_controller.h"
#include "ui/translation_panel.h"

#include "analysis/token_predictions.h"
#include "views/grid_builder.h"

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
        if (!m_updating)
            emit selectionChanged(site(), head(), siteAverage());
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
    for (int s = 0; s < info.siteCount(); ++s) {
        m_site->addItem(siteTitle(info, s));
        if (info.site(s).kind == core::SiteKind::Cross)
            lastCross = s;
    }
    m_site->addItem(siteTitle(info, lastCross, true)); // every decoder layer's cross-attention, averaged
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

namespace {
// What the model wrote after the given tokens, as text (the end token left out).
QString writtenText(const TextResult& r)
{
    const auto& tokens = r.capture->tokens;
    const auto& info = r.capture->model;
    const std::int32_t end = info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
    std::string text;
    for (std::size_t i = 1; i < tokens.size(); ++i) // after the decoder start
        if (tokens[i].id != end)
            text += r.model->targetTokenizer->textOf(tokens[i].id);
    return QString::fromStdString(text).trimmed();
}

// The five likeliest tokens after the target's last: "2026 (99.9%), 1926 (0.1%), …".
QString nextChoices(const TextResult& r)
{
    const auto& logits = r.capture->lastLogits;
    if (logits.empty())
        return {};
    QStringList choices;
    for (const auto& p : core::distributionOf(std::span<const float>(logits), 1.0, 5).top)
        choices << QStringLiteral("%1 (%2%)").arg(QString::fromStdString(r.model->targetTokenizer->pieceOf(p.id)))
                       .arg(100.0 * p.probability, 0, 'f', 1);
    return choices.join(QStringLiteral(", "));
}
} // namespace

void TranslationPanel::showResult(const TextResultPtr& r)
{
    m_result = r;
    const QString written = writtenText(*r);
    if (r->written > 0 && !m_target->hasFocus())
        m_target->setText(written); // what the model wrote, ready to edit
    const bool finished = r->written > 0 && core::finishedWriting(*r->capture);
    m_state->setText(r->running ? tr("Writing… %1 tokens so far").arg(r->written)
                     : r->written > 0 ? tr("The model wrote %1 tokens%2.")
                                            .arg(r->written)
                                            .arg(finished ? tr(" and ended the sentence") : QString())
                                      : tr("The model read the typed target (teacher forcing): each row is labelled by "
                                           "what it predicts next. After it: %1")
                                            .arg(nextChoices(*r)));
    if (!r->running)
        showRanking();
}

void TranslationPanel::showAlignment(const widgets::GridData* grid)
{
    const bool cross = m_model && site() < m_model->info().siteCount() &&
                       m_model->info().site(site()).kind == core::SiteKind::Cross;
    if (!grid || !cross) {
        m_alignment->clear();
        return;
    }
    QStringList parts;
    constexpr int kShown = 24; // a sentence's worth; the grid shows the rest
    for (int i = 0; i < grid->rows; ++i) {
        if (i == kShown) {
            parts << tr("… (%1 more)").arg(grid->rows - kShown);
            break;
        }
        int best = 0;
        for (int j = 1; j < grid->cols; ++j)
            if (grid->at(i, j) > grid->at(i, best))
                best = j;
        QString writes = grid->rowLabels.value(i);
        if (writes.startsWith(QStringLiteral("→ ")))
            writes = writes.mid(2);
        parts << QStringLiteral("%1 ← %2").arg(writes, grid->colLabels.value(best));
    }
    m_alignment->setText(parts.join(QStringLiteral("   ·   ")));
}

void TranslationPanel::showRanking()
{
    const auto& heads = m_result->alignmentHeads;
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
bool TranslationPanel::siteAverage() const
{
    return m_model && m_site->currentIndex() == m_model->info().siteCount();
}

int TranslationPanel::site() const
{
    // The averaged entry stands for the last decoder layer's cross-attention and every one like it.
    return siteAverage() ? m_site->currentIndex() - 1 : std::max(0, m_site->currentIndex());
}

int TranslationPanel::head() const { return m_head->currentIndex() - 1; }

void TranslationPanel::select(int site, int head)
{
    m_updating = true;
    m_site->setCurrentIndex(site);
    m_head->setCurrentIndex(head + 1);
    m_updating = false;
    emit selectionChanged(this->site(), this->head(), siteAverage());
}

void TranslationPanel::showSelection(int site, int head)
{
    m_updating = true;
    m_site->setCurrentIndex(site);
    m_head->setCurrentIndex(head + 1);
    m_updating = false;
}

void TranslationPanel::attach(ComputeController* compute)
{
    // The window runs what the panel asks for (the target is its text); the panel shows the state and stops it.
    connect(this, &TranslationPanel::translateRequested, this,
            [this](const QString& source, const QString&, bool generate) { setRunning(generate && !source.trimmed().isEmpty()); });
    connect(this, &TranslationPanel::stopRequested, compute, [compute] { compute->cancel(JobKind::Text); });
    connect(compute, &ComputeController::jobFailed, this, [this, compute](const JobFailure& f) {
        if (f.kind != JobKind::Text || !compute->model() || compute->model()->info().typedReadStream() < 0)
            return;
        setRunning(false);
        showFailure(f.cancelled() ? tr("Stopped.") : f.message);
    });
}

} // namespace attnscope::app
