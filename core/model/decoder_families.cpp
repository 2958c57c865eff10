// The decoder families' own keys and quirks (decoder_families.h): one function of each kind per family that needs it.
#include "model/decoder_families.h"

#include "io/gguf.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

namespace attnscope::core {

namespace {

// ---- Llama, Mistral, Qwen2: the sliding window Mistral and Qwen2 may have, Qwen2's q/k/v biases without o_proj's.
void llamaKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    if (c.modelType == "qwen2") {
        c.qkvBias = true;
        c.oBias = false;
        if (r.boolOr("use_sliding_window", false))
            c.slidingWindow = r.intOr("sliding_window", 0, 0);
    }
    if (c.modelType == "mistral")
        c.slidingWindow = j.contains("sliding_window") && j["sliding_window"].is_null() ? 0 : r.intOr("sliding_window", 0, 0);
}

void llamaGguf(const GgufFile& g, LlamaConfig& c)
{
    // llama.cpp's converter undoes Hugging Face's permutation of q/k rows for llama; with experts it is Mixtral, whose
    // weights are renormalised.
    c.ggufInterleavedQK = g.string("general.architecture") == "llama";
    if (c.experts > 0)
        c.normTopK = c.ggufInterleavedQK;
}

// ---- Qwen3, Qwen3-MoE, OLMoE, OLMo 2: q/k norms.
void qwen3Quirks(LlamaConfig& c) { c.qkNorm = LlamaConfig::QkNorm::PerHead; }

// A sparse mixture in every layer (Qwen3-MoE, OLMoE): dense layers between and shared experts are refused by name.
// `ffnKey`: the experts' width (null: intermediate_size); `shared`: the family reads a shared expert of its own.
void readSparseMoe(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c, const char* ffnKey, bool shared)
{
    readExpertCount(r, c, "num_experts");
    c.expertFfn = ffnKey ? r.positiveInt(ffnKey) : c.intermediate;
    c.normTopK = r.boolOr("norm_topk_prob", false);
    if (r.intOr("decoder_sparse_step", 1, 1) != 1)
        r.fail("decoder_sparse_step", "dense layers between the sparse ones are not supported (1: every layer has experts)");
    if (const auto it = j.find("mlp_only_layers"); it != j.end() && it->is_array() && !it->empty())
        r.fail("mlp_only_layers", "dense layers among the sparse ones are not supported");
    if (!shared && r.intOr("shared_expert_intermediate_size", 0, 0) > 0)
        r.fail("shared_expert_intermediate_size", "shared experts are not supported in this family");
}
void qwen3MoeKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    readSparseMoe(r, j, c, "moe_intermediate_size", false);
}
void olmoeKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c) { readSparseMoe(r, j, c, nullptr, false); }

void qwen3MoeGguf(const GgufFile&, LlamaConfig& c) { c.normTopK = true; } // llama.cpp's graph always renormalises
void olmoeQuirks(LlamaConfig& c) { c.qkNorm = LlamaConfig::QkNorm::Whole; } // over the whole projection
void olmo2Quirks(LlamaConfig& c)
{
    c.qkNorm = LlamaConfig::QkNorm::Whole;
    c.preNorms = false;
    c.postNorms = true;
}

// ---- SmolLM3: NoPE layers, tied embeddings by default.
void smolLM3Keys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    c.tieEmbeddings = r.boolOr("tie_word_embeddings", true); // SmolLM3's class ties by default
    if (const auto it = j.find("no_rope_layers"); it != j.end() && !it->is_null()) {
        if (!it->is_array() || static_cast<int>(it->size()) != c.nLayer)
            r.fail("no_rope_layers", "must list a 0 or 1 for each of the " + std::to_string(c.nLayer) + " layers");
        for (const auto& v : *it) // 1: the layer uses rotary positions, 0: it does not (NoPE)
            c.noRopeLayers.push_back(v.is_number_integer() && v.get<int>() == 0);
    } else {
        const int interval = r.intOr("no_rope_layer_interval", 4, 1);
        for (int l = 0; l < c.nLayer; ++l)
            c.noRopeLayers.push_back((l + 1) % interval == 0);
    }
}

void interleavedQkGguf(const GgufFile&, LlamaConfig& c) { c.ggufInterleavedQK = true; } // converted as Llama's rows

void smolLM3Quirks(LlamaConfig& c)
{
    // NoPE every fourth layer unless the file lists them (llama.cpp hard-codes this default).
    if (c.noRopeLayers.empty())
        for (int l = 0; l < c.nLayer; ++l)
            c.noRopeLayers.push_back((l + 1) % 4 == 0);
}

// ---- gpt-oss: sinks, biases everywhere, a clamped SwiGLU, alternating sliding layers, a softmax over the chosen.
void gptOssKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    // Hugging Face's num_experts_per_tok, or the original release's experts_per_token; 4 when neither is given.
    const bool ownKey = !r.has("num_experts_per_tok") && r.has("experts_per_token");
    readExpertCount(r, c, "num_local_experts", ownKey ? "experts_per_token" : "num_experts_per_tok", 4);
    c.expertFfn = c.intermediate;
    c.slidingWindow = r.intOr("sliding_window", 0, 0);
    c.swigluLimit = r.floatOr("swiglu_limit", 7.0f);
    if (const auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null())
        c.slidingLayers = slidingLayersOf(r, j, c.nLayer);
}

