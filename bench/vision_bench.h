// The vision benchmark (docs/performance.md, "Vision transformers"): a random model of a real shape on an image of a
// given size, captured with every head kept, and one query's attention row recomputed as the image view does on a click.
#pragma once

#include <string>

namespace attnscope::bench {

int visionCapture(const std::string& shape, int imageSide, int threads, int rounds);

} // namespace attnscope::bench
