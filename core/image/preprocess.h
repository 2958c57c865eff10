// Image preprocessing as Hugging Face's image processors do it (ViTImageProcessor, DeiTImageProcessor,
// BitImageProcessor for DINOv2, CLIPImageProcessor): resize with Pillow's resampling (reproduced bit for bit in integer
// arithmetic), center crop, rescale to 0..1, normalise per channel; what preprocessor_config.json says. Decoding an
// image file is the caller's (the app uses Qt); this takes 8-bit RGB.
#pragma once

#include "image/pixels.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

// 8-bit RGB, row-major, [height, width, 3].
struct Image8 {
    int height = 0, width = 0;
    std::vector<std::uint8_t> rgb;
};

struct Preprocessor {
    // LlavaImageProcessor's do_pad: the picture first padded to a square of its longer side, centred, with the colour
    // int(255 * image_mean) (LLaVA-1.5's expand2square).
    bool padToSquare = false;
    std::uint8_t padColour[3] = {0, 0, 0};
    bool resize = true;
    // Either an exact size (height x width, the aspect ratio not kept) or the shorter side's length.
    int height = 0, width = 0, shortestEdge = 0;
    int resample = 3; // Pillow's codes: 2 bilinear, 3 bicubic
    bool centerCrop = false;
    int cropHeight = 0, cropWidth = 0;
    bool rescale = true;
    double rescaleFactor = 1.0 / 255.0;
    bool normalize = true;
    float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
    std::string source; // the preprocessor_config.json it was read from, named when a picture cannot be prepared
};

// Reads preprocessor_config.json (Error(BadConfig) naming the file and key).
Preprocessor parsePreprocessor(const nlohmann::json& j, const std::string& file);
// `folder`/preprocessor_config.json; Error(NotFound) when the folder has none.
Preprocessor readPreprocessor(const std::string& folder);

// Pillow's Image.resize of an 8-bit image with resample 2 (bilinear) or 3 (bicubic): separable, horizontal pass
// first into 8 bits, then vertical; each pass's filter widened by the scale when shrinking, 22-bit integer weights.
Image8 pillowResize(const Image8& in, int width, int height, int resample);
// The picture centred in a square of its longer side, the rest `colour` (offset (long - short) / 2).
Image8 padToSquare(const Image8& in, const std::uint8_t colour[3]);
// The centred height x width window (top = (H - height) / 2, left = (W - width) / 2).
Image8 centerCrop(const Image8& in, int height, int width);
// The picture the model sees: resized and cropped, still 8-bit (what an image view shows under its heat map).
Image8 preparedImage(const Image8& image, const Preprocessor& p);
// Rescale (in double, then float32) and normalise (float32), channels first.
PixelValues pixelValuesOf(const Image8& prepared, const Preprocessor& p);
// The whole chain: pixelValuesOf(preparedImage(image)).
PixelValues preprocessImage(const Image8& image, const Preprocessor& p);
// The size the resize step makes of an image (height, width).
std::pair<int, int> resizedSize(const Preprocessor& p, int height, int width);

} // namespace attnscope::core
