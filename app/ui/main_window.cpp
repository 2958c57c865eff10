// MainWindow: the panels placed in docks, the controllers made over them, presentation mode and the window's events.
#include "ui/main_window.h"

#include "attention_grid_view.h"
#include "comparison_view.h"
#include "head_overview_view.h"
#include "model/model_loader.h"
#include "text_attention_view.h"
#include "ui/atlas_panel.h"
#include "ui/comparison_panel.h"
#include "ui/display_panel.h"
#include "ui/experts_panel.h"
#include "ui/heads_panel.h"
#include "ui/image_panel.h"
#include "ui/key_router.h"
#include "ui/model_panel.h"
#include "ui/prediction_panel.h"
#include "ui/qk_panel.h"
#include "ui/relpos_panel.h"
#include "ui/status_area.h"
#include "ui/text_panel.h"
#include "ui/translation_panel.h"
#include "ui/window_layout.h"

#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <QTimer>

namespace attnscope::app {

MainWindow::MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent)
    : QMainWindow(parent)
{
    m_parts.window = this;
    m_parts.compute = compute;
    m_parts.builtinDirs = std::move(builtinDirs);
    m_parts.layout = new WindowLayout(this);
    setWindowTitle(tr("attnscope"));
    setObjectName(QStringLiteral("MainWindow"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    buildPanels();
    buildControllers();
    buildMenus();
    m_parts.layout->settle();
}

MainWindow::~MainWindow() = default;

void MainWindow::addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area,
                         bool scrollable)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(scrollable ? WindowLayout::scrollable(content) : content);
    addDockWidget(area, dock);
}

void MainWindow::buildPanels()
{
    WindowParts& p = m_parts;
    ComputeController* compute = p.compute;
    p.grid = new widgets::AttentionGridView(this);
    p.grid->setObjectName(QStringLiteral("tokenGrid"));
    p.grid->setFocusPolicy(Qt::StrongFocus);
    p.grid->setPlaceholder(tr("Opening the model…"));
    setCentralWidget(p.grid);
    p.textView = new widgets::TextAttentionView;
    p.textView->setObjectName(QStringLiteral("textView"));
    p.text = new TextPanel;
    p.heads = new HeadsPanel;
    p.display = new DisplayPanel;
    p.model = new ModelPanel;
    // The panels that ask the compute controller for their own results wire themselves to it.
    p.relpos = new RelposPanel;
    p.relpos->setObjectName(QStringLiteral("relposPanel"));
    p.relpos->attach(compute);
    p.comparison = new ComparisonPanel(core::listBuiltinModels(p.builtinDirs));
    p.comparison->attach(compute);
    p.atlas = new AtlasPanel;
    p.atlas->setObjectName(QStringLiteral("atlasPanel"));
    p.atlas->attach(compute);
    p.predictions = new PredictionPanel;
    p.predictions->setObjectName(QStringLiteral("predictionPanel"));
    p.predictions->attach(compute);
    p.translation = new TranslationPanel;
    p.translation->attach(compute);
    // (these follow the selected head: they ask for it when they refresh)
    const auto selection = [this] { return m_selection->selection(); };
    p.qk = new QkPanel;
    p.qk->setObjectName(QStringLiteral("qkPanel"));
    p.qk->attach(compute, selection);
    p.experts = new ExpertsPanel;
    p.experts->attach(compute, selection);
    p.image = new ImagePanel;
    p.image->attach(compute, selection);
    addDock(tr("Text"), QStringLiteral("textDock"), p.text, Qt::BottomDockWidgetArea, false);
    addDock(tr("Translation"), QStringLiteral("translationDock"), p.translation, Qt::BottomDockWidgetArea, false);
    addDock(tr("Heads"), QStringLiteral("headDock"), p.heads, Qt::LeftDockWidgetArea);
    addDock(tr("Text View"), QStringLiteral("textViewDock"), p.textView, Qt::RightDockWidgetArea);
    addDock(tr("Relative Position"), QStringLiteral("relposDock"), p.relpos, Qt::BottomDockWidgetArea,
            false); // its heatmap scrolls on its own; an outer scroll area took its wrapped info line's full height
    addDock(tr("Compare Models"), QStringLiteral("compareDock"), p.comparison, Qt::BottomDockWidgetArea);
    addDock(tr("Head Atlas"), QStringLiteral("atlasDock"), p.atlas, Qt::BottomDockWidgetArea);
    addDock(tr("Predictions"), QStringLiteral("predictionDock"), p.predictions, Qt::BottomDockWidgetArea);
    addDock(tr("Query-Key Space"), QStringLiteral("qkDock"), p.qk, Qt::BottomDockWidgetArea);
    addDock(tr("Experts"), QStringLiteral("expertsDock"), p.experts, Qt::BottomDockWidgetArea);
    addDock(tr("Image"), QStringLiteral("imageDock"), p.image, Qt::RightDockWidgetArea);
    addDock(tr("Display"), QStringLiteral("displayDock"), p.display, Qt::LeftDockWidgetArea);
    addDock(tr("Model"), QStringLiteral("modelDock"), p.model, Qt::RightDockWidgetArea);
    p.status = new StatusArea(statusBar());
    p.status->attach(compute);
}

