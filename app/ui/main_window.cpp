// MainWindow: panels, docks and the wiring between them and the compute controller.
#include "ui/main_window.h"

#include "analysis/surprisal.h"
#include "qk_matrix_view.h"
#include "qk_scatter_view.h"
#include "ui/qk_panel.h"
#include <cmath>

#include "attention_grid_view.h"
#include "comparison_view.h"
#include "export/data_export.h"
#include "export/figure_export.h"
#include "headless/headless_export.h"
#include "head_overview_view.h"
#include "model/model_loader.h"
#include "util/memory_info.h"
#include "text_attention_view.h"
#include "ui/comparison_panel.h"
#include "ui/display_panel.h"
#include "ui/figure_window.h"
#include "ui/generation.h"
#include "ui/heads_panel.h"
#include "ui/key_router.h"
#include "ui/model_panel.h"
#include "ui/atlas_panel.h"
#include "ui/prediction_panel.h"
#include "analysis/token_predictions.h"
#include "ui/relpos_panel.h"
#include "ui/status_area.h"
#include "ui/text_panel.h"
#include "ui/translation_panel.h"
#include "ui/experts_panel.h"
#include "ui/mechanism_window.h"
#include "ui/file_dialogs.h"
#include "ui/image_panel.h"
#include "views/image_views.h"
#include "analysis/rollout.h"
#include "views/routing_views.h"
#include "views/translation_views.h"
#include "ui/window_layout.h"
#include "views/grid_builder.h"
#include "views/paper_figures.h"

#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QTabBar>
#include <QTimer>

