// Runs a model over a tokenized text and keeps what recomputes any head's attention exactly: per segment and layer
// the queries and keys the scores came from (Transformer-XL: also its relative encodings and biases). A long text
// costs [tokens, (heads + kv heads) x head size] floats per layer instead of [heads, tokens, tokens]; grids,
// thumbnails and profiles are computed from it when asked (attention_grid.h). An edited text reuses the unchanged
// prefix of the previous capture: whole segments before the first change, and for causal models the part of the
// changed segment before it (its key/value cache).
#pragma once

#include "attention/attention_scores.h"
#include "model/attention_model.h"
#include "tokenize/tokenizer.h"

#include <functional>
#include <memory>
#include <vector>

namespace attnscope::core {

// One layer of one segment, in pages shared with the capture an edit came from.
struct LayerRecord {
    RowPages queries;        // [qlen, heads * headDim], not scaled (rotary: rotated)
    RowPages keys;           // [klen, kvHeads * headDim], memory / cached keys first
    RowPages relative;       // Transformer-XL: [klen, heads * headDim], row r = distance r
    std::vector<float> u, v; // Transformer-XL: [heads * headDim]
    // The keys each query sees in this layer when they differ from the segment's (a sliding layer among global ones,
    // Gemma); empty: SegmentCapture::spans.
    std::vector<VisibleSpan> spans;
    std::size_t bytes() const;
};

// One segment. Keys: mlen memory positions then qlen current ones; key j is the token at absolute position
// firstPosition - mlen + j.
struct SegmentCapture {
    std::int64_t firstPosition = 0;
    int qlen = 0, mlen = 0, klen = 0;
    std::vector<VisibleSpan> spans; // [qlen]: the keys each query sees
    std::vector<LayerRecord> layers;
    bool masked(int query, int key) const
    {
        const auto& s = spans[static_cast<std::size_t>(query)];
        return key < s.lo || key >= s.lo + s.len;
    }
    std::size_t bytes() const;
};

struct TextCapture {
    ModelInfo model;
    std::string text; // the UTF-8 text the token spans refer to
    std::vector<Token> tokens;
    std::vector<std::shared_ptr<const SegmentCapture>> segments; // shared with the capture an edit came from
    int segmentLen = 0;
    int memLen = 0;
    float scoreScale = 1.0f;  // 1/sqrt(head size), as the model computed it
    int reusedTokens = 0;     // leading tokens whose keys came from the previous capture (0: computed afresh)
    // A text pair (encoders): `text` is A, a line break, B; tokens from secondText on are B's (-1: one text).
    int secondText = -1;
    std::vector<std::int32_t> tokenTypes; // per token (a pair's B: 1 where the model tells them apart); empty: all 0
    std::shared_ptr<const PixelValues> image; // a vision model's picture (its tokens are its patches); null for text
    std::vector<std::uint8_t> padding;    // per token, 1 = padding no query sees (encoders); empty: none
    // The logits after the last token (causal models with a next-token head; empty otherwise): the run computed them
    // for its last row, so the next token of a generation costs no second forward.
    std::vector<float> lastLogits;

    bool hasTerms() const { return model.hasRelativeTerms; }
    const SegmentCapture& segment(int s) const; // throws Error(BadInput) when out of range
    // The segment holding token `position` (0-based); throws Error(BadInput) when there is no such token.
    int segmentOfToken(int position) const;
    // The token ids of segment s, and the settings the capture ran with (memory, token types, padding, picture): what
    // runs a segment again exactly.
    std::vector<std::int32_t> segmentIds(int segment) const;
    RunOptions runOptions() const;
    // Where segment s, layer l's scores come from (pointers into this capture).
    ScoreInputs inputs(int segment, int layer) const;
    std::size_t bytes() const; // memory held (records and kept states), for limits and messages

    // Internal to captureText: per segment, the model's state after it (null where dropped to bound memory), the
    // model that made the capture and the settings it ran with. Only compared, never dereferenced elsewhere.
    std::vector<std::shared_ptr<const RunState>> endStates;
    const AttentionModel* producer = nullptr;
    std::string runKey;
};

struct CaptureOptions {
    int segmentLen = 0;       // 0: the model's default
    RunOptions run;
    // Refuse texts whose records would exceed this (clear error); 0: half of the memory available now.
    std::size_t maxBytes = 0;
    // Model states kept for resuming after an edit, newest segments first, up to this many bytes.
    std::size_t stateBudget = std::size_t(1) << 30;
    // The capture of the text before an edit: its unchanged prefix is reused when it came from the same model
    // and settings.
    std::shared_ptr<const TextCapture> previous;
    // Fraction done (0..1), called on the running thread after every layer.
    std::function<void(double)> progress;
    // Called on the running thread when `layer` of `segment` is complete. `partial()` makes a capture of what is
    // finished (earlier segments whole, this one up to `layer`; every token and the text already there), so a view
    // of that layer can be shown, or exported, before the run ends: on a big model the first layer is ready in a
    // fraction of the forward pass. The hook may stop the run through `run.stop`.
    using PartialCapture = std::function<std::shared_ptr<const TextCapture>()>;
    std::function<void(int segment, int layer, const PartialCapture& partial)> layerDone;
};

// What capturing `tokens` tokens keeps in memory beside the mapped weights (records, cache, one segment's activations):
// the figure a text is refused with, and the one the app shows.
std::uint64_t estimateCaptureBytes(const ModelInfo& info, std::size_t tokens, int segmentLen, int memLen);

// Tokens must be non-empty (Error(BadInput) "text tokenizes to nothing" otherwise). Refuses (Error(BadInput), with the
// figures) a text whose records would not fit beside the weights.
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, std::vector<Token> tokens,
                                                const CaptureOptions& options);
// Tokenizes `text` as the model sees it by default (encodeWithSpecial: Llama's BOS first) and captures it; the
// capture keeps the text.
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, const Tokenizer& tokenizer,
                                                std::string text, const CaptureOptions& options);

// Runs segments of a captured text again, exactly as the capture ran them: from the newest state it kept before
// `segment` (or from the start), through `segment`; `observer` sees each (the last is the one asked for). For what the
// capture does not keep: logits, every layer's residual stream.
void rerunSegment(const AttentionModel& model, const TextCapture& capture, int segment, AttentionObserver& observer,
                  const StopToken* stop = nullptr);

// A text pair as an encoder reads it ([CLS] A [SEP] B [SEP], token types from the tokenizer's pair template); the
// capture's text is A, a line break and B, and TextCapture::secondText marks where B's tokens start.
std::shared_ptr<const TextCapture> captureTextPair(const AttentionModel& model, const Tokenizer& tokenizer,
                                                    const std::string& a, const std::string& b, CaptureOptions options);

} // namespace attnscope::core
