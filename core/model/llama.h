// Rotary decoders (Llama 2/3/3.1/3.2, Mistral, Qwen2, SmolLM2, TinyLlama; Qwen3; OLMo 2; their 2025 kin with experts,
// sinks, NoPE layers and DeepSeek's latent attention, whose projections are model/latent_attention.h): RMSNorm, rotary position
// embedding in the Hugging Face rotate_half layout (optional linear or llama3 frequency scaling), grouped-query
// attention, SwiGLU, tied or untied LM head, optional q/k/v biases, optional sliding window; Qwen3's per-head and
// OLMo 2's whole-projection q/k RMSNorm before rotation, and OLMo 2's norms after attention and MLP instead of before.
// Forward pass with capture.
#pragma once

#include "io/checkpoint.h"
#include "model/attention_model.h"
#include "model/kv_cache.h"
#include "model/config.h"
#include "model/latent_attention.h"
#include "model/nn_ops.h"
#include "model/tensor_names.h"

namespace attnscope::core {

// A segment continues from the keys/values of up to memLen earlier tokens (0 by default, so each segment is a text of
// its own; Mistral carries its sliding window). Rotary angles use positions relative to the carried keys: the cache
// holds keys before rotation, at positions 0..m-1, and the segment sits at m..m+q-1 (scores depend on i - j only).
// LayerView::attnOutput is the o_proj output (times Granite's residual multiplier) before the residual add;
// LayerView::inputs holds the rotated queries and keys, row-major; scores are filled when the observer wants them (wantScores). Weights from a GGUF file of architecture llama have their q/k rows put back into the
// Hugging Face order at load, so both give the same attention.
// Thread safety: const methods may be called concurrently with distinct RunStates.
class LlamaModel final : public AttentionModel {
public:
    LlamaModel(LlamaConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    const LlamaConfig& config() const { return m_config; }
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    std::unique_ptr<RunState> resumeWithin(const RunState& segmentEnd, int keep) const override;
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;
    bool headParts(int layer, const float* headMixRow, std::vector<float>& out) const override;
    bool logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                        double& constant) const override;
    // Rotation frequencies of pair i of a head (after scaling), float32 as the reference computes them. [headDim / 2]
    const std::vector<float>& inverseFrequencies() const { return m_invFreq; }

private:
    struct Layer {
        WeightView attnNorm, q, k, v, o, qBias, kBias, vBias, oBias, ffnNorm, gate, up, down, gateBias, upBias, downBias;
        WeightView qNorm, kNorm, attnPostNorm, ffnPostNorm; // Qwen3 / OLMo 2 (empty otherwise)
        WeightView attnNormBias, ffnNormBias;               // LayerNorm families (GPT-NeoX)
        // Mixture of experts: the router [experts, hidden] and each expert's SwiGLU (views into GGUF's stacked
        // tensors, whose whole stacks are kept to check their values once).
        WeightView router, routerBias;
        std::vector<WeightView> expertGate, expertUp, expertDown;
        std::vector<WeightView> expertGateUp; // gpt-oss (Hugging Face): [in, 2 out], gate and up columns interleaved
        WeightView expertGateBias, expertUpBias, expertDownBias, expertGateUpBias; // [experts, out] (gpt-oss)
        std::vector<WeightView> expertStacks;
        WeightView sinks; // gpt-oss: [heads]
        WeightView sharedGate, sharedUp, sharedDown; // DeepSeek's shared expert (empty otherwise)
        WeightView sharedExpertGate;                 // Qwen3-Next: [1, hidden], sigmoid of it scales the shared expert
        LatentWeights mla;                           // DeepSeek's latent attention (empty otherwise)
        // A short-convolution layer (LFM2) instead of attention: in_proj [3 hidden, hidden] (B | C | x), the taps
        // [hidden, width] as floats, oldest first, and out_proj.
        WeightView convIn, convTaps, convOut;
        // Qwen3.5's attention output gate: the gate rows of q_proj (q keeps the query rows).
        WeightView qGate;
        // A Gated DeltaNet layer (Qwen3.5) instead of attention, its value heads in Hugging Face's order: the q | k | v
        // projection, z, b and a, the convolution's taps [channels, width] as floats, dt's bias and -exp(A_log) per
        // value head as floats, the gated norm's weight and out_proj (whose input columns stay in the file's order).
        WeightView dQkv, dZ, dB, dA, dConvTaps, dDtBias, dDecay, dNorm, dOut;
        // A Mamba-2 layer (Granite 4.0-H) instead of attention: in_proj (z | xBC | dt), the taps [channels, width] and
        // bias, dt's bias, A = -exp(A_log) and D per head (floats), the gated norm's weight, out_proj.
        WeightView mIn, mConvTaps, mConvBias, mDtBias, mDecay, mSkip, mNorm, mOut;
    };
    // A mixture-of-experts feed-forward of the rows `in` into `out`; the router's numbers into `route`.
    struct Routing {
        std::vector<float> logits, probs, weights; // [rows, experts], [rows, experts], [rows, used]
        std::vector<std::int32_t> ids;             // [rows, used], chosen experts in descending order
        std::vector<float> sharedGate;             // [rows]: Qwen3-Next's shared expert's factor (empty: none)
    };
    class State;
    struct Segment;

