// Builds the model comparison: several models on the same first tokens of a text, one grid per head of a layer.
#pragma once

#include "comparison_data.h"
#include "data/model_bundle.h"

#include <vector>

namespace attnscope::app {

// `layer` is 0-based (models with fewer layers show their last). Throws core::Error naming a model that fails.
widgets::ComparisonPtr buildComparison(const std::vector<ModelBundlePtr>& models, const QString& text, int layer,
                                       int maxTokens);

} // namespace attnscope::app
