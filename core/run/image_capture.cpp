// capturePicture.
#include "run/image_capture.h"

#include "model/vision.h"

namespace attnscope::core {

std::shared_ptr<const TextCapture> capturePicture(const VisionModel& model, std::shared_ptr<const PixelValues> pixels,
                                                  CaptureOptions options)
{
    const auto labels = model.tokenLabels(pixels->height, pixels->width);
    std::vector<Token> tokens;
    tokens.reserve(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i)
        tokens.push_back(Token{static_cast<std::int32_t>(i), labels[i], 0, 0});
    options.run.image = std::move(pixels);
    return captureText(model, std::move(tokens), options);
}

} // namespace attnscope::core