    // Reading the weights: a layer's attention and feed-forward by the family's tensor-name table (model/
    // tensor_names.h), then the row orders and norm offsets a file needs to be read as Hugging Face's.
    void loadLayer(const DecoderNames& names, int layer);
    void loadAttention(const DecoderNames& names, int layer, Layer& L);
    void loadFeedForward(const DecoderNames& names, int layer, Layer& L);
    void loadExperts(const DecoderNames& names, int layer, Layer& L);
    void loadSharedExpert(const DecoderNames& names, int layer, Layer& L);
    void loadExpertStacks(const DecoderNames& names, int layer, Layer& L);
    // A stack [experts, rows, cols] as one view per expert, read in place (the whole stack's values checked once).
    std::vector<WeightView> expertSlices(const WeightView& stack, const Shape& one, Layer& L) const;
    // gpt-oss's Hugging Face MXFP4 experts (*_blocks / *_scales) packed as ggml MXFP4 stacks; false when the file
    // stores them dense.
    bool loadMxfp4Experts(const DecoderNames& names, int layer, Layer& L);
    void loadLatentAttention(const DecoderNames& names, int layer, Layer& L);
    void loadShortConv(const DecoderNames& names, int layer, Layer& L);
    void loadDeltaNet(const DecoderNames& names, int layer, Layer& L);
    void loadMamba(const DecoderNames& names, int layer, Layer& L);
    // A convolution's taps as [channels, width] floats, from Hugging Face's [channels, 1, width] or GGUF's
    // {width, channels}.
    WeightView convolutionTaps(const TensorName& name, int layer, std::int64_t channels, std::int64_t width) const;
    // A recurrent layer's decay rates A = -exp(A_log) per head, as floats of our own, from either file kind.
    WeightView decayRates(const WeightView& stored);
    // A qwen35 GGUF's tiled value heads: the file's head of each Hugging Face head (identity for other files).
    std::vector<int> fileValueHeads() const;
    // A float copy of a per-value-head tensor's rows (`width` numbers each) in Hugging Face's head order.
    WeightView valueHeadRows(const WeightView& w, int width, const std::vector<int>& fileHead);
    // An empty cache with each layer's rows (attention: keys and values; a convolution: B and B * x).
    KvCache newCache() const;
    // The model's self-description: shape, positions in words, capabilities, every layer's score rule, its sites.
    void describe(std::string source);
    // A weight by its table entry (Hugging Face or GGUF name), checked against `shape`.
    WeightView weight(const TensorName& name, int layer, const Shape& shape) const;
    WeightView optionalWeight(const TensorName& name, int layer, const Shape& shape, bool wanted) const;
    // Rows `rows` of a matrix as a view (a row order, no copy), or of a bias as a float copy of our own.
    WeightView rowsOf(const WeightView& w, const std::vector<std::int32_t>& rows);
    // The gate rows (first half) and up rows (second half) of a fused [2 width, in] tensor as two views.
    void splitGateUp(const WeightView& fused, WeightView& gate, WeightView& up);
    // q, k, v of a fused tensor (LlamaConfig::qkv).
    void splitQkv(const WeightView& fused, WeightView& q, WeightView& k, WeightView& v);
    // GGUF (architecture llama) q/k rows back into the Hugging Face order: HF row n*d + j*d/2 + i = GGUF row n*d + 2i + j.
    WeightView hfOrder(const WeightView& w, int heads);
    // A float vector plus `offset` (Gemma's 1 + w norms), as a copy of our own.
    WeightView withOffset(const WeightView& w, float offset);