void gptOssQuirks(LlamaConfig& c)
{
    c.attentionSinks = true;
    c.routerBias = c.softmaxOverChosen = c.expertBiases = true;
    c.qkvBias = c.oBias = true;
    if (c.swigluLimit <= 0)
        c.swigluLimit = 7.0f; // llama.cpp's constants (it reads no key)
    c.swigluAlpha = 1.702f;
    // Even layers slide unless the file lists its layer types (Hugging Face's default, llama.cpp's pattern).
    if (c.slidingLayers.empty() && c.slidingWindow > 0)
        for (int l = 0; l < c.nLayer; ++l)
            c.slidingLayers.push_back(l % 2 == 0);
}

// ---- Mixtral: a softmax router over every expert, the chosen ones' weights renormalised.
void mixtralKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    c.slidingWindow = j.contains("sliding_window") && j["sliding_window"].is_null() ? 0 : r.intOr("sliding_window", 0, 0);
    readExpertCount(r, c, "num_local_experts");
    c.expertFfn = c.intermediate;
    c.normTopK = true;
}

// ---- Granite 3 (dense and MoE): the multipliers, the head size from the width alone, the shared expert.
void graniteKeys(const ConfigReader& r, const nlohmann::json&, LlamaConfig& c)
{
    if (c.hidden % c.nHead != 0) // a head_dim key is not read
        r.fail("hidden_size", "hidden_size " + std::to_string(c.hidden) + " is not divisible by num_attention_heads " +
                                  std::to_string(c.nHead));
    c.headDim = c.hidden / c.nHead;
    if (c.modelType != "granite") { // Granite-MoE
        readExpertCount(r, c, "num_local_experts");
        c.expertFfn = c.intermediate;
    }
    if (c.modelType == "granitemoeshared") // GraniteMoe's own class has no shared expert, whatever the file says
        c.sharedFfn = r.intOr("shared_intermediate_size", 0, 0);
    c.embeddingScale = r.floatOr("embedding_multiplier", 1.0f);
    c.attentionScale = r.doubleOr("attention_multiplier", 1.0); // the config class's default: 1, not 1/sqrt(d)
    c.residualScale = r.floatOr("residual_multiplier", 1.0f);
    c.logitScale = r.floatOr("logits_scaling", 1.0f);
}

void graniteGguf(const GgufFile& g, LlamaConfig& c)
{
    // Granite's multipliers and shared expert as llama.cpp writes them (its graph takes a missing or zero attention
    // scale as 1/sqrt(head size) and a missing residual scale as 1).
    const std::string a = g.string("general.architecture") + ".";
    c.ggufInterleavedQK = true;
    if (const auto v = g.numberOr(a + "attention.scale"); v && *v != 0)
        c.attentionScale = *v;
    c.embeddingScale = static_cast<float>(g.numberOr(a + "embedding_scale").value_or(1.0));
    if (const auto v = g.numberOr(a + "residual_scale"); v && *v != 0)
        c.residualScale = static_cast<float>(*v);
    c.logitScale = static_cast<float>(g.number(a + "logit_scale"));
    if (const auto s = g.uintOr(a + "expert_shared_feed_forward_length"))
        c.sharedFfn = static_cast<int>(std::min<std::uint64_t>(*s, 10'000'000));
}

void graniteQuirks(LlamaConfig& c)
{
    // Granite-MoE: Hugging Face weighs the chosen experts by a softmax over their logits: the renormalised
    // probabilities, as llama.cpp computes them. Its experts' (and shared expert's) input_linear holds gate rows, then
    // up rows; llama.cpp's converter splits them into two tensors. Dense Granite's MLP is Llama's.
    c.normTopK = true;
    c.fusedGateUp = !c.fromGguf && c.experts > 0;
}

// ---- DeepSeek-V2: latent attention, dense first layers, routed and shared experts.
constexpr int kMaxLatentWidth = 16384;
// DeepSeek-V2's latent attention and experts (its config.json keys; DeepSeek's modeling code's semantics).
void deepseekKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    auto& m = c.mla;
    // Widths bounded where they are read: buffers are sized by them before any weight's shape is compared (a
    // qk_nope_head_dim of 1e8 allocated 2.1 GB first). DeepSeek-V2's are 512, 1536, 128, 64 and 128.
    auto width = [&](const char* key) {
        const int v = r.positiveInt(key);
        if (v > kMaxLatentWidth)
            r.fail(key, std::to_string(v) + " is wider than any model's (at most " + std::to_string(kMaxLatentWidth) + ")");
        return v;
    };
    m.kvRank = width("kv_lora_rank");
    m.qRank = j.contains("q_lora_rank") && !j["q_lora_rank"].is_null() ? width("q_lora_rank") : 0;
    m.nopeDim = width("qk_nope_head_dim");
    m.ropeDim = width("qk_rope_head_dim");
    m.valueDim = width("v_head_dim");
    if (m.ropeDim % 2 != 0)
        r.fail("qk_rope_head_dim", "must be even (rotary embeddings rotate pairs of dimensions)");
    c.headDim = m.nopeDim + m.ropeDim;
    c.rotaryDims = m.ropeDim;
    c.nKvHead = c.nHead; // every head has its own content key; the rotary key is shared by construction
    if (j.contains("n_routed_experts") && !j["n_routed_experts"].is_null()) {
        readExpertCount(r, c, "n_routed_experts");
        c.expertFfn = r.positiveInt("moe_intermediate_size");
        const int shared = j.contains("n_shared_experts") && !j["n_shared_experts"].is_null() ? r.intOr("n_shared_experts", 0, 0) : 0;
        const long long sharedFfn = static_cast<long long>(shared) * c.expertFfn; // 2^31 and past overflowed an int
        if (sharedFfn > kMaxLatentWidth * 64LL)
            r.fail("n_shared_experts", std::to_string(shared) + " shared experts of " + std::to_string(c.expertFfn) +
                                           " (moe_intermediate_size) are wider than any model's");
        c.sharedFfn = static_cast<int>(sharedFfn);
        c.denseLayers = r.intOr("first_k_dense_replace", 0, 0);
        c.moeEvery = r.intOr("moe_layer_freq", 1, 1);
        c.normTopK = r.boolOr("norm_topk_prob", false);
        // DeepSeek-V2's code scales the chosen weights only when it does not renormalise them.
        c.routedScale = c.normTopK ? 1.0f : r.floatOr("routed_scaling_factor", 1.0f);
        if (const std::string f = r.stringOr("scoring_func", "softmax"); f != "softmax")
            r.fail("scoring_func", "\"" + f + "\" routing is not supported (DeepSeek-V2 routes by softmax)");
        const std::string method = r.stringOr("topk_method", "greedy");
        if (method == "group_limited_greedy") {
            c.expertGroups = j.contains("n_group") && !j["n_group"].is_null() ? r.intOr("n_group", 1, 1) : 1;
            c.groupsUsed = j.contains("topk_group") && !j["topk_group"].is_null() ? r.intOr("topk_group", 1, 1) : c.expertGroups;
            if (c.experts % c.expertGroups != 0)
                r.fail("n_group", std::to_string(c.experts) + " experts do not form " + std::to_string(c.expertGroups) + " equal groups");
            if (c.groupsUsed > c.expertGroups || c.groupsUsed * (c.experts / c.expertGroups) < c.expertsUsed)
                r.fail("topk_group", "the " + std::to_string(c.groupsUsed) + " groups chosen cannot hold " +
                                         std::to_string(c.expertsUsed) + " experts");
        } else if (method != "greedy") {
            r.fail("topk_method", "\"" + method + "\" is not supported (greedy and group_limited_greedy are)");
        }
    }
}


