// PredictionPanel: a combo box over the masks, the bars of the chosen one.
#include "compute/compute_controller.h"
#include "ui/prediction_panel.h"

#include "prediction_view.h"
#include "views/grid_builder.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>

namespace attnscope::app {

PredictionPanel::PredictionPanel(QWidget* parent)
    : QWidget(parent)
    , m_info(new QLabel(this))
    , m_which(new QComboBox(this))
    , m_view(new widgets::PredictionView(this))
    , m_temperature(new QDoubleSpinBox(this))
    , m_generateRow(new QWidget(this))
    , m_generateOne(new QPushButton(tr("Generate 1"), m_generateRow))
    , m_generateTen(new QPushButton(tr("Generate 10"), m_generateRow))
    , m_stop(new QPushButton(tr("Stop"), m_generateRow))
    , m_regenerate(new QPushButton(tr("Regenerate from here"), m_generateRow))
    , m_mode(new QComboBox(m_generateRow))
    , m_topK(new QSpinBox(m_generateRow))
    , m_topP(new QDoubleSpinBox(m_generateRow))
    , m_seed(new QSpinBox(m_generateRow))
    , m_special(new QCheckBox(tr("control tokens"), m_generateRow))
{
    // Generation, one token at a time: each is appended to the text, which grows through the key/value cache.
    m_mode->addItems({tr("greedy"), tr("sample")});
    m_mode->setToolTip(tr("Greedy: always the most probable token. Sample: drawn from the distribution at the "
                          "temperature, within top-k and top-p"));
    m_topK->setRange(0, 1000);
    m_topK->setValue(40);
    m_topK->setPrefix(tr("top-k "));
    m_topK->setSpecialValueText(tr("top-k off"));
    m_topP->setRange(0.01, 1.0);
    m_topP->setSingleStep(0.05);
    m_topP->setValue(0.95);
    m_topP->setPrefix(tr("top-p "));
    m_seed->setRange(0, 1'000'000);
    m_seed->setValue(1234);
    m_seed->setPrefix(tr("seed "));
    m_seed->setToolTip(tr("The same seed repeats a sampled run"));
    m_special->setToolTip(tr("Let generation write (and the bars show) the vocabulary's control tokens (<unk>, <eos>, [SEP], ...); off, "
                             "the likeliest other token is written instead"));
    m_stop->setEnabled(false);
    m_regenerate->setObjectName(QStringLiteral("predRegenerate"));
    m_regenerate->setToolTip(tr("Cut the text after the selected token (click a row of the grid) and generate as many "
                                "tokens again, up to 50, with the settings shown: another continuation from any "
                                "point. Ctrl+Z in the text box brings the cut text back."));
    m_regenerate->setEnabled(false);
    auto* gen = new QVBoxLayout(m_generateRow); // rows of controls, as many as the width needs (placeControls)
    gen->setContentsMargins(0, 0, 0, 0);
    // The row's width comes from the panel, never the other way round: placeControls wraps it when narrow.
    m_generateRow->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    placeControls();
    auto samplingShown = [this] {
        const bool sample = m_mode->currentIndex() == 1;
        m_topK->setEnabled(sample);
        m_topP->setEnabled(sample);
        m_seed->setEnabled(sample);
    };
    connect(m_mode, &QComboBox::currentIndexChanged, this, samplingShown);
    // The cut-offs are drawn on the bars: redraw when they change.
    connect(m_mode, &QComboBox::currentIndexChanged, this, [this] { showNext(); });
    connect(m_topK, &QSpinBox::valueChanged, this, [this] { showNext(); });
    connect(m_topP, &QDoubleSpinBox::valueChanged, this, [this] { showNext(); });
    connect(m_special, &QCheckBox::toggled, this, [this] { showNext(); }); // the bars show what Generate may write
    samplingShown();
    connect(m_generateOne, &QPushButton::clicked, this, [this] { emit generateRequested(1); });
    connect(m_generateTen, &QPushButton::clicked, this, [this] { emit generateRequested(10); });
    connect(m_stop, &QPushButton::clicked, this, &PredictionPanel::stopRequested);
    connect(m_regenerate, &QPushButton::clicked, this, [this] {
        if (m_next)
            emit regenerateRequested(m_next->position);
    });
    m_generateRow->hide();
    m_temperature->setRange(0.05, 5.0);
    m_temperature->setSingleStep(0.1);
    m_temperature->setValue(1.0);
    m_temperature->setDecimals(2);
    m_temperature->setPrefix(tr("temperature "));
    m_temperature->setToolTip(tr("Divide the logits by this before the softmax: below 1 sharpens, above 1 flattens"));
    m_temperature->hide();
    connect(m_temperature, &QDoubleSpinBox::valueChanged, this, [this] { showNext(); });
    m_info->setWordWrap(true);
    m_which->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* top = new QHBoxLayout;
    top->addWidget(m_info, 1);
    top->addWidget(m_which);
    top->addWidget(m_temperature);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    m_body = new QBoxLayout(QBoxLayout::TopToBottom);
    m_body->addWidget(m_generateRow, 0, Qt::AlignTop);
    m_body->addWidget(m_view, 1);
    layout->addLayout(m_body, 1);
    connect(m_which, &QComboBox::currentIndexChanged, this, &PredictionPanel::show);
    setFills(nullptr);
}

void PredictionPanel::setModel(const core::ModelInfo& info, const QString& maskToken)
{
    m_fillsMasks = info.can.maskedTokens;
    m_predictsNext = info.can.nextTokenLoss;
    m_maskToken = maskToken;
    m_temperature->setVisible(m_predictsNext);
    m_generateRow->setVisible(m_predictsNext);
    m_next.reset();
    if (m_predictsNext)
        setNextToken(nullptr);
    else
        setFills(nullptr);
}

core::Sampling PredictionPanel::sampling() const
{
    core::Sampling s;
    s.greedy = m_mode->currentIndex() == 0;
    s.temperature = m_temperature->value();
    s.topK = m_topK->value();
    s.topP = m_topP->value();
    return s;
}

bool PredictionPanel::allowsControlTokens() const
{
    return m_special->isChecked();
}

quint64 PredictionPanel::seed() const
{
    return static_cast<quint64>(m_seed->value());
}

void PredictionPanel::setGenerating(bool generating)
{
    m_generateOne->setEnabled(!generating);
    m_generateTen->setEnabled(!generating);
    m_stop->setEnabled(generating);
    m_generating = generating;
    updateRegenerate();
}

void PredictionPanel::setNextToken(NextTokenResultPtr next)
{
    m_next = std::move(next);
    updateRegenerate();
    m_which->hide();
    if (!m_next) {
        m_info->setText(tr("The model's next tokens after the selected query: click a row of the grid (the last token "
                           "without one)."));
        m_view->setPlaceholder(tr("Type some text"));
        m_view->setData(nullptr);
        return;
    }
    showNext();
}

void PredictionPanel::showNext()
{
    if (!m_next)
        return;
    const auto& tokens = m_next->text->capture->tokens;
    const auto& tok = *m_next->text->model->tokenizer;
    // The bars are what Generate chooses from: control tokens (<unk>, <eos>) only with the box ticked, unless one is
    // the token that really follows. Their probabilities stay the model's own.
    const auto& controls = m_next->text->model->controlIds;
    const bool hideControls = !allowsControlTokens() && !m_next->text->model->info().can.audio; // (speech: its own rules)
    const auto d = core::distributionOf(m_next->logits, m_temperature->value(),
                                        10 + (hideControls ? static_cast<int>(controls.size()) : 0), m_next->actual);
    std::vector<core::TokenPrediction> shown;
    for (const auto& p : d.top)
        if (shown.size() < 10 && (!hideControls || p.id == m_next->actual ||
                                  std::find(controls.begin(), controls.end(), p.id) == controls.end()))
            shown.push_back(p);
    auto bars = std::make_shared<widgets::PredictionData>();
    const QString after = tokenLabel(tokens[static_cast<std::size_t>(m_next->position)]);
    bars->title = tr("after “%1” (token %2)").arg(after).arg(m_next->position + 1);
    for (const auto& p : shown) {
        if (p.id == m_next->actual)
            bars->marked = static_cast<int>(bars->tokens.size());
        bars->tokens << tokenLabel(core::Token{p.id, tok.pieceOf(p.id), 0, 0});
        bars->probabilities.push_back(p.probability);
    }
    if (m_next->actual >= 0 && bars->marked < 0) { // the token in the text, outside the top 10: shown with its rank
        bars->marked = static_cast<int>(bars->tokens.size());
        bars->tokens << tokenLabel(core::Token{m_next->actual, tok.pieceOf(m_next->actual), 0, 0});
        bars->markedRank = d.actualRank + 1; // said beside its value: the name column stays narrow
        bars->probabilities.push_back(d.actualProbability);
    }
    m_info->setText(m_next->actual >= 0
                        ? tr("The model's most likely next tokens; orange: the token that follows in the text. Click a grid "
                             "row for another position.")
                        : tr("The model's most likely next tokens after the end of the text. Click a grid row for another "
                             "position."));
    // Sampling's cut-offs as pale bars: past top-k, or after the tokens whose probability reaches top-p.
    const auto sampling = this->sampling();
    if (!sampling.greedy) {
        double before = 0;
        for (std::size_t i = 0; i < shown.size(); ++i) {
            const bool outK = sampling.topK > 0 && static_cast<int>(i) >= sampling.topK;
            bars->excluded.push_back(outK || (i > 0 && before >= sampling.topP));
            before += shown[i].probability;
        }
    }
    m_view->setData(bars);
}

void PredictionPanel::setMessage(const QString& message)
{
    m_info->setText(message);
}

void PredictionPanel::setFills(MaskedFillResultPtr fills)
{
    m_fills = std::move(fills);
    const QSignalBlocker block(m_which);
    m_which->clear();
    if (!m_fillsMasks) {
        m_info->setText(tr("Predictions need a model read with its output layer: GPT-2, a Llama-family model (next "
                           "tokens) or an encoder with its masked-language-model head such as builtin:bert-wikitext2 "
                           "(masked tokens)."));
        m_which->hide();
        m_view->setPlaceholder(QString());
        m_view->setData(nullptr);
        return;
    }
    const QString how = tr("Double-click a word in the text box to replace it by %1 (Ctrl+Z restores it), or type %1.")
                            .arg(m_maskToken);
    if (!m_fills || m_fills->fills.empty()) {
        m_info->setText(how);
        m_which->hide();
        m_view->setPlaceholder(tr("No %1 in the text").arg(m_maskToken));
        m_view->setData(nullptr);
        return;
    }
    const auto& tokens = m_fills->text->capture->tokens;
    for (const auto& f : m_fills->fills) {
        // The mask with a word of context on each side, so several masks can be told apart.
        const auto at = static_cast<std::size_t>(f.position);
        QString context = m_maskToken;
        if (at > 0)
            context = tokenLabel(tokens[at - 1]) + QLatin1Char(' ') + context;
        if (at + 1 < tokens.size())
            context += QLatin1Char(' ') + tokenLabel(tokens[at + 1]);
        m_which->addItem(tr("token %1: %2").arg(f.position + 1).arg(context));
    }
    m_which->setVisible(m_fills->fills.size() > 1);
    m_info->setText(tr("The model's top %1 fillers for %2. ").arg(m_fills->fills.front().top.size()).arg(m_maskToken) + how);
    show(0);
}

void PredictionPanel::show(int index)
{
    if (!m_fills || index < 0 || index >= static_cast<int>(m_fills->fills.size()))
        return;
    const auto& f = m_fills->fills[static_cast<std::size_t>(index)];
    auto d = std::make_shared<widgets::PredictionData>();
    d->title = tr("%1 at token %2").arg(m_maskToken).arg(f.position + 1);
    d->tokens = m_fills->labels[static_cast<std::size_t>(index)];
    for (const auto& p : f.top)
        d->probabilities.push_back(p.probability);
    m_view->setData(d);
}

void PredictionPanel::updateRegenerate()
{
    m_regenerate->setEnabled(!m_generating && m_next &&
                             m_next->position + 1 < static_cast<int>(m_next->text->capture->tokens.size()));
}

void PredictionPanel::placeControls()
{
    // A flow: the controls in order, as many to a row as the panel's width holds, each at its natural width (a narrow
    // panel, presentation mode's side panel, cut "Regenerate from here" and the sampling menu before).
    std::vector<QWidget*> order;
    for (QWidget* w : {static_cast<QWidget*>(m_generateOne), static_cast<QWidget*>(m_generateTen),
                       static_cast<QWidget*>(m_stop), static_cast<QWidget*>(m_regenerate), static_cast<QWidget*>(m_mode),
                       static_cast<QWidget*>(m_topK), static_cast<QWidget*>(m_topP), static_cast<QWidget*>(m_seed),
                       static_cast<QWidget*>(m_special)})
        if (!m_presentation || w == m_generateOne || w == m_generateTen || w == m_stop || w == m_regenerate)
            order.push_back(w);
    auto* rows = static_cast<QVBoxLayout*>(m_generateRow->layout());
    const int spacing = std::max(0, rows->spacing());
    // A wide, short tab (below the grid) puts the controls in a column beside the bars, which get the height for
    // all ten of them (and need not span the whole window); a narrow panel stacks them above the bars.
    const bool beside = !m_presentation && width() >= 800 && width() >= 2 * height();
    if (m_body && (m_body->direction() == QBoxLayout::LeftToRight) != beside) { // (made in the constructor)
        m_body->setDirection(beside ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom);
        m_body->setStretch(0, beside ? 2 : 0);
        m_body->setStretch(1, beside ? 3 : 1);
        m_body->invalidate();
    }
    const int room = width() <= 0 ? std::numeric_limits<int>::max() : beside ? width() * 2 / 5 - 12 : width() - 12;
    std::vector<int> rowOf;
    int row = 0, used = 0;
    for (QWidget* w : order) {
        const int wide = w->sizeHint().width();
        if (used > 0 && used + wide > room) {
            ++row;
            used = 0;
        }
        rowOf.push_back(row);
        used += wide + spacing;
    }
    if (rowOf == m_rowOf)
        return;
    m_rowOf = rowOf;
    while (QLayoutItem* item = rows->takeAt(0)) {
        if (QLayout* line = item->layout())
            while (QLayoutItem* inner = line->takeAt(0))
                delete inner; // the items, not the widgets
        delete item;
    }
    QHBoxLayout* line = nullptr;
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || rowOf[i] != rowOf[i - 1]) {
            if (line)
                line->addStretch(1);
            line = new QHBoxLayout;
            rows->addLayout(line);
        }
        line->addWidget(order[i]);
    }
    line->addStretch(1);
}

void PredictionPanel::setPresentation(bool on)
{
    m_presentation = on;
    for (QWidget* w : {static_cast<QWidget*>(m_mode), static_cast<QWidget*>(m_topK), static_cast<QWidget*>(m_topP),
                       static_cast<QWidget*>(m_seed), static_cast<QWidget*>(m_special)})
        w->setVisible(!on);
    m_info->setVisible(!on);
    m_temperature->setVisible(!on && m_predictsNext);
    m_rowOf.clear(); // placed anew with the controls that remain
    placeControls();
}

void PredictionPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    placeControls();
}

void PredictionPanel::attach(ComputeController* compute)
{
    connect(compute, &ComputeController::maskedFillsReady, this, &PredictionPanel::setFills);
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if ((f.kind == JobKind::MaskedFills || f.kind == JobKind::NextToken) && !f.cancelled())
            setMessage(f.message);
    });
}

} // namespace attnscope::app
