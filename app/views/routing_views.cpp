// routingGrid.
#include "views/routing_views.h"

#include "views/grid_builder.h"

#include <QObject>

namespace attnscope::app {

widgets::GridDataPtr routingGrid(const core::TextRouting& r, const core::TextCapture& capture, int layer,
                                 const QString& modelName)
{
    if (layer < 0 || layer >= r.layers || r.probs[static_cast<std::size_t>(layer)].empty()) // a dense layer routes nothing
        return nullptr;
    auto g = std::make_shared<widgets::GridData>();
    g->rows = r.tokens;
    g->cols = r.experts;
    const auto& probs = r.probs[static_cast<std::size_t>(layer)];
    g->values.assign(probs.begin(), probs.end());
    g->highlight.assign(g->values.size(), 0);
    for (int t = 0; t < r.tokens; ++t) {
        const int position = r.firstPosition + t;
        g->rowLabels << tokenLabel(capture.tokens[static_cast<std::size_t>(position)]);
        g->rowPositions.push_back(position);
        for (int k = 0; k < r.used; ++k) {
            const int e = r.ids[static_cast<std::size_t>(layer)][static_cast<std::size_t>(t) * r.used + k];
            g->highlight[static_cast<std::size_t>(t) * r.experts + e] = 1;
        }
    }
    for (int e = 0; e < r.experts; ++e) {
        g->colLabels << QObject::tr("E%1").arg(e + 1);
        g->colPositions.push_back(-1); // an expert, not a token: no distance to the row's token
    }
    g->title = QObject::tr("%1 · layer %2 · router: %3 of %4 experts per token (outlined)")
                   .arg(modelName)
                   .arg(layer + 1)
                   .arg(r.used)
                   .arg(r.experts);
    g->valueLabel = QObject::tr("router probability");
    g->rowAxis = QObject::tr("token");
    g->colAxis = QObject::tr("expert");
    return g;
}

} // namespace attnscope::app