// DeepSeek-V2 as llama.cpp writes it: the latent sizes, the head sizes before absorption (key_length_mla; older files
// give them as key_length), one shared rotary key (head_count_kv 1, read as a key per head), leading dense blocks,
// shared experts, the routed weights' scale and YaRN's softmax factor from its log multiplier.
void deepseekGguf(const GgufFile& g, LlamaConfig& c)
{
    const std::string a = "deepseek2.";
    auto positive = [&](const std::string& k) { return ggufPositive(g, k); };
    auto& m = c.mla;
    m.kvRank = positive(a + "attention.kv_lora_rank");
    m.qRank = g.value(a + "attention.q_lora_rank") ? positive(a + "attention.q_lora_rank") : 0;
    const bool mlaKeys = g.value(a + "attention.key_length_mla") != nullptr;
    const int keyLength = positive(a + (mlaKeys ? "attention.key_length_mla" : "attention.key_length"));
    m.valueDim = positive(a + (mlaKeys ? "attention.value_length_mla" : "attention.value_length"));
    m.ropeDim = positive(a + "rope.dimension_count");
    if (m.ropeDim % 2 != 0 || m.ropeDim >= keyLength)
        throw Error(ErrorCode::BadConfig,
                    "a rotary part of " + std::to_string(m.ropeDim) + " dimensions does not fit keys of " + std::to_string(keyLength),
                    g.path(), a + "rope.dimension_count");
    m.nopeDim = keyLength - m.ropeDim;
    c.headDim = keyLength;
    c.rotaryDims = m.ropeDim;
    c.nKvHead = c.nHead;
    if (c.experts > 0) {
        c.denseLayers = g.value(a + "leading_dense_block_count") ? static_cast<int>(std::min<std::uint64_t>(g.uint(a + "leading_dense_block_count"), 100'000)) : 0;
        c.sharedFfn = g.value(a + "expert_shared_count") ? static_cast<int>(std::min<std::uint64_t>(g.uint(a + "expert_shared_count"), 1'000)) * c.expertFfn : 0;
        c.routedScale = static_cast<float>(g.numberOr(a + "expert_weights_scale").value_or(1.0));
        c.normTopK = g.boolOr(a + "expert_weights_norm").value_or(false);
        if (const auto f = g.uintOr(a + "expert_gating_func"); f && *f != 1)
            throw Error(ErrorCode::BadConfig, "routing by sigmoid (DeepSeek-V3) is not supported; DeepSeek-V2 routes by softmax (1)",
                        g.path(), a + "expert_gating_func");
    }
    if (c.rope.scaling == RopeConfig::Scaling::Yarn) {
        // llama.cpp assumes mscale == mscale_all_dim: cos and sin are left as they are, the softmax scale takes
        // (1 + log_multiplier ln factor)^2 (the multiplier is 0.1 mscale_all_dim).
        c.rope.attentionFactor = 1.0;
        const double m0 = 1.0 + g.numberOr(a + "rope.scaling.yarn_log_multiplier").value_or(0.0) * std::log(c.rope.factor);
        c.rope.scoreFactor = m0 * m0;
    }
}

// ---- Gemma 2 / 3: GeGLU, post norms, sqrt(hidden) embeddings, (1 + w) norms, soft caps, sliding layers.
void gemmaKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    c.tieEmbeddings = r.boolOr("tie_word_embeddings", true);
    c.slidingWindow = r.intOr("sliding_window", 0, 0);
    c.queryPreAttnScalar = r.doubleOr("query_pre_attn_scalar", c.headDim);
    c.attnSoftCap = r.floatOr("attn_logit_softcapping", 0.0f);
    c.finalSoftCap = r.floatOr("final_logit_softcapping", 0.0f);
    c.localRopeTheta = r.doubleOr("rope_local_base_freq", 0.0);
    if (const auto lt = j.find("layer_types"); lt != j.end() && !lt->is_null()) {
        c.slidingLayers = slidingLayersOf(r, j, c.nLayer);
    } else if (const int pattern = r.intOr("sliding_window_pattern", 0, 0); pattern > 0) {
        for (int l = 0; l < c.nLayer; ++l)
            c.slidingLayers.push_back((l + 1) % pattern != 0);
    }
}

void gemmaQuirks(LlamaConfig& c, bool gemma3)
{
    c.postNorms = true;
    c.embeddingScale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden)));
    c.normOffset = c.fromGguf ? 0.0f : 1.0f;
    c.mlp = LlamaConfig::Mlp::GatedGeluTanh;
    if (gemma3)
        c.qkNorm = LlamaConfig::QkNorm::PerHead;
    // llama.cpp's fixed patterns when a file does not list its layer types: Gemma 2 alternates (even layers slide),
    // Gemma 3 has five local layers to one global one.
    if (c.slidingLayers.empty() && c.slidingWindow > 0)
        for (int l = 0; l < c.nLayer; ++l)
            c.slidingLayers.push_back(gemma3 ? l % 6 < 5 : l % 2 == 0);
}
void gemma2Quirks(LlamaConfig& c) { gemmaQuirks(c, false); }
void gemma3Quirks(LlamaConfig& c) { gemmaQuirks(c, true); }

