// RelposPanel implementation.
#include "compute/compute_controller.h"
#include "analysis/relpos_scan.h"
#include "ui/relpos_panel.h"
#include "ui/window_layout.h"

#include "relpos_heatmap_view.h"
#include "views/relpos_builder.h"

#include <algorithm>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QScrollBar>
#include <QTableWidget>

namespace attnscope::app {

RelposPanel::RelposPanel(QWidget* parent)
    : QWidget(parent)
    , m_view(new widgets::RelposHeatmapView)
    , m_source(new QComboBox(this))
    , m_order(new QComboBox(this))
    , m_log(new QCheckBox(tr("Log scale"), this))
    , m_info(new QLabel(this))
    , m_table(new QTableWidget(this))
{
    m_view->setObjectName(QStringLiteral("relposHeatmap"));
    m_source->addItems({tr("Current text"), tr("Corpus scan")});
    m_order->addItems({tr("Rows by layer"), tr("Widest heads first (entropy)"), tr("Farthest-looking first (mean distance)")});
    m_info->setWordWrap(true);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Source"), this));
    controls->addWidget(m_source);
    controls->addWidget(m_order);
    controls->addWidget(m_log);
    controls->addWidget(m_info, 1);
    m_table->setColumnCount(7);
    // Two-line headers keep the columns narrow enough for all seven to show beside the heatmap.
    m_table->setHorizontalHeaderLabels({tr("head"), tr("entropy"), tr("mean\ndistance"), tr("mass\n< 5"), tr("mass\n< 50"),
                                        tr("first\nkey"), tr("sink\nrate")});
    m_table->horizontalHeaderItem(1)->setToolTip(tr("Entropy of the head's relative-distance profile (nats): wide heads score high"));
    m_table->horizontalHeaderItem(5)->setToolTip(tr("Mean attention on the first key a query sees (a chunk's first token), "
                                                    "over queries from the chunk's second token on"));
    m_table->horizontalHeaderItem(6)->setToolTip(tr("Share of those queries putting more than %1 on the first key "
                                                    "(attention sink, Gu et al. 2024)").arg(core::kSinkThreshold));
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSortingEnabled(true);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // Rows keep a readable height: with many heads the heatmap scrolls instead of squeezing its labels together.
    auto* scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(m_view);
    // Small minimums: the dock shares a tab group with the Text dock, whose height is the group's when it is in front.
    scroll->setMinimumHeight(40);
    m_table->setMinimumHeight(40);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(scroll);
    split->addWidget(m_table);
    split->setStretchFactor(0, 5);
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(split, 1);

    connect(m_source, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_order, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_log, &QCheckBox::toggled, this, [this] { refresh(); });
    connect(m_view, &widgets::RelposHeatmapView::headClicked, this, &RelposPanel::headSelected);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        const auto* item = m_table->item(row, 0);
        if (item)
            emit headSelected(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
    });
}

void RelposPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    broughtToFront();
}

void RelposPanel::broughtToFront()
{
    if (m_source->currentIndex() == 0 && !m_textProfile)
        refresh();
}

QString RelposPanel::infoText() const
{
    return m_info->text();
}

void RelposPanel::textChanged()
{
    m_textProfile.reset();
    m_textProfileAsked = false;
    if (m_source->currentIndex() == 0)
        refresh();
}

void RelposPanel::setTextProfile(ScanResultPtr profile)
{
    m_textProfile = std::move(profile);
    if (m_source->currentIndex() == 0)
        refresh();
}

void RelposPanel::setTextProfileError(const QString& message)
{
    m_textProfile.reset();
    if (m_source->currentIndex() == 0) {
        refresh();
        m_info->setText(tr("No profile of the current text: %1").arg(message));
    }
}

void RelposPanel::scanProgress(qint64 done, qint64 total)
{
    const double secs = std::max(1e-3, m_scanClock.elapsed() / 1000.0);
    const double rate = static_cast<double>(done) / secs;
    m_info->setText(tr("Scanning: %1 of about %2 tokens, %3 tokens/s, about %4 s left")
                        .arg(done)
                        .arg(total)
                        .arg(static_cast<int>(rate))
                        .arg(rate > 0 ? static_cast<int>(static_cast<double>(total - done) / rate) : 0));
}

