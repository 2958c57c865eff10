// Transformer-XL (attn_type 0, relative positional attention with memory): forward pass with capture.
#pragma once

#include "io/checkpoint.h"
#include "model/attention_model.h"
#include "model/config.h"
#include "model/nn_ops.h"

namespace attnscope::core {

// LayerView::attnOutput here is the attention sub-layer output after the residual (and after its LayerNorm
// when post-LN), as in the reference data. Weights stay in the checkpoint's memory map.
// Thread safety: const methods may be called concurrently with distinct RunStates.
class TransfoXLModel final : public AttentionModel {
public:
    TransfoXLModel(TransfoXLConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    const TransfoXLConfig& config() const { return m_config; }
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;

    // The adaptive input embedding of `ids` (in range: forwardSegment checks them) times sqrt(d_model):
    // [ids.size(), d_model].
    RowMatrix embed(std::span<const std::int32_t> ids) const;
    // Sinusoidal encoding of (clamped) distance r: [sin(r f_0..), cos(r f_0..)], computed in float32 as the reference.
    void sinusoid(int distance, float* out) const;
    // With the checkpoint's projected adaptive softmax ("crit"): log-probabilities of every word after each row of
    // the last layer's output, as the original ProjectedAdaptiveLogSoftmax computes them.
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;

private:
    struct Cluster {
        int lo = 0, hi = 0;
        WeightView table; // [hi-lo, d_emb_c]
        WeightView proj;  // [d_model, d_emb_c] or empty
    };
    // One part of the output softmax: words [lo, hi), their table and bias, the projection into the table's width.
    struct OutCluster {
        int lo = 0, hi = 0;
        WeightView weight, bias, proj; // [hi-lo, d_emb], [hi-lo], [d_model, d_emb] or empty (identity)
    };
    struct Layer {
        WeightView qkv, rNet, oNet, lnAttnW, lnAttnB, ff1W, ff1B, ff2W, ff2B, lnFfW, lnFfB, rwBias, rrBias;
    };
    class State;
    struct LayerBuffers {
        RowMatrix qkv, attnOut; // [q, 3HD], sub-layer output
    };

    // The attention sub-layer of one layer: its output goes to buf.attnOut; returns where its scores come from
    // (pointing into buf and the state, valid until the next layer).
    ScoreInputs attention(State& st, int layer, const RowMatrix& x, int mlen, const std::vector<VisibleSpan>& spans,
                          const AttentionCapture& keep, LayerBuffers& buf) const;
    void feedForward(int layer, const RowMatrix& y, RowMatrix& out) const;
    // The segment's mask [q, mlen + q] (1 = masked): no future keys, and with same_length as many keys for each query.
    std::vector<std::uint8_t> segmentMask(const State& st, int q, int mlen) const;
    // Layer l's memory for the next segment from this segment's input rows of the layer.
    void remember(State& st, int layer, const RowMatrix& layerInput) const;
    void loadAdaptiveInput(const std::string& prefix); // the embedding clusters and their projections
    Layer loadLayer(const std::string& prefix, int layer, bool perLayerBiases) const;
    void loadOutputSoftmax(const std::string& prefix);
    void logProbabilities(const RowMatrix& x, RowMatrix& out) const;
    // The layer's projected relative encodings, rows 0 .. at least maxDistance (grown for segments of segmentLen).
    const RowMatrix& relativeTable(State& st, int layer, int maxDistance, int segmentLen) const;
    // The state's sinusoidal encodings, grown to at least `rows` distances (0 .. rows - 1, clamped).
    const RowMatrix& positionTable(State& st, int rows) const;

    TransfoXLConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    ModelInfo m_info;
    std::vector<Cluster> m_clusters;
    std::vector<OutCluster> m_out; // empty: read without the output softmax
    WeightView m_clusterWeight, m_clusterBias; // [clusters, d_emb_0], [clusters]
    std::vector<Layer> m_layers;
    std::vector<float> m_invFreq; // [d_model / 2]
};

} // namespace attnscope::core