// ---- Phi-3: fused qkv and gate/up, partial rotary, LongRoPE's original context.
void phi3Keys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    const double factor = r.doubleOr("partial_rotary_factor", 1.0);
    if (!(factor > 0.0 && factor <= 1.0))
        r.fail("partial_rotary_factor", "must be in (0, 1]");
    c.rotaryDims = static_cast<int>(c.headDim * factor);
    c.rope.originalMaxPositions = r.doubleOr("original_max_position_embeddings", c.maxPositions);
    c.slidingWindow = j.contains("sliding_window") && j["sliding_window"].is_null() ? 0 : r.intOr("sliding_window", 0, 0);
}

void phi3Quirks(LlamaConfig& c)
{
    c.qkv = LlamaConfig::Qkv::Blocks; // qkv_proj / attn_qkv: [q; k; v] rows
    c.fusedGateUp = true;              // gate_up_proj / ffn_up: gate rows, then up rows
}

// ---- GPT-NeoX / Pythia: LayerNorm, GELU MLP, biases, per-head fused query_key_value.
void gptNeoXQuirks(LlamaConfig& c)
{
    c.norm = LlamaConfig::Norm::Layer;
    c.mlp = LlamaConfig::Mlp::Gelu;
    c.qkvBias = c.oBias = c.mlpBias = true;
    if (c.qkv == LlamaConfig::Qkv::Separate)
        c.qkv = LlamaConfig::Qkv::PerHead; // Hugging Face's query_key_value (GGUF set Blocks already)
}

// A hybrid's layer_types list, each layer named by one of `names` (the mixer beside the name); nothing when the file
// gives no list.
std::optional<std::vector<Mixer>> layerTypesOf(const ConfigReader& r, const nlohmann::json& j, int layers,
                                               std::initializer_list<std::pair<const char*, Mixer>> names)
{
    const auto it = j.find("layer_types");
    if (it == j.end() || !it->is_array())
        return std::nullopt;
    std::string allowed;
    for (const auto& [name, mixer] : names)
        allowed += (allowed.empty() ? "\"" : " or \"") + std::string(name) + "\"";
    if (it->size() != static_cast<std::size_t>(layers))
        r.fail("layer_types", "names " + std::to_string(it->size()) + " layers; the model has " + std::to_string(layers));
    std::vector<Mixer> mixers;
    for (std::size_t l = 0; l < it->size(); ++l) {
        const std::string t = (*it)[l].is_string() ? (*it)[l].get<std::string>() : std::string();
        const auto known = std::find_if(names.begin(), names.end(), [&](const auto& n) { return t == n.first; });
        if (known == names.end())
            r.fail("layer_types", "entry " + std::to_string(l) + " must be " + allowed);
        mixers.push_back(known->second);
    }
    return mixers;
}

// A hybrid GGUF's layers by their key/value heads (attention.head_count_kv per layer): attention where there are
// some, `otherwise` where there are none.
std::vector<Mixer> ggufMixersByKvHeads(const GgufFile& g, const LlamaConfig& c, Mixer otherwise)
{
    std::vector<Mixer> mixers(static_cast<std::size_t>(c.nLayer), Mixer::Softmax);
    const GgufValue* kv = g.value(c.modelType + ".attention.head_count_kv");
    if (kv && kv->kind == GgufValue::Kind::Array)
        for (std::size_t l = 0; l < mixers.size() && l < kv->ints.size(); ++l)
            if (kv->ints[l] == 0)
                mixers[l] = otherwise;
    return mixers;
}

// Short convolutions are a few taps wide (LFM2: 3); a header asking for thousands is not a model.
constexpr int kMaxConvWidth = 256;

// ---- LFM2: short-convolution layers among the attention layers, per-head q/k norms, its own norm epsilon key and FFN
// width rule, tied embeddings by default.
// Its feed-forward width as the model computes it from intermediate_size (block_ff_dim in older files): two thirds,
// times block_ffn_dim_multiplier, rounded up to a multiple of block_multiple_of, when block_auto_adjust_ff_dim.
int lfm2FeedForwardWidth(const ConfigReader& r)
{
    int ff = r.has("block_ff_dim") ? r.positiveInt("block_ff_dim") : r.positiveInt("intermediate_size");
    if (!r.boolOr("block_auto_adjust_ff_dim", false))
        return ff;
    ff = static_cast<int>(2.0 * ff / 3.0);
    if (r.has("block_ffn_dim_multiplier"))
        ff = static_cast<int>(r.doubleOr("block_ffn_dim_multiplier", 1.0) * ff);
    const int multiple = r.intOr("block_multiple_of", 1, 1);
    return std::max(1, multiple * ((ff + multiple - 1) / multiple));
}

