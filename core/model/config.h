// Model configuration read from a Hugging Face config.json or from a GGUF file's metadata. Which reader a model_type or
// architecture uses is decided by the family table (model/families.h).
#pragma once

#include "attention/mixer.h"

#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace attnscope::core {

// A family's identity; its name and everything else about it is its row in model/families.h.
enum class ModelFamily {
    TransfoXL, GPT2, Llama, Qwen3, Olmo2, GptNeoX, Phi3, Gemma2, Gemma3, Bert, Roberta, DistilBert, T5, Bart, Marian,
    Qwen3Moe, Olmoe, SmolLM3, GptOss, DeepseekV2, Mixtral, Granite, Vit, Deit, Dinov2, Dinov2Registers, ClipVision,
    Lfm2, Qwen35, GraniteHybrid, Qwen3Next, NemotronH, Llava, SiglipVision, Whisper
};
const char* familyName(ModelFamily f); // the row's name (model/families.cpp)

struct TransfoXLConfig {
    int vocabSize = 0;
    std::vector<int> cutoffs; // adaptive input cluster bounds (without 0 and vocabSize)
    int dModel = 0;
    int dEmbed = 0;
    int nHead = 0;
    int dHead = 0;
    int dInner = 0;
    int divVal = 1;
    int nLayer = 0;
    bool preLnorm = false;
    bool untieR = false;
    int memLen = 0;
    int clampLen = -1; // <= 0: no clamping
    bool sameLength = false;
    int tgtLen = 0; // training segment length (a sensible default for runs)
    float layerNormEps = 1e-5f;
};

struct GPT2Config {
    int vocabSize = 0;
    int nPositions = 0;
    int nEmbd = 0;
    int nHead = 0;
    int nLayer = 0;
    int nInner = 0; // 4 * nEmbd when null in the file
    enum class Activation { GeluNew, Gelu, Relu } activation = Activation::GeluNew;
    float layerNormEps = 1e-5f;
};

// Rotary position embedding (Hugging Face rotate_half layout: dimensions i and i + d/2 of a head form pair i).
struct RopeConfig {
    double theta = 10000.0;
    enum class Scaling { None, Linear, Llama3, LongRope, Yarn } scaling = Scaling::None;
    double factor = 1.0;          // linear: positions divided by it; llama3: low frequencies divided by it
    double lowFreqFactor = 1.0;   // llama3
    double highFreqFactor = 4.0;  // llama3
    double originalMaxPositions = 8192; // llama3
    // Per-frequency divisors given by the file itself (GGUF rope_freqs.weight), used instead of the formula.
    std::vector<float> freqDivisors;
    // LongRoPE (Phi-3's longrope / su): per-frequency divisors for texts up to originalMaxPositions (short) and longer
    // (long), and a factor on cos and sin (attention_factor, or sqrt(1 + ln(max / original) / ln original)).
    std::vector<float> shortFactors, longFactors;
    double attentionFactor = 1.0;
    // YaRN (gpt-oss): frequencies between the corrections of betaFast and betaSlow ramp from kept to divided by the
    // factor (the range rounded outwards when `truncate`), cos and sin times attentionFactor (0.1 ln factor + 1).
    double betaFast = 32, betaSlow = 1;
    bool truncate = true;
    // DeepSeek's YaRN: the softmax scale is also multiplied by (0.1 mscale_all_dim ln factor + 1)^2 (1: no factor).
    double scoreFactor = 1.0;
};