namespace attnscope::app {

namespace {
// The docks tabbed below the grid.
constexpr const char* kBottomTabs[] = {"textDock", "translationDock", "relposDock", "compareDock", "atlasDock", "predictionDock", "qkDock", "expertsDock"};
} // namespace

MainWindow::MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent)
    : QMainWindow(parent)
    , m_compute(compute)
    , m_builtinDirs(std::move(builtinDirs))
    , m_layout(new WindowLayout(this))
{
    setWindowTitle(tr("attnscope"));
    setObjectName(QStringLiteral("MainWindow"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    buildPanels();
    buildMenus();
    connectCompute();
    m_layout->settle();
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area,
                                 bool scrollable)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(scrollable ? WindowLayout::scrollable(content) : content);
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::buildPanels()
{
    m_grid = new widgets::AttentionGridView(this);
    m_grid->setObjectName(QStringLiteral("tokenGrid"));
    m_grid->setFocusPolicy(Qt::StrongFocus);
    m_grid->setPlaceholder(tr("Opening the model…"));
    setCentralWidget(m_grid);
    m_textPanel = new TextPanel;
    m_headsPanel = new HeadsPanel;
    m_textView = new widgets::TextAttentionView;
    m_textView->setObjectName(QStringLiteral("textView"));
    m_displayPanel = new DisplayPanel;
    m_modelPanel = new ModelPanel;
    m_relpos = new RelposPanel;
    m_relpos->attach(m_compute);
    m_relpos->setObjectName(QStringLiteral("relposPanel"));
    m_comparison = new ComparisonPanel(core::listBuiltinModels(m_builtinDirs));
    m_comparison->attach(m_compute);
    m_atlas = new AtlasPanel;
    m_atlas->attach(m_compute);
    m_atlas->setObjectName(QStringLiteral("atlasPanel"));
    m_predictions = new PredictionPanel;
    m_predictions->attach(m_compute);
    m_predictions->setObjectName(QStringLiteral("predictionPanel"));
    m_qk = new QkPanel;
    m_qk->setObjectName(QStringLiteral("qkPanel"));
    m_qk->attach(m_compute, [this] { return m_selection; });
    addDock(tr("Text"), QStringLiteral("textDock"), m_textPanel, Qt::BottomDockWidgetArea, false);
    m_translation = new TranslationPanel;
    m_translation->attach(m_compute);
    addDock(tr("Translation"), QStringLiteral("translationDock"), m_translation, Qt::BottomDockWidgetArea, false);
    addDock(tr("Heads"), QStringLiteral("headDock"), m_headsPanel, Qt::LeftDockWidgetArea);
    addDock(tr("Text View"), QStringLiteral("textViewDock"), m_textView, Qt::RightDockWidgetArea);
    addDock(tr("Relative Position"), QStringLiteral("relposDock"), m_relpos, Qt::BottomDockWidgetArea,
            false); // its heatmap scrolls on its own; an outer scroll area took its wrapped info line's full height
    addDock(tr("Compare Models"), QStringLiteral("compareDock"), m_comparison, Qt::BottomDockWidgetArea);
    addDock(tr("Head Atlas"), QStringLiteral("atlasDock"), m_atlas, Qt::BottomDockWidgetArea);
    addDock(tr("Predictions"), QStringLiteral("predictionDock"), m_predictions, Qt::BottomDockWidgetArea);
    addDock(tr("Query-Key Space"), QStringLiteral("qkDock"), m_qk, Qt::BottomDockWidgetArea);
    m_experts = new ExpertsPanel;
    m_experts->attach(m_compute, [this] { return m_selection; });
    addDock(tr("Experts"), QStringLiteral("expertsDock"), m_experts, Qt::BottomDockWidgetArea);
    m_image = new ImagePanel;
    m_image->attach(m_compute, [this] { return m_selection; });
    addDock(tr("Image"), QStringLiteral("imageDock"), m_image, Qt::RightDockWidgetArea);
    addDock(tr("Display"), QStringLiteral("displayDock"), m_displayPanel, Qt::LeftDockWidgetArea);
    addDock(tr("Model"), QStringLiteral("modelDock"), m_modelPanel, Qt::RightDockWidgetArea);
    // Each bottom tab asks for its height when it comes up and so gives back what the previous one took: the plots
    // need room (the Text tab's height left the head similarity matrix a strip), the text box does not.
    for (const char* name : kBottomTabs)
        connect(dock(name), &QDockWidget::visibilityChanged, this, [this, name](bool visible) {
            if (visible)
                QTimer::singleShot(0, this, [this, name] { fitBottomDock(dock(name)); });
        });
    connect(m_layout, &WindowLayout::presentationLaidOut, this, [this] {
        fitBottomDock(dock("textDock"));
        fitBottomDock(dock("translationDock"));
    });
    // Typing more lines grows the Text tab up to its limit (never shrinks it under the user's hands).
    connect(m_textPanel, &TextPanel::contentLinesChanged, this, [this] {
        QDockWidget* d = dock("textDock");
        if (d->isVisible() && !d->isFloating() && wantedDockHeight(d) > d->height())
            resizeDocks({d}, {wantedDockHeight(d)}, Qt::Vertical);
    });

    m_status = new StatusArea(statusBar());
    connect(m_status, &StatusArea::cancelClicked, m_compute, [this] { m_compute->cancel(); });

    connect(m_textPanel, &TextPanel::runRequested, this, &MainWindow::requestRun);
    connect(m_textPanel, &TextPanel::revealRequested, this, &MainWindow::setRevealRows);

    // Heads.
    connect(m_headsPanel, &HeadsPanel::selectionEdited, this, [this](int layer, int head, bool average) {
        setSelection(layer, average ? std::vector<int>{} : std::vector<int>{head});
    });
    connect(m_headsPanel, &HeadsPanel::segmentChosen, this, [this](int seg) {
        const auto r = result();
        m_selection.segment = r && seg == autoSegment(*r->capture) ? -1 : seg;
        m_selection.revealRows = -1; // another segment opens whole, not at the last one's reveal position
        m_textPanel->setStepping(shownSegmentRows(), m_selection.revealRows);
        refreshThumbnails();
        refreshGrid();
    });
    connect(m_headsPanel, &HeadsPanel::headsChosen, this, &MainWindow::setSelection);

    // Display.
    connect(m_displayPanel, &DisplayPanel::termsChanged, this, &MainWindow::setTerms);
    connect(m_displayPanel, &DisplayPanel::bandsChanged, this, [this](const std::optional<core::BandSplit>& bands) {
        m_selection.bands = bands;
        m_relpos->setBands(bands); // the grid and thumbnails follow with the terms (full again) emitted next
    });
    connect(m_displayPanel, &DisplayPanel::highlightChanged, this, [this](double fraction, HighlightScope scope) {
        m_selection.topFraction = fraction;
        m_selection.highlightScope = scope;
        refreshGrid();
    });
    connect(m_displayPanel, &DisplayPanel::settingsChanged, this, [this](const DisplaySettings& s) {
        m_grid->setColourMap(s.colourMap);
        m_grid->setNormalisation(s.normalisation);
        m_grid->setShowValues(s.values);
        m_grid->setShowHighlight(s.highlight);
    });
    connect(m_displayPanel, &DisplayPanel::resetZoom, m_grid, &widgets::AttentionGridView::resetView);
    connect(m_displayPanel, &DisplayPanel::regroupChanged, this, [this](bool wholeWords, bool hideSpecial) {
        m_selection.wholeWords = wholeWords;
        m_selection.hideSpecial = hideSpecial;
        // The locked row follows its token into the regrouped grid (rows move when words join or specials go).
        m_relockPosition = m_grid->lockedRow() >= 0 && m_gridData ? m_gridData->rowPosition(m_grid->lockedRow()) : -1;
        if (m_translationResult) { // an encoder-decoder model: its grid is built from the translation
            showTranslationGrid();
            return;
        }
        refreshGrid();
    });

    // Grid, text view, relative position and comparison.
    connect(m_grid, &widgets::AttentionGridView::cellClicked, this, [this](int row, int, Qt::KeyboardModifiers) {
        if (m_gridIsPreview) // its text is still running: a row of it is not yet a position of result()
            return;
        m_grid->setLockedRow(m_grid->lockedRow() == row ? -1 : row);
        // The next-token panel follows the locked query (the text's last token when none is locked); so does the
        // mechanism window.
        m_compute->requestNextToken(m_grid->lockedRow() >= 0 && m_gridData ? m_gridData->rowPosition(m_grid->lockedRow()) : -1);
        followMechanism();
    });
    connect(m_grid, &widgets::AttentionGridView::cellHovered, this, [this](int row, int col) {
        if (m_gridIsPreview)
            return;
        m_textPanel->shadeTokens(result() ? result()->capture : nullptr, m_gridData && row >= 0 ? m_gridData->colPosition(col) : -1);
    });
    connect(m_textView, &widgets::TextAttentionView::tokenHovered, this,
            [this](int pos) { m_textPanel->shadeTokens(result() ? result()->capture : nullptr, pos); });
    connect(m_textView, &widgets::TextAttentionView::pairActivated, this, [this](int row, int col) {
        m_grid->setLockedRow(row);
        m_grid->setFocusCell(row, col);
        m_textView->setFocusColumn(col);
    });
    // A dock brought to the front computes what it shows (behind another tab it computes nothing).
    for (const auto& [name, refresh] : {std::pair<const char*, std::function<void()>>{"qkDock", [this] { m_qk->refresh(); }},
                                        {"expertsDock", [this] { m_experts->refresh(); }},
                                        {"imageDock", [this] { m_image->refresh(); }},
                                        {"relposDock", [this] { m_relpos->broughtToFront(); }},
                                        {"atlasDock", [this] { m_atlas->broughtToFront(); }}})
        connect(dock(name), &QDockWidget::visibilityChanged, this, [this, refresh = refresh](bool visible) {
            if (visible)
                QTimer::singleShot(0, this, refresh); // once its tab is the current one
        });
    connect(m_relpos, &RelposPanel::headSelected, this, [this](int layer, int head) { setSelection(layer, {head}); });

    // Head atlas and the analysis windows.
    connect(m_atlas, &AtlasPanel::atlasWanted, this, [this] { m_compute->requestAtlas(m_relpos->scan()); });
    connect(m_atlas, &AtlasPanel::headSelected, this, [this](int layer, int head) { setSelection(layer, {head}); });
    connect(m_atlas, &AtlasPanel::figureWanted, this, [this](FigurePtr f) { openFigureWindow(*f); });
    connect(m_compute, &ComputeController::rolloutReady, this, [this](FigurePtr f) { openFigureWindow(*f); });
    connect(m_compute, &ComputeController::ablationReady, this, [this](FigurePtr f) {
        auto* w = openFigureWindow(*f);
        // A cell is a head: rows are layers, columns heads.
        connect(w, &FigureWindow::cellClicked, this, [this](int, int row, int col) { setSelection(row, {col}); });
    });
    connect(m_compute, &ComputeController::sentencesReady, this, [this](FigurePtr f) {
        auto* w = openFigureWindow(*f);
        // The receiver-head grid (the second) is layers x heads.
        connect(w, &FigureWindow::cellClicked, this, [this](int grid, int row, int col) {
            if (grid == 1)
                setSelection(row, {col});
        });
    });
    connect(m_compute, &ComputeController::attributionReady, this, [this](FigurePtr f) {
        auto* w = openFigureWindow(*f);
        // A head's cell opens that head (the bias and MLP columns are not heads).
        const int heads = m_compute->model() ? m_compute->model()->info().heads : 0;
        connect(w, &FigureWindow::cellClicked, this, [this, heads](int, int row, int col) {
            if (col < heads)
                setSelection(row, {col});
        });
    });
    connect(m_compute, &ComputeController::lensReady, this, [this](FigurePtr f) {
        auto* w = openFigureWindow(*f);
        // A cell is (layer, position): show that layer with the position's row locked, as the grid shows it.
        connect(w, &FigureWindow::cellClicked, this, [this, f](int grid, int row, int col) {
            if (m_translationResult) // an encoder-decoder model's lens: its rows are decoder layers, not sites
                return;
            const auto& g = f->grids[static_cast<std::size_t>(grid)];
            const int position = g->colPosition(col);
            setSelection(row, m_selection.heads);
            if (m_gridData)
                for (int r = 0; r < m_gridData->rows; ++r)
                    if (m_gridData->rowPosition(r) == position)
                        m_grid->setLockedRow(r);
        });
    });
    connect(m_compute, &ComputeController::jobProgress, this, [this](JobKind kind, const QString& what, qint64 done, qint64 total) {
        m_status->setProgress(done, total);
        if (kind == JobKind::Text)
            m_status->setBusy(true, tr("Computing attention: %1%").arg(done * 100 / std::max<qint64>(1, total)));
        else if (kind == JobKind::Grid)
            m_status->setBusy(true, tr("Computing the grid: %1 of %2 heads").arg(done).arg(total));
        else if (kind != JobKind::Scan) // a scan's busy line says "Scanning…"; its rate and time left are in its dock
            m_status->setBusy(true, tr("%1: %2 of %3").arg(what).arg(done).arg(total));
    });
    connect(m_comparison, &ComparisonPanel::compareRequested, this, &MainWindow::compareModels);

    auto* keys = new KeyRouter(this);
    connect(keys, &KeyRouter::stepHead, this, &MainWindow::nextHead);
    connect(keys, &KeyRouter::stepLayer, this, &MainWindow::nextLayer);
    connect(keys, &KeyRouter::toggleAverage, this, &MainWindow::toggleAverage);
}

void MainWindow::connectCompute()
{
    connect(m_compute, &ComputeController::modelLoaded, this, &MainWindow::onModelLoaded);
    connect(m_compute, &ComputeController::jobFailed, this, &MainWindow::onJobFailed);
    connect(m_compute, &ComputeController::textReady, this, &MainWindow::onTextReady);
    connect(m_translation, &TranslationPanel::translateRequested, this, [this](const QString& source) {
        if (!source.trimmed().isEmpty()) {
            m_grid->setStale(true); // the panel asked for the translation; its grid follows
            return;
        }
        showGrid(nullptr);
        m_grid->setPlaceholder(tr("Type a source sentence in the Translation tab to see its attention."));
    });
    connect(m_translation, &TranslationPanel::selectionChanged, this, [this](int site, int head) {
        const auto& m = m_compute->model();
        if (m && site < static_cast<int>(m->info().sites.size())) { // (not the all-layers mean, which has no row)
            m_selection.layer = site;
            m_selection.heads = head >= 0 ? std::vector<int>{head} : std::vector<int>{};
            m_headsPanel->setSelection(m_selection);
        }
        showTranslationGrid();
    });
    connect(m_compute, &ComputeController::translationReady, this, &MainWindow::onTranslation);
    connect(m_image, &ImagePanel::saved, this, &MainWindow::showStatus);
    connect(m_qk, &QkPanel::headChosen, this, [this](int layer, int head) { setSelection(layer, {head}); });
    connect(m_qk, &QkPanel::exported, this, [this](const QString& path) { showStatus(tr("Saved %1").arg(path)); });
    connect(m_qk, &QkPanel::positionClicked, this, [this](int position) {
        // The token's row in the grid, locked as a click there would (its attention row shown).
        const auto g = m_gridData;
        int row = -1;
        if (g && position >= 0)
            for (int r = 0; r < g->rows; ++r)
                if (g->rowPosition(r) == position)
                    row = r;
        m_grid->setLockedRow(row);
    });
    connect(m_qk, &QkPanel::positionsMarked, this, &MainWindow::markTokens);
    connect(m_displayPanel, &DisplayPanel::surprisalToggled, this, [this](bool on) {
        m_surprisalOn = on;
        if (on) {
            m_compute->requestSurprisal();
        } else {
            m_textView->setSurprisal({});
            m_textPanel->setTokenInfo(m_tokenInfo);
        }
    });
    connect(m_compute, &ComputeController::surprisalReady, this,
            [this](TextResultPtr text, std::shared_ptr<const core::Surprisal> s) {
                if (!m_surprisalOn || text != m_compute->textResult())
                    return; // switched off, or the text changed since
                m_textView->setSurprisal(s->bits);
                if (s->predicted > 0)
                    m_textPanel->setTokenInfo(m_tokenInfo + tr(" · perplexity %1 (%2 bits per token)")
                                                                .arg(s->perplexity, 0, 'f', 1)
                                                                .arg(s->meanNats / std::log(2.0), 0, 'f', 2));
            });
    connect(m_compute, &ComputeController::nextTokenReady, m_predictions, &PredictionPanel::setNextToken);
    m_generation = new Generation(m_compute, m_predictions, m_textPanel, [this] { requestRun(); },
                                  [this](const QString& s) { showStatus(s); }, this);
    connect(m_generation, &Generation::started, this, [this] { m_grid->setLockedRow(-1); });
    // The new text's grid while its other layers run: shown, but its positions are not yet those of result().
    connect(m_compute, &ComputeController::gridPreviewReady, this, [this](widgets::GridDataPtr g) { showGrid(g, true); });
    connect(m_compute, &ComputeController::gridReady, this, [this](widgets::GridDataPtr g) {
        showGrid(g);
        if (m_relockPosition >= 0) { // the row whose token or word holds the locked position (rows start in order)
            int row = -1;
            for (int r = 0; r < g->rows; ++r)
                if (g->rowPosition(r) >= 0 && g->rowPosition(r) <= m_relockPosition)
                    row = r;
            m_grid->setLockedRow(row);
            m_relockPosition = -1;
        }
        showStatus(g->title);
        emit gridShown();
    });
    connect(m_compute, &ComputeController::thumbnailsReady, this, [this](widgets::HeadThumbnailsPtr t) {
        m_headsPanel->setThumbnails(std::move(t));
        if (m_fitHeadsDock) { // the first thumbnails of a model: the Heads dock takes what they need
            m_fitHeadsDock = false;
            fitHeadsDock();
        }
    });
    connect(m_compute, &ComputeController::scanFinished, this, [this](ScanResultPtr r) {
        notify(r->partial ? tr("Scan cancelled after %1 tokens (partial result kept)").arg(r->tokens)
                          : tr("Scan finished: %1 tokens").arg(r->tokens));
    });
    connect(m_compute, &ComputeController::busyChanged, m_status, &StatusArea::setBusy);
}

void MainWindow::onJobFailed(const JobFailure& f)
{
    const QString& msg = f.message;
    switch (f.kind) {
    case JobKind::Load:
        showStatus(f.cancelled() ? tr("Cancelled opening %1").arg(f.what) : tr("Could not open %1").arg(f.what));
        m_pendingSession.reset();
        if (!m_compute->model())
            m_grid->setPlaceholder(tr("No model is open: File > Open Model or File > Built-in Models"));
        if (!f.cancelled())
            QMessageBox::warning(this, tr("Could not open model"),
                                 tr("The model could not be opened:\n\n%1\n\n%2")
                                     .arg(msg, m_compute->model() ? tr("The previous model stays loaded.")
                                                                  : tr("Open another model from the File menu.")));
        return;
    case JobKind::Text:
        showStatus(f.cancelled() ? tr("Cancelled") : msg);
        if (!f.cancelled())
            m_textPanel->setTokenInfo(msg);
        if (!f.cancelled() && !m_gridData) // never leave "Computing attention…" up after the run failed
            m_grid->setPlaceholder(tr("No attention for this text: %1").arg(msg));
        else
            m_grid->setStale(true); // what it shows belongs to the text before the edit
        return;
    case JobKind::Grid: {
        const QString shown = f.cancelled() ? tr("Cancelled. Choose a head or layer to compute its grid.") : msg;
        showGrid(nullptr);
        m_grid->setPlaceholder(shown);
        showStatus(shown);
        emit gridShown();
        return;
    }
    case JobKind::Thumbnails: // the overview stays as it was; the grid reports the same problem where it is seen
        return;
    case JobKind::TextProfile: // the Relative Position dock says it
        return;
    case JobKind::Scan:
        if (f.cancelled())
            notify(tr("Scan cancelled"));
        else
            QMessageBox::warning(this, tr("Scan failed"), msg);
        return;
    case JobKind::Comparison: // the Compare Models dock says it; not modal: the other views stay usable
        showStatus(f.cancelled() ? tr("Comparison cancelled") : tr("Comparison failed: %1").arg(msg));
        return;
    case JobKind::Translation: // the Translation dock says it too
        showStatus(f.cancelled() ? tr("Cancelled") : msg);
        if (!f.cancelled() && !m_translationResult)
            m_grid->setPlaceholder(tr("No attention for this source: %1").arg(msg));
        else
            m_grid->setStale(false);
        return;
    case JobKind::MaskedFills: // the Predictions dock says it
    case JobKind::NextToken:
        return;
    case JobKind::QkSpace: // the Query-Key Space dock says it
        return;
    case JobKind::Atlas: // the Head Atlas dock says it too
        break;
    case JobKind::Routing: // the Experts dock says it too
        break;
    case JobKind::Patching: // their windows say it
    case JobKind::PromptPair:
    case JobKind::HeadContexts:
        return;
    default:
        break;
    }
    notify(f.cancelled() ? tr("%1 cancelled").arg(f.what) : tr("%1: %2").arg(f.what, msg));
}

void MainWindow::openOnSample(const ModelBundlePtr& m)
{
    // A model with a sample text of its own (the stories decoder's story opening) opens on it, unless the user has
    // typed something: the box then holds neither the app's sample nor the one the last model opened with.
    const QString now = m_textPanel->text();
    const QString general = builtinSampleText(m_builtinDirs); // read once per model opened
    if (!now.trimmed().isEmpty() && now != m_sampleShown && now != general)
        return;
    const QString sample = m->sampleText.isEmpty() && !m_sampleShown.isEmpty() ? general : m->sampleText;
    if (!sample.isEmpty() && sample != now)
        m_textPanel->setTextSilently(sample);
    m_sampleShown = m->sampleText;
}

void MainWindow::onModelLoaded(const ModelBundlePtr& m)
{
    // Nothing of the previous model stays on screen: every view clears now and fills in as results arrive.
    showStatus(tr("Loaded %1").arg(m->displayName));
    setWindowTitle(tr("%1 — attnscope").arg(m->displayName));
    rememberRecent(m->spec);
    // A new model starts on layer 1, head 1, full attention; the highlight settings are the user's and stay.
    const ViewSelection previous = m_selection;
    m_selection = ViewSelection{};
    m_selection.topFraction = previous.topFraction;
    m_selection.highlightScope = previous.highlightScope;
    m_selection.wholeWords = previous.wholeWords; // how the user reads grids, not a property of the model
    m_selection.hideSpecial = previous.hideSpecial;
    showGrid(nullptr);
    m_grid->setPlaceholder(tr("Computing attention with %1…").arg(m->displayName));
    m_headsPanel->setThumbnails(nullptr);
    m_headsPanel->setModelShape(m->info().layers, m->info().heads, m->info().kvHeads);
    m_fitHeadsDock = true;
    m_headsPanel->setSelection(m_selection);
    m_headsPanel->setSegments(1, 0);
    m_modelPanel->setModel(m);
    m_relpos->setModel(m->info(), m->displayName);
    m_relpos->clear();
    m_atlas->setModelName(m->displayName);
    if (m_pendingScan) {
        m_relpos->setScan(m_pendingScan, false);
        m_relpos->showCorpus(); // the scan came back with the session: show it, not the current text
        m_pendingScan.reset();
    }
    m_displayPanel->setModel(m->info());
    m_textPanel->setPairAvailable(!m->info().can.causal); // encoders read sentence pairs
    const QString mask = m->info().can.maskedTokens ? QString::fromStdString(core::maskTokenOf(*m->tokenizer)) : QString();
    m_textPanel->setMaskToken(mask);
    m_predictions->setModel(m->info(), mask);
    m_qk->setPositionPartAvailable(m->info().hasRelativeTerms);
    m_selection.bands = m_displayPanel->bands();
    m_relpos->setTerms(core::TermSelection{});
    m_textPanel->setPlaceholder(m->tokenizer->kind().rfind("token ids", 0) == 0
                                    ? tr("This model has no tokenizer files: type token ids, e.g. 3 14 15 9")
                                    : tr("Type or paste text; the attention updates as you type."));
    openOnSample(m);
    showImageDock(m);
    showStreams(m);
    if (presentation()) // another model while presenting: its Predictions appear (or go) as presentation mode placed them
        placePresentationDocks();
}

void MainWindow::showImageDock(const ModelBundlePtr& m)
{
    if (!m->info().can.image) {
        dock("imageDock")->hide();
        return;
    }
    // The text box names the picture: the model folder's own sample unless it already names an image file.
    m_textPanel->setPlaceholder(tr("Type the path of a PNG or JPEG picture (absolute, or beside the model)"));
    const QDir folder(QString::fromStdString(m->loaded.folder));
    const QString current = m_textPanel->text().trimmed();
    const bool named = !current.isEmpty() && current.size() < 4096 &&
                       QFileInfo(QFileInfo(current).isAbsolute() ? current : folder.filePath(current)).isFile();
    if (!named)
        m_textPanel->setTextSilently(modelPicture(folder.path()));
    showDock("imageDock");
    // The picture is what a vision model is about: give it a good share of the width.
    resizeDocks({dock("imageDock")}, {std::max(360, width() * 2 / 5)}, Qt::Horizontal);
}

void MainWindow::setSource(const QString& text)
{
    m_translation->setSource(text);
    const auto& m = m_compute->model();
    if (m && m->info().can.encoderDecoder)
        emit m_translation->translateRequested(text, QString(), true);
}

void MainWindow::showStreams(const ModelBundlePtr& m)
{
    m_translationResult.reset();
    if (!m->info().can.encoderDecoder) {
        if (!dock("textDock")->isVisible()) { // back from an encoder-decoder model
            dock("translationDock")->hide();
            showDock("textDock");
        }
        requestRun();
        return;
    }
    m_compute->dropText();
    dock("textDock")->hide();
    showDock("translationDock");
    m_translation->setModel(m);
    m_headsPanel->setModelShape(static_cast<int>(m->info().sites.size()), m->info().heads, 0);
    m_selection.layer = m_translation->site(); // the last decoder layer's cross-attention, every head
    m_selection.heads.clear();
    m_headsPanel->setSelection(m_selection);
    m_grid->setPlaceholder(tr("Translating with %1…").arg(m->displayName));
    if (m_translation->source().trimmed().isEmpty()) {
        m_grid->setPlaceholder(tr("Type a source sentence in the Translation tab to see its attention."));
        return;
    }
    // A session's typed target is read as typed; otherwise the model writes its own.
    const QString target = m_pendingSession ? m_pendingSession->target : QString();
    m_translation->setTarget(target);
    m_translation->setRunning(target.isEmpty());
    m_compute->requestTranslation(m_translation->source(), target, target.isEmpty());
}

void MainWindow::onTranslation(const TranslationResultPtr& r)
{
    if (r->model != m_compute->model())
        return; // a step of the model before
    m_translationResult = r;
    if (!r->running)
        m_translation->setRunning(false);
    if (!r->running && m_pendingSession) { // a session's site and head, once its translation is there
        const SessionState s = *m_pendingSession;
        m_pendingSession.reset();
        const int sites = allCrossSites(r->model->info());
        if (s.selection.layer >= 0 && s.selection.layer <= sites)
            m_translation->select(s.selection.layer, s.selection.heads.size() == 1 && s.selection.heads[0] < r->model->info().heads
                                                         ? s.selection.heads[0]
                                                         : -1);
        else
            notify(tr("Session restored with changes: site %1 does not exist (the model has %2)")
                       .arg(s.selection.layer + 1)
                       .arg(sites));
        m_displayPanel->setSettings(s.display);
    }
    m_translation->showResult(r);
    m_headsPanel->setThumbnails(translationThumbnails(*r));
    m_headsPanel->setSelection(m_selection);
    showTranslationGrid();
    showStatus(r->running ? tr("Writing the target…") : tr("%1 → %2").arg(m_translation->source(), r->targetText));
}

void MainWindow::showTranslationGrid()
{
    if (!m_translationResult)
        return;
    showGrid(translationGrid(*m_translationResult, m_translation->site(), m_translation->head(), m_selection.wholeWords));
    m_grid->setStale(false);
}

void MainWindow::fitHeadsDock()
{
    QDockWidget* d = dock("headDock");
    auto* overview = m_headsPanel->overview();
    if (!d->isVisible() || d->isFloating() || !overview->hasHeightForWidth() || presentation())
        return;
    // The dock's controls and frame as they are, the thumbnails at the height their width gives them; the rest of
    // the column goes to the Display dock under it (a small model left half the column empty and Display scrolling).
    const int around = d->height() - overview->height();
    const int wanted = around + overview->heightForWidth(overview->width());
    const int most = height() * 6 / 10, least = d->minimumSizeHint().height();
    const int size = std::clamp(wanted, std::min(least, most), most);
    // Both docks of the column: with the Heads dock alone resizeDocks has nowhere to put the difference.
    QDockWidget* below = dock("displayDock");
    if (below->isVisible() && !below->isFloating() && dockWidgetArea(below) == dockWidgetArea(d))
        resizeDocks({d, below}, {size, std::max(1, d->height() + below->height() - size)}, Qt::Vertical);
    else
        resizeDocks({d}, {size}, Qt::Vertical);
}

void MainWindow::onTextReady(const TextResultPtr& r)
{
    const auto& c = *r->capture;
    m_compute->requestMaskedFills(); // an encoder's fillers of the text's [MASK] tokens (none for other models)
    m_compute->requestNextToken(-1);  // a causal model's next tokens after the text (the locked row's: on a click)
    // What the text costs beside the mapped weights, so a user of a big model sees how much room is left.
    m_tokenInfo = tr("%n token(s)", "", static_cast<int>(c.tokens.size())) +
                  (c.segments.size() > 1 ? tr(" in %1 segments of %2").arg(c.segments.size()).arg(c.segmentLen)
                                         : QString()) +
                  tr(" · %1 kept, weights %2 mapped")
                      .arg(QString::fromStdString(core::formatBytes(c.bytes())),
                           QString::fromStdString(core::formatBytes(c.model.weightBytes)));
    m_textPanel->setTokenInfo(m_tokenInfo);
    m_textView->setSurprisal({}); // the previous text's values do not belong to this one
    markTokens({});               // nor do tokens marked in it
    if (m_surprisalOn)
        m_compute->requestSurprisal();
    if (m_pendingSession) {
        const SessionState s = *m_pendingSession;
        m_pendingSession.reset();
        applySession(s);
    }
    if (m_selection.segment >= static_cast<int>(c.segments.size()))
        m_selection.segment = -1;
    m_headsPanel->setSegments(static_cast<int>(c.segments.size()), shownSegment());
    m_textPanel->setStepping(shownSegmentRows(), m_selection.revealRows);
    m_textPanel->shadeTokens(r->capture, -1);
    // The shown grid first (one interactive lane, first come first served), then the overview and the profile.
    refreshGrid();
    refreshThumbnails();
    m_relpos->textChanged();
    m_atlas->invalidate();
}

void MainWindow::applySession(const SessionState& s)
{
    // Values that depend on the model are checked against it; anything out of range falls back with a message.
    const auto& info = m_compute->model()->info();
    QStringList problems;
    if (!info.rotaryFrequencies.empty() && !s.bandSplit.isEmpty())
        m_displayPanel->setBandSplitText(s.bandSplit); // before the terms: a new split resets them
    m_selection = validatedSelection(s, info.layers, info.heads, static_cast<int>(result()->capture->segments.size()),
                                     info.hasRelativeTerms || !info.rotaryFrequencies.empty(), problems);
    m_selection.bands = m_displayPanel->bands();
    m_headsPanel->setSelection(m_selection);
    m_displayPanel->setSettings(s.display);
    m_displayPanel->setHighlight(m_selection.topFraction, m_selection.highlightScope);
    m_displayPanel->setTerms(m_selection.terms);
    m_relpos->setTerms(m_selection.terms);
    m_relpos->setRowOrder(s.relposOrder, s.relposLog);
    m_textPanel->setStepping(shownSegmentRows(), m_selection.revealRows);
    if (!problems.isEmpty())
        notify(tr("Session restored with changes: %1").arg(problems.join(QStringLiteral("; "))));
}

int MainWindow::shownSegment() const
{
    const auto r = result();
    if (!r)
        return 0;
    return m_selection.segment < 0 ? autoSegment(*r->capture) : m_selection.segment;
}

int MainWindow::shownSegmentRows() const
{
    const auto r = result();
    return r ? r->capture->segment(shownSegment()).qlen : 0;
}

void MainWindow::openModel(const QString& spec)
{
    m_compute->loadModel(spec);
}

void MainWindow::setText(const QString& text)
{
    m_textPanel->setTextSilently(text);
    requestRun();
}

void MainWindow::requestRun()
{
    if (!m_compute->model())
        return;
    if (m_textPanel->text().trimmed().isEmpty()) {
        // Nothing of the old text stays on screen: grid, text view, thumbnails, segments, status.
        m_compute->dropText();
        m_textPanel->setTokenInfo(tr("Type some text to see its attention."));
        showGrid(nullptr);
        m_grid->setPlaceholder(tr("Type some text in the Text dock to see its attention."));
        m_headsPanel->setThumbnails(nullptr);
        m_headsPanel->setSegments(1, 0);
        m_predictions->setFills(nullptr);
        showStatus(QString());
        return;
    }
    // Stepping belongs to one text: a new one (not the old one extended or cut, as typing at the end and generation
    // do) opens whole instead of as the old reveal position's sliver.
    const QString text = m_textPanel->text();
    if (m_selection.revealRows >= 0 && !text.startsWith(m_lastRunText) && !m_lastRunText.startsWith(text)) {
        m_selection.revealRows = -1;
        m_textPanel->setStepping(shownSegmentRows(), -1);
    }
    m_lastRunText = text;
    // The grid on screen comes first for the new text when its layer is done long before the others (a big model).
    m_compute->runText(text, m_textPanel->secondText(), 0, -1, m_selection);
}

void MainWindow::showGrid(widgets::GridDataPtr grid, bool preview)
{
    m_gridData = grid;
    m_gridIsPreview = grid && preview;
    m_grid->setData(grid);
    m_textView->setData(grid);
    followMechanism(); // a new head, layer or text: the mechanism window explains what the grid shows
}

void MainWindow::refreshGrid()
{
    m_compute->requestGrid(m_selection);
    m_qk->refresh(); // the plot follows the selected head
    m_experts->refresh(); // and the router its layer
    m_image->refresh(); // and the picture its head
}

void MainWindow::markTokens(const std::vector<int>& positions)
{
    m_grid->setMarkedPositions(positions);
    m_textView->setMarkedPositions(positions);
    m_qk->view()->setMarkedPositions(positions);
    if (!positions.empty()) {
        const auto r = result();
        QStringList words;
        for (const int p : positions)
            if (r && p >= 0 && p < static_cast<int>(r->capture->tokens.size()) && words.size() < 12)
                words << QString::fromStdString(r->capture->tokens[static_cast<std::size_t>(p)].text).trimmed();
        showStatus(tr("%n token(s) marked in the grid and the Text View: %1%2", "", static_cast<int>(positions.size()))
                       .arg(words.join(QStringLiteral(" · ")), positions.size() > 12 ? QStringLiteral(" …") : QString()));
    }
}

void MainWindow::refreshThumbnails()
{
    m_compute->requestThumbnails(m_selection);
}

void MainWindow::setSelection(int layer, const std::vector<int>& heads)
{
    if (m_selection.heads.size() == 1)
        m_headBeforeAverage = m_selection.heads.front();
    if (const auto& m = m_compute->model(); m && m->info().can.encoderDecoder) {
        // The Heads dock's rows are the model's sites: the Translation tab shows the choice.
        m_selection.layer = std::clamp(layer, 0, static_cast<int>(m->info().sites.size()) - 1);
        m_selection.heads = heads.size() == 1 ? heads : std::vector<int>{};
        m_headsPanel->setSelection(m_selection);
        m_translation->select(m_selection.layer, heads.size() == 1 ? heads.front() : -1);
        return;
    }
    m_selection.layer = layer;
    m_selection.heads = heads;
    m_headsPanel->setSelection(m_selection);
    refreshGrid();
}

void MainWindow::setTerms(const core::TermSelection& terms)
{
    m_selection.terms = terms;
    m_displayPanel->setTerms(terms);
    m_relpos->setTerms(terms);
    refreshThumbnails();
    refreshGrid(); // with no term ticked the grid says so (a Grid JobFailure)
}

void MainWindow::setRevealRows(int rows)
{
    m_selection.revealRows = rows;
    m_textPanel->setStepping(shownSegmentRows(), rows);
    refreshGrid();
    // Predictions follow the reveal (stepping, Play): the bars are for the token just revealed, unless a row is locked.
    const auto r = result();
    if (r && m_grid->lockedRow() < 0) {
        const auto& seg = r->capture->segment(shownSegment());
        m_compute->requestNextToken(rows > 0 && rows < seg.qlen ? static_cast<int>(seg.firstPosition) + rows - 1 : -1);
    }
}

void MainWindow::nextHead(int delta)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    const int H = m->info().heads;
    const int cur = m_selection.heads.empty() ? (delta > 0 ? -1 : H) : m_selection.heads.front();
    setSelection(m_selection.layer, {((cur + delta) % H + H) % H});
}

void MainWindow::nextLayer(int delta)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    // Up / Down step layers, or an encoder-decoder model's sites (encoder layers, then each decoder layer's self and
    // cross-attention).
    const int L = m->info().can.encoderDecoder ? static_cast<int>(m->info().sites.size()) : m->info().layers;
    setSelection(((m_selection.layer + delta) % L + L) % L, m_selection.heads);
}

