// Runs a model over a tokenized text and keeps what recomputes any site's attention exactly: per segment and site the
// queries and keys the scores came from (Transformer-XL: also its relative encodings and biases; T5: its position
// bias). A long text costs [tokens, (heads + kv heads) x head size] floats per layer instead of [heads, tokens,
// tokens]; grids, thumbnails and profiles are computed from it when asked (attention_grid.h). An edited text reuses
// the unchanged prefix of the previous capture: whole segments before the first change, and for causal models the part
// of the changed segment before it (its key/value cache).
//
// Every model is captured so: the text is the run's segment stream (a decoder's text, an encoder-decoder model's
// target), and the streams read whole beside it (an encoder-decoder model's source) travel with the capture's options,
// their tokens kept for labels. A site over a read stream (the encoder's self-attention) is recorded in the segment
// where the run read it (the first) and found there by every later one.
#pragma once

#include "attention/attention_scores.h"
#include "model/attention_model.h"
#include "tokenize/tokenizer.h"

#include <functional>
#include <memory>
#include <vector>

namespace attnscope::core {

// A site's learned position bias as the forward built it (T5's buckets): values [heads, width] by offset.
struct PositionBiasTable {
    std::vector<float> values;
    std::vector<std::int32_t> buckets;
    PositionBias view; // points into the vectors above (the table is never copied, only shared)
};

// One site of one segment, in pages shared with the capture an edit came from.
struct SiteRecord {
    bool present = false; // the segment ran this site (a site over a read stream runs in the first segment only)
    int qlen = 0, klen = 0, mlen = 0; // the site's shape: the segment's for a self-site over the segment stream
    RowPages queries;        // [qlen, heads * headDim], not scaled (rotary: rotated)
    RowPages keys;           // [klen, kvHeads * headDim], memory / cached keys first
    RowPages relative;       // Transformer-XL: [klen, heads * headDim], row r = distance r
    std::vector<float> u, v; // Transformer-XL: [heads * headDim]
    // The keys each query sees in this site when they differ from the segment's (a sliding layer among global ones,
    // Gemma; a cross-attention site over a source); empty: SegmentCapture::spans.
    std::vector<VisibleSpan> spans;
    std::shared_ptr<const PositionBiasTable> positionBias; // null: none
    std::size_t bytes() const;
};

// One segment. Keys: mlen memory positions then qlen current ones; key j is the token at absolute position
// firstPosition - mlen + j.
struct SegmentCapture {
    std::int64_t firstPosition = 0;
    int qlen = 0, mlen = 0, klen = 0;
    std::vector<VisibleSpan> spans; // [qlen]: the keys each query sees
    std::vector<SiteRecord> sites;  // by ModelInfo::sites index
    bool masked(int query, int key) const
    {
        const auto& s = spans[static_cast<std::size_t>(query)];
        return key < s.lo || key >= s.lo + s.len;
    }
    std::size_t bytes() const;
};

// A stream read whole beside the segments (an encoder-decoder model's source): its text and tokens as the model reads
// them (special tokens included).
struct StreamText {
    std::string text;
    std::vector<Token> tokens;
};

struct TextCapture {
    ModelInfo model;
    std::string text; // the UTF-8 text the token spans refer to (the segment stream's)
    std::vector<Token> tokens;
    // Every stream by ModelInfo::streams index but the segment stream's (whose are `text` and `tokens`): the read
    // streams' text and tokens, empty where the run read none.
    std::vector<StreamText> streams;
    std::vector<std::shared_ptr<const SegmentCapture>> segments; // shared with the capture an edit came from
    int segmentLen = 0;
    int memLen = 0;
    float scoreScale = 1.0f;  // 1/sqrt(head size), as the model computed it
    int reusedTokens = 0;     // leading tokens whose keys came from the previous capture (0: computed afresh)
    // A text pair (encoders): `text` is A, a line break, B; tokens from secondText on are B's (-1: one text).
    int secondText = -1;
    std::vector<std::int32_t> tokenTypes; // per token (a pair's B: 1 where the model tells them apart); empty: all 0
    std::shared_ptr<const PixelValues> image; // a vision model's picture (its tokens are its patches); null for text
    std::shared_ptr<const AudioFeatures> audio; // a speech model's recording (its source); null otherwise
    std::vector<std::uint8_t> padding;    // per token, 1 = padding no query sees (encoders); empty: none
    // The logits after the last token (causal models with a next-token head; empty otherwise): the run computed them
    // for its last row, so the next token of a generation costs no second forward.
    std::vector<float> lastLogits;

