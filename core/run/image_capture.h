// A picture captured as a vision model's token stream: its special tokens and patches as tokens (named CLS, REG1,
// r3c5; ids 0 .. N-1), the pixels travelling with the run. What the window, the dump and the benchmarks capture.
#pragma once

#include "image/pixels.h"
#include "run/text_capture.h"

#include <memory>

namespace attnscope::core {

class VisionModel;

std::shared_ptr<const TextCapture> capturePicture(const VisionModel& model, std::shared_ptr<const PixelValues> pixels,
                                                  CaptureOptions options = {});

} // namespace attnscope::core