void MainWindow::toggleAverage()
{
    // A toggles between the layer's average and the head that was shown before it.
    if (m_selection.heads.empty())
        setSelection(m_selection.layer, {m_headBeforeAverage});
    else
        setSelection(m_selection.layer, {});
}

void MainWindow::setPresentation(bool on)
{
    // The grid's larger fonts only while the window is full screen (they would widen a restored window).
    if (!on)
        m_grid->setPresentation(false);
    // A class asks "so what does it predict?": a model with a language-model head keeps its Predictions beside the
    // grid (the text box and its stepping stay below); leaving restores the tabbed layout exactly.
    m_translation->setPresentation(on);
    m_predictions->setPresentation(on);
    m_textPanel->setPresentation(on);
    // Presenting, the right-hand Predictions run the window's full height and the text box sits under the grid alone.
    setCorner(Qt::BottomRightCorner, on ? Qt::RightDockWidgetArea : Qt::BottomDockWidgetArea);
    // The text box's dock needs no title while presenting (it is the only one below the grid): its height goes to
    // the grid. The status bar stays, for notices.
    for (const char* name : {"textDock", "translationDock"}) {
        QDockWidget* d = dock(name);
        QWidget* old = d->titleBarWidget();
        d->setTitleBarWidget(on ? new QWidget(d) : nullptr);
        delete old;
    }
    m_layout->setPresentation(on, presentationDocks(on));
    if (on) {
        placePresentationDocks();
        m_grid->setPresentation(true);
        m_grid->setFocus(); // arrows step heads at once, whatever had the focus before
    } else {
        // Back in the tabs, the bottom area keeps the height the moved Predictions dock left it: the raised tab asks
        // for its own again.
        QTimer::singleShot(0, this, [this] {
            for (const char* name : kBottomTabs)
                fitBottomDock(dock(name)); // only the tab in front acts
        });
    }
}

