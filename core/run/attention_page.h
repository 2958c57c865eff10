// A self-contained interactive HTML page of attention: the token grid of a head, a head, layer (and site) selector,
// the tokens coloured by the attention of the token under the pointer, and where the model has them the picture with
// that token's attention over its patches (vision) or the alignment of target and source tokens (cross-attention of
// an encoder-decoder model). One file, its script and styles inline, nothing fetched, so it opens offline in any
// browser. Only the chosen layers and heads are written, each probability quantised to a byte (1/255), the near-zero
// ones left out and the rest Huffman-coded per head, so a 512-token, 12-layer page stays a few MB.
#pragma once

#include "image/preprocess.h"
#include "run/text_capture.h"
#include "run/translation.h"

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

// The page of a captured text or picture. Error(BadInput) for a layer, head or segment that does not exist.
std::string attentionPageHtml(const TextCapture& capture, const std::string& modelName, const PageOptions& options = {});

// The page of an encoder-decoder model's run: every site (encoder, decoder, cross-attention) with its layers (the
// chosen ones that the stack has), the source and target tokens, and the alignment of the cross-attention.
std::string translationPageHtml(const Translation& run, const ModelInfo& info, const std::vector<std::string>& sourceTokens,
                                const std::vector<std::string>& targetTokens, const std::string& modelName,
                                const PageOptions& options = {});

} // namespace attnscope::core
