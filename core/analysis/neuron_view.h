// BertViz's neuron view, for every family: how one head's score for one query is built from the query and key
// vectors. For each key the query sees: the element-wise product q ⊙ k (its sum times the scale is the dot-product
// score; rotary models after rotation, so a rotary head's products show its frequency pairs), the score and the
// probability. Transformer-XL's vectors give the content term (a) only; its other terms are in the term toggles.
#pragma once

#include "run/text_capture.h"

#include <limits>
#include <vector>

namespace attnscope::core {

struct NeuronView {
    int headDim = 0;
    int queryToken = 0;              // token index of the query
    std::vector<float> query;        // [headDim], as the scores use it (unscaled)
    std::vector<int> keyTokens;      // token index of each key the query sees
    std::vector<float> keys;         // [keys, headDim]
    std::vector<float> products;     // [keys, headDim]: q ⊙ k
    std::vector<float> scores;       // [keys]: scale * sum of the products (soft-capped where the layer caps)
    std::vector<float> probabilities; // [keys]: the head's attention (all its terms)
    float scale = 1.0f;
    bool contentTermOnly = false;    // Transformer-XL: scores are term (a)
    // gpt-oss: the head's sink logit, part of the softmax's denominator (-infinity: none); the probabilities then sum
    // to less than one.
    float sink = -std::numeric_limits<float>::infinity();
};

// Throws Error(BadInput) for a segment, layer, head or query row that does not exist.
NeuronView neuronView(const TextCapture& capture, int segment, int layer, int head, int queryRow);

} // namespace attnscope::core
