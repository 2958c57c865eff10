// Encoders: BERT, RoBERTa and DistilBERT (learned absolute positions, token types, post-LayerNorm blocks, exact GELU,
// bidirectional attention over the real tokens). One forward for the three; their differences are configuration
// (model/config.h EncoderConfig) and tensor names (model/tensor_names.h EncoderNames).
#pragma once

#include "io/checkpoint.h"
#include "model/attention_model.h"
#include "model/config.h"
#include "model/nn_ops.h"

#include <optional>

namespace attnscope::core {

// Each segment is an independent sequence (positions are absolute: no memory carries over; asking for one is an
// error) of at most EncoderConfig::maxTokens() tokens. Every query sees every real key of its segment, before and
// after it; padding tokens (RunOptions::padding) are seen by no query, and are queries like any other.
// LayerView::attnOutput is the attention block's output AFTER the residual add and its LayerNorm (Hugging Face's
// BertAttention output); LayerView::hidden the layer's output. When the observer wants logits and the checkpoint has
// a masked-language-model head, onSegmentEnd receives the head's transformed states (lnF) and its logits.
class EncoderModel final : public AttentionModel {
public:
    EncoderModel(EncoderConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override; // the MLM head

    // The position ids of a segment (RoBERTa's count real tokens after the padding id).
    std::vector<int> positionIds(std::span<const std::int32_t> ids) const;

private:
    struct Linear {
        WeightView w, b;
    };
    struct Norm {
        WeightView w, b;
    };
    struct Layer {
        Linear q, k, v, o, ffnIn, ffnOut;
        Norm attnNorm, ffnNorm;
    };
    struct Head {
        Linear dense;
        Norm norm;
        WeightView decoder, bias;
    };
    class EncoderState;
    // A layer's rows the layer view points into until it is handed on.
    struct LayerRows {
        RowMatrix q, k, v, heads, attnOut;
    };
    // The run of real tokens [lo, hi) of a segment (padding at the start or the end); Error(BadInput) otherwise.
    std::pair<int, int> realTokens(const EncoderState& st, int T) const;
    // Word, position (RoBERTa's counted after padding) and token-type embeddings, then their LayerNorm.
    void embed(const EncoderState& st, std::span<const std::int32_t> ids, RowMatrix& x) const;
    // One post-LayerNorm block over every row of `x` (each query sees the spans' keys), `x` replaced by its output.
    void layerBlock(int l, const std::vector<VisibleSpan>& spans, const AttentionCapture& keep, RowMatrix& x,
                    LayerRows& rows, LayerView& view) const;
    void activate(RowMatrix& x) const;
    void headRows(const RowMatrix& x, RowMatrix& transformed, RowMatrix& logits) const;

    EncoderConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    ModelInfo m_info;
    WeightView m_wordEmb, m_posEmb, m_typeEmb;
    Norm m_embNorm;
    std::vector<Layer> m_layers;
    std::optional<Head> m_head;
};

} // namespace attnscope::core