    bool hasTerms() const { return model.hasRelativeTerms; }
    const SegmentCapture& segment(int s) const; // throws Error(BadInput) when out of range
    // Site `site`'s record for segment s: the segment's own, or for a site over a read stream the segment that ran it.
    // Throws Error(BadInput) for a site out of range or never run.
    const SiteRecord& record(int s, int site) const;
    // The tokens of a stream (ModelInfo::streams index): the segment stream's are `tokens`.
    const std::vector<Token>& streamTokens(int stream) const;
    // The segment holding token `position` (0-based); throws Error(BadInput) when there is no such token.
    int segmentOfToken(int position) const;
    // The token ids of segment s, and the settings the capture ran with (memory, token types, padding, picture): what
    // runs a segment again exactly.
    std::vector<std::int32_t> segmentIds(int segment) const;
    RunOptions runOptions() const;
    // Where segment s, site `site`'s scores come from (pointers into this capture). For a single-stream model the
    // site is the layer.
    ScoreInputs inputs(int segment, int site) const;
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
    // The streams read whole beside the segments, by ModelInfo::streams index (an encoder-decoder model's source: its
    // tokens as sourceTokens gives them); the run's RunOptions::source is made from them.
    std::vector<StreamText> streams;
    // Refuse texts whose records would exceed this (clear error); 0: half of the memory available now.
    std::size_t maxBytes = 0;
    // Model states kept for resuming after an edit, newest segments first, up to this many bytes.
    std::size_t stateBudget = std::size_t(1) << 30;
    // The capture of the text before an edit: its unchanged prefix is reused when it came from the same model
    // and settings.
    std::shared_ptr<const TextCapture> previous;
    // Fraction done (0..1), called on the running thread after every layer.
    std::function<void(double)> progress;
    // Called on the running thread when `site` of `segment` is complete. `partial()` makes a capture of what is
    // finished (earlier segments whole, this one up to `site`; every token and the text already there), so a view
    // of that site can be shown, or exported, before the run ends: on a big model the first layer is ready in a
    // fraction of the forward pass. The hook may stop the run through `run.stop`.
    using PartialCapture = std::function<std::shared_ptr<const TextCapture>()>;
    std::function<void(int segment, int site, const PartialCapture& partial)> layerDone;
};

// What capturing `tokens` tokens keeps in memory beside the mapped weights (records, cache, one segment's activations):
// the figure a text is refused with, and the one the app shows.
std::uint64_t estimateCaptureBytes(const ModelInfo& info, std::size_t tokens, int segmentLen, int memLen);

// Tokens must be non-empty (Error(BadInput) "text tokenizes to nothing" otherwise). Refuses (Error(BadInput), with the
// figures) a text whose records would not fit beside the weights.
// `text`: what the tokens were typed as, when they came from a text (a picture prompt's); kept as TextCapture::text.
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, std::vector<Token> tokens,
                                                const CaptureOptions& options, std::string text = {});
// A typed text as the model reads it in stream `stream`: the stream's start token then the text's tokens (a decoder's
// target), or the tokenizer's own special tokens around them (encodeWithSpecial: Llama's BOS, T5's </s>).
// Error(BadInput) for a read stream (a source) that tokenizes to nothing.
std::vector<Token> streamTokens(const ModelInfo& info, int stream, const Tokenizer& tokenizer, std::string_view text);
// The source of an encoder-decoder model, typed, as CaptureOptions::streams holds it (empty when the model reads none).
std::vector<StreamText> typedSource(const ModelInfo& info, const Tokenizer& tokenizer, const std::string& text);

// Tokenizes `text` as the model sees it in its segment stream (streamTokens) and captures it; the capture keeps the
// text.
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, const Tokenizer& tokenizer,
                                                std::string text, const CaptureOptions& options);

// Runs segments of a captured text again, exactly as the capture ran them: from the newest state it kept before
// `segment` (or from the start), through `segment`; `observer` sees each (the last is the one asked for). For what the
// capture does not keep: logits, every layer's residual stream.
void rerunSegment(const AttentionModel& model, const TextCapture& capture, int segment, AttentionObserver& observer,
                  const StopToken* stop = nullptr);

// The segment stream continued greedily after `tokens`, one token a step, each step's capture continuing the last
// one's through the model's cache (one new row a step, as generation does): at most `count` tokens, ending where the
// last row writes the stream's end token (an encoder-decoder model's </s>: it is not appended, finishedWriting says so). `step(capture, written)` sees every capture but the last
// before its next token is chosen; new tokens are spelled by `tokenizer` and their text appended to `text` (what the
// given tokens' spans refer to), so the capture's text is what the stream says. Returns the last capture.
std::shared_ptr<const TextCapture> writeGreedily(const AttentionModel& model, std::vector<Token> tokens, int count,
                                                 const Tokenizer& tokenizer, CaptureOptions options,
                                                 const std::function<void(const std::shared_ptr<const TextCapture>&, int)>& step = {},
                                                 std::string text = {});

// The capture's last row writes its stream's end token (greedily): a written target is complete.
bool finishedWriting(const TextCapture& capture);

// A text pair as an encoder reads it ([CLS] A [SEP] B [SEP], token types from the tokenizer's pair template); the
// capture's text is A, a line break and B, and TextCapture::secondText marks where B's tokens start.
std::shared_ptr<const TextCapture> captureTextPair(const AttentionModel& model, const Tokenizer& tokenizer,
                                                    const std::string& a, const std::string& b, CaptureOptions options);

} // namespace attnscope::core