// Which layers convolve: layer_types ("conv" / "full_attention"), or in older files full_attn_idxs (the attention
// layers; every other layer convolves).
std::vector<Mixer> lfm2LayerMixers(const ConfigReader& r, const nlohmann::json& j, int layers)
{
    if (auto listed = layerTypesOf(r, j, layers, {{"conv", Mixer::ShortConv}, {"full_attention", Mixer::Softmax}}))
        return *listed;
    std::vector<Mixer> mixers(static_cast<std::size_t>(layers), Mixer::ShortConv);
    const auto it = j.find("full_attn_idxs");
    if (it == j.end() || !it->is_array())
        r.fail("layer_types", "required key is missing (or full_attn_idxs): which layers are attention");
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() >= layers)
            r.fail("full_attn_idxs", "must list layer numbers from 0 to " + std::to_string(layers - 1));
        mixers[static_cast<std::size_t>(v.get<long long>())] = Mixer::Softmax;
    }
    return mixers;
}

void lfm2Keys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    c.rmsNormEps = r.floatOr("norm_eps", 1e-5f);
    c.tieEmbeddings = r.boolOr("tie_word_embeddings", true);
    c.intermediate = lfm2FeedForwardWidth(r);
    c.layerMixers = lfm2LayerMixers(r, j, c.nLayer);
    c.convWidth = r.intOr("conv_L_cache", 3, 1);
    if (c.convWidth > kMaxConvWidth)
        r.fail("conv_L_cache", "a convolution of " + std::to_string(c.convWidth) + " taps; at most " +
                                   std::to_string(kMaxConvWidth) + " are read");
    // A bias would make the convolution affine, not linear in its values: the map would no longer be exact.
    if (r.boolOr("conv_bias", false))
        r.fail("conv_bias", "convolutions with biases are not supported (the published LFM2 models have none)");
}

// GGUF: the attention layers are those with key/value heads (attention.head_count_kv is a per-layer array; 0: a
// convolution), the width shortconv.l_cache; the FFN width was worked out by the converter.
void lfm2Gguf(const GgufFile& g, LlamaConfig& c)
{
    const std::string arch = c.modelType + ".";
    c.layerMixers = ggufMixersByKvHeads(g, c, Mixer::ShortConv);
    c.convWidth = ggufPositive(g, arch + "shortconv.l_cache");
    if (c.convWidth > kMaxConvWidth)
        throw Error(ErrorCode::BadConfig, "a convolution of " + std::to_string(c.convWidth) + " taps; at most " +
                                              std::to_string(kMaxConvWidth) + " are read",
                    g.path(), arch + "shortconv.l_cache");
}

void lfm2Quirks(LlamaConfig& c) { c.qkNorm = LlamaConfig::QkNorm::PerHead; }

// ---- Qwen3.5: Gated DeltaNet layers among gated attention layers, (1 + w) norms but the delta rule's gated norm,
// partial rotary embeddings (mRoPE sections, which text positions make plain rotary), per-head q/k norms.
// Which layers run the delta rule: layer_types, else every layer but each full_attention_interval-th.
std::vector<Mixer> qwen35LayerMixers(const ConfigReader& r, const nlohmann::json& j, int layers)
{
    if (auto listed = layerTypesOf(r, j, layers, {{"linear_attention", Mixer::DeltaRule}, {"full_attention", Mixer::Softmax}}))
        return *listed;
    std::vector<Mixer> mixers(static_cast<std::size_t>(layers), Mixer::DeltaRule);
    const int interval = r.intOr("full_attention_interval", 4, 1);
    for (int l = 0; l < layers; ++l)
        if ((l + 1) % interval == 0)
            mixers[static_cast<std::size_t>(l)] = Mixer::Softmax;
    return mixers;
}

void checkDeltaNet(const LlamaConfig& c, const std::function<void(const char*, const std::string&)>& fail)
{
    const auto& d = c.deltaNet;
    if (d.valueHeads % d.keyHeads != 0)
        fail("linear_num_value_heads", std::to_string(d.valueHeads) + " value heads cannot share " +
                                           std::to_string(d.keyHeads) + " key heads evenly");
    if (d.convWidth > kMaxConvWidth)
        fail("linear_conv_kernel_dim", "a convolution of " + std::to_string(d.convWidth) + " taps; at most " +
                                           std::to_string(kMaxConvWidth) + " are read");
}

void qwen35Keys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    auto& d = c.deltaNet;
    d.keyHeads = r.positiveInt("linear_num_key_heads");
    d.valueHeads = r.positiveInt("linear_num_value_heads");
    d.keyDim = r.positiveInt("linear_key_head_dim");
    d.valueDim = r.positiveInt("linear_value_head_dim");
    d.convWidth = r.positiveInt("linear_conv_kernel_dim");
    checkDeltaNet(c, [&](const char* key, const std::string& what) { r.fail(key, what); });
    c.layerMixers = qwen35LayerMixers(r, j, c.nLayer);
    c.attnOutputGate = r.boolOr("attn_output_gate", true);
    c.normOffset = 1.0f; // Hugging Face stores w of (1 + w); llama.cpp's converter adds the 1
    // transformers 5 keeps the rotary settings in rope_parameters; earlier files at the top.
    const nlohmann::json* rope = r.object("rope_parameters");
    const ConfigReader ropeKeys(rope ? *rope : j, r.file());
    c.rope.theta = rope ? ropeKeys.doubleOr("rope_theta", c.rope.theta) : c.rope.theta;
    const std::string type = rope ? ropeKeys.stringOr("rope_type", "default") : "default";
    if (type != "default")
        r.fail("rope_parameters", "rope_type \"" + type + "\" is not supported (Qwen3.5 uses \"default\")");
    const double factor = rope && rope->contains("partial_rotary_factor") ? ropeKeys.doubleOr("partial_rotary_factor", 0.25)
                                                                          : r.doubleOr("partial_rotary_factor", 0.25);
    if (!(factor > 0.0 && factor <= 1.0))
        r.fail("partial_rotary_factor", "must be in (0, 1]");
    c.rotaryDims = static_cast<int>(c.headDim * factor);
}

