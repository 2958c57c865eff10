// DisplayPanel implementation. The colour box always names the map the grid draws: raw scores switch it to the
// diverging map (and back to the previous one), and the user may still pick any map.
#include "analysis/relpos_scan.h"
#include "ui/display_panel.h"

#include "util/error.h"

#include <QCheckBox>
#include <QLabel>
#include <QLineEdit>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QVBoxLayout>
#include <QPushButton>
#include <algorithm>

namespace attnscope::app {

DisplayPanel::DisplayPanel(QWidget* parent)
    : QWidget(parent)
    , m_termsLabel(new QLabel(tr("Terms"), this))
    , m_split(new QLineEdit(this))
    , m_splitLabel(new QLabel(tr("Band split"), this))
    , m_raw(new QCheckBox(tr("Raw scores (before softmax)"), this))
    , m_uncapped(new QCheckBox(tr("Before the soft cap"), this))
    , m_heuristic(new QCheckBox(tr("Heuristic map (TransformerLens)"), this))
    , m_colourMap(new QComboBox(this))
    , m_normalisation(new QComboBox(this))
    , m_values(new QCheckBox(tr("Values in cells"), this))
    , m_highlight(new QCheckBox(tr("Highlight top"), this))
    , m_topPercent(new QDoubleSpinBox(this))
    , m_scope(new QComboBox(this))
{
    auto* form = new QFormLayout(this);
    // A narrow left column (the grid gets the width) puts a long row's label above its field.
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    auto* terms = new QWidget(this);
    auto* grid = new QGridLayout(terms);
    grid->setContentsMargins(0, 0, 0, 0);
    const char* names[4] = {"(a) q·k", "(b) q·R", "(c) u·k", "(d) v·R"};
    const char* tips[4] = {"content: query against key", "content-dependent position: query against relative position",
                           "global content bias u against key", "global position bias v against relative position"};
    for (int t = 0; t < 4; ++t) {
        m_termBox[t] = new QCheckBox(QString::fromUtf8(names[t]), terms);
        m_termBox[t]->setChecked(true);
        m_termBox[t]->setProperty("xlTip", tr("Term %1 of Transformer-XL's score (paper Sec. 3.3)").arg(QString::fromUtf8(tips[t])));
        m_termBox[t]->setProperty("termTip", m_termBox[t]->property("xlTip"));
        m_termBox[t]->setToolTip(m_termBox[t]->property("termTip").toString());
        grid->addWidget(m_termBox[t], t / 2, t % 2);
        connect(m_termBox[t], &QCheckBox::toggled, this, &DisplayPanel::emitTerms);
    }
    connect(m_raw, &QCheckBox::toggled, this, [this](bool raw) {
        // Raw scores are signed: show them in the diverging map, and go back to the previous map after.
        const QSignalBlocker block(m_colourMap);
        if (raw) {
            m_beforeRaw = widgets::colourMapFromName(m_colourMap->currentText());
            m_colourMap->setCurrentText(widgets::colourMapName(widgets::ColourMap::RedBlue));
        } else if (widgets::isDiverging(widgets::colourMapFromName(m_colourMap->currentText()))) {
            m_colourMap->setCurrentText(widgets::colourMapName(m_beforeRaw));
        }
        m_uncapped->setEnabled(raw);
        emit settingsChanged(settings());
        emitTerms();
    });
    m_colourMap->addItems(widgets::colourMapNames());
    m_normalisation->addItems({tr("0 .. 1"), tr("0 .. grid maximum"), tr("log scale")});
    m_values->setChecked(true);
    m_highlight->setChecked(true);
    m_highlight->setToolTip(tr("Outline, in each row, the keys with the top share of the row's attention (the paper's Fig. 6)"));
    m_topPercent->setRange(1, 100);
    m_topPercent->setDecimals(0);
    m_topPercent->setValue(20);
    m_topPercent->setSuffix(tr(" %"));
    m_scope->addItems({tr("in the memory"), tr("on all keys")});
    m_scope->setObjectName(QStringLiteral("highlightScope"));
    m_scope->setToolTip(tr("The paper's Fig. 6 marks memory tokens only; models without memory need \"on all keys\""));
    auto* resetZoom = new QPushButton(tr("Reset zoom"), this);

    form->addRow(m_termsLabel, terms);
    m_split->setObjectName(QStringLiteral("bandSplit"));
    m_split->setPlaceholderText(tr("three equal bands"));
    m_split->setToolTip(tr("Wavelengths (in tokens) where one band ends and the next begins, e.g. \"20, 400\"; empty: "
                           "three bands of equal size. High-frequency bands carry positional, low-frequency bands "
                           "semantic attention (Barbero et al. 2024)."));
    form->addRow(m_splitLabel, m_split);
    m_split->hide();
    m_splitLabel->hide();
    connect(m_split, &QLineEdit::editingFinished, this, &DisplayPanel::applyBandSplit);
    form->addRow(m_raw);
    m_uncapped->setObjectName(QStringLiteral("uncappedScores"));
    m_uncapped->setToolTip(tr("This model caps its attention scores (cap · tanh(score / cap)) before the softmax: show the "
                              "raw scores as the products make them, before that cap"));
    m_uncapped->setEnabled(false);
    m_uncapped->hide();
    form->addRow(m_uncapped);
    connect(m_uncapped, &QCheckBox::toggled, this, &DisplayPanel::emitTerms);
    m_heuristic->setObjectName(QStringLiteral("heuristicMap"));
    m_heuristic->setToolTip(tr("Delta-rule layers: the map without the rule's erasure along each key, as TransformerLens "
                               "documents it. An approximation: it does not reconstruct the layer's output"));
    m_heuristic->hide();
    form->addRow(m_heuristic);
    connect(m_heuristic, &QCheckBox::toggled, this, &DisplayPanel::emitTerms);
    m_words = new QCheckBox(tr("Whole words"), this);
    m_words->setObjectName(QStringLiteral("wholeWords"));
    m_words->setToolTip(tr("Merge the subword pieces of a word: attention to a word is summed over its pieces, "
                           "attention from a word averaged over them (Clark et al. 2019)"));
    m_noSpecial = new QCheckBox(tr("Hide special tokens"), this);
    m_noSpecial->setObjectName(QStringLiteral("hideSpecial"));
    m_noSpecial->setToolTip(tr("Leave out [CLS], [SEP], <s>, BOS and the like, each row renormalised over the rest: "
                               "[SEP] often collects most of the attention (Clark et al. 2019)"));
    // One above the other: side by side they are wider than the narrow left column (the grid's width).
    auto* regroup = new QVBoxLayout;
    regroup->addWidget(m_words);
    regroup->addWidget(m_noSpecial);
    form->insertRow(0, regroup); // first: what every subword model's reader wants, in view in a short dock
    m_surprisal = new QCheckBox(tr("Surprisal"), this);
    m_surprisal->setObjectName(QStringLiteral("surprisal"));
    m_surprisal->setToolTip(tr("Tint each word of the Text View by how unexpected it was to the model (-log2 p of the "
                               "token given the ones before, in bits; hover a word for its value) and show the text's "
                               "perplexity beside its token count"));
    form->insertRow(1, m_surprisal); // its own row: beside the other two it is cut off in a narrow dock
    connect(m_surprisal, &QCheckBox::toggled, this, &DisplayPanel::surprisalToggled);
    auto regroupEdited = [this] { emit regroupChanged(m_words->isChecked(), m_noSpecial->isChecked()); };
    connect(m_words, &QCheckBox::toggled, this, regroupEdited);
    connect(m_noSpecial, &QCheckBox::toggled, this, regroupEdited);
    form->addRow(tr("Colours"), m_colourMap);
    form->addRow(tr("Scale"), m_normalisation);
    // Raw scores are drawn from their own signed range in the diverging map: no scale to choose, so no box for it.
    connect(m_raw, &QCheckBox::toggled, this, [this, form](bool raw) { form->setRowVisible(m_normalisation, !raw); });
    form->addRow(m_values);
    auto* hl = new QHBoxLayout;
    hl->addWidget(m_highlight);
    hl->addWidget(m_topPercent);
    form->addRow(hl);
    form->addRow(tr("Highlight"), m_scope);
    form->addRow(resetZoom);

    auto settingsEdited = [this] { emit settingsChanged(settings()); };
    connect(m_colourMap, &QComboBox::currentTextChanged, this, settingsEdited);
    connect(m_normalisation, &QComboBox::currentIndexChanged, this, settingsEdited);
    connect(m_values, &QCheckBox::toggled, this, settingsEdited);
    connect(m_highlight, &QCheckBox::toggled, this, settingsEdited);
    auto highlightEdited = [this] {
        emit highlightChanged(m_topPercent->value() / 100.0,
                              m_scope->currentIndex() == 0 ? HighlightScope::Memory : HighlightScope::AllKeys);
    };
    connect(m_topPercent, &QDoubleSpinBox::valueChanged, this, highlightEdited);
    connect(m_scope, &QComboBox::currentIndexChanged, this, highlightEdited);
    connect(resetZoom, &QPushButton::clicked, this, &DisplayPanel::resetZoom);
}

void DisplayPanel::emitTerms()
{
    emit termsChanged(terms());
}

core::TermSelection DisplayPanel::terms() const
{
    core::TermSelection t;
    t.a = m_termBox[0]->isChecked();
    t.b = m_termBox[1]->isChecked();
    t.c = m_termBox[2]->isChecked();
    t.d = m_termBox[3]->isChecked();
    t.raw = m_raw->isChecked();
    t.uncapped = t.raw && !m_uncapped->isHidden() && m_uncapped->isChecked();
    t.heuristic = !m_heuristic->isHidden() && m_heuristic->isChecked();
    return t;
}

void DisplayPanel::setModel(const core::ModelInfo& model)
{
    // The heuristic map's box only where some layer has one (a delta rule).
    const bool heuristic = std::any_of(model.sites.begin(), model.sites.end(),
                                       [](const core::AttentionSite& s) { return core::mixerRow(s.mixer).heuristic; });
    m_heuristic->setVisible(heuristic);
    if (!heuristic) {
        const QSignalBlocker block(m_heuristic);
        m_heuristic->setChecked(false);
    }
    const bool predicts = model.can.causal && model.can.nextTokenLoss;
    m_surprisal->setEnabled(predicts);
    if (!predicts) {
        m_surprisal->setChecked(false);
        m_surprisal->setToolTip(tr("%1 predicts no next token here: no surprisal")
                                    .arg(QString::fromUtf8(core::familyName(model.family))));
    }
    m_uncapped->setVisible(model.softCapsScores());
    const bool relative = model.hasRelativeTerms;
    m_frequencies = model.rotaryFrequencies;
    const bool rotary = !m_frequencies.empty();
    m_bands = core::defaultBands(model);
    const bool fixed = model.fixedTerms.has_value(); // DeepSeek's rotary and content terms: no split to choose
    m_split->setVisible(rotary && !fixed);
    m_splitLabel->setVisible(rotary && !fixed);
    m_split->clear();
    m_termsLabel->setText(rotary && !fixed ? tr("Bands") : tr("Terms"));
    // Shown only where the score splits: Transformer-XL's terms, or rotary frequency bands.
    m_termsLabel->setVisible(rotary || relative);
    if (rotary) {
        setTermsAvailable(true, {});
        showBands();
    } else {
        const char* names[4] = {"(a) q·k", "(b) q·R", "(c) u·k", "(d) v·R"};
        for (int t = 0; t < 4; ++t) {
            m_termBox[t]->setText(QString::fromUtf8(names[t]));
            m_termBox[t]->setProperty("termTip", m_termBox[t]->property("xlTip"));
            m_termBox[t]->setVisible(relative);
        }
        const QString why = relative ? QString()
                                     : tr("%1 models have no relative score terms: their attention is one softmax of q·k, "
                                          "so there is nothing to split (term toggles need Transformer-XL; Llama-family "
                                          "models split into rotary frequency bands)")
                                           .arg(QString::fromUtf8(core::familyName(model.family)));
        setTermsAvailable(relative, why);
    }
    setTerms(core::TermSelection{});
}

void DisplayPanel::showBands()
{
    const int n = m_bands->count();
    for (int t = 0; t < 4; ++t) {
        m_termBox[t]->setVisible(t < n);
        if (t >= n) {
            const QSignalBlocker block(m_termBox[t]);
            m_termBox[t]->setChecked(false); // no such band
            continue;
        }
        m_termBox[t]->setText(tr("(%1) %2").arg(t + 1).arg(QString::fromStdString(m_bands->shortName(t))));
        m_termBox[t]->setProperty("termTip", m_bands->fixedTerms()
                                                 ? tr("%1: the softmax of the chosen terms' sum")
                                                       .arg(QString::fromStdString(m_bands->describe(t, m_frequencies)))
                                                 : tr("Rotary frequency %1: the softmax of the chosen bands' share of the score")
                                                       .arg(QString::fromStdString(m_bands->describe(t, m_frequencies))));
        m_termBox[t]->setToolTip(m_termBox[t]->property("termTip").toString());
    }
}

QString DisplayPanel::bandSplitText() const
{
    return m_bands ? m_split->text().trimmed() : QString();
}

void DisplayPanel::setBandSplitText(const QString& text)
{
    m_split->setText(text);
    applyBandSplit();
}

void DisplayPanel::applyBandSplit()
{
    if (!m_bands)
        return;
    std::vector<double> thresholds;
    bool ok = true;
    for (const QString& part : m_split->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const double v = part.trimmed().toDouble(&ok);
        if (!ok || v <= 0)
            break;
        thresholds.push_back(v);
    }
    std::optional<core::BandSplit> split;
    try {
        if (!ok)
            throw core::Error(core::ErrorCode::BadInput, "wavelengths are positive numbers separated by commas");
        std::sort(thresholds.begin(), thresholds.end());
        split = thresholds.empty() ? core::BandSplit::equal(static_cast<int>(m_frequencies.size()), 3)
                                   : core::BandSplit::byWavelength(m_frequencies, thresholds);
    } catch (const core::Error& e) {
        m_split->setToolTip(tr("Not used: %1").arg(QString::fromStdString(e.message())));
        m_split->setStyleSheet(QStringLiteral("color: #b00020"));
        return;
    }
    m_split->setStyleSheet({});
    if (split == m_bands)
        return;
    m_bands = split;
    showBands();
    setTerms(core::TermSelection{});
    emit bandsChanged(m_bands);
    emitTerms();
}

void DisplayPanel::setTermsAvailable(bool available, const QString& why)
{
    // Tooltips on every disabled box (a disabled parent's tooltip is not shown over its children).
    for (QCheckBox* b : m_termBox) {
        b->setEnabled(available);
        b->setToolTip(available ? b->property("termTip").toString() : why);
    }
    m_raw->setEnabled(available);
    m_raw->setToolTip(available ? tr("Show the chosen terms' sum before the softmax, in a diverging colour map") : why);
}

void DisplayPanel::setTerms(const core::TermSelection& t)
{
    const bool on[4] = {t.a, t.b, t.c, t.d};
    for (int i = 0; i < 4; ++i) {
        const QSignalBlocker block(m_termBox[i]);
        m_termBox[i]->setChecked(on[i] && (!m_bands || i < m_bands->count()));
    }
    {
        const QSignalBlocker block(m_uncapped);
        m_uncapped->setChecked(t.uncapped);
    }
    {
        const QSignalBlocker block(m_heuristic);
        m_heuristic->setChecked(t.heuristic);
    }
    if (m_raw->isChecked() != t.raw)
        m_raw->setChecked(t.raw); // switches the colour map along, and re-emits the (same) terms
}

void DisplayPanel::setHighlight(double fraction, HighlightScope scope)
{
    const QSignalBlocker a(m_topPercent), b(m_scope);
    m_topPercent->setValue(100.0 * fraction);
    m_scope->setCurrentIndex(scope == HighlightScope::Memory ? 0 : 1);
}

DisplaySettings DisplayPanel::settings() const
{
    return {widgets::colourMapFromName(m_colourMap->currentText()),
            static_cast<widgets::Normalisation>(m_normalisation->currentIndex()), m_values->isChecked(),
            m_highlight->isChecked()};
}

void DisplayPanel::setSettings(const DisplaySettings& s)
{
    {
        const QSignalBlocker a(m_colourMap), b(m_normalisation), c(m_values), d(m_highlight);
        m_colourMap->setCurrentText(widgets::colourMapName(s.colourMap));
        m_normalisation->setCurrentIndex(static_cast<int>(s.normalisation));
        m_values->setChecked(s.values);
        m_highlight->setChecked(s.highlight);
    }
    emit settingsChanged(settings());
}

void DisplayPanel::setRegroup(bool wholeWords, bool hideSpecial)
{
    const QSignalBlocker a(m_words), b(m_noSpecial);
    m_words->setChecked(wholeWords);
    m_noSpecial->setChecked(hideSpecial);
}

} // namespace attnscope::app