struct VisionConfig {
    ModelFamily family = ModelFamily::Vit;
    int hidden = 0, heads = 0, layers = 0, ffn = 0;
    int patch = 0, imageSize = 0, channels = 3;
    float eps = 1e-12f;
    bool quickGelu = false;         // CLIP: x sigmoid(1.702 x); others the exact erf GELU
    bool tanhGelu = false;          // SigLIP: GELU's tanh approximation (gelu_pytorch_tanh)
    bool classToken = true;         // SigLIP has none: its tokens are the patches alone
    bool distillationToken = false; // DeiT: a second special token after CLS, with a position of its own
    int registers = 0;              // DINOv2 with registers: tokens after CLS without a position
    bool layerScale = false;        // DINOv2: each branch times a learned per-channel lambda
    bool preNorm = false;           // CLIP: a LayerNorm of the embeddings before layer 0 (pre_layrnorm)
    bool finalNorm = true;          // a LayerNorm after the last layer (CLIP has none: post_layernorm on the CLS row)
    bool patchBias = true;          // CLIP's patch convolution has no bias
    // How the position table meets another patch grid: fixed (the image must be image_size square), torch's bicubic
    // (DINOv2, A = -0.75, taps clamped), or the antialiased bicubic of DINOv2 with registers (a = -0.5, taps dropped).
    enum class Positions { Fixed, Bicubic, AntialiasedBicubic } positions = Positions::Fixed;
    std::vector<std::string> labels; // id2label in index order (an image classifier's classes), or empty
    // Where a vision-language checkpoint keeps the tower ("vision_tower." in LLaVA's files), before the family's own
    // prefix; empty for a tower on its own.
    std::string place;
    int leadTokens() const { return (classToken ? 1 : 0) + (distillationToken ? 1 : 0); } // with a position each
    int specialTokens() const { return leadTokens() + registers; }
};

// A vision-language decoder's picture side (LLaVA): the vision tower, which of its hidden states the decoder reads, and
// the projector that makes them decoder embeddings; each image token of the prompt is replaced by one of them, in order.
struct VisionLanguageConfig {
    ModelFamily family = ModelFamily::Llava; // what the model is called (Gemma 3's is its text family)
    VisionConfig tower;
    // Index into the tower's hidden states (0: the embeddings after its pre-norm, l + 1: layer l's output), negative
    // from the end as the reference's vision_feature_layer.
    int featureLayer = -2;
    bool dropClass = true;          // vision_feature_select_strategy "default" (the CLS row dropped); "full" keeps it
    bool normedOutput = false;      // Gemma 3: the tower's output after its final norm (featureLayer unused)
    // Gemma 3's projector: the patch grid averaged over poolKernel x poolKernel cells, an RMSNorm (1 + w) with the
    // tower's epsilon, then x W (mm_input_projection_weight, [tower, text]); 0: LLaVA's two-layer GELU projector.
    int poolKernel = 0;
    // Gemma 3: each picture's tokens attend to each other both ways (causal elsewhere), and the placeholder's run is
    // framed by these tokens in the expanded prompt (-1: none).
    bool bidirectionalPicture = false;
    std::int32_t beginToken = -1, endToken = -1;
    std::int32_t imageToken = -1;   // image_token_index: the placeholder each image row replaces
    bool projectorBias = true;      // multimodal_projector_bias
    int projectorHidden = 0;        // linear_1's output (the decoder's hidden size in LLaVA-1.5)
    // The tower's hidden-state index counted from 0 (Error-free: the parser checked it is in range).
    int featureIndex() const { return featureLayer < 0 ? tower.layers + 1 + featureLayer : featureLayer; }
};

