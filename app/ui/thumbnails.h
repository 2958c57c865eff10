// Builds the head overview's cached thumbnails (one small image per layer x head) from a text capture.
// Pure function of its inputs; may run on any thread.
#pragma once

#include "head_overview_view.h"
#include "run/text_capture.h"

namespace attnscope::app {

// Thumbnails of the given segment (-1 = last), at most `maxSide` pixels a side.
widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, int segment, int maxSide = 64);

} // namespace attnscope::app
