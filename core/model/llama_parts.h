// What LlamaModel's forward carries between its blocks (internal to model/llama*.cpp): the run's state (a key/value
// cache, bands, an ablated head) and one segment's frame (its shape, masks, rotary tables, the observer's buffers and
// the layer's working rows).
#pragma once

#include "model/kv_cache.h"
#include "model/llama.h"
#include "model/rotary.h"
#include "model/segment_driver.h"
#include "util/layer_buffer.h"

#include <optional>

namespace attnscope::core {

class LlamaModel::State final : public RunState {
public:
    int memLen = 0;
    std::optional<BandSplit> bands;
    std::optional<RunOptions::HeadRef> ablate;
    KvCache cache; // keys before rotation, and values, [rows, KV*d] per layer
    // RunOptions::placed, and the run positions where its rows went so far (the k-th entry took row k).
    std::shared_ptr<const RunOptions::PlacedRows> placed;
    std::vector<std::int64_t> placedAt;
    std::unique_ptr<RunState> clone() const override { return std::make_unique<State>(*this); }
    std::size_t bytes() const override { return cache.bytes(); }
};

struct LlamaModel::Segment {
    int q = 0, m = 0, k = 0; // new tokens, cached ones before them, keys
    // Every layer slides alike (Mistral) or none does: one visibility; Gemma mixes them: `global` is the segment's
    // (what the observer's segment view holds) and each sliding layer gets `local`.
    bool mixed = false;
    Visibility global, local;
    RotaryTable table, localTable;
    int bandCount = 0;
    AttentionCapture keep;
    std::unique_ptr<LayerBuffer> bandTerms; // the rotary bands of every head, when the observer wants terms
    Intervention* hooks = nullptr;
    // A layer's rows: normed input, queries, new keys and values, every key (rotated) and value, the heads' outputs.
    RowMatrix a, Q, Knew, Vnew, K, V, heads;
    // Short-convolution layers: the band each query reaches (its width), and the block's parts as the reference
    // names them (B, C, x of in_proj and the convolution's output), kept for the layer view.
    Visibility conv;
    RowMatrix convB, convC, convX, convOut;
    // Gated DeltaNet layers: the conv output, the unscaled L2-normed q and k, beta, g, the rule's output and the gated
    // norm's (out_proj's input); Qwen3.5's attention: its output gate.
    RowMatrix deltaConv, qhat, khat, beta, g, core, normed, gate;
};

} // namespace attnscope::core
