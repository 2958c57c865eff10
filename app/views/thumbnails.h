// Builds the head overview's cached thumbnails (one small image per layer x head) from a text capture.
// Pure function of its inputs; runs on the compute threads.
#pragma once

#include "attention/attention_math.h"
#include "run/text_capture.h"
#include "thumbnail_data.h"
#include "views/view_selection.h"

namespace attnscope::app {

// Thumbnails of the selection's segment (-1 = the automatic one) with its score terms or bands (raw scores in a
// diverging map), at most `maxSide` pixels a side.
widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, const ViewSelection& selection = {},
                                          int maxSide = 64);
// A vision model's heads as maps of the CLS token's attention over the picture's patches (each scaled to its own
// largest patch value), so the heads that look at the object stand out in the overview.
widgets::HeadThumbnailsPtr makeImageThumbnails(const core::TextCapture& capture, int rows, int cols, int specialTokens,
                                               int maxSide = 64);

} // namespace attnscope::app