void MainWindow::buildControllers()
{
    m_docks = new DockFitter(m_parts);
    m_selection = new SelectionController(m_parts);
    m_streams = new StreamController(m_parts, m_selection, m_docks);
    m_analyses = new AnalysisLauncher(m_parts, m_selection, m_docks);
    m_files = new FileActions(m_parts, m_selection, m_streams, m_analyses);
    connect(m_selection, &SelectionController::status, this, &MainWindow::showStatus);
    connect(m_streams, &StreamController::modelShown, this, &MainWindow::onModelShown);
    // A dock brought to the front computes what it shows (behind another tab it computes nothing).
    const std::pair<const char*, std::function<void()>> fronts[] = {
        {"qkDock", [this] { m_parts.qk->refresh(); }},          {"expertsDock", [this] { m_parts.experts->refresh(); }},
        {"imageDock", [this] { m_parts.image->refresh(); }},    {"relposDock", [this] { m_parts.relpos->broughtToFront(); }},
        {"atlasDock", [this] { m_parts.atlas->broughtToFront(); }}};
    for (const auto& [name, refresh] : fronts)
        connect(dock(name), &QDockWidget::visibilityChanged, this, [this, refresh = refresh](bool visible) {
            if (visible)
                QTimer::singleShot(0, this, refresh); // once its tab is the current one
        });
    connect(m_parts.qk, &QkPanel::enlargeToggled, m_docks, [this](bool large) { m_docks->showLarge("qkDock", large); });
    connect(dock("qkDock"), &QDockWidget::topLevelChanged, m_parts.qk, &QkPanel::setEnlarged);
    auto* keys = new KeyRouter(this);
    connect(keys, &KeyRouter::stepHead, m_selection, &SelectionController::nextHead);
    connect(keys, &KeyRouter::stepLayer, m_selection, &SelectionController::nextLayer);
    connect(keys, &KeyRouter::toggleAverage, m_selection, &SelectionController::toggleAverage);
}

void MainWindow::onModelShown(const ModelBundlePtr& m)
{
    setWindowTitle(tr("%1 — attnscope").arg(m->displayName));
    rememberRecent(m->spec);
}

void MainWindow::setPresentation(bool on)
{
    // The grid's larger fonts only while the window is full screen (they would widen a restored window).
    if (!on)
        m_parts.grid->setPresentation(false);
    // A class asks "so what does it predict?": a model with a language-model head keeps its Predictions beside the
    // grid (the text box and its stepping stay below); leaving restores the tabbed layout exactly.
    m_parts.translation->setPresentation(on);
    m_parts.predictions->setPresentation(on);
    m_parts.text->setPresentation(on);
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
    m_parts.layout->setPresentation(on, m_docks->presentationDocks(on));
    if (on) {
        m_docks->placePresentationDocks();
        m_parts.grid->setPresentation(true);
        m_parts.grid->setFocus(); // arrows step heads at once, whatever had the focus before
    } else {
        // Back in the tabs, the bottom area keeps the height the moved Predictions dock left it: the raised tab asks
        // for its own again.
        QTimer::singleShot(0, m_docks, &DockFitter::fitBottomTabs);
    }
}

bool MainWindow::presentation() const { return m_parts.layout->presentation(); }
widgets::HeadOverviewView* MainWindow::headOverview() const { return m_parts.heads->overview(); }
QPlainTextEdit* MainWindow::textEdit() const { return m_parts.text->editor(); }
widgets::ComparisonView* MainWindow::comparison() const { return m_parts.comparison->view(); }
void MainWindow::showStatus(const QString& text) { m_parts.status->show(text); }
void MainWindow::notify(const QString& text) { m_parts.status->notify(text); }
QString MainWindow::statusText() const { return m_parts.status->text(); }

void MainWindow::reportSave(const QString& err, const QString& failTitle, const QString& done)
{
    if (!err.isEmpty())
        QMessageBox::warning(this, failTitle, err);
    else if (!done.isEmpty())
        showStatus(done);
}

void MainWindow::resizeEvent(QResizeEvent* event)
{
    QMainWindow::resizeEvent(event);
    // A resized window shares its height out anew: the bottom tab in front asks for its height again (the Text tab
    // squeezed below its text when the window was fitted to the screen).
    if (m_docks)
        QTimer::singleShot(0, m_docks, &DockFitter::fitBottomTabs);
}

void MainWindow::showEvent(QShowEvent* event)
{
    QMainWindow::showEvent(event);
    // The frame's size is known once the window is on screen: make sure the whole frame fits.
    QTimer::singleShot(0, m_parts.layout, &WindowLayout::fitToScreen);
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    m_parts.layout->saveSettings();
    if (presentation())
        setPresentation(false);
    QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.isEmpty() || !urls.front().isLocalFile())
        return;
    const QString path = urls.front().toLocalFile();
    if (const QString err = m_files->openDropped(path); !err.isEmpty())
        QMessageBox::warning(this, tr("Could not open %1").arg(QFileInfo(path).fileName()), err);
}

} // namespace attnscope::app
