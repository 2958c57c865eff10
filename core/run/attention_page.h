// A self-contained interactive HTML page of a captured text's attention: the token grid of a head, a head and layer
// selector, and the text coloured by the attention of the token under the pointer. One file, its script and styles
// inline, nothing fetched, so it opens offline in any browser. Only the chosen layers and heads are written, each
// probability quantised to a byte (1/255) and the near-zero ones left out, so a 512-token, 12-layer page stays a few MB.
#pragma once

#include "run/text_capture.h"

#include <string>
#include <vector>

namespace attnscope::core {

struct PageOptions {
    std::vector<int> layers; // from 0; empty: every layer
    std::vector<int> heads;  // from 0; empty: every head
    int segment = -1;        // -1: the last segment
    std::string title;       // empty: the model and the token count
};

// The page as HTML text. Error(BadInput) for a layer, head or segment that does not exist.
std::string attentionPageHtml(const TextCapture& capture, const std::string& modelName, const PageOptions& options = {});

} // namespace attnscope::core
