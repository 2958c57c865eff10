// HeadsPanel implementation.
#include "ui/heads_panel.h"

#include "head_overview_view.h"
#include "ui/key_router.h"

#include <QCheckBox>
#include <algorithm>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

namespace attnscope::app {

namespace {
// The layer box of a model with several attention sites per layer (an encoder-decoder's encoder, decoder and cross
// sites): it steps sites, so it shows each one's name ("decoder layer 2 cross") where a number would count sites.
class SiteSpinBox final : public QSpinBox {
public:
    using QSpinBox::QSpinBox;
    void setNames(QStringList names)
    {
        m_names = std::move(names);
        setMinimumWidth(m_names.isEmpty() ? 0 : fontMetrics().horizontalAdvance(QStringLiteral("decoder layer 12 cross")) + 40);
        lineEdit()->setText(textFromValue(value()));
    }

protected:
    QString textFromValue(int value) const override
    {
        return value >= 1 && value <= m_names.size() ? m_names[value - 1] : QSpinBox::textFromValue(value);
    }
    int valueFromText(const QString& text) const override
    {
        const int named = static_cast<int>(m_names.indexOf(text));
        return named >= 0 ? named + 1 : QSpinBox::valueFromText(text);
    }
    QValidator::State validate(QString& text, int& pos) const override
    {
        return m_names.contains(text) ? QValidator::Acceptable : QSpinBox::validate(text, pos);
    }

private:
    QStringList m_names;
};
} // namespace

HeadsPanel::HeadsPanel(QWidget* parent)
    : QWidget(parent)
    , m_layer(new SiteSpinBox(this))
    , m_head(new QSpinBox(this))
    , m_segment(new QSpinBox(this))
    , m_average(new QCheckBox(tr("Average of the layer's heads (A)"), this))
    , m_groups(new QLabel(this))
    , m_overview(new widgets::HeadOverviewView(this))
    , m_headLabel(new QLabel(tr("Head"), this))
{
    for (QSpinBox* sb : {m_layer, m_head, m_segment})
        sb->setRange(1, 1);
    markAsStepper(m_layer);
    markAsStepper(m_head);
    m_layer->setToolTip(tr("Up / Down: previous / next layer (as everywhere in the window)"));
    m_head->setToolTip(tr("Left / Right: previous / next head (as everywhere in the window)"));
    m_segment->setToolTip(tr("Texts longer than a segment run in several segments with memory"));
    m_groups->setWordWrap(true);
    m_groups->hide();
    m_overview->setObjectName(QStringLiteral("headOverview"));

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Layer"), this));
    top->addWidget(m_layer, 1);
    top->addWidget(m_headLabel);
    top->addWidget(m_head, 1);
    auto* form = new QFormLayout;
    form->addRow(top);
    form->addRow(m_average);
    form->addRow(tr("Segment"), m_segment);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(form);
    layout->addWidget(m_groups);
    layout->addWidget(m_overview, 1);

    auto edited = [this] {
        if (!m_updating)
            emit selectionEdited(m_layer->value() - 1, m_head->value() - 1, m_average->isChecked());
    };
    connect(m_layer, &QSpinBox::valueChanged, this, edited);
    connect(m_head, &QSpinBox::valueChanged, this, edited);
    connect(m_average, &QCheckBox::toggled, this, edited);
    connect(m_segment, &QSpinBox::valueChanged, this, [this](int v) {
        if (!m_updating)
            emit segmentChosen(v - 1);
    });
    connect(m_overview, &widgets::HeadOverviewView::headClicked, this, [this](int layer, int head, bool additive) {
        if (layer >= 0 && layer < static_cast<int>(m_sites.size()) && head >= m_sites[static_cast<std::size_t>(layer)].heads)
            return; // a blank cell: this layer has fewer heads than the widest
        std::vector<int> heads{head};
        if (additive && layer == m_shown.site && !m_shown.heads.empty()) {
            heads = m_shown.heads;
            if (const auto it = std::find(heads.begin(), heads.end(), head); it != heads.end()) {
                if (heads.size() > 1)
                    heads.erase(it);
            } else {
                heads.push_back(head);
            }
            std::sort(heads.begin(), heads.end());
        }
        emit headsChosen(layer, heads);
    });
}

void HeadsPanel::setModelShape(const core::ModelInfo& info)
{
    const QSignalBlocker a(m_layer), b(m_head);
    m_layer->setRange(1, std::max(1, info.siteCount()));
    QStringList names; // a model of one stream steps its layers by number
    for (int s = 0; info.streams.size() > 1 && s < info.siteCount(); ++s)
        names << QString::fromStdString(info.site(s).label());
    static_cast<SiteSpinBox*>(m_layer)->setNames(names);
    // Grouped-query attention of a one-stream model: say which query heads share a key/value head (the overview
    // brackets them too).
    const int heads = info.heads, kvHeads = info.readsOneText() ? info.kvHeads : 0;
    const bool grouped = kvHeads > 0 && kvHeads < heads;
    if (grouped) {
        const int g = heads / kvHeads;
        m_groups->setText(tr("%1 query heads share %2 key/value heads: heads %3 use kv head 1, and so on (groups of %4)")
                              .arg(heads)
                              .arg(kvHeads)
                              .arg(g == 1 ? QStringLiteral("1") : QStringLiteral("1–%1").arg(g))
                              .arg(g));
    }
    m_sites.clear();
    for (const auto& site : info.sites) {
        const auto& kind = core::mixerRow(site.mixer);
        const QString noun = QString::fromUtf8(kind.headNoun);
        m_sites.push_back({site.heads > 0 ? site.heads : heads, noun.left(1).toUpper() + noun.mid(1),
                           grouped && site.mixer == core::Mixer::Softmax});
    }
    showSiteShape(m_shown.site);
}

// The head box's range and name, and the grouped-query note, for the site on screen.
void HeadsPanel::showSiteShape(int site)
{
    if (m_sites.empty())
        return;
    const SiteShape& shape = m_sites[static_cast<std::size_t>(std::clamp(site, 0, static_cast<int>(m_sites.size()) - 1))];
    const QSignalBlocker b(m_head);
    m_head->setRange(1, std::max(1, shape.heads));
    m_headLabel->setText(shape.noun);
    m_groups->setVisible(shape.grouped);
}

void HeadsPanel::setSelection(const ViewSelection& s)
{
    m_shown = s;
    m_updating = true;
    showSiteShape(s.site);
    m_layer->setValue(s.site + 1);
    if (!s.heads.empty())
        m_head->setValue(s.heads.front() + 1);
    m_average->setChecked(s.heads.empty());
    m_head->setEnabled(s.heads.size() <= 1);
    m_overview->setSelection(s.site, s.heads);
    m_updating = false;
}

void HeadsPanel::setSegments(int count, int shown)
{
    m_updating = true;
    m_segment->setRange(1, std::max(1, count));
    m_segment->setValue(shown + 1);
    m_segment->setEnabled(count > 1);
    m_updating = false;
}

void HeadsPanel::setThumbnails(widgets::HeadThumbnailsPtr thumbnails)
{
    m_overview->setThumbnails(std::move(thumbnails));
}

} // namespace attnscope::app
