// How one head computes one query's attention, step by step (the mechanism view; figures.md): the query and the keys
// it sees (as scored: rotated where the family rotates), the scaled (and soft-capped) scores with the mask, a learned
// sink logit where the family has one, the softmax, and the head's output (its probabilities times the values).
// Numbers from the model's own forward pass, so the softmax equals the grid's row.
#pragma once

#include "analysis/token_predictions.h"
#include "model/attention_model.h"
#include "run/text_capture.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace attnscope::core {

struct HeadExplanation {
    int layer = 0, head = 0;      // from 0
    int kvHead = 0;               // the key/value head this query head shares (grouped-query attention)
    std::int64_t position = 0;    // the query's position in the run, from 0
    int segment = 0;
    float scale = 1.0f;           // the scores' factor (1/sqrt(d) unless the family says otherwise)
    float softCap = 0.0f;         // 0: none
    std::optional<float> sink;    // gpt-oss: the head's learned sink logit in the softmax's denominator
    std::vector<std::int64_t> keyPositions; // every key of the query's row (memory first), positions in the run
    std::vector<float> scores;    // scaled (capped) logits before the softmax; NaN where masked
    std::vector<float> probs;     // the softmax over the visible keys (and the sink); 0 where masked
    std::vector<float> query;     // [headDim], as scored
    std::vector<std::vector<float>> keys; // [keys][headDim], as scored
    std::vector<float> output;    // [valueDim]: sum_j probs_j v_j, the head's part before the output projection; empty
                                  // where the family does not expose it
    // [keys][valueDim]: each key's value vector for this head (its key/value group's), what `output` weighs; empty
    // where the family's forward has no hooks (Capabilities::interventions).
    std::vector<std::vector<float>> values;

    // The rest of the pipeline for the same token, so a class follows it from its input to the prediction:
    std::vector<float> residualIn;       // [dModel]: the layer's input (the residual stream; the norm comes inside)
    std::vector<float> queryUnrotated;   // [headDim]: the query before its rotary positions (rotary families with
                                         // hooks); empty where the family does not rotate or expose it
    std::vector<float> headPart;         // [dModel]: this head's output through the output projection W_O, its share
                                         // of what the attention adds (empty where the family has no such split)
    std::vector<float> attentionOut;     // [dModel]: all heads concatenated and projected, as the layer adds it
    std::vector<float> layerOut;         // [dModel]: the layer's output (input + attention + MLP)
    std::vector<TokenPrediction> next;   // the model's top next tokens at this position after the last layer (empty
                                         // without an output layer)
};

// Runs `segments` as given (`options` as parseReferenceInput or the app builds them) and explains head `head` of layer
// `layer` for the query at `position` (all from 0). Error(BadInput) when one is out of range.
HeadExplanation explainHead(const AttentionModel& model, const std::vector<std::vector<std::int32_t>>& segments,
                            const RunOptions& options, int layer, int head, std::int64_t position);
// The same for a captured text, run in its segments with its settings (memory, token types, padding, picture).
HeadExplanation explainHead(const AttentionModel& model, const TextCapture& capture, int layer, int head,
                            std::int64_t position);

} // namespace attnscope::core
