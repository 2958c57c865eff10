// The interface every model family implements: run segments, hand each layer's attention to an observer.
#pragma once

#include "attention/attention_scores.h"
#include "image/pixels.h"
#include "model/attention_sites.h"
#include "model/config.h"
#include "model/intervention.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;
struct AudioFeatures; // audio/audio_features.h

// How a family's scores split into parts the views can show: Transformer-XL's four terms, rotary frequency bands, none.
enum class ScoreDecomposition { None, RelativeTerms, RotaryBands };

// The score rule of one layer: scores = q.k * scale, soft-capped (cap * tanh(s / cap)) when softCap > 0, over the keys
// at most window - 1 positions back when window > 0 (a sliding-window layer; 0 = every earlier key).
struct LayerRule {
    float scale = 1.0f;
    float softCap = 0.0f;
    int window = 0;
    bool positions = true; // false: a NoPE layer (SmolLM3): no rotary positions, only the causal mask orders keys
    std::vector<float> sinks; // gpt-oss: each head's learned sink logit in the softmax's denominator (empty: none)
    // A short-convolution site (Mixer::ShortConv): each channel's taps [channels, window], oldest first; `window` is
    // its width (the keys it reaches).
    std::vector<float> convTaps;
    // A state-space site (Mixer::StateSpace): each head's A = -exp(A_log), the decay rate its map needs.
    std::vector<float> stateDecay;

    static LayerRule of(float scale, float softCap = 0.0f, int window = 0, bool positions = true)
    {
        LayerRule r;
        r.scale = scale;
        r.softCap = softCap;
        r.window = window;
        r.positions = positions;
        return r;
    }
};

// What analyses, scans, limits and views may do with a model: read these, never the family's name.
struct Capabilities {
    bool causal = true;          // a query sees no later key
    bool carriesMemory = false;  // segments continue from a memory of earlier layer inputs (Transformer-XL)
    bool canCarryKeys = false;   // positions are relative (rotary), so a segment may continue from carried keys
    bool nextTokenLoss = false;  // the model predicts the next token here (ablation's loss, logits)
    // Two streams (source and target) and three kinds of site (model/seq2seq.h): the source is read whole from
    // RunOptions::source, the target is the run's segments. Read by the model's own code; everything else asks a
    // site's kind and causality, or a stream's role.
    bool encoderDecoder = false;
    bool audio = false;          // the source is a spectrogram (RunOptions::audio), not tokens: a speech model (Whisper)
    int experts = 0;             // mixture-of-experts layers: experts per layer (LayerView carries the routing); 0: none
    bool image = false;          // a vision transformer: its tokens are an image's (RunOptions::image), not text
    bool interventions = false;  // the forward calls RunOptions::intervene's hooks (activation patching)
    bool maskedTokens = false;   // an encoder with a masked-language-model head: logits predict the token at [MASK]
    int tokenTypes = 0;          // encoders: token type embeddings (2: sentence pairs A / B); 0: none
    ScoreDecomposition decomposition = ScoreDecomposition::None;
};

