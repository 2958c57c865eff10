// AtlasPanel implementation.
#include "compute/compute_controller.h"
#include "ui/atlas_panel.h"
#include "ui/window_layout.h"

#include "export/data_export.h"

#include "attention_grid_view.h"
#include "ui/file_dialogs.h"
#include "views/analysis_figures.h"

#include <QHBoxLayout>
#include <algorithm>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <qcustomplot.h>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>

namespace attnscope::app {

namespace {
// Column tooltips: how to read each number (figures.md, "Head atlas").
const char* columnTip(const std::string& key)
{
    if (key == "query_entropy") return "Mean entropy of a query's attention (nats): low = focused, high = spread out";
    if (key == "attended_distance") return "Mean distance (tokens) between a query and where its attention goes";
    if (key == "previous_token") return "Mean attention on the previous token: previous-token heads score near 1";
    if (key == "sink_rate") return "Share of queries putting more than 0.3 on the first key they see: sink heads score near 1";
    if (key == "first_key_mass") return "Mean attention on the first key a query sees";
    if (key == "profile_entropy") return "Entropy of the head's relative-distance profile (nats): the widest heads score high";
    if (key == "profile_span") return "Distances holding 90% of the relative-distance profile";
    if (key == "duplicate_token") return "Mean attention on earlier occurrences of the query's own token (current text)";
    if (key == "induction") return "Attention from a repeated token to the one that followed its first occurrence, "
                                   "on a random sequence repeated twice (TransformerLens' induction score)";
    if (key == "to_cls") return "Mean attention on the special token that starts the text ([CLS], <s>, BOS), current text (Clark et al. 2019)";
    if (key == "to_sep") return "Mean attention on the other special tokens ([SEP], </s>; a vision model's registers and distillation token), current text (Clark et al. 2019; Darcet et al. 2024)";
    if (key == "to_punct") return "Mean attention on punctuation tokens, current text (Clark et al. 2019)";
    if (key == "to_prev") return "Mean attention on the token just before the query, current text";
    if (key == "to_next") return "Mean attention on the token just after the query (encoders), current text";
    if (key == "text_entropy") return "Mean entropy of the head's rows over the current text (nats)";
    if (key == "to_high_norm") return "Mean attention on the tokens whose layer input is over four times the median token's norm (a vision model's picture: the artefact tokens registers absorb, Darcet et al. 2024)";
    if (key == "learned_sink") return "Mean share of a query's attention taken by the head's learned sink (gpt-oss), current text: the head attending to nothing";
    return "";
}
} // namespace

AtlasPanel::AtlasPanel(QWidget* parent)
    : QWidget(parent)
    , m_info(new QLabel(this))
    , m_table(new QTableWidget(this))
    , m_matrix(new widgets::AttentionGridView(this))
    , m_export(new QPushButton(tr("Export Table…"), this))
    , m_figure(new QPushButton(tr("Matrix as Figure…"), this))
    , m_byLayer(new QPushButton(tr("Token Kinds by Layer…"), this))
{
    m_byLayer->setToolTip(tr("Attention to [CLS], [SEP], punctuation, the previous and the next token, averaged over "
                             "each layer's heads (Clark et al. 2019, Fig. 2), as a figure"));
    m_byLayer->setEnabled(false);
    m_info->setWordWrap(true);
    m_table->setObjectName(QStringLiteral("atlasTable"));
    m_matrix->setObjectName(QStringLiteral("atlasMatrix"));
    const auto& cols = core::atlasColumns();
    m_table->setColumnCount(static_cast<int>(cols.size()) + 1);
    QStringList titles{tr("head")};
    for (const auto& c : cols)
        titles << QString::fromUtf8(c.title).replace(QLatin1Char(' '), QLatin1Char('\n'));
    m_table->setHorizontalHeaderLabels(titles);
    for (std::size_t c = 0; c < cols.size(); ++c)
        m_table->horizontalHeaderItem(static_cast<int>(c) + 1)->setToolTip(tr(columnTip(cols[c].key)));
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSortingEnabled(true);
    m_matrix->setShowValues(false);
    m_matrix->setShowHighlight(false);
    m_matrix->setColourMap(widgets::ColourMap::Magma);
    // The bottom tabs share one height: this one must not keep the Text tab tall.
    m_matrix->plot()->setMinimumHeight(60);
    m_table->setMinimumHeight(60);
    m_matrix->setPlaceholder(tr("The head similarity matrix appears with the atlas"));
    m_export->setEnabled(false);
    m_figure->setEnabled(false);

    auto* top = new QHBoxLayout;
    top->addWidget(m_info, 1);
    top->addWidget(m_export);
    top->addWidget(m_figure);
    top->addWidget(m_byLayer);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_table);
    split->addWidget(m_matrix);
    split->setStretchFactor(0, 3); // the table's columns need more of the width than the matrix
    split->setStretchFactor(1, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(top);
    layout->addWidget(split, 1);

    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (const auto* item = m_table->item(row, 0))
            emit headSelected(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
    });
    connect(m_matrix, &widgets::AttentionGridView::cellClicked, this, [this](int row, int, Qt::KeyboardModifiers) {
        if (!m_atlas || row < 0 || row >= static_cast<int>(m_atlas->order.size()))
            return;
        const int i = m_atlas->order[static_cast<std::size_t>(row)];
        emit headSelected(i / m_atlas->atlas.heads, i % m_atlas->atlas.heads);
    });
    connect(m_export, &QPushButton::clicked, this, [this] {
        const QString path = askDataPath(this, tr("Export Head Atlas"), QStringLiteral("head-atlas"), {"csv", "json"});
        if (path.isEmpty())
            return;
        if (const QString err = exportTable(path); !err.isEmpty())
            QMessageBox::warning(this, tr("Export failed"), err);
    });
    connect(m_byLayer, &QPushButton::clicked, this, [this] {
        if (!m_atlas)
            return;
        const auto& a = m_atlas->atlas;
        std::vector<core::TokenAttention> heads;
        for (const auto& r : a.rows)
            heads.push_back(r.tokens);
        emit figureWanted(std::make_shared<const PaperFigure>(
            tokenKindsFigure(core::tokenAttentionByLayer(heads, a.layers), m_modelName)));
    });
    connect(m_figure, &QPushButton::clicked, this, [this] {
        if (!m_atlas || m_atlas->order.empty())
            return;
        auto f = std::make_shared<PaperFigure>();
        f->number = 0;
        f->name = tr("Head similarity");
        auto grid = std::make_shared<widgets::GridData>(*m_matrix->data());
        grid->title = m_fullTitle;
        grid->valueLabel = tr("Jensen-Shannon distance of the profiles");
        f->grids.push_back(grid);
        f->title = m_fullTitle;
        emit figureWanted(f);
    });
    invalidate();
}

void AtlasPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    broughtToFront();
}

void AtlasPanel::broughtToFront()
{
    if (!m_atlas && !m_asked && WindowLayout::inFront(this)) {
        m_asked = true;
        m_info->setText(tr("Computing the head atlas…"));
        emit atlasWanted();
    }
}

void AtlasPanel::invalidate()
{
    m_atlas.reset();
    m_asked = false;
    m_info->setText(tr("The atlas is computed while this dock is shown: scan columns from the last corpus scan "
                       "(or the current text), duplicate-token scores from the text, induction scores from a "
                       "repeated random sequence."));
    broughtToFront(); // in front it asks at once and says so; behind another tab it waits until it comes to the front
}

void AtlasPanel::setError(const QString& message)
{
    m_info->setText(tr("No atlas: %1").arg(message));
}

void AtlasPanel::setAtlas(AtlasResultPtr atlas)
{
    m_atlas = std::move(atlas);
    fill();
}

void AtlasPanel::fill()
{
    if (!m_atlas)
        return;
    const auto& a = m_atlas->atlas;
    const auto& cols = core::atlasColumns();
    m_table->setSortingEnabled(false);
    m_table->setRowCount(static_cast<int>(a.rows.size()));
    for (int i = 0; i < static_cast<int>(a.rows.size()); ++i) {
        const auto& r = a.rows[static_cast<std::size_t>(i)];
        // Sliding-window layers marked local (Gemma, Mistral), so their short reach is not mistaken for a head's habit.
        const auto layer = static_cast<std::size_t>(r.scan.layer);
        const int window = layer < m_atlas->windows.size() ? m_atlas->windows[layer] : 0;
        const bool mixed = std::any_of(m_atlas->windows.begin(), m_atlas->windows.end(), [](int w) { return w == 0; });
        auto* head = new QTableWidgetItem(window > 0 && mixed ? tr("%1 · local").arg(headLabel(r.scan.layer, r.scan.head))
                                                              : headLabel(r.scan.layer, r.scan.head));
        head->setToolTip(window > 0 ? tr("A sliding-window layer: each query sees the %1 most recent tokens").arg(window)
                                    : tr("A global layer: each query sees every earlier token"));
        head->setData(Qt::UserRole, r.scan.layer);
        head->setData(Qt::UserRole + 1, r.scan.head);
        m_table->setItem(i, 0, head);
        for (std::size_t c = 0; c < cols.size(); ++c) {
            auto* it = new QTableWidgetItem;
            const double v = core::atlasValue(r, c);
            if (std::isnan(v))
                it->setText(QStringLiteral("–"));
            else
                it->setData(Qt::DisplayRole, QString::number(v, 'f', cols[c].decimals).toDouble());
            m_table->setItem(i, static_cast<int>(c) + 1, it);
        }
    }
    m_table->setSortingEnabled(true);
    // Columns with no value for any head (an encoder's scan columns) are hidden: the ones with values stay in view.
    for (std::size_t c = 0; c < cols.size(); ++c) {
        bool any = false;
        for (const auto& r : a.rows)
            any |= !std::isnan(core::atlasValue(r, c));
        m_table->setColumnHidden(static_cast<int>(c) + 1, !any);
    }
    fitColumns();
    m_info->setText(tr("%1 heads · scan columns from the %2 · click a row or a matrix cell to show the head")
                        .arg(a.rows.size())
                        .arg(m_atlas->source));
    if (!m_atlas->order.empty()) {
        // Short titles in the dock; the figure window (Matrix as Figure…) names the model and the source.
        auto grid = std::make_shared<widgets::GridData>(*similarityGrid(
            m_atlas->distances, m_atlas->order, a.heads, tr("%1 · head similarity, clustered (%2)").arg(m_modelName, m_atlas->source)));
        m_fullTitle = grid->title;
        grid->title = tr("Head similarity (clustered)");
        grid->valueLabel = tr("JS distance");
        m_matrix->setData(grid);
    } else {
        m_matrix->setData(nullptr); // no profiles (an encoder): no stale matrix of another model
    }
    m_matrix->setVisible(!m_atlas->order.empty()); // the table takes the width when there is no matrix
    m_export->setEnabled(true);
    m_figure->setEnabled(!m_atlas->order.empty());
    m_byLayer->setEnabled(!m_atlas->atlas.rows.empty() && !std::isnan(m_atlas->atlas.rows.front().tokens.entropy));
}