void RelposPanel::setScan(ScanResultPtr scan, bool running)
{
    if (running && !m_running)
        m_scanClock.start();
    m_scan = std::move(scan);
    m_running = running;
    if (m_source->currentIndex() == 1)
        refresh();
}

void RelposPanel::clear()
{
    m_scan.reset();
    m_textProfile.reset();
    m_textProfileAsked = false;
    m_running = false;
    refresh();
}

int RelposPanel::rowOrder() const { return m_order->currentIndex(); }
bool RelposPanel::logScale() const { return m_log->isChecked(); }

void RelposPanel::setRowOrder(int order, bool logScale)
{
    m_order->setCurrentIndex(std::clamp(order, 0, m_order->count() - 1));
    m_log->setChecked(logScale);
}

bool RelposPanel::showsCorpus() const { return m_source->currentIndex() == 1; }

void RelposPanel::showCorpus()
{
    if (m_source->currentIndex() == 1)
        refresh();
    else
        m_source->setCurrentIndex(1);
}

void RelposPanel::setProfiles(const std::vector<std::string>& profiles)
{
    m_profiles = profiles;
    refresh();
}

void RelposPanel::setModel(const core::ModelInfo& info, const QString& name)
{
    m_modelName = name;
    m_relative = info.hasRelativeTerms;
    m_bands = core::defaultBands(info);
    m_extraTerm.clear();
}

void RelposPanel::setBands(const std::optional<core::BandSplit>& bands)
{
    if (bands == m_bands)
        return;
    m_bands = bands;
    m_textProfile.reset(); // the text's band profiles were for the old split
    m_textProfileAsked = false;
    refresh();
}

void RelposPanel::setTerms(const core::TermSelection& terms)
{
    const int count = m_bands ? m_bands->count() : 4;
    if (!terms.any() || terms.covers(count) || (!m_relative && !m_bands)) {
        m_extraTerm.clear();
        setProfiles({"full"});
        return;
    }
    const core::Profile p = m_bands ? core::Profile::ofBands(terms) : core::Profile::ofTerms(terms);
    const std::string key = p.key(), combination = key.substr(5); // after "term_" / "band_": "a+b", "1+2"
    if (combination.find('+') != std::string::npos && combination != m_extraTerm) {
        m_extraTerm = combination;
        m_textProfile.reset(); // needs the combination too
        m_textProfileAsked = false;
    }
    setProfiles({key});
}