// What a view needs to know about a loaded model.
struct ModelInfo {
    ModelFamily family;
    std::string source;     // folder or file it was opened from (or "builtin:NAME")
    int layers = 0;
    int heads = 0;
    int kvHeads = 0;        // key/value heads: fewer than `heads` with grouped-query attention (query head n uses n / (heads / kvHeads))
    int dModel = 0;
    int dHead = 0;
    int dValue = 0;         // a head's value (and output) width where it differs from dHead (DeepSeek's MLA); 0: dHead
    int valueDim() const { return dValue > 0 ? dValue : dHead; }
    int vocabSize = 0;
    int defaultMemLen = 0;   // 0 for models without memory
    int defaultSegmentLen = 0;
    int maxSegmentLen = 0;   // GPT-2: n_positions; Transformer-XL: no architectural limit (a large bound)
    bool hasRelativeTerms = false;
    std::int64_t parameterCount = 0;
    std::string positions;   // the position scheme in words, e.g. "relative (sinusoidal), memory 128"
    std::string weightTypes; // how the weights are stored, e.g. "F16", "BF16, 2 shards", "Q8_0 (22), F32 (8)"
    std::uint64_t weightBytes = 0; // the weights as stored: what the memory map holds once a forward pass read them
    std::vector<float> rotaryFrequencies; // rotary models: inv_freq of each pair of a head (after scaling); else empty
    // A score made of fixed, named terms over groups of a head's dimensions (DeepSeek's latent attention: rotary and
    // content), split and shown as frequency bands are (BandSplit::named); empty: the bands are the user's choice.
    std::optional<BandSplit> fixedTerms;
    Capabilities can;
    std::vector<LayerRule> layerRules;    // one per site (a single-stream model: one per layer)
    // Where the model attends and over which token streams (model/attention_sites.h). Every model has them: a
    // single-stream model one self site per layer over the stream "text" (its constructor calls describeSingleStream).
    std::vector<TokenStream> streams;
    std::vector<AttentionSite> sites;
    // The stream the run's segments are (the text, a decoder's target): the one with StreamRole::Segments.
    int segmentStream() const
    {
        for (std::size_t k = 0; k < streams.size(); ++k)
            if (streams[k].role == StreamRole::Segments)
                return static_cast<int>(k);
        return 0;
    }
    // A stream read whole beside the segments that a person types (an encoder-decoder model's source), or -1.
    int typedReadStream() const
    {
        for (std::size_t k = 0; k < streams.size(); ++k)
            if (streams[k].role == StreamRole::Read && streams[k].typed)
                return static_cast<int>(k);
        return -1;
    }
    // The model reads one stream a person types (a text): not a picture, not a source beside a target.
    bool readsOneText() const { return streams.size() == 1 && streams.front().typed; }
    const AttentionSite& site(int s) const { return sites.at(static_cast<std::size_t>(s)); }
    int siteCount() const { return static_cast<int>(sites.size()); }
    // A vision-language decoder: the prompt's placeholder for a picture (one per image row; RunOptions::image gives the
    // picture) and how many rows a picture of the model's own size makes; -1 and 0 for every other model.
    std::int32_t pictureToken = -1;
    int pictureTokens = 0;
    float logitSoftCap = 0; // Gemma 2: the read-out's logits are cap * tanh(z / cap) (0: none)
    // Sites with a learned position bias: the largest distance it tells apart (T5's relative_attention_max_distance;
    // farther keys share the last bucket). 0: none.
    int positionBiasReach = 0;
    // Some layer soft-caps its attention scores (Gemma 2): raw scores can be shown before or after the cap.
    bool softCapsScores() const
    {
        for (const auto& r : layerRules)
            if (r.softCap > 0)
                return true;
        return false;
    }
};

// Start of a segment: everything shared by all its layers. Pointers valid only during the callback.
struct SegmentView {
    int segment = 0;
    std::int64_t firstPosition = 0; // absolute token position of query 0 in the whole run
    int qlen = 0;
    int mlen = 0;                   // memory rows seen by this segment (0 for GPT-2)
    int klen = 0;                   // mlen + qlen
    int dModel = 0;
    const float* embedding = nullptr;  // [qlen, dModel], the input of layer 0
    const float* posEmb = nullptr;     // [klen, dModel] (Transformer-XL only): row p = distance klen-1-p, clamped
    const std::uint8_t* mask = nullptr; // [qlen, klen], 1 = key masked for that query
};

// A stream read whole beside the segments (an encoder-decoder model's source), reported once per run, in the first
// segment, after the sites whose queries are its tokens: its embedding and the output the other sites read (after the
// stack's final norm). Pointers valid during the callback.
struct StreamView {
    int stream = 0; // ModelInfo::streams index
    int rows = 0, dModel = 0;
    const float* embedding = nullptr; // [rows, dModel]
    const float* output = nullptr;    // [rows, dModel]
};

