// Fuzz harness: preprocessor_config.json (a vision model's resize, crop, rescale and normalisation) read and applied
// to a small picture, as a run on an image does.
#include "fuzz_support.h"
#include "image/preprocess.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "preprocessor_config.json");
    try {
        const auto p = core::parsePreprocessor(core::readJsonFile(path), path);
        core::Image8 image; // 12 x 9 pixels of a gradient
        image.width = 12;
        image.height = 9;
        image.rgb.resize(static_cast<std::size_t>(image.width) * image.height * 3);
        for (std::size_t i = 0; i < image.rgb.size(); ++i)
            image.rgb[i] = static_cast<std::uint8_t>(i * 7);
        (void)core::preprocessImage(image, p);
    } catch (const core::Error&) {
    }
    return 0;
}
