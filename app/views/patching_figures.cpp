// Patching figures (patching_figures.h).
#include "views/patching_figures.h"

#include "views/analysis_figures.h"

#include "run/patch_prompts.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <span>

namespace attnscope::app {

namespace {

QString componentName(core::PatchComponent c)
{
    switch (c) {
    case core::PatchComponent::HeadOutput: return QObject::tr("head outputs");
    case core::PatchComponent::Queries: return QObject::tr("queries");
    case core::PatchComponent::Keys: return QObject::tr("keys");
    case core::PatchComponent::Values: return QObject::tr("values");
    case core::PatchComponent::Pattern: return QObject::tr("attention patterns");
    case core::PatchComponent::Residual: return QObject::tr("residual stream");
    }
    return {};
}

// What was patched, for the title: the component, or the paths from the senders into the receivers' input.
QString patchedWhat(const PatchingRequest& r)
{
    if (r.mode != PatchingRequest::Mode::Path)
        return componentName(r.component);
    const QString path = r.freezeMlps ? QObject::tr("MLPs frozen") : QObject::tr("MLPs recomputed");
    return QObject::tr("paths into %1 (%2; %3)").arg(r.receivers.simplified(), componentName(r.receiverInput), path);
}

// The layers that can hold a path's senders: those before the first receiver's (all when the receivers do not read).
int senderLayers(const PatchingRequest& r, int layers)
{
    try {
        int first = layers;
        for (const auto& [layer, unit] : core::layerDotUnits(r.receivers.toStdString(), "receivers"))
            first = std::min(first, layer);
        return first;
    } catch (const std::exception&) {
        return layers;
    }
}

// A position's label: its token, or "clean→corrupted" where the prompts differ.
QString positionLabel(const PatchingResult& r, int p)
{
    const QString a = r.cleanTokens.value(p), b = r.corruptTokens.value(p);
    return a == b ? a : QStringLiteral("%1→%2").arg(a, b);
}

} // namespace

PaperFigure patchingFigure(const PatchingResult& r)
{
    const auto& res = r.result;
    auto g = std::make_shared<widgets::GridData>();
    const bool residual = res.axes.size() == 2 && res.axes[1] == "position";
    const bool perPosition = res.axes.size() == 3;
    const bool path = r.request.mode == PatchingRequest::Mode::Path;
    const int units = res.shape.size() > 1 ? res.shape[1] : 0;
    // Path patching's senders all come before the first receiver: the layers from there on are left out.
    const int layers = res.shape.empty() ? 0 : path ? std::min(res.shape[0], senderLayers(r.request, res.shape[0])) : res.shape[0];
    const bool groups = res.axes.size() > 1 && res.axes[1] == "group";
    const QString unitShort = groups ? QObject::tr("G") : QObject::tr("H");
    auto layerName = [&](int l) {
        return residual && l == layers - 1 ? QObject::tr("after L%1").arg(l) : QObject::tr("layer %1").arg(l + 1);
    };
    if (perPosition) {
        g->rows = layers * units;
        g->cols = res.shape[2];
        for (int l = 0; l < layers; ++l)
            for (int u = 0; u < units; ++u)
                g->rowLabels << QStringLiteral("L%1 %2%3").arg(l + 1).arg(unitShort).arg(u + 1);
    } else {
        g->rows = layers;
        g->cols = units;
        for (int l = 0; l < layers; ++l)
            g->rowLabels << layerName(l);
    }
    if (residual || perPosition)
        for (int p = 0; p < g->cols; ++p) {
            g->colLabels << positionLabel(r, p);
            g->colPositions.push_back(p);
        }
    else
        for (int u = 0; u < units; ++u)
            g->colLabels << QStringLiteral("%1%2").arg(unitShort).arg(u + 1);
    for (double v : std::span(res.scores).first(static_cast<std::size_t>(g->rows) * g->cols))
        g->values.push_back(std::isfinite(v) ? static_cast<float>(v) : std::nanf(""));
    g->highlight.assign(g->values.size(), 0);
    g->rowAxis = path ? QObject::tr("sender's layer") : perPosition ? (groups ? QObject::tr("layer, key/value group") : QObject::tr("layer, head")) : QObject::tr("layer");
    g->colAxis = path ? QObject::tr("sender head") : residual || perPosition ? QObject::tr("position (clean→corrupted token where they differ)")
                                         : (groups ? QObject::tr("key/value group") : QObject::tr("head"));
    g->valueLabel = r.request.noising ? QObject::tr("noising: share of the clean metric kept (1 clean, 0 corrupted)")
                                      : QObject::tr("denoising: share of the clean metric restored (1 clean, 0 corrupted)");
    g->diverging = true;
    g->labelChars = 14;
    const QString progress = r.running   ? QObject::tr(" · %1 of %2").arg(r.done).arg(r.total)
                             : res.partial ? QObject::tr(" · cancelled: blank cells not run")
                             : res.skipped ? QObject::tr(" · coarse to fine")
                                           : QString();
    g->title = QObject::tr("%1 · %2 · metric clean %3, corrupted %4%5")
                   .arg(r.model ? r.model->displayName : QString(), patchedWhat(r.request))
                   .arg(res.clean, 0, 'f', 2)
                   .arg(res.corrupt, 0, 'f', 2)
                   .arg(progress);
    PaperFigure f;
    f.number = 0;
    f.name = r.request.mode == PatchingRequest::Mode::Path ? QObject::tr("Path patching") : QObject::tr("Activation patching");
    f.title = g->title;
    f.values = !perPosition && !residual;
    f.grids.push_back(std::move(g));
    return f;
}

PatchingCell patchingCellAt(const PatchingResult& r, int row, int col)
{
    const auto& res = r.result;
    if (res.axes.size() == 2 && res.axes[1] == "position")
        return {};
    const bool perPosition = res.axes.size() == 3;
    const int units = res.shape[1];
    const int layer = perPosition ? row / units : row;
    const int unit = perPosition ? row % units : col;
    const bool group = res.axes[1] == "group";
    const int perGroup = group && r.model ? r.model->info().heads / std::max(1, r.model->info().kvHeads) : 1;
    return {layer, unit * perGroup};
}

PaperFigure promptPairFigure(widgets::GridDataPtr clean, widgets::GridDataPtr corrupt, const QString& modelName,
                             int layer, int head)
{
    auto named = [](widgets::GridDataPtr g, const QString& which) {
        auto copy = std::make_shared<widgets::GridData>(*g);
        copy->title = which + QStringLiteral(" · ") + g->title;
        return widgets::GridDataPtr(copy);
    };
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Both prompts");
    f.title = QObject::tr("%1 · %2 on the clean and the corrupted prompt").arg(modelName, headLabel(layer, head));
    f.grids = {named(clean, QObject::tr("clean")), named(corrupt, QObject::tr("corrupted"))};
    return f;
}

} // namespace attnscope::app