// One site of one segment (a single-stream model: one layer). Keys are in time order: memory first (oldest first),
// then the segment. Query i sits at key position mlen + i; its relative distance to key j is i + mlen - j. A site over
// a read stream (an encoder's self-attention) or with keys from one (cross-attention) has its own qlen and klen: its
// queries or keys are that stream's tokens, from its first.
struct LayerView {
    int segment = 0;
    int layer = 0; // within the site's stack
    int site = 0;  // ModelInfo::sites index: the layer itself in a single-stream model
    int heads = 0;
    int qlen = 0;
    int mlen = 0;
    int klen = 0;
    int dModel = 0;
    // The queries and keys the scores were computed from (rotated for rotary models), valid during the callback:
    // everything needed to recompute any head's scores and probabilities exactly (attention_scores.h).
    ScoreInputs inputs;
    // [heads, qlen, klen], masked entries exactly 0. Null unless the observer wants probabilities.
    const float* attnProb = nullptr;
    // [heads, qlen] with attnProb: the entropy (nats) of each query's distribution, as the softmax computed it.
    const float* rowEntropy = nullptr;
    // The score terms, [heads, qlen, klen] each, masked entries 0, null unless the observer wants terms and the model
    // has them: Transformer-XL's (a) q.k, (b) q.R, (c) u.k, (d) v.R, each times 1/sqrt(d_head); a rotary model's
    // frequency bands (RunOptions::bands), whose sum is the score.
    const float* terms[4] = {nullptr, nullptr, nullptr, nullptr};
    // Dot-product models, when the observer wants scores: the scores before softmax, times 1/sqrt(headDim),
    // [heads, qlen, klen], masked entries 0.
    const float* scores = nullptr;
    const std::uint8_t* mask = nullptr; // [qlen, klen]
    int kvHeads = 0;
    int headDim = 0;
    const float* memsIn = nullptr;      // [mlen, dModel] or null
    const float* attnOutput = nullptr;  // [qlen, dModel], family-specific (see the model headers)
    float outputScale = 1.0f;           // a factor attnOutput already carries (Granite's residual multiplier)
    // Dot-product decoders: the heads' outputs before the output projection, [qlen, heads * dv] (head h in columns
    // h * dv .., dv = inputs.vDim()): what AttentionModel::headParts splits the attention output by.
    const float* headMix = nullptr;
    // [qlen, dModel], the layer's output, at the site that ends its layer (an encoder-decoder model's decoder layer: at
    // its cross-attention; null at its self-attention).
    const float* hidden = nullptr;
    // Mixture-of-experts layers: the router's logits and softmax [qlen, experts], the chosen experts per token (most
    // probable first) and the factor each one's output was multiplied by [qlen, expertsUsed]; null otherwise.
    int experts = 0, expertsUsed = 0;
    const float* routerLogits = nullptr;
    const float* routerProbs = nullptr;
    const std::int32_t* expertIds = nullptr;
    const float* expertWeights = nullptr;
    // A mixer's own intermediate rows under the reference's names (a short convolution's conv_B, conv_C, conv_x and
    // conv_out; a delta rule's qhat, khat, beta, g; a gated attention's attn_gate), [qlen, cols] each. inputs.mixer
    // says the site's kind.
    struct NamedRows {
        const char* name = nullptr;
        int cols = 0;
        const float* data = nullptr;
        int groups = 1; // > 1: the reference's shape is [qlen, groups, cols / groups] (per head)
    };
    std::vector<NamedRows> parts;
};

// End of a segment (GPT-2 only fills lnF/logits, and only when the observer asks).
struct SegmentEndView {
    int segment = 0;
    int qlen = 0;
    // lnF and logits hold rows firstLogitRow.. of the segment: all of them for an observer that wants logits, only
    // the last for one that wants the last row's (AttentionObserver::wantLastLogits).
    int firstLogitRow = 0;
    const float* lnF = nullptr;    // [qlen - firstLogitRow, dModel]
    const float* logits = nullptr; // [qlen - firstLogitRow, vocab]
    int vocab = 0;
    int dModel = 0;
};

