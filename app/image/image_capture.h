// A vision model's run over an image named in the text box: decoded (Qt), preprocessed as the model folder's
// preprocessor_config.json says, and captured as the token stream of its special tokens and patches, so every grid,
// rollout and atlas view works on it as on a text.
#pragma once

#include "run/text_capture.h"

#include <QString>

#include <memory>

namespace attnscope::app {

// `path` is absolute or relative to `modelFolder`. Throws core::Error naming the file (no such image, not an image,
// no preprocessor_config.json, a size the model cannot take).
std::shared_ptr<const core::TextCapture> captureImage(const core::AttentionModel& model, const QString& modelFolder,
                                                      const QString& path, core::CaptureOptions options);

} // namespace attnscope::app
