// QkPanel: two choices above the plot.
#include "ui/qk_panel.h"

#include "qk_matrix_view.h"
#include "qk_scatter_view.h"

#include "compute/compute_controller.h"
#include "ui/window_layout.h"
#include "export/data_export.h"
#include "export/figure_export.h"
#include "ui/file_dialogs.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QMenu>
#include <QMessageBox>
#include <QToolButton>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace attnscope::app {

QkPanel::QkPanel(QWidget* parent)
    : QWidget(parent)
    , m_source(new QComboBox(this))
    , m_method(new QComboBox(this))
    , m_part(new QComboBox(this))
    , m_colour(new QComboBox(this))
    , m_enlarge(new QToolButton(this))
    , m_allHeads(new QCheckBox(tr("All heads"), this))
    , m_view(new widgets::QkScatterView(this))
    , m_matrix(new widgets::QkMatrixView(this))
    , m_stack(new QStackedWidget(this))
{
    m_allHeads->setObjectName(QStringLiteral("qkAllHeads"));
    m_allHeads->setToolTip(tr("Every head's embedding at once (layers x heads), computed with the same settings: heads "
                              "with similar geometry stand out. Click one to open it."));
    m_matrix->setObjectName(QStringLiteral("qkMatrix"));
    m_stack->addWidget(m_view);
    m_stack->addWidget(m_matrix);
    m_source->setObjectName(QStringLiteral("qkSource"));
    m_source->setSizeAdjustPolicy(QComboBox::AdjustToContents); // "Corpus: name.txt" readable
    m_source->addItem(tr("This text"));
    m_source->addItem(tr("Corpus file…"));
    m_source->setToolTip(tr("Embed the text's segment, or the first %L1 tokens of a corpus file (its segments run through "
                            "the model; nothing but this head's queries and keys is kept)")
                             .arg(core::kMaxCorpusQkTokens));
    m_part->setObjectName(QStringLiteral("qkPart"));
    m_part->addItem(tr("Keys (content, q·k)"));
    m_part->addItem(tr("Positions (q·R)"));
    m_part->setToolTip(tr("Transformer-XL scores a query against each key's content (terms a, c) and against the "
                          "relative encoding R of its distance (terms b, d): embed the queries with the keys, or with "
                          "the encodings R"));
    m_part->setVisible(false);
    m_method->setObjectName(QStringLiteral("qkMethod"));
    m_method->addItem(tr("PCA (exact, instant)"));
    m_method->addItem(tr("t-SNE (perplexity 30)"));
    m_method->addItem(tr("UMAP (15 neighbours)"));
    m_method->setToolTip(tr("PCA keeps the directions of largest spread; t-SNE and UMAP keep neighbourhoods (clusters "
                            "of tokens the head treats alike) and take a few seconds for long texts"));
    m_colour->setObjectName(QStringLiteral("qkColour"));
    m_colour->addItem(tr("Colour: query / key"));
    m_colour->addItem(tr("Colour: position in the text"));
    m_colour->addItem(tr("Colour: token (the ten most frequent)"));
    m_view->setObjectName(QStringLiteral("qkView"));
    m_view->setPlaceholder(tr("The selected head's queries and keys appear here once a text has run"));
    m_view->setToolTip(tr("Keys are moved to the queries' mean and both scaled to equal mean length (AttentionViz): no "
                          "attention changes, and a key near a query means a high dot product. Click a point to "
                          "select its token (a selected query shows lines to the three keys it attends to most); drag "
                          "a lasso around a cluster to mark its tokens in the grid and the Text View."));
    auto* exportButton = new QToolButton(this);
    exportButton->setObjectName(QStringLiteral("qkExport"));
    exportButton->setText(tr("Export"));
    exportButton->setPopupMode(QToolButton::InstantPopup);
    auto* menu = new QMenu(exportButton);
    menu->addAction(tr("Figure (PNG, SVG, PDF)…"), this, [this] {
        const QString path = askFigurePath(this, tr("Export the query-key space"), QStringLiteral("qk_space"));
        if (!path.isEmpty())
            finishExport(path, exportFigure(path));
    });
    // The points as CSV or JSON: the finished embedding only (a t-SNE still converging has nothing final to save).
    auto exportPoints = [this](const QString& format) {
        const auto points = m_view->data();
        if (!points || points->partial) {
            QMessageBox::information(this, tr("Export the points"),
                                     points ? tr("The picture is still converging; export it when it is done.")
                                          : tr("There are no points yet: run a text and choose one head."));
            return;
        }
        const QString path = askDataPath(this, tr("Export the points"), QStringLiteral("qk_space"), {format});
        if (!path.isEmpty())
            finishExport(path, saveFileAtomically(path, QByteArray::fromStdString(format == QLatin1String("json") ? points->json
                                                                                                                : points->csv)));
    };
    menu->addAction(tr("Points (CSV)…"), this, [exportPoints] { exportPoints(QStringLiteral("csv")); });
    menu->addAction(tr("Points (JSON)…"), this, [exportPoints] { exportPoints(QStringLiteral("json")); });
    exportButton->setMenu(menu);
    auto* controls = new QHBoxLayout;
    controls->addWidget(m_source);
    controls->addWidget(m_part);
    controls->addWidget(m_method);
    controls->addWidget(m_colour);
    controls->addWidget(m_allHeads);
    controls->addStretch(1);
    // A bottom tab leaves the plot a strip on a projector-sized screen: a square window of its own reads.
    m_enlarge->setObjectName(QStringLiteral("qkEnlarge"));
    m_enlarge->setText(tr("Enlarge"));
    m_enlarge->setCheckable(true);
    m_enlarge->setToolTip(tr("Show the plot in a large square window of its own (uncheck, or double-click its title, "
                             "to put it back in its tab)"));
    connect(m_enlarge, &QToolButton::toggled, this, &QkPanel::enlargeToggled);
    controls->addWidget(m_enlarge);
    controls->addWidget(exportButton);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(m_stack, 1);
    connect(m_method, &QComboBox::currentIndexChanged, this, &QkPanel::methodChanged);
    connect(m_part, &QComboBox::currentIndexChanged, this, &QkPanel::methodChanged);
    connect(m_source, &QComboBox::activated, this, [this](int i) {
        if (i == m_source->count() - 1) {
            chooseCorpus();
            return;
        }
        m_lastSource = i;
        emit methodChanged();
    });
    connect(m_colour, &QComboBox::currentIndexChanged, this, [this](int i) {
        using C = widgets::QkScatterView::Colouring;
        m_view->setColouring(i == 2 ? C::Token : i == 1 ? C::Position : C::Kind);
        m_matrix->setColourByPosition(i == 1);
    });
    connect(m_allHeads, &QCheckBox::toggled, this, [this](bool on) {
        m_stack->setCurrentWidget(on ? static_cast<QWidget*>(m_matrix) : m_view);
        emit methodChanged();
    });
    connect(m_matrix, &widgets::QkMatrixView::headClicked, this, [this](int layer, int head) {
        m_allHeads->setChecked(false);
        emit headChosen(layer, head);
    });
    // Tokens picked in the plot go to the grid and the text view only when they are the text's (not a corpus's).
    auto ofText = [this] { return m_view->data() && m_view->data()->fromText; };
    connect(m_view, &widgets::QkScatterView::positionClicked, this, [this, ofText](int position) {
        if (ofText())
            emit positionClicked(position);
    });
    connect(m_view, &widgets::QkScatterView::positionsMarked, this, [this, ofText](const std::vector<int>& positions) {
        if (ofText())
            emit positionsMarked(positions);
    });
}

