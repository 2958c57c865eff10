// The mechanism view's steps ("How this head computes") from the core's explanation of one head and query
// (analysis/head_explanation.h): input, query (rotation), keys, q ⊙ k, scores, softmax, weighted values, W_O, residual
// and MLP, prediction. Each step a title, a sentence for the class, and its vectors and numbers.
#pragma once

#include "analysis/head_explanation.h"
#include "mechanism_data.h"
#include "run/text_capture.h"

#include <QString>

#include <functional>

namespace attnscope::app {

// `pieceOf` spells a predicted token id (the model's tokenizer).
widgets::MechanismDataPtr mechanismSteps(const core::HeadExplanation& e, const core::TextCapture& capture,
                                         const QString& modelName, const std::function<QString(std::int32_t)>& pieceOf);

} // namespace attnscope::app