// The docks presentation mode keeps: the text (or translation) box, and Predictions for a model that predicts.
QList<QDockWidget*> MainWindow::presentationDocks(bool on) const
{
    const auto& model = m_compute->model();
    const bool translates = model && model->info().can.encoderDecoder;
    QList<QDockWidget*> keep{dock(translates ? "translationDock" : "textDock")};
    if (on && model && (model->info().can.nextTokenLoss || model->info().can.maskedTokens))
        keep << dock("predictionDock");
    return keep;
}

// Predictions beside the grid, narrow enough that the grid keeps at least 60% of the screen (ten bars still read from
// the back of a room at a fifth of the width); called again when another model opens while presenting.
void MainWindow::placePresentationDocks()
{
    QDockWidget* p = dock("predictionDock");
    if (!presentationDocks(true).contains(p)) {
        p->hide();
        return;
    }
    addDockWidget(Qt::RightDockWidgetArea, p);
    p->show();
    resizeDocks({p}, {static_cast<int>(screen()->availableGeometry().width() * 0.19)}, Qt::Horizontal);
}

bool MainWindow::presentation() const
{
    return m_layout->presentation();
}

widgets::HeadOverviewView* MainWindow::headOverview() const { return m_headsPanel->overview(); }
QPlainTextEdit* MainWindow::textEdit() const { return m_textPanel->editor(); }
widgets::ComparisonView* MainWindow::comparison() const { return m_comparison->view(); }

