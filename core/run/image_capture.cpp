// capturePicture.
#include "run/image_capture.h"

#include "image/png_reader.h"
#include "model/vision.h"
#include "util/error.h"

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
    // A picture is one segment of as many tokens as its own patch grid makes (another size or aspect than the
    // config's image_size, with positions interpolated), never the default segment of the config's size.
    options.segmentLen = static_cast<int>(tokens.size());
    return captureText(model, std::move(tokens), options);
}

PictureCapture capturePngFile(const AttentionModel& model, const std::string& modelFolder, const std::string& path,
                              CaptureOptions options)
{
    const VisionModel& vision = asVision(model);
    const Preprocessor p = readPreprocessor(modelFolder);
    auto seen = std::make_shared<Image8>(preparedImage(readPng(path), p));
    auto pixels = std::make_shared<PixelValues>(pixelValuesOf(*seen, p));
    return {capturePicture(vision, std::move(pixels), std::move(options)), std::move(seen)};
}

} // namespace attnscope::core