// GGUF: the pattern from full_attention_interval (llama.cpp's converter writes no layer_types), the delta rule's
// sizes from the ssm keys, the value heads tiled.
void qwen35Gguf(const GgufFile& g, LlamaConfig& c)
{
    const std::string a = c.modelType + ".";
    auto& d = c.deltaNet;
    d.convWidth = ggufPositive(g, a + "ssm.conv_kernel");
    d.keyDim = d.valueDim = ggufPositive(g, a + "ssm.state_size");
    d.keyHeads = ggufPositive(g, a + "ssm.group_count");
    d.valueHeads = ggufPositive(g, a + "ssm.time_step_rank");
    checkDeltaNet(c, [&](const char* key, const std::string& what) {
        throw Error(ErrorCode::BadConfig, what + " (" + key + ")", g.path(), a + "ssm.time_step_rank");
    });
    if (const auto inner = g.uintOr(a + "ssm.inner_size"); inner && *inner != static_cast<std::uint64_t>(d.valueWidth()))
        throw Error(ErrorCode::BadConfig,
                    "says " + std::to_string(*inner) + " but " + std::to_string(d.valueHeads) + " value heads of " +
                        std::to_string(d.valueDim) + " make " + std::to_string(d.valueWidth()),
                    g.path(), a + "ssm.inner_size");
    const auto interval = g.uintOr(a + "full_attention_interval").value_or(4);
    if (interval < 1)
        throw Error(ErrorCode::BadConfig, "must be at least 1", g.path(), a + "full_attention_interval");
    c.layerMixers.assign(static_cast<std::size_t>(c.nLayer), Mixer::DeltaRule);
    for (int l = 0; l < c.nLayer; ++l)
        if (static_cast<std::uint64_t>(l + 1) % interval == 0)
            c.layerMixers[static_cast<std::size_t>(l)] = Mixer::Softmax;
    c.ggufTiledValueHeads = true;
    c.attnOutputGate = true;
    c.qkv = LlamaConfig::Qkv::Separate; // attn_qkv is the delta rule's projection here, not a fused attention one
}

void qwen35Quirks(LlamaConfig& c) { c.qkNorm = LlamaConfig::QkNorm::PerHead; }

// ---- Qwen3-Next: Qwen3.5's layers with fused grouped projections, experts in every layer with a gated shared one.
void qwen3NextKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    qwen35Keys(r, j, c);
    readSparseMoe(r, j, c, "moe_intermediate_size", true);
    c.sharedFfn = r.intOr("shared_expert_intermediate_size", 0, 0);
    c.sharedExpertGate = c.sharedFfn > 0;
    c.groupedQkvz = c.groupedBa = true;
}

// GGUF: qwen35's keys but the value heads in Hugging Face's order; the converter split in_proj_qkvz into attn_qkv
// and attn_gate, kept ssm_ba grouped; llama.cpp's graph always renormalises the chosen experts.
void qwen3NextGguf(const GgufFile& g, LlamaConfig& c)
{
    qwen35Gguf(g, c);
    c.ggufTiledValueHeads = false;
    c.groupedBa = true;
    c.normTopK = true;
    const std::string a = c.modelType + ".";
    if (const auto s = g.uintOr(a + "expert_shared_feed_forward_length"))
        c.sharedFfn = static_cast<int>(std::min<std::uint64_t>(*s, 10'000'000));
    c.sharedExpertGate = c.sharedFfn > 0;
}

void checkMamba(const LlamaConfig& c, const std::function<void(const char*, const std::string&)>& fail)
{
    const auto& m = c.mamba;
    if (m.heads % m.groups != 0)
        fail("mamba_n_groups", std::to_string(m.heads) + " heads cannot share " + std::to_string(m.groups) + " groups evenly");
    if (m.convWidth > kMaxConvWidth)
        fail("mamba_d_conv", "a convolution of " + std::to_string(m.convWidth) + " taps; at most " +
                                 std::to_string(kMaxConvWidth) + " are read");
}

// ---- Nemotron-H: blocks of one part (M a Mamba-2 scan, * attention without positions, - a squared-ReLU MLP), the
// scan's gated norm per group.
void nemotronHBlocks(LlamaConfig& c, const std::string& pattern, const std::function<void(const std::string&)>& fail)
{
    if (pattern.size() != static_cast<std::size_t>(c.nLayer))
        fail("names " + std::to_string(pattern.size()) + " blocks; the model has " + std::to_string(c.nLayer) + " layers");
    c.layerMixers.assign(pattern.size(), Mixer::None);
    c.ffnLayers.assign(pattern.size(), false);
    for (std::size_t l = 0; l < pattern.size(); ++l) {
        const char b = pattern[l];
        if (b != 'M' && b != '*' && b != '-')
            fail("block " + std::to_string(l) + " is '" + std::string(1, b) + "'; blocks are M (Mamba-2), * (attention), - (MLP)");
        c.layerMixers[l] = b == 'M' ? Mixer::StateSpace : b == '*' ? Mixer::Softmax : Mixer::None;
        c.ffnLayers[l] = b == '-';
    }
}

void nemotronHKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    c.rmsNormEps = r.floatOr("layer_norm_epsilon", r.floatOr("rms_norm_eps", 1e-5f));
    if (!r.has("head_dim") && r.has("attention_head_dim")) // NVIDIA's remote code's spelling
        c.headDim = r.positiveInt("attention_head_dim");
    auto& m = c.mamba;
    m.heads = r.positiveInt("mamba_num_heads");
    m.headDim = r.positiveInt("mamba_head_dim");
    m.state = r.positiveInt("ssm_state_size");
    m.groups = r.intOr("n_groups", 1, 1);
    m.convWidth = r.intOr("conv_kernel", 4, 1);
    m.convBias = r.boolOr("use_conv_bias", true);
    m.normGroups = m.groups; // Nemotron-H norms each group's channels apart
    checkMamba(c, [&](const char* key, const std::string& what) { r.fail(key, what); });
    if (r.boolOr("mamba_proj_bias", false) || r.boolOr("use_bias", false) || r.boolOr("mlp_bias", false))
        r.fail("use_bias", "projections with biases are not supported (the published models have none)");
    std::string pattern = r.stringOr("hybrid_override_pattern", "");
    if (const auto it = j.find("layers_block_type"); pattern.empty() && it != j.end() && it->is_array()) {
        for (const auto& t : *it) { // newer configs: a list of block names
            const std::string name = t.is_string() ? t.get<std::string>() : std::string();
            pattern += name == "mamba" ? 'M' : name == "attention" ? '*' : name == "mlp" ? '-' : '?';
        }
    }
    nemotronHBlocks(c, pattern, [&](const std::string& what) { r.fail("hybrid_override_pattern", what); });
    c.noRopeLayers.assign(static_cast<std::size_t>(c.nLayer), true);
}

// GGUF: attention blocks have key/value heads, MLP blocks a feed-forward width, Mamba blocks neither.
void nemotronHGguf(const GgufFile& g, LlamaConfig& c)
{
    const std::string a = c.modelType + ".";
    auto& m = c.mamba;
    m.convWidth = ggufPositive(g, a + "ssm.conv_kernel");
    m.state = ggufPositive(g, a + "ssm.state_size");
    m.groups = ggufPositive(g, a + "ssm.group_count");
    m.heads = ggufPositive(g, a + "ssm.time_step_rank");
    const int inner = ggufPositive(g, a + "ssm.inner_size");
    if (inner % m.heads != 0)
        throw Error(ErrorCode::BadConfig, "cannot split " + std::to_string(inner) + " channels into " +
                                              std::to_string(m.heads) + " heads", g.path(), a + "ssm.inner_size");
    m.headDim = inner / m.heads;
    m.convBias = g.find("blk.0.ssm_conv1d.bias") != nullptr;
    m.normGroups = m.groups;
    checkMamba(c, [&](const char* key, const std::string& what) {
        throw Error(ErrorCode::BadConfig, what + " (" + key + ")", g.path(), a + "ssm.group_count");
    });
    auto perLayer = [&](const std::string& key) {
        std::vector<std::int64_t> v(static_cast<std::size_t>(c.nLayer), 0);
        if (const GgufValue* x = g.value(a + key); x && x->kind == GgufValue::Kind::Array)
            for (std::size_t l = 0; l < v.size() && l < x->ints.size(); ++l)
                v[l] = x->ints[l];
        return v;
    };
    const auto kv = perLayer("attention.head_count_kv"), ffn = perLayer("feed_forward_length");
    std::string pattern;
    for (int l = 0; l < c.nLayer; ++l)
        pattern += kv[static_cast<std::size_t>(l)] > 0 ? '*' : ffn[static_cast<std::size_t>(l)] > 0 ? '-' : 'M';
    nemotronHBlocks(c, pattern, [&](const std::string& what) {
        throw Error(ErrorCode::BadConfig, what, g.path(), a + "attention.head_count_kv");
    });
    c.noRopeLayers.assign(static_cast<std::size_t>(c.nLayer), true);
}

void nemotronHQuirks(LlamaConfig& c) { c.mlp = LlamaConfig::Mlp::ReluSquared; }

// ---- Granite 4.0-H: Mamba-2 layers among NoPE attention layers, Granite's multipliers and experts with a shared MLP.

void graniteHybridKeys(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c)
{
    graniteKeys(r, j, c);
    c.sharedFfn = r.intOr("shared_intermediate_size", 0, 0);
    auto& m = c.mamba;
    m.heads = r.positiveInt("mamba_n_heads");
    m.headDim = r.positiveInt("mamba_d_head");
    m.state = r.positiveInt("mamba_d_state");
    m.groups = r.intOr("mamba_n_groups", 1, 1);
    m.convWidth = r.intOr("mamba_d_conv", 4, 1);
    m.convBias = r.boolOr("mamba_conv_bias", true);
    m.normGroups = 1; // GraniteMoeHybridRMSNormGated: over every channel, whatever the groups
    checkMamba(c, [&](const char* key, const std::string& what) { r.fail(key, what); });
    if (r.intOr("mamba_expand", 2, 1) * c.hidden != m.inner())
        r.fail("mamba_expand", "mamba_expand x hidden_size must equal mamba_n_heads x mamba_d_head (" +
                                   std::to_string(m.inner()) + ")");
    if (r.boolOr("mamba_proj_bias", false))
        r.fail("mamba_proj_bias", "Mamba projections with biases are not supported (the published models have none)");
    const auto listed = layerTypesOf(r, j, c.nLayer, {{"mamba", Mixer::StateSpace}, {"attention", Mixer::Softmax}});
    if (!listed)
        r.fail("layer_types", "must name every layer \"mamba\" or \"attention\"");
    c.layerMixers = *listed;
    const std::string positions = r.stringOr("position_embedding_type", "nope");
    if (positions != "nope" && positions != "rope")
        r.fail("position_embedding_type", "must be \"nope\" or \"rope\"");
    if (positions == "nope") // positions reach attention only through the causal mask and the scans
        c.noRopeLayers.assign(static_cast<std::size_t>(c.nLayer), true);
    if (c.experts == 0)
        r.fail("num_local_experts", "a Granite 4.0-H without experts is not supported yet");
}

