// DockFitter implementation.
#include "ui/dock_fitter.h"

#include "compute/compute_controller.h"
#include "head_overview_view.h"
#include "ui/heads_panel.h"
#include "ui/status_area.h"
#include "ui/text_panel.h"
#include "ui/window_layout.h"

#include <QAction>
#include <QDockWidget>
#include <QMainWindow>
#include <QScreen>
#include <QScrollArea>
#include <QTabBar>
#include <QTimer>

namespace attnscope::app {

namespace {
// The docks tabbed below the grid.
constexpr const char* kBottomTabs[] = {"textDock", "translationDock", "relposDock", "compareDock", "atlasDock", "predictionDock", "qkDock", "expertsDock"};

// The bottom tabs that hold an analysis's figure or table (not the text box, not Predictions).
const QStringList kAnalysisTabs{QStringLiteral("relposDock"), QStringLiteral("compareDock"), QStringLiteral("atlasDock"),
                                QStringLiteral("qkDock"), QStringLiteral("expertsDock")};

// Docks that belong to some models only, with the models they belong to and what the others are told.
struct ModelDock {
    const char* name;
    bool (*uses)(const core::ModelInfo&);
    const char* notUsed; // %1: the model's name
};
constexpr ModelDock kModelDocks[] = {
    {"imageDock", [](const core::ModelInfo& m) { return m.can.image; }, QT_TR_NOOP("%1 reads no pictures")},
    {"translationDock", [](const core::ModelInfo& m) { return m.typedReadStream() >= 0; },
     QT_TR_NOOP("%1 does not translate: type its text in the Text tab")},
    {"predictionDock", [](const core::ModelInfo& m) { return m.can.nextTokenLoss || m.can.maskedTokens; },
     QT_TR_NOOP("%1 predicts no tokens: it has no language-model head")},
    {"expertsDock", [](const core::ModelInfo& m) { return m.can.experts > 0; },
     QT_TR_NOOP("%1 has no mixture-of-experts layers: every token goes through the same feed-forward block (Qwen3-MoE, "
                "OLMoE, gpt-oss and DeepSeek-V2 show their router in the Experts tab)")},
};

const ModelDock* modelDock(const QDockWidget* d)
{
    for (const auto& md : kModelDocks)
        if (d && d->objectName() == QLatin1String(md.name))
            return &md;
    return nullptr;
}
} // namespace

DockFitter::DockFitter(const WindowParts& parts)
    : QObject(parts.window)
    , m_parts(parts)
{
    // Each bottom tab asks for its height when it comes up and so gives back what the previous one took: the plots
    // need room (the Text tab's height left the head similarity matrix a strip), the text box does not.
    for (const char* name : kBottomTabs)
        connect(dock(name), &QDockWidget::visibilityChanged, this, [this, name](bool visible) {
            if (visible)
                QTimer::singleShot(0, this, [this, name] { fitBottomDock(dock(name)); });
        });
    connect(m_parts.layout, &WindowLayout::presentationLaidOut, this, [this] {
        fitBottomDock(dock("textDock"));
        fitBottomDock(dock("translationDock"));
    });
    // Typing more lines grows the Text tab up to its limit (never shrinks it under the user's hands).
    connect(m_parts.text, &TextPanel::contentLinesChanged, this, [this] {
        QDockWidget* d = dock("textDock");
        if (d->isVisible() && !d->isFloating() && wantedHeight(d) > d->height())
            m_parts.window->resizeDocks({d}, {wantedHeight(d)}, Qt::Vertical);
    });
    // (queued: after the Heads panel has the thumbnails)
    connect(m_parts.compute, &ComputeController::thumbnailsReady, this, [this] {
        if (m_fitHeads) {
            m_fitHeads = false;
            fitHeadsDock();
        }
    }, Qt::QueuedConnection);
}

QDockWidget* DockFitter::dock(const char* objectName) const
{
    return m_parts.window->findChild<QDockWidget*>(QLatin1String(objectName));
}

bool DockFitter::used(const QDockWidget* d) const
{
    const ModelDock* md = modelDock(d);
    const auto& model = m_parts.compute->model();
    return !md || (model && md->uses(model->info()));
}

void DockFitter::hideUnusedDocks()
{
    QMainWindow* w = m_parts.window;
    for (const auto& md : kModelDocks) {
        QDockWidget* d = dock(md.name);
        d->toggleViewAction()->setVisible(used(d)); // the View menu lists what this model can show
        if (used(d) || d->isHidden())
            continue;
        const bool right = w->dockWidgetArea(d) == Qt::RightDockWidgetArea && !d->isFloating();
        d->hide();
        // A vision model widened the right column for its picture: the text view gets its default width back.
        if (right && dock("textViewDock")->isVisible())
            w->resizeDocks({dock("textViewDock")}, {w->width() / 7}, Qt::Horizontal);
    }
}

void DockFitter::show(const char* objectName)
{
    QDockWidget* d = dock(objectName);
    if (!d)
        return;
    if (!used(d)) {
        const auto& model = m_parts.compute->model();
        m_parts.status->notify(tr(modelDock(d)->notUsed).arg(model ? model->displayName : tr("This model")));
        return;
    }
    // Presenting, an analysis tab opens as a large window over the grid: a strip under it would cut its figure.
    if (m_parts.layout->presentation() && kAnalysisTabs.contains(QLatin1String(objectName))) {
        d->show();
        showLarge(objectName, true);
        return;
    }
    d->show();
    d->raise();
    fitBottomDock(d);
}

int DockFitter::wantedHeight(const QDockWidget* d) const
{
    const bool presenting = m_parts.layout->presentation();
    const int height = m_parts.window->height();
    if (d == dock("translationDock")) // the two sentences, the selectors and (not presenting) the overview of every site
        return presenting ? d->minimumSizeHint().height() + 8 : static_cast<int>(height * 0.36);
    if (d == dock("textDock")) {
        // The dock's chrome (title or tab bar) plus the panel's content: up to 8 lines, 2 in presentation mode (the
        // stepping reveals the text a token at a time; the box scrolls).
        // (from the minimum sizes: the current ones lag behind while a tab is being switched)
        const int chrome = std::max(0, d->minimumSizeHint().height() - m_parts.text->minimumSizeHint().height());
        // A tabbed dock's size in resizeDocks is the whole group's, the tab bar under it included.
        int tabBar = 0;
        for (const QTabBar* bar : m_parts.window->findChildren<QTabBar*>())
            for (int i = 0; bar->isVisible() && i < bar->count(); ++i)
                if (bar->tabText(i) == d->windowTitle())
                    tabBar = bar->height();
        return chrome + tabBar + m_parts.text->contentHeight(presenting ? 2 : 8); // presenting: the grid gets the room
    }
    return static_cast<int>(height * 0.31);
}

void DockFitter::fitBottomDock(QDockWidget* d)
{
    QMainWindow* w = m_parts.window;
    if (!d || d->isFloating() || !d->isVisible() || w->dockWidgetArea(d) != Qt::BottomDockWidgetArea)
        return;
    // Only the tab in front: right after a layout is restored every tab of the group reports itself visible.
    if (w->isVisible() && d->visibleRegion().isEmpty())
        return;
    w->resizeDocks({d}, {wantedHeight(d)}, Qt::Vertical);
}

void DockFitter::fitBottomTabs()
{
    for (const char* name : kBottomTabs)
        fitBottomDock(dock(name)); // only the tab in front acts
}

void DockFitter::fitHeadsDock()
{
    QMainWindow* w = m_parts.window;
    QDockWidget* d = dock("headDock");
    auto* overview = m_parts.heads->overview();
    if (!d->isVisible() || d->isFloating() || !overview->hasHeightForWidth() || m_parts.layout->presentation())
        return;
    // The dock's controls and frame as they are, the thumbnails at the height their width gives them; the rest of
    // the column goes to the Display dock under it (a small model left half the column empty and Display scrolling).
    const int around = d->height() - overview->height();
    const int wanted = around + overview->heightForWidth(overview->width());
    const int most = w->height() * 6 / 10, least = d->minimumSizeHint().height();
    const int size = std::clamp(wanted, std::min(least, most), most);
    // Both docks of the column: with the Heads dock alone resizeDocks has nowhere to put the difference.
    QDockWidget* below = dock("displayDock");
    if (below->isVisible() && !below->isFloating() && w->dockWidgetArea(below) == w->dockWidgetArea(d))
        w->resizeDocks({d, below}, {size, std::max(1, d->height() + below->height() - size)}, Qt::Vertical);
    else
        w->resizeDocks({d}, {size}, Qt::Vertical);
}

void DockFitter::showLarge(const char* objectName, bool large)
{
    QDockWidget* d = dock(objectName);
    if (!large) {
        d->setFloating(false); // back into its tab group
        d->raise();
        QTimer::singleShot(0, this, [this, d] { fitBottomDock(d); });
        return;
    }
    const QRect screen = m_parts.window->screen()->availableGeometry();
    const int side = std::min(screen.height() * 9 / 10, screen.width() * 6 / 10);
    // At least as wide as the panel's controls (the dock's scroll area would otherwise cut them); presenting, the
    // larger font's table or figure gets most of the screen (the atlas's columns side by side, every compared model).
    const auto* area = qobject_cast<const QScrollArea*>(d->widget());
    const int controls = (area && area->widget() ? area->widget() : d->widget())->minimumSizeHint().width() + 24;
    const int width = m_parts.layout->presentation() ? screen.width() * 9 / 10
                                                     : std::min(screen.width() * 9 / 10, std::max(side, controls));
    d->setFloating(true);
    d->resize(width, side);
    d->move(screen.center() - QPoint(width / 2, side / 2));
    d->raise();
    // The tab group it left shows the text box, not whichever analysis came next.
    for (const char* text : {"textDock", "translationDock"})
        if (dock(text)->isVisible())
            dock(text)->raise();
}

QList<QDockWidget*> DockFitter::presentationDocks(bool on) const
{
    const auto& model = m_parts.compute->model();
    const bool translates = model && model->info().can.encoderDecoder;
    QList<QDockWidget*> keep{dock(translates ? "translationDock" : "textDock")};
    if (on && model && (model->info().can.nextTokenLoss || model->info().can.maskedTokens))
        keep << dock("predictionDock");
    return keep;
}

// Predictions beside the grid, narrow enough that the grid keeps at least 60% of the screen (ten bars still read from
// the back of a room at a fifth of the width); called again when another model opens while presenting.
void DockFitter::placePresentationDocks()
{
    QDockWidget* p = dock("predictionDock");
    if (!presentationDocks(true).contains(p)) {
        p->hide();
        return;
    }
    m_parts.window->addDockWidget(Qt::RightDockWidgetArea, p);
    p->show();
    m_parts.window->resizeDocks({p}, {static_cast<int>(m_parts.window->screen()->availableGeometry().width() * 0.19)},
                                Qt::Horizontal);
}

} // namespace attnscope::app
