// Where a decoder's forward pass lets an analysis read or replace its activations while it runs: activation and path
// patching record them from one prompt's run and substitute them into another's. The forward calls the hooks at fixed
// points of every layer; an analysis implements the ones it needs (core/analysis/activation_patching.h).
#pragma once

#include "attention/attention_scores.h"

#include <cstddef>

namespace attnscope::core {

// An activation the forward exposes, per layer.
enum class Activation {
    Residual,    // the layer's input [rows, dModel] (layer == layers: the stream after the last layer, before the read-out)
    Queries,     // [rows, heads * headDim]: projected (and q-normed), before rotary positions
    Keys,        // [rows, kvHeads * headDim]: likewise; a grouped model's group g is shared by its query heads
    Values,      // [rows, kvHeads * valueDim]
    HeadOutputs, // [rows, heads * valueDim]: each head's softmax-weighted values, before the output projection
    MlpOutputs,  // [rows, dModel]: what the layer's feed-forward block adds to the stream (its scale applied)
};

// Rows of one activation, row-major: group g (a head or key/value group) of row r is width floats at
// data[r * stride + g * width]; row 0 is position firstPosition of the run.
struct ActivationRows {
    float* data = nullptr;
    int rows = 0;
    std::ptrdiff_t stride = 0;
    int groups = 0;
    int width = 0;
    int firstPosition = 0;
    float* at(int row, int group) const { return data + static_cast<std::ptrdiff_t>(row) * stride + static_cast<std::ptrdiff_t>(group) * width; }
};

class Intervention {
public:
    virtual ~Intervention() = default;
    // Layers before this one are not computed: the Residual hook of this layer must then supply their output (the
    // rows it is handed are the embedding). What lets a patched run reuse everything before the patched layer.
    virtual int firstLayer() const { return 0; }
    // Read or overwrite the rows in place.
    virtual void onActivation(Activation what, int layer, const ActivationRows& rows) = 0;
    // After the heads attended, before the HeadOutputs hook: the layer's score inputs (rotated queries and keys) and
    // value rows [klen, valueStride], so a head's output can be recomputed from other probabilities (pattern patching).
    virtual void onAttention(int layer, const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride,
                             const ActivationRows& headOutputs)
    {
        (void)layer, (void)in, (void)values, (void)valueStride, (void)headOutputs;
    }
};

} // namespace attnscope::core
