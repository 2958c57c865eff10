// Builds the head overview's cached thumbnails (one small image per layer x head) from a text capture.
// Pure function of its inputs; runs on the compute threads.
#pragma once

#include "attention/attention_math.h"
#include "run/text_capture.h"
#include "thumbnail_data.h"

namespace attnscope::app {

// Thumbnails of the given segment (-1 = the automatic one) with the chosen score terms (raw scores in a diverging
// map), at most `maxSide` pixels a side.
widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, int segment,
                                          const core::TermSelection& terms = {}, int maxSide = 64);

} // namespace attnscope::app