QDockWidget* MainWindow::dock(const char* objectName) const
{
    return findChild<QDockWidget*>(QLatin1String(objectName));
}

void MainWindow::showDock(const char* objectName)
{
    QDockWidget* d = dock(objectName);
    if (!d)
        return;
    d->show();
    d->raise();
    fitBottomDock(d);
}

int MainWindow::wantedDockHeight(const QDockWidget* d) const
{
    if (d == dock("translationDock")) // the two sentences, the selectors and (not presenting) the overview of every site
        return presentation() ? d->minimumSizeHint().height() + 8 : static_cast<int>(height() * 0.36);
    if (d == dock("textDock")) {
        // The dock's chrome (title or tab bar) plus the panel's content: up to 8 lines, 2 in presentation mode (the
        // stepping reveals the text a token at a time; the box scrolls).
        // (from the minimum sizes: the current ones lag behind while a tab is being switched)
        const int chrome = std::max(0, d->minimumSizeHint().height() - m_textPanel->minimumSizeHint().height());
        // A tabbed dock's size in resizeDocks is the whole group's, the tab bar under it included.
        int tabBar = 0;
        for (const QTabBar* bar : findChildren<QTabBar*>())
            for (int i = 0; bar->isVisible() && i < bar->count(); ++i)
                if (bar->tabText(i) == d->windowTitle())
                    tabBar = bar->height();
        return chrome + tabBar + m_textPanel->contentHeight(presentation() ? 2 : 8); // presenting: the grid gets the room
    }
    return static_cast<int>(height() * 0.4);
}