    // The forward, block by block (model/llama_blocks.cpp): each quirk at the line where it acts.
    // The segment's token embeddings; a placeholder of RunOptions::placed takes its next placed row instead (after
    // the embedding scale: Gemma's image rows are not scaled).
    // Returns, when the placed rows see their picture both ways, each row's picture (-1: not a placed row).
    std::vector<int> embed(std::span<const std::int32_t> ids, State& st, RowMatrix& x) const;
    // One layer's attention over the segment's rows `x`: what it adds to the residual stream into `out`, its score
    // inputs and heads' outputs into the layer view.
    void attentionBlock(int layer, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& view) const;
    // The layer's token mixing by its kind: attention, a convolution, a delta rule, a scan, none (an MLP block).
    void mixerBlock(int layer, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& view) const;
    // A mixture-of-experts layer's routing (and Qwen3-Next's shared expert's gate) into its view.
    void showRouting(const Routing& route, LayerView& view) const;
    // An MLP block's mixer (Nemotron-H): nothing to add, the identity as its site's map.
    void identityBlock(int layer, Segment& f, State& st, RowMatrix& out, LayerView& view) const;
    // A short-convolution layer (LFM2) in place of attention: y = C * conv(B * x) of the normed rows, out_proj of it
    // into `out`; its map's inputs (C as queries, B as keys, the taps) and its parts into the layer view.
    void shortConvBlock(int layer, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& view) const;
    // A Gated DeltaNet layer (Qwen3.5, model/llama_delta.cpp): the convolution over q, k and v, their normed heads, the
    // decayed delta rule over every cached row, the gated norm and out_proj into `out`; the map's inputs (q, khat, beta,
    // g) and its parts into the layer view.
    void deltaRuleBlock(int layer, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& view) const;
    // A Mamba-2 layer (Granite 4.0-H, model/llama_mamba.cpp): the convolution over x | B | C, dt, the scan over every
    // cached row, the gated norm and out_proj into `out`; the map's inputs (C, B, dt, A) and its parts into the view.
    void stateSpaceBlock(int layer, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& view) const;
    // The queries, new keys and values of `in` (latent attention: keys and values expanded from every cached row).
    void projectQkv(int layer, Segment& f, State& st, const RowMatrix& in) const;
    // The layer's score inputs over the segment's rows and every key the cache holds.
    ScoreInputs scoreInputs(int layer, const Segment& f, const State& st) const;
    // One layer's feed-forward (a SwiGLU, GeGLU or GELU MLP, or the mixture of experts) of `in` into `out`.
    void feedForwardBlock(int layer, const RowMatrix& in, RowMatrix& out, Routing& route) const;
    void mixtureOfExperts(const RowMatrix& in, const Layer& L, RowMatrix& out, Routing& route) const;
    // The router's choice for every row (the experts' weights, ids and which rows each expert takes).
    std::vector<std::vector<int>> route(const RowMatrix& in, const Layer& L, Routing& route) const;
    void runExpert(int expert, const RowMatrix& rows, const Layer& L, RowMatrix& down) const;
    // The family's norm: RMSNorm, or LayerNorm with its bias (GPT-NeoX).
    void familyNorm(const RowMatrix& in, const WeightView& w, const WeightView& b, RowMatrix& out) const;
    // Final norm, unembedding and Gemma 2's logit cap of residual-stream rows.
    void readOutRows(const RowMatrix& x, RowMatrix& normed, RowMatrix& logits) const;

    LlamaConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    TextModelPlace m_textPlace = TextModelPlace::Top; // a multimodal checkpoint keeps the text model inside
    ModelInfo m_info;
    WeightView m_embed, m_norm, m_normBias, m_lmHead;
    std::vector<Layer> m_layers;
    LatentAttention m_latent; // DeepSeek's projections (unused by other families)
    std::vector<float> m_invFreq;     // the rotation frequencies (LongRoPE: its short factors)
    std::vector<float> m_invFreqLong; // LongRoPE's long factors, for sequences past the original context
    std::vector<float> m_invFreqLocal; // Gemma 3's sliding layers (rope_local_base_freq); empty: as m_invFreq
    std::vector<std::vector<float>> m_owned; // re-ordered or split biases
    std::vector<std::vector<std::uint8_t>> m_packed;           // MXFP4 experts packed from blocks and scales
    std::vector<std::unique_ptr<WeightSource>> m_packedSources; // their names, for messages and the value check
};

} // namespace attnscope::core
