// GPT-2 (learned absolute positions, causal, pre-LN, Conv1D weights [in, out]): forward pass with capture.
#pragma once

#include "io/checkpoint.h"
#include "model/attention_model.h"
#include "model/config.h"
#include "model/nn_ops.h"
#include "model/segment_driver.h"

namespace attnscope::core {

// Each segment is an independent sequence starting at position 0 (positions are absolute, so no memory carries
// over; asking for one is an error); a segment may hold at most n_positions tokens. A segment can be resumed
// part-way from its key/value cache (resumeWithin). LayerView::attnOutput is the attention sub-layer output BEFORE the residual add.
// When the observer wants logits, onSegmentEnd receives ln_f and the tied-embedding logits.
class GPT2Model final : public AttentionModel {
public:
    GPT2Model(GPT2Config config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    std::unique_ptr<RunState> resumeWithin(const RunState& segmentEnd, int keep) const override;
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;
    bool headParts(int layer, const float* headMixRow, std::vector<float>& out) const override;
    bool logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                        double& constant) const override;

private:
    struct Layer {
        WeightView ln1W, ln1B, attnW, attnB, projW, projB, ln2W, ln2B, fcW, fcB, mlpProjW, mlpProjB;
    };
    // One segment's frame: the causal visibility, the observer's buffers, the hooks, and the layer's working rows.
    struct Frame {
        Visibility seen;
        AttentionCapture keep;
        Intervention* hooks = nullptr;
        int m = 0; // cached keys before the segment (a resumed segment)
        RowMatrix qkv, heads, attnOut;
    };
    class GPT2State;
    void embed(std::span<const std::int32_t> ids, int firstPosition, RowMatrix& x) const;
    // The attention of layer l over the normed rows `a` into f.attnOut (c_proj's output, before the residual add).
    void attentionBlock(int l, Frame& f, GPT2State& st, const RowMatrix& a, LayerView& view) const;
    void mlpBlock(const Layer& L, const RowMatrix& a, RowMatrix& out) const;
    // ln_f and the tied unembedding of residual-stream rows: the segment's end and readOut.
    void readOutRows(const RowMatrix& x, RowMatrix& lnF, RowMatrix& logits) const;
    GPT2Config m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    ModelInfo m_info;
    WeightView m_wte, m_wpe, m_lnFW, m_lnFB;
    std::vector<Layer> m_layers;
};

} // namespace attnscope::core
