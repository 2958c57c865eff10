// A vision model's run over an image named in the text box: decoded (Qt), preprocessed as the model folder's
// preprocessor_config.json says, and captured as the token stream of its special tokens and patches, so every grid,
// rollout and atlas view works on it as on a text.
#pragma once

#include "image/preprocess.h"
#include "run/text_capture.h"

#include <QString>

#include <memory>

namespace attnscope::app {

struct ImageCapture {
    std::shared_ptr<const core::TextCapture> capture;
    std::shared_ptr<const core::Image8> seen; // the picture as the model read it (resized, cropped)
    int rows = 0, cols = 0;                   // its patch grid
    int specialTokens = 0;                    // tokens before the patches (CLS, DIST, registers)
    // A vision-language model's picture inside the prompt: the capture token its first cell is (the cells follow
    // row-major); -1 for a vision model, whose patches follow its special tokens.
    int firstCell = -1;
    bool inPrompt() const { return firstCell >= 0; }
    int patchOffset() const { return inPrompt() ? firstCell : specialTokens; }
    QString prediction;                       // an image classifier's best class and probability, or empty
};

// The picture a model folder brings (image.png, else the first sample*.png, *.png or *.jpg by name), or "".
QString modelPicture(const QString& modelFolder);

// `path` is absolute or relative to `modelFolder`. Throws core::Error naming the file (no such image, not an image,
// no preprocessor_config.json, a size the model cannot take).
ImageCapture captureImage(const core::AttentionModel& model, const QString& modelFolder, const QString& path,
                          core::CaptureOptions options);

} // namespace attnscope::app