// GGUF: Mamba layers have no key/value heads; llama.cpp applies rotary positions only when rope.scaling.finetuned is
// true, which its converter never writes for these models. The gated norm is read as the Hugging Face model defines it
// (over every channel; llama.cpp's graph norms each group apart, the same for one group, as every published model has).
void graniteHybridGguf(const GgufFile& g, LlamaConfig& c)
{
    graniteGguf(g, c);
    const std::string a = c.modelType + ".";
    auto& m = c.mamba;
    m.convWidth = ggufPositive(g, a + "ssm.conv_kernel");
    m.state = ggufPositive(g, a + "ssm.state_size");
    m.groups = ggufPositive(g, a + "ssm.group_count");
    m.heads = ggufPositive(g, a + "ssm.time_step_rank");
    const int inner = ggufPositive(g, a + "ssm.inner_size");
    if (inner % m.heads != 0)
        throw Error(ErrorCode::BadConfig, "cannot split " + std::to_string(inner) + " channels into " +
                                              std::to_string(m.heads) + " heads", g.path(), a + "ssm.inner_size");
    m.headDim = inner / m.heads;
    m.convBias = g.find("blk.0.ssm_conv1d.bias") != nullptr;
    m.normGroups = 1;
    checkMamba(c, [&](const char* key, const std::string& what) {
        throw Error(ErrorCode::BadConfig, what + " (" + key + ")", g.path(), a + "ssm.group_count");
    });
    c.layerMixers = ggufMixersByKvHeads(g, c, Mixer::StateSpace);
    if (!g.boolOr(a + "rope.scaling.finetuned").value_or(false))
        c.noRopeLayers.assign(static_cast<std::size_t>(c.nLayer), true);
    if (c.experts == 0)
        throw Error(ErrorCode::BadConfig, "a Granite 4.0-H without experts is not supported yet", g.path(), a + "expert_count");
}

} // namespace

const DecoderFamily kLlamaFamily{llamaDecoderNames, llamaKeys, llamaGguf, nullptr};
const DecoderFamily kQwen3Family{llamaDecoderNames, nullptr, nullptr, qwen3Quirks};
const DecoderFamily kQwen3MoeFamily{llamaDecoderNames, qwen3MoeKeys, qwen3MoeGguf, qwen3Quirks};
const DecoderFamily kOlmoeFamily{llamaDecoderNames, olmoeKeys, nullptr, olmoeQuirks};
const DecoderFamily kSmolLM3Family{llamaDecoderNames, smolLM3Keys, interleavedQkGguf, smolLM3Quirks};
const DecoderFamily kGptOssFamily{gptOssDecoderNames, gptOssKeys, nullptr, gptOssQuirks};
const DecoderFamily kMixtralFamily{mixtralDecoderNames, mixtralKeys, nullptr, nullptr};
const DecoderFamily kGraniteFamily{graniteDecoderNames, graniteKeys, graniteGguf, graniteQuirks};
const DecoderFamily kDeepseekFamily{deepseekDecoderNames, deepseekKeys, deepseekGguf, nullptr};
const DecoderFamily kOlmo2Family{olmo2DecoderNames, nullptr, nullptr, olmo2Quirks};
const DecoderFamily kGemma2Family{gemmaDecoderNames, gemmaKeys, nullptr, gemma2Quirks, "hidden_activation", "gelu_pytorch_tanh", "Gemma models"};
const DecoderFamily kGemma3Family{gemmaDecoderNames, gemmaKeys, nullptr, gemma3Quirks, "hidden_activation", "gelu_pytorch_tanh", "Gemma models"};
const DecoderFamily kPhi3Family{phi3DecoderNames, phi3Keys, nullptr, phi3Quirks};
const DecoderFamily kLfm2Family{lfm2DecoderNames, lfm2Keys, lfm2Gguf, lfm2Quirks};
const DecoderFamily kQwen35Family{qwen35DecoderNames, qwen35Keys, qwen35Gguf, qwen35Quirks};
const DecoderFamily kQwen3NextFamily{qwen3NextDecoderNames, qwen3NextKeys, qwen3NextGguf, qwen35Quirks};
const DecoderFamily kNemotronHFamily{nemotronHDecoderNames, nemotronHKeys, nemotronHGguf, nemotronHQuirks,
                                     "mlp_hidden_act", "relu2", "Nemotron-H models (squared ReLU)"};
const DecoderFamily kGraniteHybridFamily{graniteHybridDecoderNames, graniteHybridKeys, graniteHybridGguf, graniteQuirks};
const DecoderFamily kGptNeoXFamily{gptNeoXDecoderNames, nullptr, nullptr, gptNeoXQuirks, "hidden_act", "gelu", "GPT-NeoX models (the exact, erf GELU)"};

} // namespace attnscope::core
