// Plain data that the compute threads hand to the GUI thread: immutable snapshots behind shared_ptr to const.
#pragma once

#include "analysis/attention_grid.h"
#include "analysis/token_predictions.h"
#include "analysis/head_atlas.h"
#include "analysis/expert_routing.h"
#include "analysis/relpos_scan.h"
#include "analysis/activation_patching.h"
#include "analysis/head_contexts.h"
#include "analysis/head_explanation.h"
#include "data/paper_figure.h"
#include "data/model_bundle.h"
#include "image/image_capture.h"
#include "run/text_capture.h"
#include "analysis/cross_alignment.h"

#include <memory>

namespace attnscope::app {

using TextCapturePtr = std::shared_ptr<const core::TextCapture>;
using ScanResultPtr = std::shared_ptr<const core::ScanResult>;

// What a text request produces: what recomputes the text's attention, for the model it was computed with. Grids,
// thumbnails and profiles are separate requests, computed from it when a view asks. An encoder-decoder model's result
// is its target's capture, its source a stream of the capture; a generation delivers one per written token.
struct TextResult {
    ModelBundlePtr model;
    TextCapturePtr capture;
    // A vision model's run: the picture it read and its patch grid (the capture's tokens are its special tokens,
    // then the patches row-major); a vision-language model's prompt: its first picture and where its cells are
    // (ImageCapture::firstCell); null for text.
    std::shared_ptr<const ImageCapture> image;
    bool running = false; // a generation's step: more tokens follow
    int written = 0;      // tokens the model wrote at the end of the stream (generation); the rest were given
    // The cross-attention heads ranked by how they align (a model with cross-attention, once the run is complete).
    std::vector<core::AlignmentHead> alignmentHeads;
};
using TextResultPtr = std::shared_ptr<const TextResult>;

// A mixture-of-experts model's routing of one segment of a text.
// Rollout of a picture's tokens (the Image dock's "Rollout"), for the text result it was computed from.
struct ImageRollout {
    TextResultPtr text;
    core::AttentionGrid rollout;
};
using ImageRolloutPtr = std::shared_ptr<const ImageRollout>;

// How one head computes one query's row, for the mechanism view: the core's explanation, for the text it came from.
struct ExplanationResult {
    TextResultPtr text;
    core::HeadExplanation explanation;
};
using ExplanationResultPtr = std::shared_ptr<const ExplanationResult>;

struct RoutingResult {
    TextResultPtr text;
    int segment = 0;
    core::TextRouting routing;
};
using RoutingResultPtr = std::shared_ptr<const RoutingResult>;

// The head atlas: a row per head, and the heads' profile distances in clustered order (empty without a profile).
struct AtlasResult {
    core::HeadAtlas atlas;
    std::vector<double> distances; // [N, N], N = layers * heads
    std::vector<int> order;        // heads, similar ones together
    QString source;                // what the scan columns come from ("corpus scan of valid.txt", "current text")
    std::vector<int> windows;      // per layer: its sliding window (0: global), from the model's layer rules
};
using AtlasResultPtr = std::shared_ptr<const AtlasResult>;

// The fillers of every [MASK] / <mask> of a text, as the text's tokenizer spells them.
struct MaskedFillResult {
    TextResultPtr text;
    std::vector<core::MaskedFill> fills;
    std::vector<QStringList> labels; // per fill, its top tokens' pieces
};
using MaskedFillResultPtr = std::shared_ptr<const MaskedFillResult>;

// A causal model's logits for the token after one position of a text (the panel applies the temperature).
struct NextTokenResult {
    TextResultPtr text;
    int position = 0;          // token index whose successor is predicted
    std::vector<float> logits; // [vocab]
    std::int32_t actual = -1;  // the token that follows in the text, -1 at the end
};
using NextTokenResultPtr = std::shared_ptr<const NextTokenResult>;
using FigurePtr = std::shared_ptr<const PaperFigure>;

// Activation or path patching as the window asks for it: prompts, answers, senders and receivers as typed
// (core/run/patch_prompts.h reads them).
struct PatchingRequest {
    enum class Mode { Components, Path }; // every component of one kind patched in turn; or paths from senders
    Mode mode = Mode::Components;
    QString clean, corrupt;
    QString answer, wrong; // words of one token, or token ids
    bool noising = false;
    // Components.
    core::PatchComponent component = core::PatchComponent::HeadOutput;
    bool perPosition = false;
    double coarseToFine = 0; // > 0: layers first, then the heads and positions reaching it (core::PatchRequest)
    // Path: senders "L.H, ..." (empty: every head before the first receiver) into receivers "L.H, ..." (from 1).
    QString senders, receivers;
    core::PatchComponent receiverInput = core::PatchComponent::Queries; // Queries, Keys or Values
    bool receiverHeadOnly = false;
    bool freezeMlps = false; // the strict direct path (core::PathPatchRequest::freezeMlps)
};

// A patching run's scores so far (running) or all of them, with the prompts' tokens for the heatmap's labels.
struct PatchingResult {
    ModelBundlePtr model;
    PatchingRequest request;
    core::PatchResult result;
    std::vector<std::int32_t> cleanIds, corruptIds;
    QStringList cleanTokens, corruptTokens;
    bool running = false;
    int done = 0, total = 0;
};
using PatchingResultPtr = std::shared_ptr<const PatchingResult>;

// Every head over a corpus (a file, or the text on screen when the path is empty).
struct HeadContextsRequest {
    QString corpusPath;
    QString text;
    core::HeadContextOptions options;
};
struct HeadContextsResult {
    ModelBundlePtr model;
    HeadContextsRequest request;
    core::HeadContexts contexts;
};
using HeadContextsResultPtr = std::shared_ptr<const HeadContextsResult>;

} // namespace attnscope::app