// Rotary decoders (Llama, Mistral, Qwen2, Qwen3, OLMo 2, GPT-NeoX, Phi-3): one configuration, the families' quirks as
// fields.
struct LlamaConfig {
    std::string modelType = "llama"; // llama, mistral, qwen2, qwen3, olmo2 (or the GGUF architecture)
    ModelFamily family = ModelFamily::Llama;
    int vocabSize = 0;
    int hidden = 0;
    int intermediate = 0;
    int nHead = 0;
    int nKvHead = 0;
    int headDim = 0;
    int nLayer = 0;
    float rmsNormEps = 1e-6f;
    RopeConfig rope;
    int maxPositions = 2048;
    bool tieEmbeddings = false;
    bool qkvBias = false; // attention_bias, or Qwen2's q/k/v biases
    bool oBias = false;   // attention_bias (Llama) also puts a bias on o_proj; Qwen2 has none
    bool mlpBias = false;
    int slidingWindow = 0; // Mistral: keys further back than this are not seen (0 = no window)
    // RMSNorm of the queries and keys before rotation: Qwen3 per head (weights [headDim]), OLMo 2 over the whole
    // projection (weights [heads * headDim]).
    enum class QkNorm { None, PerHead, Whole } qkNorm = QkNorm::None;
    // Norms before attention and MLP (all but OLMo 2), and of their outputs inside the residual branch (OLMo 2, Gemma).
    bool preNorms = true;
    bool postNorms = false;
    // Embeddings times embeddingScale (Gemma: sqrt(hidden) as a float32 number; Granite: embedding_multiplier).
    // Gemma: norm weights used as 1 + w (Hugging Face files store w; llama.cpp's converter stores 1 + w, so GGUF files
    // need no offset), scores scaled by query_pre_attn_scalar^-1/2 and soft-capped (Gemma 2), logits soft-capped (0:
    // none). Granite: scores scaled by attentionScale (attention_multiplier), each block's output times residualScale
    // before it joins the residual stream, logits divided by logitScale (logits_scaling). The score scale is
    // scoreScale(): attentionScale, else query_pre_attn_scalar^-1/2, else 1/sqrt(headDim).
    float embeddingScale = 1.0f;
    float normOffset = 0.0f;
    double queryPreAttnScalar = 0;
    double attentionScale = 0;
    float residualScale = 1.0f;
    float logitScale = 1.0f;
    float attnSoftCap = 0.0f;
    float finalSoftCap = 0.0f;
    // Which layers slide (Gemma 2's alternating, Gemma 3's 5 local : 1 global); empty: every layer uses slidingWindow.
    std::vector<bool> slidingLayers;
    // Gemma 3: the rotary base of sliding layers (rope_local_base_freq; 0: rope.theta everywhere).
    double localRopeTheta = 0;
    // GPT-NeoX: LayerNorm with bias (eps in rmsNormEps), a GELU (erf) MLP without gate, attention and MLP both reading
    // the layer input (parallel residual) unless use_parallel_residual is false, biases on every projection.
    enum class Norm { Rms, Layer } norm = Norm::Rms;
    // GatedGeluTanh: Gemma's GeGLU; ReluSquared: Nemotron-H's down(relu(up x)^2), no gate.
    enum class Mlp { GatedSilu, Gelu, GatedGeluTanh, ReluSquared } mlp = Mlp::GatedSilu;
    bool parallelResidual = false;
    // Fused q/k/v: one [3 heads headDim, hidden] tensor, as [q; k; v] row blocks (GGUF attn_qkv) or per head
    // [q_n; k_n; v_n] (GPT-NeoX's query_key_value). Read through row orders, never copied.
    enum class Qkv { Separate, Blocks, PerHead } qkv = Qkv::Separate;
    // Gate and up projections in one tensor, gate rows first (read as two row views): Phi-3's MLP [2 intermediate,
    // hidden]; Granite-MoE's experts in Hugging Face files ([experts, 2 expertFfn, hidden]) and its shared expert.
    bool fusedGateUp = false;
    // Dimensions of each head that rotate (the first rotaryDims; 0 = all): GPT-NeoX's rotary_pct, Phi-3's
    // partial_rotary_factor.
    int rotaryDims = 0;
    int rotated() const { return rotaryDims > 0 ? rotaryDims : headDim; }
    bool slides(int layer) const
    {
        return slidingWindow > 0 && (slidingLayers.empty() || slidingLayers[static_cast<std::size_t>(layer)]);
    }
    // Mixture of experts (Qwen3-MoE, OLMoE): in every layer a router (softmax over `experts`) picks `expertsUsed`
    // SwiGLU experts of width expertFfn per token; their outputs are summed weighted by the router's probabilities,
    // renormalised over the chosen ones when normTopK. 0 experts: a dense MLP.
    int experts = 0, expertsUsed = 0, expertFfn = 0;
    bool normTopK = false;
    // DeepSeek: the first denseLayers layers have a dense MLP (first_k_dense_replace), then every moeEvery-th layer
    // routes; sharedFfn > 0 adds a shared SwiGLU expert of that width that every token runs; the routed experts'
    // weights are multiplied by routedScale.
    // DeepSeek-V2's group-limited greedy routing: the experts form expertGroups groups, only the groupsUsed groups
    // whose best expert scores highest take part in the top-k (1 group: plain top-k).
    int denseLayers = 0, moeEvery = 1, sharedFfn = 0, expertGroups = 1, groupsUsed = 1;
    float routedScale = 1.0f;
    bool routes(int layer) const { return experts > 0 && layer >= denseLayers && layer % moeEvery == 0; }
    // DeepSeek-V2's multi-head latent attention (MLA): each position is compressed to a latent of kvRank (RMS-normed)
    // plus one rotary key of ropeDim shared by all heads; each head's key is [its content part (nopeDim) from the
    // latent ; the shared rotary key] and its value (valueDim) comes from the latent too. Queries come from the
    // hidden state directly or through a normed latent of qRank (0: directly). headDim is nopeDim + ropeDim, of which
    // ropeDim rotate (rotaryDims); as many key/value heads as heads. kvRank 0: ordinary attention.
    struct LatentAttention {
        int kvRank = 0, qRank = 0, nopeDim = 0, ropeDim = 0, valueDim = 0;
    } mla;
    bool latentAttention() const { return mla.kvRank > 0; }
    int valueDim() const { return latentAttention() ? mla.valueDim : headDim; }
    // gpt-oss's experts: the router has a bias, picks by logits and weighs the chosen ones by a softmax over them;
    // every expert has biases; its SwiGLU is clamped (gate <= limit, |up| <= limit) and reads
    // (up + 1) * gate * sigmoid(alpha gate); Hugging Face stores the experts [in, out] with gate and up interleaved.
    bool routerBias = false, softmaxOverChosen = false, expertBiases = false;
    float swigluLimit = 0.0f, swigluAlpha = 1.0f;
    // gpt-oss: a learned sink logit per head in every attention softmax.
    bool attentionSinks = false;
    // SmolLM3: layers that use no rotary positions (NoPE: q and k as projected); empty: every layer rotates.
    std::vector<bool> noRopeLayers;
    bool rotates(int layer) const
    {
        return noRopeLayers.empty() || !noRopeLayers[static_cast<std::size_t>(layer)];
    }
    // Hybrid models: what mixes each layer's tokens (LFM2's layer_types: a short convolution or attention); empty:
    // attention in every layer. A short convolution reaches convWidth tokens (the current one and convWidth - 1
    // before it: LFM2's conv_L_cache).
    std::vector<Mixer> layerMixers;
    int convWidth = 0;
    // Gated DeltaNet layers (Mixer::DeltaRule, Qwen3.5): key heads and value heads (a multiple of them; value head h
    // reads key head h / (valueHeads / keyHeads)), their sizes, and the causal convolution over q, k and v.
    struct DeltaNet {
        int keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0, convWidth = 0;
        int keyWidth() const { return keyHeads * keyDim; }
        int valueWidth() const { return valueHeads * valueDim; }
        int convChannels() const { return 2 * keyWidth() + valueWidth(); }
    } deltaNet;
    // Mamba-2 layers (Mixer::StateSpace, Granite 4.0-H): heads of headDim channels reading groups of B and C of the
    // state's size (head h reads group h / (heads / groups)), the convolution over x | B | C (with a bias or not), and
    // the gated norm over normGroups runs of channels (1: all of them, as Hugging Face's Granite norms).
    struct Mamba2 {
        int heads = 0, headDim = 0, groups = 0, state = 0, convWidth = 0, normGroups = 1;
        bool convBias = false;
        int inner() const { return heads * headDim; }
        int convChannels() const { return inner() + 2 * groups * state; }
    } mamba;
    // llama.cpp's qwen35 files keep the value heads tiled (GGUF head p is Hugging Face head (p % Hk) R + p / Hk,
    // R = Hv / Hk): read back into Hugging Face's order, so a head shown is the same head whichever file opened it.
    bool ggufTiledValueHeads = false;
    // Qwen3-Next's fused projections, grouped per key head: in_proj_qkvz (q | k | v | z of each key head's value
    // heads; Hugging Face files only, llama.cpp's converter splits them) and in_proj_ba (b | a of each key head).
    bool groupedQkvz = false, groupedBa = false;
    // Qwen3-Next: the shared expert's output times sigmoid of its own gate (a number per token).
    bool sharedExpertGate = false;
    // Qwen3.5's attention: each head's output times sigmoid of a gate projected beside its query (q_proj's rows per
    // head: the query's, then the gate's).
    bool attnOutputGate = false;
    Mixer mixer(int layer) const
    {
        return layerMixers.empty() ? Mixer::Softmax : layerMixers[static_cast<std::size_t>(layer)];
    }
    // Nemotron-H's blocks have one part each: a mixer (Mamba-2 or attention) or an MLP (Mixer::None); which layers run
    // a feed-forward block (empty: every layer after its mixer).
    std::vector<bool> ffnLayers;
    bool hasFfn(int layer) const { return ffnLayers.empty() || ffnLayers[static_cast<std::size_t>(layer)]; }
    bool fromGguf = false;
    bool ggufInterleavedQK = false; // GGUF q/k rows in Meta's interleaved order (architecture llama)
    float scoreScale() const; // model/config.cpp
    // A vision-language decoder (LLaVA): the picture side; empty for a text model.
    std::optional<VisionLanguageConfig> vision;
};