// Receives captured tensors. Called on the thread that runs the model, in order: segment, its layers, end.
class AttentionObserver {
public:
    virtual ~AttentionObserver() = default;
    virtual bool wantTerms() const { return false; }
    virtual bool wantLogits() const { return false; }
    // Only the segment's last row's logits: what a text capture keeps so the next token needs no second forward.
    virtual bool wantLastLogits() const { return false; }
    virtual bool wantScores() const { return false; }       // LayerView::scores of dot-product models
    // False lets the model attend block by block without a [heads, q, k] buffer (LayerView::attnProb stays null).
    virtual bool wantProbabilities() const { return true; }
    // An observer that only sums over query rows can take them as the attention computes them instead (with
    // wantProbabilities() false): each layer's blocks reach the sink before onLayer for that layer.
    virtual AttentionRowSink* rowSink() { return nullptr; }
    virtual void onSegment(const SegmentView&) {}
    virtual void onLayer(const LayerView&) = 0;
    virtual void onStream(const StreamView&) {}
    virtual void onSegmentEnd(const SegmentEndView&) {}
};

// Per-run settings; unset values take the model's config defaults.
struct RunOptions {
    std::optional<int> memLen;
    // Rotary models: the frequency bands LayerView::terms holds when the observer wants terms (one per band).
    std::optional<BandSplit> bands;
    // Head ablation (GPT-2, Llama family): this head's output is zeroed before the layer's output projection.
    struct HeadRef {
        int layer = 0, head = 0;
    };
    std::optional<HeadRef> ablate;
    std::optional<bool> sameLength;
    std::optional<int> clampLen;
    // Encoders, by position in the run: each token's type (sentence A 0, B 1; empty: all 0) and which tokens are
    // padding (1: an attention_mask 0, no query attends to it; empty: none). The real tokens of a segment must be one
    // run (padding at the start or the end).
    std::vector<std::int32_t> tokenTypes;
    std::vector<std::uint8_t> padding;
    // Vision transformers: the image the run's tokens are (its special tokens and patches); null for text.
    std::shared_ptr<const PixelValues> image;
    // A vision-language model's further pictures, in prompt order after `image` (Gemma 3 reads several).
    std::vector<std::shared_ptr<const PixelValues>> morePictures;
    // Encoder-decoder models: the source the decoder's segments read (ids as the model reads them, special tokens
    // included); the encoder runs on it once per run, in the first segment.
    std::shared_ptr<const std::vector<std::int32_t>> source;
    // A speech encoder-decoder model's source instead (Whisper): the log-mel spectrogram the encoder reads.
    std::shared_ptr<const AudioFeatures> audio;
    // Decoders: embeddings that stand in for a placeholder token's own (a vision-language model's image rows): the
    // k-th occurrence of `token` in the run is embedded as row k. A run with more occurrences than rows is refused.
    struct PlacedRows {
        std::int32_t token = -1;
        int cols = 0;
        std::vector<float> rows; // [count, cols]
        int count() const { return cols > 0 ? static_cast<int>(rows.size() / static_cast<std::size_t>(cols)) : 0; }
        // The rows of each picture in order (their sum is count()); with `bidirectional` a picture's tokens see each
        // other both ways, later ones included (Gemma 3), the rest of the mask as the layer has it.
        std::vector<int> perPicture;
        bool bidirectional = false;
        // The picture row k belongs to.
        int pictureOf(int k) const
        {
            for (std::size_t p = 0; p < perPicture.size(); k -= perPicture[p], ++p)
                if (k < perPicture[p])
                    return static_cast<int>(p);
            return 0;
        }
    };
    std::shared_ptr<const PlacedRows> placed;
    const StopToken* stop = nullptr; // checked between segments and layers; throws Error(Cancelled)
    // Reads or replaces activations as the forward computes them (Capabilities::interventions; newState refuses it
    // elsewhere). Not owned; must outlive the run.
    Intervention* intervene = nullptr;
};

