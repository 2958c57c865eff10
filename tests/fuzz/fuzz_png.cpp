// Fuzz harness: a PNG picture (the command line's reader) and the preprocessing of what it decodes.
#include "image/png_reader.h"
#include "image/preprocess.h"
#include "util/error.h"

#include <span>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const auto image = core::decodePng(std::span(data, size), "fuzz.png");
        core::Preprocessor p; // a small resize and crop keep every input quick
        p.shortestEdge = 8;
        p.centerCrop = true;
        p.cropHeight = p.cropWidth = 8;
        if (image.width >= 1 && image.height >= 1 && static_cast<std::int64_t>(image.width) * image.height <= 1 << 20)
            (void)core::preprocessImage(image, p);
    } catch (const core::Error&) {
    }
    return 0;
}
