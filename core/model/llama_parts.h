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
};

} // namespace attnscope::core
