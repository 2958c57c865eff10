// A self-contained interactive HTML page of attention: the token grid of a head, a head, layer (and site) selector,
// the tokens coloured by the attention of the token under the pointer, and where the model has them the picture with
// that token's attention over its patches (vision) or the alignment of target and source tokens (cross-attention of
// an encoder-decoder model). One file, its script and styles inline, nothing fetched, so it opens offline in any
// browser. Only the chosen layers and heads are written, each probability quantised to a byte (1/255), the near-zero
// ones left out and the rest Huffman-coded per head, so a 512-token, 12-layer page stays a few MB.
#pragma once

#include "image/preprocess.h"
#include "run/text_capture.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

struct PageOptions {
    std::vector<int> layers; // from 0; empty: every layer
    std::vector<int> heads;  // from 0; empty: every head
    int segment = -1;        // -1: the last segment
    std::string title;       // empty: the model and the token count
    // A vision capture's picture as the model read it (resized, cropped; before normalising). Null: drawn from the
    // capture's pixel values, each channel stretched to 0..255.
    std::shared_ptr<const Image8> picture;
};

// The page of a captured text, picture or translation: every site kind the model has (an encoder-decoder model's
// cross-attention first, then its encoder and decoder) with the chosen layers it has, over every stream's tokens.
// Error(BadInput) for a layer, head or segment that does not exist.
std::string attentionPageHtml(const TextCapture& capture, const std::string& modelName, const PageOptions& options = {});

} // namespace attnscope::core