void QkPanel::setEnlarged(bool large)
{
    const QSignalBlocker block(m_enlarge);
    m_enlarge->setChecked(large);
}

void QkPanel::attach(ComputeController* compute, std::function<ViewSelection()> selection)
{
    m_compute = compute;
    m_selection = std::move(selection);
    connect(compute, &ComputeController::qkReady, this, &QkPanel::setData);
    connect(compute, &ComputeController::qkMatrixReady, this, &QkPanel::setMatrix);
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind == JobKind::QkSpace)
            setMessage(f.cancelled() ? tr("Cancelled: change the head or the method to compute it again") : f.message);
    });
    connect(this, &QkPanel::methodChanged, this, &QkPanel::refresh);
}

void QkPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    refresh();
}

void QkPanel::refresh()
{
    if (!m_compute || !WindowLayout::inFront(this) || !m_compute->textResult())
        return;
    const ViewSelection selection = m_selection();
    if (allHeads()) { // every head: recomputed for a new text, segment or method, not for a head step
        const auto key = std::make_tuple(static_cast<const void*>(m_compute->textResult().get()), selection.segment, method());
        if (m_matrix->data() && key == m_matrixKey)
            return;
        m_matrixKey = key;
        setMatrix(nullptr);
        m_compute->requestQkMatrix(selection.segment, method());
        return;
    }
    if (selection.heads.size() != 1) {
        setMessage(tr("Choose one head (not the layer's average) to see its queries and keys"));
        return;
    }
    QkRequest request;
    request.segment = selection.segment;
    request.layer = selection.site;
    request.head = selection.heads.front();
    request.method = method();
    request.corpus = corpus();
    request.positionPart = positionPart();
    m_compute->requestQkSpace(request);
}

QString QkPanel::exportFigure(const QString& path)
{
    // In the figure's own shape (the points' aspect, square cells), not the dock's strip.
    const QSize natural = m_stack->currentWidget() == m_matrix ? m_matrix->figureSize() : m_view->figureSize();
    return exportWidget(m_stack->currentWidget(), path, FigureSize{natural.width(), natural.height()});
}

void QkPanel::finishExport(const QString& path, const QString& error)
{
    if (!error.isEmpty())
        QMessageBox::warning(this, tr("Export failed"), error);
    else
        emit exported(path);
}

core::QkMethod QkPanel::method() const
{
    return static_cast<core::QkMethod>(std::clamp(m_method->currentIndex(), 0, 2)); // the items in QkMethod's order
}

bool QkPanel::allHeads() const { return m_allHeads->isChecked(); }

QString QkPanel::corpus() const { return m_source->currentData().toString(); }

void QkPanel::setPositionPartAvailable(bool available)
{
    m_part->setVisible(available);
}

bool QkPanel::positionPart() const { return !m_part->isHidden() && m_part->currentIndex() == 1; }

void QkPanel::chooseCorpus()
{
    const QString path = askTextFile(this, tr("Corpus for the query-key space"));
    if (path.isEmpty()) { // back to what was shown
        m_source->setCurrentIndex(m_lastSource);
        return;
    }
    // One corpus entry, between "This text" and "Corpus file…".
    if (m_source->count() > 2)
        m_source->removeItem(1);
    m_source->insertItem(1, tr("Corpus: %1").arg(QFileInfo(path).fileName()), path);
    m_source->setItemData(1, path, Qt::ToolTipRole);
    m_source->setCurrentIndex(1);
    m_lastSource = 1;
    emit methodChanged();
}

void QkPanel::setMatrix(widgets::QkMatrixPtr matrix) { m_matrix->setData(std::move(matrix)); }

void QkPanel::setData(widgets::QkScatterPtr scatter) { m_view->setData(std::move(scatter)); }

void QkPanel::setMessage(const QString& message) { m_view->setPlaceholder(message); }

} // namespace attnscope::app
