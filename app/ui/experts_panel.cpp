// ExpertsPanel: the router grid of the selected layer, and its own requests to the compute controller.
#include "ui/experts_panel.h"

#include "attention_grid_view.h"
#include "compute/compute_controller.h"
#include "ui/window_layout.h"
#include "views/grid_builder.h"
#include "views/routing_views.h"

#include <QVBoxLayout>

namespace attnscope::app {

ExpertsPanel::ExpertsPanel(QWidget* parent)
    : QWidget(parent)
    , m_view(new widgets::AttentionGridView)
{
    setObjectName(QStringLiteral("expertsPanel"));
    m_view->setObjectName(QStringLiteral("routerGrid"));
    m_view->setShowHighlight(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    setMessage(tr("A mixture-of-experts model's router shows here: which experts each token is sent to"));
}

void ExpertsPanel::attach(ComputeController* compute, std::function<ViewSelection()> selection)
{
    m_compute = compute;
    m_selection = std::move(selection);
    connect(compute, &ComputeController::routingReady, this, [this](RoutingResultPtr r) {
        if (r->text != m_compute->textResult())
            return; // routing of a text that is no longer shown
        m_routing = std::move(r);
        refresh();
    });
    // Another model: nothing of the previous one's routing (or its message) stays.
    connect(compute, &ComputeController::modelLoaded, this, [this] {
        m_routing.reset();
        setMessage(tr("Routing the text through the experts…"));
    });
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind == JobKind::Routing)
            setMessage(f.cancelled() ? tr("Cancelled: step to another layer to route the text again") : f.message);
    });
}

void ExpertsPanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    refresh();
}

void ExpertsPanel::refresh()
{
    if (!m_compute || !WindowLayout::inFront(this))
        return;
    const auto text = m_compute->textResult();
    const auto& m = m_compute->model();
    if (!m || !m->info().can.experts) {
        setMessage(tr("%1 has no mixture-of-experts layers: every token goes through the same feed-forward block "
                      "(Qwen3-MoE, OLMoE, gpt-oss and DeepSeek-V2 show their router here)")
                       .arg(m ? m->displayName : tr("This model")));
        return;
    }
    if (!text)
        return;
    const ViewSelection selection = m_selection();
    const int segment = selection.segment >= 0 ? selection.segment : autoSegment(*text->capture);
    if (!m_routing || m_routing->text != text || m_routing->segment != segment) {
        setMessage(tr("Routing the text through the experts…"));
        m_compute->requestRouting(segment);
        return;
    }
    const auto& r = m_routing->routing;
    if (selection.site < r.layers && r.probs[static_cast<std::size_t>(selection.site)].empty()) {
        setMessage(tr("Layer %1 of %2 is dense: every token goes through one feed-forward block, no router "
                      "(step to a later layer)")
                       .arg(selection.site + 1)
                       .arg(m->displayName));
        return;
    }
    setGrid(routingGrid(r, *text->capture, selection.site, m->displayName));
}

void ExpertsPanel::setGrid(widgets::GridDataPtr grid) { m_view->setData(std::move(grid)); }

void ExpertsPanel::setMessage(const QString& text)
{
    m_view->setData(nullptr);
    m_view->setPlaceholder(text);
}

} // namespace attnscope::app