void MainWindow::fitBottomDock(QDockWidget* d)
{
    if (!d || d->isFloating() || !d->isVisible() || dockWidgetArea(d) != Qt::BottomDockWidgetArea)
        return;
    // Only the tab in front: right after a layout is restored every tab of the group reports itself visible.
    if (isVisible() && d->visibleRegion().isEmpty())
        return;
    resizeDocks({d}, {wantedDockHeight(d)}, Qt::Vertical);
}

void MainWindow::showStatus(const QString& text) { m_status->show(text); }
void MainWindow::notify(const QString& text) { m_status->notify(text); }
QString MainWindow::statusText() const { return m_status->text(); }

void MainWindow::reportSave(QWidget* parent, const QString& err, const QString& failTitle, const QString& done)
{
    if (!err.isEmpty())
        QMessageBox::warning(parent, failTitle, err);
    else
        showStatus(done);
}

void MainWindow::resizeEvent(QResizeEvent* event)
{
    QMainWindow::resizeEvent(event);
    // A resized window shares its height out anew: the bottom tab in front asks for its height again (the Text tab
    // squeezed below its text when the window was fitted to the screen).
    QTimer::singleShot(0, this, [this] {
        for (const char* name : kBottomTabs)
            fitBottomDock(dock(name)); // only the tab in front acts
    });
}

void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    // The frame's size is known once the window is on screen: make sure the whole frame fits.
    QTimer::singleShot(0, m_layout, &WindowLayout::fitToScreen);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_layout->saveSettings();
    if (presentation())
        setPresentation(false);
    QMainWindow::closeEvent(event);
}

} // namespace attnscope::app
