// A picture captured as a vision model's token stream: its special tokens and patches as tokens (named CLS, REG1,
// r3c5; ids 0 .. N-1), the pixels travelling with the run. What the window, the dump and the benchmarks capture.
#pragma once

#include "image/pixels.h"
#include "image/preprocess.h"
#include "run/text_capture.h"

#include <memory>

namespace attnscope::core {

class VisionModel;

std::shared_ptr<const TextCapture> capturePicture(const VisionModel& model, std::shared_ptr<const PixelValues> pixels,
                                                  CaptureOptions options = {});

// A PNG file read, preprocessed as the model folder's preprocessor_config.json says, and captured; with the picture as
// the model read it (resized, cropped, before normalising) for views that draw it. Error(BadInput) naming the model
// when it does not read pictures, the file's errors from the PNG reader.
struct PictureCapture {
    std::shared_ptr<const TextCapture> capture;
    std::shared_ptr<const Image8> seen;
};
PictureCapture capturePngFile(const AttentionModel& model, const std::string& modelFolder, const std::string& path,
                              CaptureOptions options = {});

} // namespace attnscope::core
