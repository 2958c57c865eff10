// Checkpoint tensor names: one table per model family, the only place these strings appear.
#pragma once

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

// Rotary decoders (Llama, Mistral, Qwen2, Qwen3, OLMo 2): each tensor by role, under its Hugging Face name and its GGUF
// name. A role a family lacks is simply not asked for (OLMo 2 has no attnNorm/ffnNorm, only the post norms). Weights are
// [out, in] (y = x W^T) in both; GGUF q/k rows of architecture llama are in Meta's interleaved order.
struct LlamaNames {
    struct Name {
        const char* hf;
        const char* gguf;
    };
    static constexpr Name embed{"model.embed_tokens.weight", "token_embd.weight"};
    static constexpr Name norm{"model.norm.weight", "output_norm.weight"};
    static constexpr Name lmHead{"lm_head.weight", "output.weight"};
    static constexpr Name ropeFreqs{nullptr, "rope_freqs.weight"};
    static constexpr Name attnNorm{"model.layers.{l}.input_layernorm.weight", "blk.{l}.attn_norm.weight"};
    static constexpr Name q{"model.layers.{l}.self_attn.q_proj.weight", "blk.{l}.attn_q.weight"};
    static constexpr Name k{"model.layers.{l}.self_attn.k_proj.weight", "blk.{l}.attn_k.weight"};
    static constexpr Name v{"model.layers.{l}.self_attn.v_proj.weight", "blk.{l}.attn_v.weight"};
    static constexpr Name o{"model.layers.{l}.self_attn.o_proj.weight", "blk.{l}.attn_output.weight"};
    static constexpr Name qBias{"model.layers.{l}.self_attn.q_proj.bias", "blk.{l}.attn_q.bias"};
    static constexpr Name kBias{"model.layers.{l}.self_attn.k_proj.bias", "blk.{l}.attn_k.bias"};
    static constexpr Name vBias{"model.layers.{l}.self_attn.v_proj.bias", "blk.{l}.attn_v.bias"};
    static constexpr Name oBias{"model.layers.{l}.self_attn.o_proj.bias", "blk.{l}.attn_output.bias"};
    static constexpr Name ffnNorm{"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.ffn_norm.weight"};
    static constexpr Name qNorm{"model.layers.{l}.self_attn.q_norm.weight", "blk.{l}.attn_q_norm.weight"};
    static constexpr Name kNorm{"model.layers.{l}.self_attn.k_norm.weight", "blk.{l}.attn_k_norm.weight"};
    // OLMo 2's norms of the attention and MLP outputs (the same Hugging Face name as ffnNorm has another role there).
    static constexpr Name attnPostNorm{"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.post_attention_norm.weight"};
    static constexpr Name ffnPostNorm{"model.layers.{l}.post_feedforward_layernorm.weight", "blk.{l}.post_ffw_norm.weight"};
    static constexpr Name gate{"model.layers.{l}.mlp.gate_proj.weight", "blk.{l}.ffn_gate.weight"};
    static constexpr Name up{"model.layers.{l}.mlp.up_proj.weight", "blk.{l}.ffn_up.weight"};
    static constexpr Name down{"model.layers.{l}.mlp.down_proj.weight", "blk.{l}.ffn_down.weight"};
    static constexpr Name gateBias{"model.layers.{l}.mlp.gate_proj.bias", "blk.{l}.ffn_gate.bias"};
    static constexpr Name upBias{"model.layers.{l}.mlp.up_proj.bias", "blk.{l}.ffn_up.bias"};
    static constexpr Name downBias{"model.layers.{l}.mlp.down_proj.bias", "blk.{l}.ffn_down.bias"};
};

class Checkpoint;
// `prefix` when the checkpoint names its tensors with it (e.g. "transformer." in *LMHeadModel files), else "".
// `probePattern` is a name every checkpoint of the family has (index 0 substituted).
std::string detectPrefix(const Checkpoint& weights, const char* prefix, const char* probePattern);

// Replaces {l} / {c} in a pattern with the index.
std::string tensorName(const std::string& prefix, const char* pattern, int index = -1);

} // namespace attnscope::core