// The state carried across segments (Transformer-XL's memory, a causal model's key/value cache). Opaque to callers.
class RunState {
public:
    virtual ~RunState() = default;
    // An independent copy (a captured text keeps copies to resume from after an edit).
    virtual std::unique_ptr<RunState> clone() const = 0;
    virtual std::size_t bytes() const = 0; // memory held
    std::int64_t tokensSeen = 0;
    int segmentsDone = 0;
    const StopToken* stop = nullptr; // checked between layers; throws Error(Cancelled)
    Intervention* intervene = nullptr; // RunOptions::intervene
};

// Families whose forward has no intervention hooks call this from newState: Error(BadInput) when options ask for
// them (BadInput), naming what the model is.
void refuseIntervention(const RunOptions& options, const ModelInfo& info);

class AttentionModel {
public:
    virtual ~AttentionModel() = default;
    virtual const ModelInfo& info() const = 0;

    virtual std::unique_ptr<RunState> newState(const RunOptions& options) const = 0;
    // Runs one segment, continuing from `state`. Throws Error(BadInput) for ids out of range or too long.
    virtual void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const = 0;
    // Causal families: a state that resumes the segment `segmentEnd` ran last, after its first `keep` tokens (1 <=
    // keep <= that segment's length). Running the segment's remaining tokens from it computes what running the whole
    // segment computed for them; the observer sees the segment's first `keep` tokens as cached keys (mlen grows by
    // `keep`) and the same segment index. Null when the family cannot: Transformer-XL's memory holds whole segments.
    virtual std::unique_ptr<RunState> resumeWithin(const RunState& segmentEnd, int keep) const;
    // The model's read-out applied to residual-stream rows `hidden` [rows, dModel]: its final norm and unembedding (an
    // encoder's masked-language-model head), logits [rows, vocab] into `logits`. What the forward computes at a
    // segment's end, and what the logit lens reads every layer through. False (logits untouched) when the model is
    // read without an output layer (a Transformer-XL checkpoint without its adaptive softmax, an encoder without its
    // head). Transformer-XL's are the adaptive softmax's log-probabilities.
    virtual bool readOut(const float* hidden, int rows, std::vector<float>& logits) const;
    // A site's learned position bias (AttentionSite::positionBias: T5's relative buckets) for head `head` at a signed
    // key offset (key position minus query position); 0 where the site has none.
    virtual float positionBiasAt(int site, int head, int offset) const;

    // Direct logit attribution. Each head's part of what layer `layer`'s attention adds to the residual stream at one
    // position, from that position's LayerView::headMix row: out [heads, dModel], the output projection applied to the
    // head's slice alone. A family that normalises the attention output before adding it (Gemma 2/3, OLMo 2) scales
    // each part by that norm's factor at the position, so the parts and the attention's bias make what was added.
    // False (out untouched) where the family has no such split (Transformer-XL, encoders).
    virtual bool headParts(int layer, const float* headMixRow, std::vector<float>& out) const;
    // The read-out of `token` as a linear function of the residual stream at one position, the final norm's scale
    // frozen at `residual` (that position's final residual stream, [dModel]): its logit is direction · residual +
    // constant (before Gemma 2's soft cap), and any part of the stream contributes direction · part. False where the
    // read-out is not a final norm and an unembedding.
    virtual bool logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                                double& constant) const;

    // Convenience: the segments in order, from an empty memory.
    void run(const std::vector<std::vector<std::int32_t>>& segments, const RunOptions& options,
             AttentionObserver& observer) const;
    // Splits `ids` into segments of `segmentLen` (last one shorter) and runs them.
    void runSplit(std::span<const std::int32_t> ids, int segmentLen, const RunOptions& options,
                  AttentionObserver& observer) const;
};

} // namespace attnscope::core
