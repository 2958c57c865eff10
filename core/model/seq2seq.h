// Encoder-decoder models: T5 / Flan-T5, BART / mBART and Marian (OPUS-MT), one forward with the families' quirks as
// fields of Seq2SeqConfig. Two token streams: the source, read whole from RunOptions::source, and the target, the run's
// segments. Three kinds of site: the encoder's self-attention, the decoder's causal self-attention and its
// cross-attention from target rows to source columns. The encoder runs once per run, in the first segment (its sites
// and the source stream are reported then); its output's cross-attention keys and values are kept in the run's state,
// and the decoder continues from a key/value cache, so a generated token costs one row, as a decoder-only model's does.
#pragma once

#include "model/attention_model.h"
#include "model/kv_cache.h"
#include "model/nn_ops.h"

#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace attnscope::core {

class SegmentDriver;

class EncoderDecoderModel final : public AttentionModel {
public:
    EncoderDecoderModel(Seq2SeqConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    const Seq2SeqConfig& config() const { return m_config; }

    // Error(BadInput) without RunOptions::source (naming where a source comes from), or for a source the vocabulary
    // or the positions do not hold.
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    // Target tokens at the run's next positions: the encoder first when the run has not read its source yet.
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    std::unique_ptr<RunState> resumeWithin(const RunState& segmentEnd, int keep) const override;
    // The decoder's final norm and read-out (the logit lens over decoder layers).
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;

    // T5's relative-position bucket of key offset `offset` (key position minus query position) in a stack; -1 for
    // families without buckets.
    int positionBucket(Stack stack, int offset) const;
    // The bias added to head n's score at that offset (0 without buckets).
    float positionBiasAt(Stack stack, int head, int offset) const;
    float positionBiasAt(int site, int head, int offset) const override;
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
        std::optional<Linear> conv1, conv2; // a speech encoder's convolutions, as products: [C, in * 3]
        std::optional<WeightView> posEmb, relBias; // learned positions [rows, C]; T5's bias [buckets, heads]
        std::optional<Norm> embNorm, finalNorm;
    };
    // The encoder's output and, per decoder layer, the cross-attention's keys and values of it.
    struct Encoded {
        RowMatrix hidden;                      // [S, dModel]
        std::vector<RowMatrix> crossK, crossV; // per decoder layer, [S, heads * dHead]
        std::size_t bytes() const;
    };
    class State;
    // A learned position bias over klen keys (every offset its queries can have: width 2 klen - 1), with each offset's
    // bucket (what the reference dump names).
    struct BiasTable {
        std::vector<float> values;
        std::vector<std::int32_t> buckets;
        PositionBias bias;
    };

    void describe(std::string source);
    void describeStreams();
    void loadStack(Stack stack, StackWeights& out) const;
    void embed(Stack stack, std::span<const std::int32_t> ids, int firstPosition, RowMatrix& x) const;
    void norm(const RowMatrix& x, const Norm& n, RowMatrix& out) const;
    void project(const RowMatrix& x, const Linear& l, RowMatrix& out) const;
    void feedForward(const RowMatrix& x, const Layer& L, RowMatrix& out) const;
    // What a sub-layer reads: the stream itself (post-norm), or its norm in `normed` (pre-norm).
    const RowMatrix& sublayerInput(const RowMatrix& x, const Norm& n, RowMatrix& normed) const;
    // A site's score inputs: its rule's scale, queries [rows, heads * dHead], keys, the queries' visible spans.
    ScoreInputs siteInputs(int site, int qlen, int klen, int mlen, const float* queries, const float* keys,
                           const VisibleSpan* spans) const;
    // A sub-layer's output added to the residual stream, normalised after the sum when the family is post-norm.
    void addResidual(RowMatrix& x, const RowMatrix& sublayer, const Norm& n) const;
    // The feed-forward sub-layer with its norm where the family puts it (`normed`, `out`: scratch).
    void feedForwardBlock(RowMatrix& x, const Layer& L, RowMatrix& normed, RowMatrix& out) const;
    BiasTable biasTable(Stack stack, int klen) const;
    // One attention sub-layer: scores, softmax and values for every head into `heads` [qlen, heads * dHead], with what
    // the observer wants of it in `view`; the caller reports the site once its layer's output is known.
    void attend(ScoreInputs& in, const float* values, SegmentDriver& drive, LayerView& view, RowMatrix& heads) const;

    // The encoder over the run's source, every site reported, then the source stream; the cross keys and values.
    std::shared_ptr<const Encoded> encode(const State& st, SegmentDriver& drive, AttentionObserver& observer) const;
    // The encoder's input rows: the source's embeddings, or (a speech model) the convolutions over its spectrogram
    // plus the stored sinusoids.
    void embedSource(const State& st, RowMatrix& x) const;
    void embedAudio(const AudioFeatures& audio, RowMatrix& x) const;
    void checkAudio(const RunOptions& options) const;
    void encoderLayer(int l, RowMatrix& x, std::span<const VisibleSpan> spans, const BiasTable* bias,
                      SegmentDriver& drive) const;
    // Decoder layer l over the segment's rows `y` [T, C] after P cached target tokens.
    void decoderLayer(int l, State& st, RowMatrix& y, int P, std::span<const VisibleSpan> selfSpans,
                      const BiasTable* bias, SegmentDriver& drive) const;
    // The decoder's output rows: final norm, then (for logits) the tied read-out's scale, the head and its bias.
    void finalNorm(RowMatrix& y) const;
    void logitsOf(RowMatrix y, std::vector<float>& logits) const;
    void checkStream(std::span<const std::int32_t> ids, int first, const char* what) const;

    Seq2SeqConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    ModelInfo m_info;
    WeightView m_embed, m_head;
    std::optional<WeightView> m_logitsBias;
    StackWeights m_enc, m_dec;
};

} // namespace attnscope::core