void RelposPanel::refresh()
{
    ScanResultPtr r;
    QString source;
    if (m_source->currentIndex() == 0) {
        if (!m_textProfile && !m_textProfileAsked && WindowLayout::inFront(this)) {
            m_textProfileAsked = true;
            // Every term or band alone, and the combination the toggles show.
            std::string profiles;
            if (m_relative)
                profiles = "a,b,c,d";
            else if (m_bands)
                for (int b = 1; b <= m_bands->count(); ++b)
                    profiles += (b > 1 ? "," : "") + std::to_string(b);
            if (!m_extraTerm.empty() && !profiles.empty())
                profiles += "," + m_extraTerm;
            emit textProfileWanted(profiles, m_bands);
        }
        r = m_textProfile;
        source = tr("current text");
    } else {
        r = m_scan;
        source = m_scan && m_scan->metadata.count("text") ? QString::fromStdString(m_scan->metadata.at("text")) : tr("corpus");
    }
    m_current = r;
    if (!r) {
        // The view says what the info line says: a scan that runs is never called missing.
        const QString waiting = m_source->currentIndex() == 1
                                    ? (m_running ? tr("Scanning… the heatmap appears with the first part of the corpus")
                                                 : tr("No scan yet: Analysis > Scan Corpus…"))
                                    : tr("Computing the profile of the current text…");
        m_view->setPlaceholder(waiting);
        m_view->setData(nullptr);
        m_table->setRowCount(0);
        m_info->setText(waiting);
        return;
    }
    std::vector<std::string> shown;
    for (const auto& p : m_profiles)
        if (r->sums.count(p))
            shown.push_back(p);
    QString missing;
    if (shown.empty()) {
        shown.push_back("full");
        if (m_profiles.front() != "full")
            missing = tr("This scan has no %1 profile (scan again with term profiles); showing full attention. ")
                          .arg(profileTitle(m_profiles.front()));
    }
    const QString title = tr("%1 · %2 · %3 tokens%4")
                              .arg(m_modelName, source)
                              .arg(r->tokens)
                              .arg(m_running ? tr(" (scanning…)") : (r->partial ? tr(" (cancelled, partial)") : QString()));
    m_view->setData(relposFigure(*r, title, shown, static_cast<HeadOrder>(m_order->currentIndex()), m_log->isChecked()));
    const auto mode = r->metadata.find("mode");
    const QString how = mode == r->metadata.end() ? QString()
                        : mode->second == "chunks"  ? tr(", chunks of %1 tokens").arg(QString::fromStdString(r->metadata.at("segment_length")))
                        : mode->second == "sliding" ? tr(", chunks of %1 with the last %2 tokens carried")
                                                          .arg(QString::fromStdString(r->metadata.at("segment_length")),
                                                               QString::fromStdString(r->metadata.at("mem_len")))
                                                    : tr(", memory %1").arg(QString::fromStdString(r->metadata.at("mem_len")));
    m_info->setText(missing + tr("%1 tokens, distances 0..%2%3").arg(r->tokens).arg(r->distances - 1).arg(how));

    const auto summaries = core::summariseHeads(*r, "full");
    // Filled in one pass: with columns sized to their contents on every insertion (and updates on), a 32 x 32-head
    // model's 7,000 cells took minutes; the columns are sized once at the end.
    m_table->setUpdatesEnabled(false);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->setSortingEnabled(false);
    m_table->setRowCount(static_cast<int>(summaries.size()));
    for (int i = 0; i < static_cast<int>(summaries.size()); ++i) {
        const auto& s = summaries[static_cast<std::size_t>(i)];
        auto* head = new QTableWidgetItem(QStringLiteral("L%1 H%2").arg(s.layer + 1).arg(s.head + 1));
        head->setData(Qt::UserRole, s.layer);
        head->setData(Qt::UserRole + 1, s.head);
        m_table->setItem(i, 0, head);
        const double vals[6] = {s.entropy, s.meanDistance, s.massNear5, s.massNear50, s.firstKeyMass, s.sinkRate};
        for (int c = 0; c < 6; ++c) {
            auto* it = new QTableWidgetItem;
            if (c >= 4 && !r->hasSinks())
                it->setText(QStringLiteral("–")); // a result saved before sinks were counted
            else
                it->setData(Qt::DisplayRole, QString::number(vals[c], 'f', c == 1 ? 1 : 3).toDouble());
            m_table->setItem(i, c + 1, it);
        }
    }
    m_table->setSortingEnabled(true);
    // Every column in view (the sink columns are the last): the table takes the width its columns need.
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->setUpdatesEnabled(true);
    m_table->setMinimumWidth(m_table->horizontalHeader()->length() + m_table->verticalScrollBar()->sizeHint().width() +
                             2 * m_table->frameWidth());
}

void RelposPanel::attach(ComputeController* compute)
{
    connect(this, &RelposPanel::textProfileWanted, compute, &ComputeController::requestTextProfile);
    connect(compute, &ComputeController::textProfileReady, this, &RelposPanel::setTextProfile);
    connect(compute, &ComputeController::jobProgress, this, [this](JobKind kind, const QString&, qint64 done, qint64 total) {
        if (kind == JobKind::Scan)
            scanProgress(done, total);
    });
    connect(compute, &ComputeController::scanPartial, this, [this](ScanResultPtr r) { setScan(std::move(r), true); });
    connect(compute, &ComputeController::scanFinished, this, [this](ScanResultPtr r) { setScan(std::move(r), false); });
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind == JobKind::TextProfile)
            setTextProfileError(f.message);
        else if (f.kind == JobKind::Scan)
            setScan(nullptr, false);
    });
}

} // namespace attnscope::app
