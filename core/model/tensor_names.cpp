// tensorName: pattern substitution for the name tables.
#include "model/tensor_names.h"

#include "io/checkpoint.h"
#include "model/decoder_families.h"
#include "model/families.h"
#include "util/error.h"

namespace attnscope::core {

std::string tensorName(const std::string& prefix, const char* pattern, int index)
{
    std::string s = prefix + pattern;
    for (const char* ph : {"{l}", "{c}"}) {
        const auto pos = s.find(ph);
        if (pos != std::string::npos)
            s.replace(pos, 3, std::to_string(index));
    }
    return s;
}

namespace {

DecoderNames llamaNames()
{
    DecoderNames n;
    n.embed = {"model.embed_tokens.weight", "token_embd.weight"};
    n.norm = {"model.norm.weight", "output_norm.weight"};
    n.lmHead = {"lm_head.weight", "output.weight"};
    n.attnNorm = {"model.layers.{l}.input_layernorm.weight", "blk.{l}.attn_norm.weight"};
    n.q = {"model.layers.{l}.self_attn.q_proj.weight", "blk.{l}.attn_q.weight"};
    n.k = {"model.layers.{l}.self_attn.k_proj.weight", "blk.{l}.attn_k.weight"};
    n.v = {"model.layers.{l}.self_attn.v_proj.weight", "blk.{l}.attn_v.weight"};
    n.o = {"model.layers.{l}.self_attn.o_proj.weight", "blk.{l}.attn_output.weight"};
    n.qBias = {"model.layers.{l}.self_attn.q_proj.bias", "blk.{l}.attn_q.bias"};
    n.kBias = {"model.layers.{l}.self_attn.k_proj.bias", "blk.{l}.attn_k.bias"};
    n.vBias = {"model.layers.{l}.self_attn.v_proj.bias", "blk.{l}.attn_v.bias"};
    n.oBias = {"model.layers.{l}.self_attn.o_proj.bias", "blk.{l}.attn_output.bias"};
    n.qNorm = {"model.layers.{l}.self_attn.q_norm.weight", "blk.{l}.attn_q_norm.weight"};
    n.kNorm = {"model.layers.{l}.self_attn.k_norm.weight", "blk.{l}.attn_k_norm.weight"};
    n.ffnNorm = {"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.ffn_norm.weight"};
    n.gate = {"model.layers.{l}.mlp.gate_proj.weight", "blk.{l}.ffn_gate.weight"};
    n.up = {"model.layers.{l}.mlp.up_proj.weight", "blk.{l}.ffn_up.weight"};
    n.down = {"model.layers.{l}.mlp.down_proj.weight", "blk.{l}.ffn_down.weight"};
    n.gateBias = {"model.layers.{l}.mlp.gate_proj.bias", "blk.{l}.ffn_gate.bias"};
    n.upBias = {"model.layers.{l}.mlp.up_proj.bias", "blk.{l}.ffn_up.bias"};
    n.downBias = {"model.layers.{l}.mlp.down_proj.bias", "blk.{l}.ffn_down.bias"};
    n.router = {"model.layers.{l}.mlp.gate.weight", "blk.{l}.ffn_gate_inp.weight"};
    n.expertGate = {"model.layers.{l}.mlp.experts.{e}.gate_proj.weight", "blk.{l}.ffn_gate_exps.weight"};
    n.expertUp = {"model.layers.{l}.mlp.experts.{e}.up_proj.weight", "blk.{l}.ffn_up_exps.weight"};
    n.expertDown = {"model.layers.{l}.mlp.experts.{e}.down_proj.weight", "blk.{l}.ffn_down_exps.weight"};
    return n;
}

DecoderNames olmo2Names()
{
    DecoderNames n = llamaNames();
    n.attnNorm = n.ffnNorm = {};
    // The Hugging Face name Llama gives its pre-MLP norm is OLMo 2's norm of the attention output.
    n.attnPostNorm = {"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.post_attention_norm.weight"};
    n.ffnPostNorm = {"model.layers.{l}.post_feedforward_layernorm.weight", "blk.{l}.post_ffw_norm.weight"};
    return n;
}

DecoderNames gemmaNames()
{
    DecoderNames n = llamaNames();
    // Four norms a layer: before and after attention, before and after the MLP.
    n.attnPostNorm = {"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.post_attention_norm.weight"};
    n.ffnNorm = {"model.layers.{l}.pre_feedforward_layernorm.weight", "blk.{l}.ffn_norm.weight"};
    n.ffnPostNorm = {"model.layers.{l}.post_feedforward_layernorm.weight", "blk.{l}.post_ffw_norm.weight"};
    return n;
}

DecoderNames phi3Names()
{
    DecoderNames n = llamaNames();
    n.q = n.k = n.v = n.gate = n.up = {};
    n.qkv = {"model.layers.{l}.self_attn.qkv_proj.weight", "blk.{l}.attn_qkv.weight"};
    n.gateUp = {"model.layers.{l}.mlp.gate_up_proj.weight", "blk.{l}.ffn_up.weight"};
    return n;
}

DecoderNames gptNeoXNames()
{
    DecoderNames n;
    n.embed = {"gpt_neox.embed_in.weight", "token_embd.weight"};
    n.norm = {"gpt_neox.final_layer_norm.weight", "output_norm.weight"};
    n.normBias = {"gpt_neox.final_layer_norm.bias", "output_norm.bias"};
    n.lmHead = {"embed_out.weight", "output.weight"};
    n.attnNorm = {"gpt_neox.layers.{l}.input_layernorm.weight", "blk.{l}.attn_norm.weight"};
    n.attnNormBias = {"gpt_neox.layers.{l}.input_layernorm.bias", "blk.{l}.attn_norm.bias"};
    n.qkv = {"gpt_neox.layers.{l}.attention.query_key_value.weight", "blk.{l}.attn_qkv.weight"};
    n.qkvBias = {"gpt_neox.layers.{l}.attention.query_key_value.bias", "blk.{l}.attn_qkv.bias"};
    n.o = {"gpt_neox.layers.{l}.attention.dense.weight", "blk.{l}.attn_output.weight"};
    n.oBias = {"gpt_neox.layers.{l}.attention.dense.bias", "blk.{l}.attn_output.bias"};
    n.ffnNorm = {"gpt_neox.layers.{l}.post_attention_layernorm.weight", "blk.{l}.ffn_norm.weight"};
    n.ffnNormBias = {"gpt_neox.layers.{l}.post_attention_layernorm.bias", "blk.{l}.ffn_norm.bias"};
    n.up = {"gpt_neox.layers.{l}.mlp.dense_h_to_4h.weight", "blk.{l}.ffn_up.weight"};
    n.upBias = {"gpt_neox.layers.{l}.mlp.dense_h_to_4h.bias", "blk.{l}.ffn_up.bias"};
    n.down = {"gpt_neox.layers.{l}.mlp.dense_4h_to_h.weight", "blk.{l}.ffn_down.weight"};
    n.downBias = {"gpt_neox.layers.{l}.mlp.dense_4h_to_h.bias", "blk.{l}.ffn_down.bias"};
    return n;
}
} // namespace

DecoderNames gptOssNames()
{
    DecoderNames n = llamaNames();
    n.ffnNorm = {"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.post_attention_norm.weight"};
    n.router = {"model.layers.{l}.mlp.router.weight", "blk.{l}.ffn_gate_inp.weight"};
    n.routerBias = {"model.layers.{l}.mlp.router.bias", "blk.{l}.ffn_gate_inp.bias"};
    n.expertGateUp = {"model.layers.{l}.mlp.experts.gate_up_proj", nullptr};
    n.expertGateUpBias = {"model.layers.{l}.mlp.experts.gate_up_proj_bias", nullptr};
    n.expertGate = {nullptr, "blk.{l}.ffn_gate_exps.weight"};
    n.expertUp = {nullptr, "blk.{l}.ffn_up_exps.weight"};
    n.expertDown = {"model.layers.{l}.mlp.experts.down_proj", "blk.{l}.ffn_down_exps.weight"};
    n.expertGateBias = {nullptr, "blk.{l}.ffn_gate_exps.bias"};
    n.expertUpBias = {nullptr, "blk.{l}.ffn_up_exps.bias"};
    n.expertDownBias = {"model.layers.{l}.mlp.experts.down_proj_bias", "blk.{l}.ffn_down_exps.bias"};
    n.sinks = {"model.layers.{l}.self_attn.sinks", "blk.{l}.attn_sinks.weight"};
    return n;
}

DecoderNames mixtralNames()
{
    DecoderNames n = llamaNames();
    n.router = {"model.layers.{l}.block_sparse_moe.gate.weight", "blk.{l}.ffn_gate_inp.weight"};
    n.expertGate = {"model.layers.{l}.block_sparse_moe.experts.{e}.w1.weight", "blk.{l}.ffn_gate_exps.weight"};
    n.expertUp = {"model.layers.{l}.block_sparse_moe.experts.{e}.w3.weight", "blk.{l}.ffn_up_exps.weight"};
    n.expertDown = {"model.layers.{l}.block_sparse_moe.experts.{e}.w2.weight", "blk.{l}.ffn_down_exps.weight"};
    return n;
}

// Granite: Llama's names; Granite-MoE's experts and shared expert.
DecoderNames graniteNames()
{
    DecoderNames n = llamaNames();
    n.router = {"model.layers.{l}.block_sparse_moe.router.layer.weight", "blk.{l}.ffn_gate_inp.weight"};
    n.expertGateUp = {"model.layers.{l}.block_sparse_moe.input_linear.weight", nullptr};
    n.expertGate = {nullptr, "blk.{l}.ffn_gate_exps.weight"};
    n.expertUp = {nullptr, "blk.{l}.ffn_up_exps.weight"};
    n.expertDown = {"model.layers.{l}.block_sparse_moe.output_linear.weight", "blk.{l}.ffn_down_exps.weight"};
    n.sharedGateUp = {"model.layers.{l}.shared_mlp.input_linear.weight", nullptr};
    n.sharedGate = {nullptr, "blk.{l}.ffn_gate_shexp.weight"};
    n.sharedUp = {nullptr, "blk.{l}.ffn_up_shexp.weight"};
    n.sharedDown = {"model.layers.{l}.shared_mlp.output_linear.weight", "blk.{l}.ffn_down_shexp.weight"};
    return n;
}

DecoderNames deepseekNames()
{
    DecoderNames n = llamaNames();
    n.k = n.v = {};
    n.sharedGate = {"model.layers.{l}.mlp.shared_experts.gate_proj.weight", "blk.{l}.ffn_gate_shexp.weight"};
    n.sharedUp = {"model.layers.{l}.mlp.shared_experts.up_proj.weight", "blk.{l}.ffn_up_shexp.weight"};
    n.sharedDown = {"model.layers.{l}.mlp.shared_experts.down_proj.weight", "blk.{l}.ffn_down_shexp.weight"};
    n.qA = {"model.layers.{l}.self_attn.q_a_proj.weight", "blk.{l}.attn_q_a.weight"};
    n.qANorm = {"model.layers.{l}.self_attn.q_a_layernorm.weight", "blk.{l}.attn_q_a_norm.weight"};
    n.qB = {"model.layers.{l}.self_attn.q_b_proj.weight", "blk.{l}.attn_q_b.weight"};
    n.kvA = {"model.layers.{l}.self_attn.kv_a_proj_with_mqa.weight", "blk.{l}.attn_kv_a_mqa.weight"};
    n.kvANorm = {"model.layers.{l}.self_attn.kv_a_layernorm.weight", "blk.{l}.attn_kv_a_norm.weight"};
    n.kvB = {"model.layers.{l}.self_attn.kv_b_proj.weight", "blk.{l}.attn_kv_b.weight"};
    n.kB = {nullptr, "blk.{l}.attn_k_b.weight"};
    n.vB = {nullptr, "blk.{l}.attn_v_b.weight"};
    return n;
}

const DecoderNames& llamaDecoderNames()
{
    static const DecoderNames names = llamaNames();
    return names;
}

const DecoderNames& olmo2DecoderNames()
{
    static const DecoderNames names = olmo2Names();
    return names;
}

const DecoderNames& gptNeoXDecoderNames()
{
    static const DecoderNames names = gptNeoXNames();
    return names;
}

const DecoderNames& phi3DecoderNames()
{
    static const DecoderNames names = phi3Names();
    return names;
}

const DecoderNames& gemmaDecoderNames()
{
    static const DecoderNames names = gemmaNames();
    return names;
}

const DecoderNames& gptOssDecoderNames()
{
    static const DecoderNames names = gptOssNames();
    return names;
}

const DecoderNames& deepseekDecoderNames()
{
    static const DecoderNames names = deepseekNames();
    return names;
}

const DecoderNames& mixtralDecoderNames()
{
    static const DecoderNames names = mixtralNames();
    return names;
}

const DecoderNames& graniteDecoderNames()
{
    static const DecoderNames names = graniteNames();
    return names;
}

namespace {
// LFM2: its own names for the final norm (embedding_norm, though it acts after the last layer), the block norms, the
// attention's output and q/k norms and the SwiGLU (w1 gate, w3 up, w2 down); the short-convolution blocks.
DecoderNames lfm2Names()
{
    DecoderNames n = llamaNames();
    n.norm = {"model.embedding_norm.weight", "token_embd_norm.weight"};
    n.attnNorm = {"model.layers.{l}.operator_norm.weight", "blk.{l}.attn_norm.weight"};
    n.o = {"model.layers.{l}.self_attn.out_proj.weight", "blk.{l}.attn_output.weight"};
    n.qNorm = {"model.layers.{l}.self_attn.q_layernorm.weight", "blk.{l}.attn_q_norm.weight"};
    n.kNorm = {"model.layers.{l}.self_attn.k_layernorm.weight", "blk.{l}.attn_k_norm.weight"};
    n.ffnNorm = {"model.layers.{l}.ffn_norm.weight", "blk.{l}.ffn_norm.weight"};
    n.gate = {"model.layers.{l}.feed_forward.w1.weight", "blk.{l}.ffn_gate.weight"};
    n.up = {"model.layers.{l}.feed_forward.w3.weight", "blk.{l}.ffn_up.weight"};
    n.down = {"model.layers.{l}.feed_forward.w2.weight", "blk.{l}.ffn_down.weight"};
    n.convIn = {"model.layers.{l}.conv.in_proj.weight", "blk.{l}.shortconv.in_proj.weight"};
    n.convTaps = {"model.layers.{l}.conv.conv.weight", "blk.{l}.shortconv.conv.weight"};
    n.convOut = {"model.layers.{l}.conv.out_proj.weight", "blk.{l}.shortconv.out_proj.weight"};
    return n;
}
// Qwen3.5: Llama's names, the norm after attention as llama.cpp calls it, and the Gated DeltaNet layers'.
DecoderNames qwen35Names()
{
    DecoderNames n = llamaNames();
    n.ffnNorm = {"model.layers.{l}.post_attention_layernorm.weight", "blk.{l}.post_attention_norm.weight"};
    n.deltaQkv = {"model.layers.{l}.linear_attn.in_proj_qkv.weight", "blk.{l}.attn_qkv.weight"};
    n.deltaZ = {"model.layers.{l}.linear_attn.in_proj_z.weight", "blk.{l}.attn_gate.weight"};
    n.deltaB = {"model.layers.{l}.linear_attn.in_proj_b.weight", "blk.{l}.ssm_beta.weight"};
    n.deltaA = {"model.layers.{l}.linear_attn.in_proj_a.weight", "blk.{l}.ssm_alpha.weight"};
    n.deltaConv = {"model.layers.{l}.linear_attn.conv1d.weight", "blk.{l}.ssm_conv1d.weight"};
    n.deltaDtBias = {"model.layers.{l}.linear_attn.dt_bias", "blk.{l}.ssm_dt.bias"};
    n.deltaDecay = {"model.layers.{l}.linear_attn.A_log", "blk.{l}.ssm_a"};
    n.deltaNorm = {"model.layers.{l}.linear_attn.norm.weight", "blk.{l}.ssm_norm.weight"};
    n.deltaOut = {"model.layers.{l}.linear_attn.out_proj.weight", "blk.{l}.ssm_out.weight"};
    return n;
}
// Granite 4.0-H: Granite-MoE's names and the Mamba-2 layers'.
DecoderNames graniteHybridNames()
{
    DecoderNames n = graniteNames();
    n.mambaIn = {"model.layers.{l}.mamba.in_proj.weight", "blk.{l}.ssm_in.weight"};
    n.mambaConv = {"model.layers.{l}.mamba.conv1d.weight", "blk.{l}.ssm_conv1d.weight"};
    n.mambaConvBias = {"model.layers.{l}.mamba.conv1d.bias", "blk.{l}.ssm_conv1d.bias"};
    n.mambaDtBias = {"model.layers.{l}.mamba.dt_bias", "blk.{l}.ssm_dt.bias"};
    n.mambaDecay = {"model.layers.{l}.mamba.A_log", "blk.{l}.ssm_a"};
    n.mambaSkip = {"model.layers.{l}.mamba.D", "blk.{l}.ssm_d"};
    n.mambaNorm = {"model.layers.{l}.mamba.norm.weight", "blk.{l}.ssm_norm.weight"};
    n.mambaOut = {"model.layers.{l}.mamba.out_proj.weight", "blk.{l}.ssm_out.weight"};
    return n;
}
// Qwen3-Next: Qwen3.5's names with the fused grouped projections, and Qwen3-MoE's experts with a gated shared one.
DecoderNames qwen3NextNames()
{
    DecoderNames n = qwen35Names();
    n.deltaQkv = {"model.layers.{l}.linear_attn.in_proj_qkvz.weight", "blk.{l}.attn_qkv.weight"};
    n.deltaZ = {nullptr, "blk.{l}.attn_gate.weight"}; // in in_proj_qkvz in Hugging Face files
    n.deltaB = {"model.layers.{l}.linear_attn.in_proj_ba.weight", "blk.{l}.ssm_ba.weight"};
    n.deltaA = {};
    n.sharedGate = {"model.layers.{l}.mlp.shared_expert.gate_proj.weight", "blk.{l}.ffn_gate_shexp.weight"};
    n.sharedUp = {"model.layers.{l}.mlp.shared_expert.up_proj.weight", "blk.{l}.ffn_up_shexp.weight"};
    n.sharedDown = {"model.layers.{l}.mlp.shared_expert.down_proj.weight", "blk.{l}.ffn_down_shexp.weight"};
    n.sharedExpertGate = {"model.layers.{l}.mlp.shared_expert_gate.weight", "blk.{l}.ffn_gate_inp_shexp.weight"};
    return n;
}
// Nemotron-H: the published checkpoints' backbone names; one norm a block, whatever its part.
DecoderNames nemotronHNames()
{
    DecoderNames n;
    n.embed = {"backbone.embeddings.weight", "token_embd.weight"};
    n.norm = {"backbone.norm_f.weight", "output_norm.weight"};
    n.lmHead = {"lm_head.weight", "output.weight"};
    n.attnNorm = n.ffnNorm = {"backbone.layers.{l}.norm.weight", "blk.{l}.attn_norm.weight"};
    n.q = {"backbone.layers.{l}.mixer.q_proj.weight", "blk.{l}.attn_q.weight"};
    n.k = {"backbone.layers.{l}.mixer.k_proj.weight", "blk.{l}.attn_k.weight"};
    n.v = {"backbone.layers.{l}.mixer.v_proj.weight", "blk.{l}.attn_v.weight"};
    n.o = {"backbone.layers.{l}.mixer.o_proj.weight", "blk.{l}.attn_output.weight"};
    n.up = {"backbone.layers.{l}.mixer.up_proj.weight", "blk.{l}.ffn_up.weight"};
    n.down = {"backbone.layers.{l}.mixer.down_proj.weight", "blk.{l}.ffn_down.weight"};
    n.mambaIn = {"backbone.layers.{l}.mixer.in_proj.weight", "blk.{l}.ssm_in.weight"};
    n.mambaConv = {"backbone.layers.{l}.mixer.conv1d.weight", "blk.{l}.ssm_conv1d.weight"};
    n.mambaConvBias = {"backbone.layers.{l}.mixer.conv1d.bias", "blk.{l}.ssm_conv1d.bias"};
    n.mambaDtBias = {"backbone.layers.{l}.mixer.dt_bias", "blk.{l}.ssm_dt.bias"};
    n.mambaDecay = {"backbone.layers.{l}.mixer.A_log", "blk.{l}.ssm_a"};
    n.mambaSkip = {"backbone.layers.{l}.mixer.D", "blk.{l}.ssm_d"};
    n.mambaNorm = {"backbone.layers.{l}.mixer.norm.weight", "blk.{l}.ssm_norm.weight"};
    n.mambaOut = {"backbone.layers.{l}.mixer.out_proj.weight", "blk.{l}.ssm_out.weight"};
    return n;
}
} // namespace

const DecoderNames& nemotronHDecoderNames()
{
    static const DecoderNames names = nemotronHNames();
    return names;
}

const DecoderNames& qwen3NextDecoderNames()
{
    static const DecoderNames names = qwen3NextNames();
    return names;
}

const DecoderNames& graniteHybridDecoderNames()
{
    static const DecoderNames names = graniteHybridNames();
    return names;
}

const DecoderNames& qwen35DecoderNames()
{
    static const DecoderNames names = qwen35Names();
    return names;
}

const DecoderNames& lfm2DecoderNames()
{
    static const DecoderNames names = lfm2Names();
    return names;
}

const DecoderNames& decoderNames(ModelFamily family)
{
    const FamilyRow& row = familyRow(family);
    if (!row.decoder)
        throw Error(ErrorCode::UnknownModelType, std::string(row.name) + " has no rotary decoder's tensor names");
    return row.decoder->names();
}

const VisionNames& visionNames(ModelFamily family)
{
    static const VisionNames vit{"vit.", "embeddings.cls_token", nullptr, nullptr, "embeddings.position_embeddings",
                                 "embeddings.patch_embeddings.projection", nullptr, "layernorm",
                                 "encoder.layer.{l}.layernorm_before", "encoder.layer.{l}.attention.attention.query",
                                 "encoder.layer.{l}.attention.attention.key", "encoder.layer.{l}.attention.attention.value",
                                 "encoder.layer.{l}.attention.output.dense", nullptr, "encoder.layer.{l}.layernorm_after",
                                 "encoder.layer.{l}.intermediate.dense", "encoder.layer.{l}.output.dense", nullptr,
                                 "pooler.dense", nullptr, nullptr, nullptr, "classifier"};
    static const VisionNames deit = [] {
        VisionNames n = vit;
        n.prefix = "deit.";
        n.dist = "embeddings.distillation_token";
        n.pooler = nullptr;
        n.classifier = nullptr;
        n.clsHead = "cls_classifier";
        n.distHead = "distillation_classifier";
        return n;
    }();
    static const VisionNames dinov2 = [] {
        VisionNames n = vit;
        n.prefix = "dinov2.";
        n.norm1 = "encoder.layer.{l}.norm1";
        n.norm2 = "encoder.layer.{l}.norm2";
        n.fc1 = "encoder.layer.{l}.mlp.fc1";
        n.fc2 = "encoder.layer.{l}.mlp.fc2";
        n.scale1 = "encoder.layer.{l}.layer_scale1.lambda1";
        n.scale2 = "encoder.layer.{l}.layer_scale2.lambda1";
        n.pooler = nullptr;
        n.classifier = nullptr; // DINOv2's classifier reads CLS and the patches' mean: not read
        return n;
    }();
    static const VisionNames registers = [] {
        VisionNames n = dinov2;
        n.prefix = "dinov2_with_registers.";
        n.registers = "embeddings.register_tokens";
        return n;
    }();
    static const VisionNames clip{"vision_model.", "embeddings.class_embedding", nullptr, nullptr,
                                  "embeddings.position_embedding.weight", "embeddings.patch_embedding", "pre_layrnorm",
                                  nullptr, "encoder.layers.{l}.layer_norm1", "encoder.layers.{l}.self_attn.q_proj",
                                  "encoder.layers.{l}.self_attn.k_proj", "encoder.layers.{l}.self_attn.v_proj",
                                  "encoder.layers.{l}.self_attn.out_proj", nullptr, "encoder.layers.{l}.layer_norm2",
                                  "encoder.layers.{l}.mlp.fc1", "encoder.layers.{l}.mlp.fc2", nullptr,
                                  nullptr, "visual_projection.weight", nullptr, nullptr, nullptr};
    static const VisionNames siglip = [] { // no class token, no pre-norm; post_layernorm over every token
        VisionNames n = clip;
        n.cls = nullptr;
        n.preNorm = nullptr;
        n.finalNorm = "post_layernorm";
        n.projection = nullptr;
        return n;
    }();
    switch (family) {
    case ModelFamily::SiglipVision: return siglip;
    case ModelFamily::Deit: return deit;
    case ModelFamily::Dinov2: return dinov2;
    case ModelFamily::Dinov2Registers: return registers;
    case ModelFamily::ClipVision: return clip;
    default: return vit;
    }
}

const EncoderNames& encoderNames(ModelFamily family)
{
    static const EncoderNames bert{"bert.", "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                                   "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm",
                                   "encoder.layer.{l}.attention.self.query", "encoder.layer.{l}.attention.self.key",
                                   "encoder.layer.{l}.attention.self.value", "encoder.layer.{l}.attention.output.dense",
                                   "encoder.layer.{l}.attention.output.LayerNorm", "encoder.layer.{l}.intermediate.dense",
                                   "encoder.layer.{l}.output.dense", "encoder.layer.{l}.output.LayerNorm",
                                   "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                                   "cls.predictions.bias", "cls.predictions.decoder"};
    static const EncoderNames roberta = [] {
        EncoderNames n = bert;
        n.prefix = "roberta.";
        n.headDense = "lm_head.dense";
        n.headNorm = "lm_head.layer_norm";
        n.headBias = "lm_head.bias";
        n.headDecoder = "lm_head.decoder";
        return n;
    }();
    static const EncoderNames distilbert{"distilbert.", "embeddings.word_embeddings.weight",
                                         "embeddings.position_embeddings.weight", nullptr, "embeddings.LayerNorm",
                                         "transformer.layer.{l}.attention.q_lin", "transformer.layer.{l}.attention.k_lin",
                                         "transformer.layer.{l}.attention.v_lin", "transformer.layer.{l}.attention.out_lin",
                                         "transformer.layer.{l}.sa_layer_norm", "transformer.layer.{l}.ffn.lin1",
                                         "transformer.layer.{l}.ffn.lin2", "transformer.layer.{l}.output_layer_norm",
                                         "vocab_transform", "vocab_layer_norm", "vocab_projector.bias", "vocab_projector"};
    switch (family) {
    case ModelFamily::Roberta: return roberta;
    case ModelFamily::DistilBert: return distilbert;
    default: return bert;
    }
}

TextModelPlace textModelPlace(const Checkpoint& weights, const std::string& embedName)
{
    if (weights.has(embedName))
        return TextModelPlace::Top;
    if (weights.has(placedName(TextModelPlace::UnderLanguageModel, embedName)))
        return TextModelPlace::UnderLanguageModel;
    if (weights.has(placedName(TextModelPlace::InsideModel, embedName)))
        return TextModelPlace::InsideModel;
    return TextModelPlace::Top;
}

std::string placedName(TextModelPlace place, const std::string& name)
{
    static const std::string model = "model.";
    switch (place) {
    case TextModelPlace::UnderLanguageModel: return "language_model." + name;
    case TextModelPlace::InsideModel:
        return name.rfind(model, 0) == 0 ? "model.language_model." + name.substr(model.size()) : name;
    case TextModelPlace::Top: break;
    }
    return name;
}


const Seq2SeqNames& seq2seqNames(ModelFamily family, bool gguf)
{
    static const Seq2SeqNames t5{
        "", "shared.weight", "encoder.embed_tokens.weight", "lm_head.weight", nullptr,
        {nullptr, nullptr, "encoder.final_layer_norm", "encoder.block.0.layer.0.SelfAttention.relative_attention_bias",
         "encoder.block.{l}.layer.0.layer_norm", "encoder.block.{l}.layer.0.SelfAttention.q",
         "encoder.block.{l}.layer.0.SelfAttention.k", "encoder.block.{l}.layer.0.SelfAttention.v",
         "encoder.block.{l}.layer.0.SelfAttention.o", nullptr, nullptr, nullptr, nullptr, nullptr,
         "encoder.block.{l}.layer.1.layer_norm", "encoder.block.{l}.layer.1.DenseReluDense.wi",
         "encoder.block.{l}.layer.1.DenseReluDense.wi_0", "encoder.block.{l}.layer.1.DenseReluDense.wi_1",
         "encoder.block.{l}.layer.1.DenseReluDense.wo"},
        {nullptr, nullptr, "decoder.final_layer_norm", "decoder.block.0.layer.0.SelfAttention.relative_attention_bias",
         "decoder.block.{l}.layer.0.layer_norm", "decoder.block.{l}.layer.0.SelfAttention.q",
         "decoder.block.{l}.layer.0.SelfAttention.k", "decoder.block.{l}.layer.0.SelfAttention.v",
         "decoder.block.{l}.layer.0.SelfAttention.o", "decoder.block.{l}.layer.1.layer_norm",
         "decoder.block.{l}.layer.1.EncDecAttention.q", "decoder.block.{l}.layer.1.EncDecAttention.k",
         "decoder.block.{l}.layer.1.EncDecAttention.v", "decoder.block.{l}.layer.1.EncDecAttention.o",
         "decoder.block.{l}.layer.2.layer_norm", "decoder.block.{l}.layer.2.DenseReluDense.wi",
         "decoder.block.{l}.layer.2.DenseReluDense.wi_0", "decoder.block.{l}.layer.2.DenseReluDense.wi_1",
         "decoder.block.{l}.layer.2.DenseReluDense.wo"}};
    static const Seq2SeqNames t5Gguf{
        "", "token_embd.weight", nullptr, "output.weight", nullptr,
        {nullptr, nullptr, "enc.output_norm", "enc.blk.0.attn_rel_b", "enc.blk.{l}.attn_norm", "enc.blk.{l}.attn_q",
         "enc.blk.{l}.attn_k", "enc.blk.{l}.attn_v", "enc.blk.{l}.attn_o", nullptr, nullptr, nullptr, nullptr, nullptr,
         "enc.blk.{l}.ffn_norm", "enc.blk.{l}.ffn_up", "enc.blk.{l}.ffn_gate", "enc.blk.{l}.ffn_up",
         "enc.blk.{l}.ffn_down"},
        {nullptr, nullptr, "dec.output_norm", "dec.blk.0.attn_rel_b", "dec.blk.{l}.attn_norm", "dec.blk.{l}.attn_q",
         "dec.blk.{l}.attn_k", "dec.blk.{l}.attn_v", "dec.blk.{l}.attn_o", "dec.blk.{l}.cross_attn_norm",
         "dec.blk.{l}.cross_attn_q", "dec.blk.{l}.cross_attn_k", "dec.blk.{l}.cross_attn_v", "dec.blk.{l}.cross_attn_o",
         "dec.blk.{l}.ffn_norm", "dec.blk.{l}.ffn_up", "dec.blk.{l}.ffn_gate", "dec.blk.{l}.ffn_up",
         "dec.blk.{l}.ffn_down"}};
    // BART, mBART and Marian share Hugging Face's names (Marian's sinusoids are computed, never read).
    static const Seq2SeqNames bart{
        "model.", "shared.weight", "encoder.embed_tokens.weight", "lm_head.weight", "final_logits_bias",
        {"encoder.embed_positions.weight", "encoder.layernorm_embedding", "encoder.layer_norm", nullptr,
         "encoder.layers.{l}.self_attn_layer_norm", "encoder.layers.{l}.self_attn.q_proj",
         "encoder.layers.{l}.self_attn.k_proj", "encoder.layers.{l}.self_attn.v_proj",
         "encoder.layers.{l}.self_attn.out_proj", nullptr, nullptr, nullptr, nullptr, nullptr,
         "encoder.layers.{l}.final_layer_norm", "encoder.layers.{l}.fc1", nullptr, nullptr, "encoder.layers.{l}.fc2"},
        {"decoder.embed_positions.weight", "decoder.layernorm_embedding", "decoder.layer_norm", nullptr,
         "decoder.layers.{l}.self_attn_layer_norm", "decoder.layers.{l}.self_attn.q_proj",
         "decoder.layers.{l}.self_attn.k_proj", "decoder.layers.{l}.self_attn.v_proj",
         "decoder.layers.{l}.self_attn.out_proj", "decoder.layers.{l}.encoder_attn_layer_norm",
         "decoder.layers.{l}.encoder_attn.q_proj", "decoder.layers.{l}.encoder_attn.k_proj",
         "decoder.layers.{l}.encoder_attn.v_proj", "decoder.layers.{l}.encoder_attn.out_proj",
         "decoder.layers.{l}.final_layer_norm", "decoder.layers.{l}.fc1", nullptr, nullptr, "decoder.layers.{l}.fc2"}};
    // Whisper: BART's layer names, the token table inside the decoder, convolutions before the encoder's layers.
    static const Seq2SeqNames whisper{
        "model.", "decoder.embed_tokens.weight", nullptr, "proj_out.weight", nullptr,
        {"encoder.embed_positions.weight", nullptr, "encoder.layer_norm", nullptr,
         "encoder.layers.{l}.self_attn_layer_norm", "encoder.layers.{l}.self_attn.q_proj",
         "encoder.layers.{l}.self_attn.k_proj", "encoder.layers.{l}.self_attn.v_proj",
         "encoder.layers.{l}.self_attn.out_proj", nullptr, nullptr, nullptr, nullptr, nullptr,
         "encoder.layers.{l}.final_layer_norm", "encoder.layers.{l}.fc1", nullptr, nullptr, "encoder.layers.{l}.fc2",
         "encoder.conv1", "encoder.conv2"},
        bart.dec};
    if (family == ModelFamily::T5)
        return gguf ? t5Gguf : t5;
    if (family == ModelFamily::Whisper)
        return whisper;
    return bart;
}

std::string detectPrefix(const Checkpoint& weights, const char* prefix, const char* probePattern)
{
    return weights.has(tensorName(prefix, probePattern, 0)) ? prefix : "";
}

} // namespace attnscope::core
