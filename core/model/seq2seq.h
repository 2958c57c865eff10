// Encoder-decoder models: T5 / Flan-T5, BART / mBART and Marian (OPUS-MT), one forward with the families' quirks as
// fields of Seq2SeqConfig. Two token streams (source, target) and three kinds of attention site: the encoder's
// self-attention, the decoder's causal self-attention and its cross-attention from target rows to source columns.
// The encoder runs once per source; its output's cross-attention keys and values are computed once and kept
// (Encoded), and the decoder continues from a key/value cache (DecoderState), so generation costs one row per step.
#pragma once

#include "model/attention_model.h"
#include "model/nn_ops.h"

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace attnscope::core {

// One site's attention as the model computed it. Valid during the callback only.
struct SiteView {
    int site = 0;          // ModelInfo::sites index
    int qlen = 0, klen = 0;
    int mlen = 0;          // cached keys before the first query (decoder self-attention while generating)
    ScoreInputs inputs;    // what recomputes every score exactly (attention_scores.h)
    const float* probabilities = nullptr; // [heads, qlen, klen], masked 0; null unless wanted
};

// Receives an encoder-decoder model's tensors in model order: the encoder's embedding, its sites and layers, its
// output; then per decoder call the embedding, per layer its self site, its cross site and its output, the output.
class SiteObserver {
public:
    virtual ~SiteObserver() = default;
    virtual bool wantProbabilities() const { return true; }
    virtual void onSite(const SiteView&) {}
    virtual void onEmbedding(Stack, const float* /*rows x dModel*/, int /*rows*/) {}
    virtual void onLayerOutput(Stack, int /*layer*/, const float* /*rows x dModel*/, int /*rows*/) {}
    // The stack's output after its final norm where it has one (the encoder's is what cross-attention reads).
    virtual void onStackOutput(Stack, const float* /*rows x dModel*/, int /*rows*/) {}
};

class EncoderDecoderModel final : public AttentionModel {
public:
    EncoderDecoderModel(Seq2SeqConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    const Seq2SeqConfig& config() const { return m_config; }

    // A single-stream run does not describe this model: both refuse with a message naming what to use instead.
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    // The decoder's final norm and read-out (the logit lens over decoder layers).
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;

    // The encoder's output and, per decoder layer, the cross-attention's keys and values of it.
    struct Encoded {
        std::vector<std::int32_t> ids;
        RowMatrix hidden;                    // [S, dModel]
        std::vector<RowMatrix> crossK, crossV; // per decoder layer, [S, heads * dHead]
    };
    // Runs the encoder over `source` (ids checked against the vocabulary and the position limit).
    std::shared_ptr<const Encoded> encode(std::span<const std::int32_t> source, SiteObserver& observer,
                                          const StopToken* stop = nullptr) const;

    // The decoder's place in a target: the encoder output it reads and every earlier target token's keys and values.
    struct DecoderState {
        std::shared_ptr<const Encoded> encoded;
        int position = 0;                    // target tokens already decoded
        std::vector<RowMatrix> selfK, selfV; // per layer, [position, heads * dHead]
        std::size_t bytes() const;
    };
    DecoderState startDecoder(std::shared_ptr<const Encoded> encoded) const;
    // Decodes `ids` at the state's next positions (teacher forcing: the whole target; generation: one token), extends
    // the cache, and returns the logits [ids, vocab] when asked (`logits` non-null).
    void decode(DecoderState& state, std::span<const std::int32_t> ids, SiteObserver& observer,
                std::vector<float>* logits, const StopToken* stop = nullptr) const;

    // T5's relative-position bucket of key offset `offset` (key position minus query position) in a stack; -1 for
    // families without buckets.
    int positionBucket(Stack stack, int offset) const;
    // The bias added to head n's score at that offset (0 without buckets).
    float positionBiasAt(Stack stack, int head, int offset) const;
    // The longest stream the positions allow (learned / sinusoidal tables); T5 has no architectural limit.
    int maxStreamTokens() const;
    // The site index of a decoder layer's self- or cross-attention, or an encoder layer's.
    int siteOf(Stack stack, int layer, SiteKind kind) const;

private:
    struct Linear {
        WeightView w, b; // b empty without biases
    };
    struct Norm {
        WeightView w, b;
    };
    struct Layer {
        Norm selfNorm, crossNorm, ffnNorm;
        Linear q, k, v, o, cq, ck, cv, co, ffnIn, ffnGate, ffnOut;
    };
    struct StackWeights {
        std::vector<Layer> layers;
        std::optional<WeightView> posEmb, relBias; // learned positions [rows, C]; T5's bias [buckets, heads]
        std::optional<Norm> embNorm, finalNorm;
    };

    void loadStack(Stack stack, StackWeights& out) const;
    void embed(Stack stack, std::span<const std::int32_t> ids, int firstPosition, RowMatrix& x) const;
    void norm(const RowMatrix& x, const Norm& n, RowMatrix& out) const;
    void project(const RowMatrix& x, const Linear& l, RowMatrix& out) const;
    void feedForward(const RowMatrix& x, const Layer& L, RowMatrix& out) const;
    // What a sub-layer reads: the stream itself (post-norm), or its norm in `normed` (pre-norm).
    const RowMatrix& sublayerInput(const RowMatrix& x, const Norm& n, RowMatrix& normed) const;
    // A site's score inputs: its rule's scale, queries and keys [rows, heads * dHead], the queries' visible spans.
    ScoreInputs siteInputs(int site, int qlen, int klen, int mlen, const float* queries, const float* keys,
                           const VisibleSpan* spans) const;
    // A sub-layer's output added to the residual stream, normalised after the sum when the family is post-norm.
    void addResidual(RowMatrix& x, const RowMatrix& sublayer, const Norm& n) const;
    // The feed-forward sub-layer with its norm where the family puts it (`normed`, `out`: scratch).
    void feedForwardBlock(RowMatrix& x, const Layer& L, RowMatrix& normed, RowMatrix& out) const;
    // The position-bias table of a self-attention over klen keys (every offset its queries can have: width 2 klen - 1).
    void biasTable(Stack stack, int klen, std::vector<float>& table, PositionBias& bias) const;
    // One attention sub-layer: scores, softmax and values for every head, the site reported, the output projected.
    void attend(int site, ScoreInputs& in, const float* values, const Linear& o, SiteObserver& observer,
                RowMatrix& out) const;
    void checkStream(std::span<const std::int32_t> ids, int first, const char* what) const;

    Seq2SeqConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    ModelInfo m_info;
    WeightView m_embed, m_head;
    std::optional<WeightView> m_logitsBias;
    StackWeights m_enc, m_dec;
};

// The model as an encoder-decoder model; Error(BadInput) naming it when it has one stream.
const EncoderDecoderModel& asEncoderDecoder(const AttentionModel& model);

} // namespace attnscope::core
