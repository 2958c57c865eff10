// Checkpoint tensor names: one table per model family, the only place these strings appear.
#pragma once

#include "model/config.h"

#include <string>

namespace attnscope::core {

// Patterns use {l} for the layer index and {c} for the adaptive-embedding cluster.
// Names are relative to an optional prefix ("transformer." in *LMHeadModel checkpoints).
struct TransfoXLNames {
    static constexpr const char* embTable = "word_emb.emb_layers.{c}.weight";
    static constexpr const char* embProj = "word_emb.emb_projs.{c}";
    static constexpr const char* invFreq = "pos_emb.inv_freq";
    static constexpr const char* rwBiasTied = "r_w_bias";
    static constexpr const char* rrBiasTied = "r_r_bias";
    static constexpr const char* rwBiasLayer = "layers.{l}.dec_attn.r_w_bias";
    static constexpr const char* rrBiasLayer = "layers.{l}.dec_attn.r_r_bias";
    static constexpr const char* qkv = "layers.{l}.dec_attn.qkv_net.weight";
    static constexpr const char* rNet = "layers.{l}.dec_attn.r_net.weight";
    static constexpr const char* oNet = "layers.{l}.dec_attn.o_net.weight";
    static constexpr const char* lnAttnW = "layers.{l}.dec_attn.layer_norm.weight";
    static constexpr const char* lnAttnB = "layers.{l}.dec_attn.layer_norm.bias";
    static constexpr const char* ff1W = "layers.{l}.pos_ff.CoreNet.0.weight";
    static constexpr const char* ff1B = "layers.{l}.pos_ff.CoreNet.0.bias";
    static constexpr const char* ff2W = "layers.{l}.pos_ff.CoreNet.3.weight";
    static constexpr const char* ff2B = "layers.{l}.pos_ff.CoreNet.3.bias";
    static constexpr const char* lnFfW = "layers.{l}.pos_ff.layer_norm.weight";
    static constexpr const char* lnFfB = "layers.{l}.pos_ff.layer_norm.bias";
    static constexpr const char* prefix = "transformer.";
    // The projected adaptive softmax ("crit", outside the prefix). Its tables and projections may be left out as
    // tied to the input's (embTable, embProj).
    static constexpr const char* outWeight = "crit.out_layers.{c}.weight";
    static constexpr const char* outBias = "crit.out_layers.{c}.bias";
    static constexpr const char* outProj = "crit.out_projs.{c}";
    static constexpr const char* clusterWeight = "crit.cluster_weight";
    static constexpr const char* clusterBias = "crit.cluster_bias";
};

// GPT2Model names; Conv1D weights are stored [in, out] (y = x W + b).
struct GPT2Names {
    static constexpr const char* wte = "wte.weight";
    static constexpr const char* wpe = "wpe.weight";
    static constexpr const char* ln1W = "h.{l}.ln_1.weight";
    static constexpr const char* ln1B = "h.{l}.ln_1.bias";
    static constexpr const char* attnW = "h.{l}.attn.c_attn.weight";
    static constexpr const char* attnB = "h.{l}.attn.c_attn.bias";
    static constexpr const char* projW = "h.{l}.attn.c_proj.weight";
    static constexpr const char* projB = "h.{l}.attn.c_proj.bias";
    static constexpr const char* ln2W = "h.{l}.ln_2.weight";
    static constexpr const char* ln2B = "h.{l}.ln_2.bias";
    static constexpr const char* fcW = "h.{l}.mlp.c_fc.weight";
    static constexpr const char* fcB = "h.{l}.mlp.c_fc.bias";
    static constexpr const char* mlpProjW = "h.{l}.mlp.c_proj.weight";
    static constexpr const char* mlpProjB = "h.{l}.mlp.c_proj.bias";
    static constexpr const char* lnFW = "ln_f.weight";
    static constexpr const char* lnFB = "ln_f.bias";
    static constexpr const char* prefix = "transformer.";
};

// A tensor under its Hugging Face name and its GGUF name (either null where that format lacks it).
struct TensorName {
    const char* hf = nullptr;
    const char* gguf = nullptr;
};

// Rotary decoders (Llama, Mistral, Qwen2, Qwen3, OLMo 2, GPT-NeoX): each family's tensors by role. A role a family
// lacks is null and never asked for (OLMo 2 has no attnNorm/ffnNorm, GPT-NeoX no separate q/k/v). Weights are
// [out, in] (y = x W^T) in both formats; GGUF q/k rows of architecture llama are in Meta's interleaved order.
struct DecoderNames {
    TensorName embed, norm, normBias, lmHead;
    TensorName attnNorm, attnNormBias, q, k, v, qkv, o, qBias, kBias, vBias, qkvBias, oBias;
    TensorName qNorm, kNorm;
    TensorName attnPostNorm, ffnPostNorm; // OLMo 2's norms of the attention and MLP outputs
    TensorName ffnNorm, ffnNormBias, gate, up, gateUp, down, gateBias, upBias, downBias;
    // Mixture of experts: the router, and each expert's SwiGLU ({e} in a Hugging Face name is the expert; GGUF stacks
    // the experts in one 3-D tensor [experts, out, in]).
    TensorName router, expertGate, expertUp, expertDown;
    // A Hugging Face expert name without {e} is a stack [experts, out, in] (Granite-MoE's output_linear).
    // gpt-oss: the router's bias, each expert's biases ([experts, out]), Hugging Face's fused [experts, in, 2 out]
    // gate/up (interleaved columns) and its bias, and the per-head attention sinks. Granite-MoE's fused
    // [experts, 2 out, in] gate/up (gate rows first: LlamaConfig::fusedGateUp) is expertGateUp too.
    TensorName routerBias, expertGateBias, expertUpBias, expertDownBias, expertGateUp, expertGateUpBias, sinks;
    // DeepSeek: the shared expert's SwiGLU, and latent attention's projections (model/latent_attention.h): the query
    // latent and its norm, the key/value latent with the rotary key (kv_a_proj_with_mqa), its norm, the latent's
    // up-projection to content keys and values (kv_b_proj), or llama.cpp's split of it per head (attn_k_b, attn_v_b).
    // Granite-MoE's shared expert keeps its gate and up rows in one tensor (sharedGateUp, gate rows first).
    TensorName sharedGate, sharedUp, sharedDown, sharedGateUp;
    TensorName qA, qANorm, qB, kvA, kvANorm, kvB, kB, vB;
    // LFM2's short-convolution blocks: in_proj (B | C | x rows), the depthwise taps ([channels, 1, width]; GGUF
    // {width, channels}) and out_proj.
    TensorName convIn, convTaps, convOut;
    // Gated DeltaNet layers (Qwen3.5): q | k | v projection, the norm's gate z, write strength b and decay a
    // projections, the convolution over q | k | v, dt's bias, A_log (GGUF: -exp(A_log)), the gated norm, out_proj.
    TensorName deltaQkv, deltaZ, deltaB, deltaA, deltaConv, deltaDtBias, deltaDecay, deltaNorm, deltaOut;
    // Mamba-2 layers (Granite 4.0-H): in_proj (z | xBC | dt), the convolution's taps and bias, dt's bias, A_log
    // (GGUF: -exp(A_log)), the skip D, the gated norm and out_proj.
    TensorName mambaIn, mambaConv, mambaConvBias, mambaDtBias, mambaDecay, mambaSkip, mambaNorm, mambaOut;
    // Qwen3-Next: the shared expert's gate [1, hidden].
    TensorName sharedExpertGate;
};
// The table of the family (its row's DecoderFamily::names; model/families.h decides which family a file is).
const DecoderNames& decoderNames(ModelFamily family);
// Each table, built once: Llama's (Llama, Mistral, Qwen2, Qwen3, Qwen3-MoE, OLMoE, SmolLM3) and those that differ.
const DecoderNames& llamaDecoderNames();
const DecoderNames& olmo2DecoderNames();
const DecoderNames& gptNeoXDecoderNames();
const DecoderNames& phi3DecoderNames();
const DecoderNames& gemmaDecoderNames();
const DecoderNames& gptOssDecoderNames();
const DecoderNames& deepseekDecoderNames();
const DecoderNames& mixtralDecoderNames();
const DecoderNames& graniteDecoderNames();
const DecoderNames& lfm2DecoderNames();
const DecoderNames& qwen35DecoderNames();
const DecoderNames& graniteHybridDecoderNames();
const DecoderNames& qwen3NextDecoderNames();
const DecoderNames& nemotronHDecoderNames();

// Encoders (BERT, RoBERTa, DistilBERT), Hugging Face names of the base model, relative to the family's prefix
// ("bert.", "roberta.", "distilbert.": present in *ForMaskedLM / *ForPreTraining files, absent in *Model files). Norm
// weights and biases are found under the legacy LayerNorm.gamma / LayerNorm.beta too (Google-converted BERT). The
// masked-language-model head's names are absolute (no prefix); null roles are absent in that family.
struct EncoderNames {
    const char* prefix = nullptr;
    const char *wordEmb, *posEmb, *typeEmb = nullptr, *embNorm; // norms: the name without .weight / .bias
    const char *q, *k, *v, *o, *attnNorm, *ffnIn, *ffnOut, *ffnNorm; // linear layers: without .weight / .bias
    const char *headDense, *headNorm, *headBias, *headDecoder;      // MLM head (decoder: without .weight)
};
const EncoderNames& encoderNames(ModelFamily family);

// Encoder-decoder models (T5, BART / mBART, Marian): one stack's tensors by role, names without .weight / .bias ({l}
// is the layer). A role the format lacks is null: T5 has no learned positions, BART no relative bias, encoders no
// cross-attention. T5's relative bias lives in layer 0 only (relBias, with {l} = 0).
struct Seq2SeqStackNames {
    const char *posEmb, *embNorm, *finalNorm, *relBias;
    const char *selfNorm, *q, *k, *v, *o;
    const char *crossNorm, *cq, *ck, *cv, *co;
    const char *ffnNorm, *ffnIn, *ffnGate, *ffnUp, *ffnOut; // ffnIn ungated; ffnGate (activated) and ffnUp gated
    const char *conv1 = nullptr, *conv2 = nullptr; // a speech encoder's convolutions over the spectrogram (Whisper)
};
struct Seq2SeqNames {
    const char* prefix;    // "model." of BART's *ForConditionalGeneration files ("" when the file lacks it)
    const char* embed;     // the shared embedding (with .weight)
    const char* embedAlt;  // where a file keeps it instead (T5's encoder.embed_tokens.weight), or null
    const char* lmHead;    // an untied read-out (with .weight)
    const char* logitsBias; // final_logits_bias, absolute
    Seq2SeqStackNames enc, dec;
};
// Hugging Face names of the family, or llama.cpp's GGUF names of T5.
const Seq2SeqNames& seq2seqNames(ModelFamily family, bool gguf);

// Vision transformers, names relative to the family's prefix (ViT's "vit.", DeiT's "deit.", DINOv2's "dinov2." or
// "dinov2_with_registers." in classification files; CLIP's "vision_model."); norms and linear layers without
// .weight / .bias; null where the family lacks the role. Heads outside the prefix are absolute.
struct VisionNames {
    const char* prefix;
    const char *cls, *dist, *registers, *pos, *patch; // patch: the convolution, without .weight / .bias
    const char *preNorm, *finalNorm;
    const char *norm1, *q, *k, *v, *o, *scale1, *norm2, *fc1, *fc2, *scale2; // {l}: the layer
    const char *pooler, *projection, *clsHead, *distHead;                    // absolute (projection with .weight)
    const char* classifier; // ViTForImageClassification's head on the CLS row (absolute), or null
};
const VisionNames& visionNames(ModelFamily family);

class Checkpoint;
// `prefix` when the checkpoint names its tensors with it (e.g. "transformer." in *LMHeadModel files), else "".
// `probePattern` is a name every checkpoint of the family has (index 0 substituted).
std::string detectPrefix(const Checkpoint& weights, const char* prefix, const char* probePattern);

// Where a Hugging Face checkpoint keeps a decoder's text model: at the top (model.*, lm_head.*), or inside a multimodal
// model whose other parts are not read (Gemma 3's Gemma3ForConditionalGeneration): language_model.model.* and
// language_model.lm_head.* as transformers wrote it before 4.52, model.language_model.* and lm_head.* since.
enum class TextModelPlace { Top, UnderLanguageModel, InsideModel };
// Decided by where the checkpoint has the text model's embedding (`embedName`, its name at the top); Top when nowhere,
// so a missing tensor is reported under its usual name.
TextModelPlace textModelPlace(const Checkpoint& weights, const std::string& embedName);
// A text model's Hugging Face name (as at the top) where `place` keeps it.
std::string placedName(TextModelPlace place, const std::string& name);

// Replaces {l} / {c} in a pattern with the index.
std::string tensorName(const std::string& prefix, const char* pattern, int index = -1);

} // namespace attnscope::core