// Encoders (BERT, RoBERTa, DistilBERT): learned absolute positions, token types, post-LayerNorm blocks, bidirectional
// attention over the real (unpadded) tokens, an optional masked-language-model head.
struct EncoderConfig {
    ModelFamily family = ModelFamily::Bert;
    int vocabSize = 0;
    int hidden = 0;
    int nHead = 0;
    int nLayer = 0;
    int intermediate = 0;
    int maxPositions = 0;
    int typeVocabSize = 0; // 0: no token type embeddings (DistilBERT)
    float layerNormEps = 1e-12f;
    int padTokenId = 0;
    // RoBERTa (fairseq's make_positions): a real token's position is pad + its count among the real tokens so far, a
    // padding token's is pad; otherwise positions are 0, 1, ...
    bool positionsAfterPadding = false;
    enum class Activation { Gelu, GeluNew, Relu } activation = Activation::Gelu;
    // The longest sequence the position table holds.
    int maxTokens() const { return positionsAfterPadding ? maxPositions - padTokenId - 1 : maxPositions; }
};

// Encoder-decoder models (T5 / Flan-T5, BART / mBART, Marian / OPUS-MT): one configuration, the families' quirks as
// fields (set in one place, model/config.cpp). The arithmetic is model/seq2seq.cpp.
struct Seq2SeqConfig {
    ModelFamily family = ModelFamily::T5;
    int vocabSize = 0;
    int dModel = 0;
    int heads = 0;
    int dHead = 0;      // T5's d_kv: the attention's inner width is heads * dHead, which need not be dModel
    int encLayers = 0;
    int decLayers = 0;
    int encFfn = 0, decFfn = 0;
    float eps = 1e-6f;
    enum class Norm { Rms, Layer } norm = Norm::Rms; // T5's RMS norm without mean, or LayerNorm with bias
    bool preNorm = true;         // T5, mBART: a norm before each sub-layer; BART, Marian: after each residual sum
    bool finalNorms = true;      // T5, mBART: a norm after each stack
    bool embeddingNorm = false;  // BART: layernorm_embedding after embedding and positions
    bool scaleEmbedding = false; // embeddings times sqrt(dModel) (Marian, BART's scale_embedding)
    enum class Positions { RelativeBuckets, Learned, Sinusoidal } positions = Positions::RelativeBuckets;
    int positionOffset = 0;      // BART's learned table: position p reads row p + 2
    int maxPositions = 0;        // learned / sinusoidal: rows a stream may use; T5: no architectural limit
    int buckets = 32, maxDistance = 128; // T5's relative buckets
    bool scaleScores = true;     // q.k / sqrt(dHead) (BART, Marian); T5 none
    bool biases = false;         // every projection has a bias (BART, Marian)
    enum class Activation { Relu, Gelu, GeluNew, Silu } activation = Activation::Relu;
    bool gatedFfn = false;       // T5 v1.1 / Flan: wo(act(wi_0 x) * wi_1 x)
    bool tiedHead = true;        // the read-out is the shared embedding
    bool scaleTiedHead = false;  // T5 v1.0: the tied read-out scales by dModel^-1/2
    bool finalLogitsBias = false; // BART, Marian: a bias on the logits (a buffer, zeros in BART's releases)
    int decoderStart = 0, eos = 1, pad = 0;
    bool fromGguf = false;
    bool keyBias = true;         // the key projections have a bias where `biases` says (Whisper's have none)
    // A speech encoder (Whisper): the source is a log-mel spectrogram of `audioMels` bins (RunOptions::audio), read by
    // two convolutions (the second of stride 2) into `sourcePositions` rows with a stored sinusoid table; 0: token ids.
    int audioMels = 0;
    int sourcePositions = 0;
};

