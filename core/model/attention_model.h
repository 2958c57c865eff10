// The interface every model family implements: run segments, hand each layer's attention to an observer.
#pragma once

#include "model/config.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;

// What a view needs to know about a loaded model.
struct ModelInfo {
    ModelFamily family;
    std::string source;     // folder or file it was opened from (or "builtin:NAME")
    int layers = 0;
    int heads = 0;
    int kvHeads = 0;        // key/value heads: fewer than `heads` with grouped-query attention (query head n uses n / (heads / kvHeads))
    int dModel = 0;
    int dHead = 0;
    int vocabSize = 0;
    int defaultMemLen = 0;   // 0 for models without memory
    int defaultSegmentLen = 0;
    int maxSegmentLen = 0;   // GPT-2: n_positions; Transformer-XL: no architectural limit (a large bound)
    bool hasRelativeTerms = false;
    std::int64_t parameterCount = 0;
    std::string positions;   // the position scheme in words, e.g. "relative (sinusoidal), memory 128"
    std::string weightTypes; // how the weights are stored, e.g. "F16", "BF16, 2 shards", "Q8_0 (22), F32 (8)"
};

// Start of a segment: everything shared by all its layers. Pointers valid only during the callback.
struct SegmentView {
    int segment = 0;
    std::int64_t firstPosition = 0; // absolute token position of query 0 in the whole run
    int qlen = 0;
    int mlen = 0;                   // memory rows seen by this segment (0 for GPT-2)
    int klen = 0;                   // mlen + qlen
    int dModel = 0;
    const float* embedding = nullptr;  // [qlen, dModel], the input of layer 0
    const float* posEmb = nullptr;     // [klen, dModel] (Transformer-XL only): row p = distance klen-1-p, clamped
    const std::uint8_t* mask = nullptr; // [qlen, klen], 1 = key masked for that query
};

// One layer of one segment. Keys are in time order: memory first (oldest first), then the segment.
// Query i sits at key position mlen + i; its relative distance to key j is i + mlen - j.
struct LayerView {
    int segment = 0;
    int layer = 0;
    int heads = 0;
    int qlen = 0;
    int mlen = 0;
    int klen = 0;
    int dModel = 0;
    const float* attnProb = nullptr;    // [heads, qlen, klen], masked entries exactly 0
    // The four score terms (a) q.k, (b) q.R, (c) u.k, (d) v.R, each times 1/sqrt(d_head), [heads, qlen, klen],
    // masked entries 0. Null unless the observer wants terms and the model has them.
    const float* terms[4] = {nullptr, nullptr, nullptr, nullptr};
    const std::uint8_t* mask = nullptr; // [qlen, klen]
    // Rotary models, when the observer wants them: queries and keys after rotation (Hugging Face order), and the
    // scores before softmax (masked entries 0). Query head n uses key head n / (heads / kvHeads).
    int kvHeads = 0;
    int headDim = 0;
    const float* qRot = nullptr;   // [heads, qlen, headDim]
    const float* kRot = nullptr;   // [kvHeads, klen, headDim]
    const float* scores = nullptr; // [heads, qlen, klen], times 1/sqrt(headDim)
    const float* memsIn = nullptr;      // [mlen, dModel] or null
    const float* attnOutput = nullptr;  // [qlen, dModel], family-specific (see the model headers)
    const float* hidden = nullptr;      // [qlen, dModel], layer output
};

// End of a segment (GPT-2 only fills lnF/logits, and only when the observer asks).
struct SegmentEndView {
    int segment = 0;
    int qlen = 0;
    const float* lnF = nullptr;    // [qlen, dModel]
    const float* logits = nullptr; // [qlen, vocab]
    int vocab = 0;
    int dModel = 0;
};

// Receives captured tensors. Called on the thread that runs the model, in order: segment, its layers, end.
class AttentionObserver {
public:
    virtual ~AttentionObserver() = default;
    virtual bool wantTerms() const { return false; }
    virtual bool wantLogits() const { return false; }
    virtual bool wantRotary() const { return false; } // qRot, kRot and scores of rotary models
    virtual void onSegment(const SegmentView&) {}
    virtual void onLayer(const LayerView&) = 0;
    virtual void onSegmentEnd(const SegmentEndView&) {}
};

// Per-run settings; unset values take the model's config defaults.
struct RunOptions {
    std::optional<int> memLen;
    std::optional<bool> sameLength;
    std::optional<int> clampLen;
    const StopToken* stop = nullptr; // checked between segments and layers; throws Error(Cancelled)
};

// The state carried across segments (Transformer-XL memory). Opaque to callers.
class RunState {
public:
    virtual ~RunState() = default;
    std::int64_t tokensSeen = 0;
    int segmentsDone = 0;
};

class AttentionModel {
public:
    virtual ~AttentionModel() = default;
    virtual const ModelInfo& info() const = 0;

    virtual std::unique_ptr<RunState> newState(const RunOptions& options) const = 0;
    // Runs one segment, continuing from `state`. Throws Error(BadInput) for ids out of range or too long.
    virtual void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const = 0;

    // Convenience: the segments in order, from an empty memory.
    void run(const std::vector<std::vector<std::int32_t>>& segments, const RunOptions& options,
             AttentionObserver& observer) const;
    // Splits `ids` into segments of `segmentLen` (last one shorter) and runs them.
    void runSplit(std::span<const std::int32_t> ids, int segmentLen, const RunOptions& options,
                  AttentionObserver& observer) const;
};

} // namespace attnscope::core