void AtlasPanel::fitColumns()
{
    QHeaderView* header = m_table->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::Interactive);
    m_table->resizeColumnsToContents();
    int natural = 0;
    for (int c = 0; c < m_table->columnCount(); ++c)
        natural += m_table->isColumnHidden(c) ? 0 : header->sectionSize(c);
    if (natural <= m_table->viewport()->width())
        return;
    header->setSectionResizeMode(QHeaderView::Stretch);
    header->setSectionResizeMode(0, QHeaderView::ResizeToContents);
}

void AtlasPanel::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (m_atlas)
        fitColumns();
}

QString AtlasPanel::exportTable(const QString& path) const
{
    if (!m_atlas)
        return tr("There is no atlas to export yet.");
    const auto format = path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) ? core::TableFormat::Json : core::TableFormat::Csv;
    const std::string text = core::formatAtlas(m_atlas->atlas, format);
    return saveFileAtomically(path, QByteArray::fromStdString(text));
}

void AtlasPanel::attach(ComputeController* compute)
{
    connect(compute, &ComputeController::atlasReady, this, &AtlasPanel::setAtlas);
    connect(compute, &ComputeController::scanFinished, this, &AtlasPanel::invalidate); // its columns: the newest scan
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind == JobKind::Atlas)
            setError(f.cancelled() ? tr("cancelled") : f.message);
    });
}

} // namespace attnscope::app
