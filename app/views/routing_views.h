// The router view of a mixture-of-experts model: one layer's routing of the shown segment as a tokens x experts grid
// (the router's probability in each cell, the experts each token was sent to outlined). Pure function.
#pragma once

#include "analysis/expert_routing.h"
#include "grid_data.h"

#include <QString>

namespace attnscope::app {

widgets::GridDataPtr routingGrid(const core::TextRouting& routing, const core::TextCapture& capture, int layer,
                                 const QString& modelName);

} // namespace attnscope::app