// Vision transformers (ViT, DeiT, DINOv2 with or without registers, CLIP's vision tower): an image cut into patches,
// special tokens before them, pre-norm encoder blocks. The families' differences are these fields (model/config.cpp);
// the arithmetic is model/vision.cpp.

using ModelConfig = std::variant<TransfoXLConfig, GPT2Config, LlamaConfig, EncoderConfig, Seq2SeqConfig, VisionConfig>;

// Parses and validates a config through its family's row; `file` is used in messages. Throws
// Error(UnknownModelType / BadConfig).
ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& file);
ModelConfig readModelConfig(const std::string& configPath);

class GgufFile;
// The configuration of a GGUF model from its metadata (and tensor shapes), through its architecture's row. Throws
// Error(UnknownModelType / BadConfig) naming the file and the key.
ModelConfig ggufModelConfig(const GgufFile& file);

// The family rows' readers (model/families.cpp).
TransfoXLConfig parseTransfoXLConfig(const nlohmann::json& json, const std::string& file);
GPT2Config parseGPT2Config(const nlohmann::json& json, const std::string& file);
LlamaConfig parseDecoderConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);
LlamaConfig parseGptNeoXConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);
LlamaConfig parseGemma3Config(const nlohmann::json& json, const std::string& file, const std::string& modelType);
// Qwen3.5's text model (qwen3_5_text), or that of a multimodal qwen3_5 folder (its text_config).
LlamaConfig parseQwen35Config(const nlohmann::json& json, const std::string& file, const std::string& modelType);
LlamaConfig ggufDecoderConfig(const GgufFile& file);
EncoderConfig parseEncoderConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);
Seq2SeqConfig parseSeq2SeqConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);
Seq2SeqConfig ggufSeq2SeqConfig(const GgufFile& file);
VisionConfig parseVisionConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);
// LLaVA (model_type llava): the text_config's decoder with the vision_config's tower, the feature layer and projector.
LlamaConfig parseLlavaConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType);

} // namespace attnscope::core
