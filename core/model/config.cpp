// config.json parsing with a message per missing or out-of-range key.
#include "model/config.h"

#include "model/config_reader.h"
#include "model/decoder_families.h"
#include "model/families.h"

#include "io/gguf.h"
#include "model/run_limits.h"
#include "util/error.h"
#include "util/message_text.h"
#include "util/text_file.h"

#include <array>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

namespace attnscope::core {

float LlamaConfig::scoreScale() const
{
    if (attentionScale > 0)
        return static_cast<float>(attentionScale);
    if (queryPreAttnScalar > 0)
        return static_cast<float>(1.0 / std::sqrt(queryPreAttnScalar));
    return 1.0f / std::sqrt(static_cast<float>(headDim)) * static_cast<float>(rope.scoreFactor);
}

namespace {

TransfoXLConfig parseTransfoXL(const ConfigReader& r)
{
    TransfoXLConfig c;
    c.vocabSize = r.positiveInt("vocab_size");
    c.dModel = r.positiveInt("d_model");
    c.dEmbed = r.intOr("d_embed", c.dModel, 1);
    c.nHead = r.positiveInt("n_head");
    c.dHead = r.positiveInt("d_head");
    c.dInner = r.positiveInt("d_inner");
    c.nLayer = layerCount(r.positiveInt("n_layer"), r, "n_layer");
    c.divVal = r.intOr("div_val", 1, 1);
    c.cutoffs = r.intList("cutoffs");
    c.preLnorm = r.boolOr("pre_lnorm", false);
    c.untieR = r.boolOr("untie_r", false);
    c.memLen = checkedMemoryLength(r.intOr("mem_len", 0, 0), r.file(), "mem_len");
    c.clampLen = r.intOr("clamp_len", -1, -1);
    c.sameLength = r.boolOr("same_length", false);
    c.tgtLen = checkedSegmentLength(r.intOr("tgt_len", 128, 1), 4096, r.file(), "tgt_len");
    c.layerNormEps = r.floatOr("layer_norm_epsilon", 1e-5f);
    const int attnType = r.intOr("attn_type", 0, 0);
    if (attnType != 0)
        r.fail("attn_type", "attn_type " + std::to_string(attnType) +
                                " is not supported; only 0 (relative positional attention, the paper's model) is");
    if (c.dModel % 2 != 0)
        r.fail("d_model", "must be even (sinusoidal position encodings pair sines and cosines)");
    int prev = 0;
    for (int cut : c.cutoffs) {
        if (cut <= prev || cut >= c.vocabSize)
            r.fail("cutoffs", "must increase strictly and stay below vocab_size " + std::to_string(c.vocabSize));
        prev = cut;
    }
    return c;
}

GPT2Config parseGPT2(const ConfigReader& r)
{
    GPT2Config c;
    c.vocabSize = r.positiveInt("vocab_size");
    c.nPositions = r.intOr("n_positions", r.intOr("n_ctx", 0, 0), 1);
    if (c.nPositions <= 0)
        r.fail("n_positions", "required key is missing");
    c.nEmbd = r.positiveInt("n_embd");
    c.nHead = r.positiveInt("n_head");
    c.nLayer = layerCount(r.positiveInt("n_layer"), r, "n_layer");
    c.nInner = r.intOr("n_inner", 4 * c.nEmbd, 1);
    c.layerNormEps = r.floatOr("layer_norm_epsilon", 1e-5f);
    if (c.nEmbd % c.nHead != 0)
        r.fail("n_embd", "n_embd " + std::to_string(c.nEmbd) + " is not divisible by n_head " + std::to_string(c.nHead));
    const std::string act = r.stringOr("activation_function", "gelu_new");
    if (act == "gelu_new" || act == "gelu_pytorch_tanh")
        c.activation = GPT2Config::Activation::GeluNew;
    else if (act == "gelu")
        c.activation = GPT2Config::Activation::Gelu;
    else if (act == "relu")
        c.activation = GPT2Config::Activation::Relu;
    else
        r.fail("activation_function", "\"" + act + "\" is not supported (gelu_new, gelu, relu)");
    return c;
}

// rope_scaling: null, {rope_type|type: default|linear|llama3, factor, low_freq_factor, high_freq_factor,
// original_max_position_embeddings}.
void parseRopeScaling(const ConfigReader& r, const nlohmann::json& j, const std::string& file, RopeConfig& rope)
{
    const ConfigReader s(j, file);
    const bool typed = j.contains("rope_type") || j.contains("type");
    if (!typed && !j.empty()) // a factor without a kind would be dropped without a word
        r.fail("rope_scaling", "gives no rope_type (default, linear, llama3, longrope or yarn) for " + jsonPreview(j));
    std::string type = s.stringOr("rope_type", s.stringOr("type", "default"));
    if (type == "default")
        return;
    if (type == "linear") {
        rope.scaling = RopeConfig::Scaling::Linear;
        rope.factor = s.doubleOr("factor", 1.0);
        return;
    }
    if (type == "llama3") {
        rope.scaling = RopeConfig::Scaling::Llama3;
        rope.factor = s.doubleOr("factor", 8.0);
        rope.lowFreqFactor = s.doubleOr("low_freq_factor", 1.0);
        rope.highFreqFactor = s.doubleOr("high_freq_factor", 4.0);
        rope.originalMaxPositions = s.doubleOr("original_max_position_embeddings", 8192);
        if (rope.highFreqFactor <= rope.lowFreqFactor)
            r.fail("rope_scaling", "high_freq_factor must be larger than low_freq_factor");
        return;
    }
    if (type == "longrope" || type == "su") {
        rope.scaling = RopeConfig::Scaling::LongRope;
        auto factors = [&](const char* key) {
            const auto it = j.find(key);
            if (it == j.end() || !it->is_array() || it->empty())
                r.fail("rope_scaling", std::string("longrope needs a list of numbers \"") + key + "\"");
            std::vector<float> out;
            for (const auto& v : *it) {
                if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
                    r.fail("rope_scaling", std::string("\"") + key + "\" must hold positive finite numbers");
                out.push_back(v.get<float>());
            }
            return out;
        };
        rope.shortFactors = factors("short_factor");
        rope.longFactors = factors("long_factor");
        rope.attentionFactor = s.doubleOr("attention_factor", 0.0); // 0: derived from the context lengths below
        return;
    }
    if (type == "yarn") {
        rope.scaling = RopeConfig::Scaling::Yarn;
        rope.factor = s.doubleOr("factor", 1.0);
        if (rope.factor < 1.0)
            r.fail("rope_scaling", "a YaRN factor must be at least 1");
        rope.originalMaxPositions = s.doubleOr("original_max_position_embeddings", 4096);
        rope.betaFast = s.doubleOr("beta_fast", 32.0);
        rope.betaSlow = s.doubleOr("beta_slow", 1.0);
        rope.truncate = s.boolOr("truncate", true);
        // DeepSeek's get_mscale(s, m) = 0.1 m ln s + 1: cos and sin times mscale's over mscale_all_dim's, the softmax
        // scale times mscale_all_dim's squared (DeepSeek's modeling code and llama.cpp).
        auto mscaleOf = [&](double m) { return rope.factor > 1.0 ? 0.1 * m * std::log(rope.factor) + 1.0 : 1.0; };
        const double mscale = s.doubleOr("mscale", 0.0), mscaleAllDim = s.doubleOr("mscale_all_dim", 0.0);
        // Bounded here, by key: 1e308 overflowed the cosines into infinity and was blamed on the weights.
        for (const auto& [key, v] : {std::pair{"mscale", mscale}, std::pair{"mscale_all_dim", mscaleAllDim}})
            if (v > 1e3)
                r.fail("rope_scaling", std::string(key) + " must be at most 1000 (DeepSeek's are about 1), got " +
                                           formatNumber(v));
        const double fromMscales = mscale > 0 && mscaleAllDim > 0 ? mscaleOf(mscale) / mscaleOf(mscaleAllDim) : mscaleOf(1.0);
        rope.attentionFactor = s.doubleOr("attention_factor", fromMscales);
        if (rope.attentionFactor > 1e3)
            r.fail("rope_scaling", "attention_factor must be at most 1000, got " + formatNumber(rope.attentionFactor));
        if (mscaleAllDim > 0)
            rope.scoreFactor = mscaleOf(mscaleAllDim) * mscaleOf(mscaleAllDim);
        return;
    }
    r.fail("rope_scaling", "rope scaling \"" + type + "\" is not supported (default, linear, llama3, longrope and yarn are)");
}

// Every number a rotary decoder's forward pass uses, checked: positive, finite, and in a range whose float32
// arithmetic stays finite (a rope base of 0 or 1e-300, a NaN epsilon or a zero scaling factor gave NaN attention
// without a word). `gguf` names the keys as the GGUF file does.
void checkDecoderNumbers(const LlamaConfig& c, const std::string& file, bool gguf)
{
    const std::string arch = c.modelType + ".";
    auto require = [&](bool ok, const std::string& jsonKey, const std::string& ggufKey, const std::string& what) {
        if (!ok)
            throw Error(ErrorCode::BadConfig, what, file, gguf ? arch + ggufKey : jsonKey);
    };
    auto within = [](double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; };
    require(within(c.rope.theta, 1.0, 1e12), "rope_theta", "rope.freq_base",
            "the rotary base must be a finite number from 1 to 1e12, got " + formatNumber(c.rope.theta));
    require(within(c.rmsNormEps, 1e-30, 1.0), c.norm == LlamaConfig::Norm::Layer ? "layer_norm_eps" : "rms_norm_eps",
            c.norm == LlamaConfig::Norm::Layer ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon",
            "the norm epsilon must be a positive finite number of at most 1, got " + formatNumber(c.rmsNormEps));
    if (c.rope.scaling == RopeConfig::Scaling::Linear || c.rope.scaling == RopeConfig::Scaling::Llama3)
        require(within(c.rope.factor, 1e-3, 1e6), "rope_scaling", "rope.scaling.factor",
                "the rope scaling factor must be a finite number from 0.001 to 1e6, got " + formatNumber(c.rope.factor));
    if (c.rope.scaling == RopeConfig::Scaling::Llama3)
        require(within(c.rope.lowFreqFactor, 1e-6, 1e6) && within(c.rope.highFreqFactor, 1e-6, 1e6) &&
                    within(c.rope.originalMaxPositions, 1, 1e9),
                "rope_scaling", "rope.scaling.factor", "llama3 rope scaling needs positive finite frequency factors and context");
    require(c.attnSoftCap == 0 || within(c.attnSoftCap, 1e-3, 1e6), "attn_logit_softcapping", "attn_logit_softcapping",
            "the attention soft-cap must be a positive finite number, got " + formatNumber(c.attnSoftCap));
    require(c.finalSoftCap == 0 || within(c.finalSoftCap, 1e-3, 1e6), "final_logit_softcapping", "final_logit_softcapping",
            "the logit soft-cap must be a positive finite number, got " + formatNumber(c.finalSoftCap));
    require(c.localRopeTheta == 0 || within(c.localRopeTheta, 1.0, 1e12), "rope_local_base_freq", "rope.freq_base_swa",
            "the sliding layers' rotary base must be a finite number from 1 to 1e12");
    require(c.queryPreAttnScalar == 0 || within(c.queryPreAttnScalar, 1e-6, 1e12), "query_pre_attn_scalar",
            "query_pre_attn_scalar", "query_pre_attn_scalar must be a positive finite number");
    // Granite's multipliers (the keys llama.cpp writes them under in GGUF files).
    require(c.attentionScale == 0 || within(c.attentionScale, 1e-6, 1e6), "attention_multiplier", "attention.scale",
            "the attention multiplier must be a positive finite number, got " + formatNumber(c.attentionScale));
    require(within(c.embeddingScale, 1e-6, 1e6), "embedding_multiplier", "embedding_scale",
            "the embedding multiplier must be a positive finite number, got " + formatNumber(c.embeddingScale));
    require(within(c.residualScale, 1e-6, 1e6), "residual_multiplier", "residual_scale",
            "the residual multiplier must be a positive finite number, got " + formatNumber(c.residualScale));
    require(within(c.logitScale, 1e-6, 1e6), "logits_scaling", "logit_scale",
            "the logits' scaling must be a positive finite number, got " + formatNumber(c.logitScale));
    for (float f : c.rope.freqDivisors)
        require(within(f, 1e-6, 1e12), "rope_scaling", "rope_freqs.weight",
                "rope_freqs.weight must hold positive finite divisors, got " + std::to_string(f));
}

// LongRoPE's factor lists must cover the rotated pairs; its cos/sin factor follows from the context lengths unless given.
void checkLongRope(LlamaConfig& c, const std::string& file, const std::string& key)
{
    auto& rope = c.rope;
    if (rope.scaling != RopeConfig::Scaling::LongRope)
        return;
    const auto pairs = static_cast<std::size_t>(c.rotated() / 2);
    if (rope.shortFactors.size() != pairs || rope.longFactors.size() != pairs)
        throw Error(ErrorCode::BadConfig,
                    "longrope factors hold " + std::to_string(rope.shortFactors.size()) + " (short) and " +
                        std::to_string(rope.longFactors.size()) + " (long) numbers; the heads rotate " +
                        std::to_string(pairs) + " pairs",
                    file, key);
    if (!(rope.originalMaxPositions >= 1))
        throw Error(ErrorCode::BadConfig, "original_max_position_embeddings must be at least 1", file, key);
    if (rope.attentionFactor <= 0) {
        const double factor = c.maxPositions / rope.originalMaxPositions;
        rope.attentionFactor = factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(rope.originalMaxPositions));
    }
}

// The keys every decoder's config.json spells alike: vocabulary, widths, heads, layers.
LlamaConfig decoderShape(const ConfigReader& r, const std::string& type, const std::string& file)
{
    LlamaConfig c;
    c.modelType = type;
    c.family = familyOfModelType(type, file).id;
    c.vocabSize = r.positiveInt("vocab_size");
    c.hidden = r.positiveInt("hidden_size");
    c.intermediate = r.positiveInt("intermediate_size");
    c.nHead = r.positiveInt("num_attention_heads");
    c.nLayer = layerCount(r.positiveInt("num_hidden_layers"), r, "num_hidden_layers");
    return c;
}

const DecoderFamily& decoderFamilyOf(ModelFamily id)
{
    const FamilyRow& row = familyRow(id);
    if (!row.decoder)
        throw Error(ErrorCode::UnknownModelType, std::string(row.name) + " is not read as a rotary decoder");
    return *row.decoder;
}

// The keys the Llama-family config.json files share: head counts and sizes, norm epsilon, rotary base, context, tying
// (untied unless the family says otherwise), biases and the activation the family's MLP computes.
void readCommonDecoderKeys(const ConfigReader& r, const DecoderFamily& family, LlamaConfig& c)
{
    c.nKvHead = r.intOr("num_key_value_heads", c.nHead, 1);
    c.headDim = r.intOr("head_dim", c.hidden / c.nHead, 1);
    c.rmsNormEps = r.floatOr("rms_norm_eps", 1e-6f);
    c.rope.theta = r.doubleOr("rope_theta", 10000.0);
    c.maxPositions = r.intOr("max_position_embeddings", 2048, 1);
    c.tieEmbeddings = r.boolOr("tie_word_embeddings", false);
    c.qkvBias = c.oBias = r.boolOr("attention_bias", false);
    c.mlpBias = r.boolOr("mlp_bias", false);
    const std::string act = r.stringOr(family.activationKey, family.activation);
    if (act != family.activation)
        r.fail(family.activationKey, "\"" + act + "\" is not supported (" + family.activationNote + " use " +
                                         family.activation + ")");
}

// The head layout, checked after the family's own keys (which may set the head size): key/value heads sharing the
// query heads evenly, an even head size named by the keys it came from (the file may not give head_dim at all).
void checkHeadShape(const ConfigReader& r, const nlohmann::json& j, const LlamaConfig& c)
{
    if (c.nHead % c.nKvHead != 0)
        r.fail("num_key_value_heads", std::to_string(c.nHead) + " attention heads cannot be shared evenly by " +
                                          std::to_string(c.nKvHead) + " key/value heads");
    if (!j.contains("head_dim") && !c.latentAttention() && c.hidden % c.nHead != 0)
        r.fail("hidden_size", "hidden_size " + std::to_string(c.hidden) + " is not divisible by num_attention_heads " +
                                  std::to_string(c.nHead) + " (give head_dim)");
    if (c.headDim % 2 == 0)
        return;
    if (c.latentAttention())
        r.fail("qk_nope_head_dim", "qk_nope_head_dim + qk_rope_head_dim = " + std::to_string(c.headDim) +
                                       " dimensions per head; must be even");
    if (j.contains("head_dim"))
        r.fail("head_dim", "must be even (rotary embeddings rotate pairs of dimensions)");
    r.fail("hidden_size", "hidden_size " + std::to_string(c.hidden) + " / num_attention_heads " + std::to_string(c.nHead) +
                              " gives heads of " + std::to_string(c.headDim) +
                              " dimensions; rotary embeddings rotate pairs, so it must be even (or give head_dim)");
}

// A Llama-family config.json: the shared keys, the family's own (its row of decoder_families), the head layout, rope
// scaling, then the family's quirks and the numbers' ranges.
LlamaConfig parseLlama(const ConfigReader& r, const nlohmann::json& j, const std::string& file, const std::string& type)
{
    LlamaConfig c = decoderShape(r, type, file);
    const DecoderFamily& family = decoderFamilyOf(c.family);
    readCommonDecoderKeys(r, family, c);
    if (family.jsonKeys)
        family.jsonKeys(r, j, c);
    checkHeadShape(r, j, c);
    if (const auto* rs = r.object("rope_scaling"))
        parseRopeScaling(r, *rs, file, c.rope);
    if (c.rotated() < 2 || c.rotated() % 2 != 0 || c.rotated() > c.headDim)
        r.fail("partial_rotary_factor", "rotates " + std::to_string(c.rotated()) + " of " + std::to_string(c.headDim) +
                                            " dimensions of each head; must be an even number of at least 2");
    if (family.quirks)
        family.quirks(c);
    checkLongRope(c, file, "rope_scaling");
    checkDecoderNumbers(c, file, false);
    return c;
}

// GPT-NeoX / Pythia config.json: its own key names (rotary_pct, rotary_emb_base, use_parallel_residual, layer_norm_eps).
LlamaConfig parseGptNeoX(const ConfigReader& r, const std::string& type, const std::string& file)
{
    LlamaConfig c = decoderShape(r, type, file);
    c.nKvHead = c.nHead;
    if (c.hidden % c.nHead != 0)
        r.fail("hidden_size", "hidden_size " + std::to_string(c.hidden) + " is not divisible by num_attention_heads " +
                                  std::to_string(c.nHead));
    c.headDim = c.hidden / c.nHead;
    c.rmsNormEps = r.floatOr("layer_norm_eps", 1e-5f);
    c.rope.theta = r.doubleOr("rotary_emb_base", r.doubleOr("rope_theta", 10000.0));
    const double pct = r.doubleOr("rotary_pct", 1.0);
    if (!(pct > 0.0 && pct <= 1.0))
        r.fail("rotary_pct", "must be in (0, 1]");
    c.rotaryDims = static_cast<int>(c.headDim * pct); // as the reference: int(head_size * rotary_pct)
    if (c.rotaryDims < 2 || c.rotaryDims % 2 != 0)
        r.fail("rotary_pct", "rotates " + std::to_string(c.rotaryDims) + " dimensions of each head; must be an even number "
                                                                            "of at least 2");
    c.parallelResidual = r.boolOr("use_parallel_residual", true);
    c.maxPositions = r.intOr("max_position_embeddings", 2048, 1);
    c.tieEmbeddings = r.boolOr("tie_word_embeddings", false);
    const DecoderFamily& family = decoderFamilyOf(c.family);
    if (const std::string act = r.stringOr(family.activationKey, family.activation); act != family.activation)
        r.fail(family.activationKey, "\"" + act + "\" is not supported (" + family.activationNote + ")");
    family.quirks(c);
    checkDecoderNumbers(c, file, false);
    return c;
}

// The rope factor tensors: Phi-3's LongRoPE (long and short lists) and Llama 3's frequency divisors.
void readGgufRopeFactors(const GgufFile& g, LlamaConfig& c)
{
    auto key = [&](const std::string& k) { return c.modelType + "." + k; };
    auto floats = [&](const GgufTensor* t, const char* name) {
        if (!t || t->type != GgmlType::F32 || t->dims.size() != 1)
            throw Error(ErrorCode::ShapeMismatch, "must be a 1-D F32 tensor", g.path(), name);
        std::vector<float> v(static_cast<std::size_t>(t->dims[0]));
        std::memcpy(v.data(), g.bytes(*t), v.size() * sizeof(float));
        return v;
    };
    if (const auto* lf = g.find("rope_factors_long.weight")) {
        c.rope.scaling = RopeConfig::Scaling::LongRope;
        c.rope.longFactors = floats(lf, "rope_factors_long.weight");
        c.rope.shortFactors = floats(g.find("rope_factors_short.weight"), "rope_factors_short.weight");
        c.rope.originalMaxPositions = g.numberOr(key("rope.scaling.original_context_length")).value_or(c.maxPositions);
        c.rope.attentionFactor = g.numberOr(key("rope.scaling.attn_factor")).value_or(0.0);
    } else if (const auto orig = g.numberOr(key("rope.scaling.original_context_length"))) {
        c.rope.originalMaxPositions = *orig;
    }
    if (const auto* f = g.find("rope_freqs.weight")) {
        if (f->type != GgmlType::F32 || f->dims.size() != 1 || f->dims[0] != c.headDim / 2)
            throw Error(ErrorCode::ShapeMismatch, "must be F32 of " + std::to_string(c.headDim / 2) + " frequencies",
                        g.path(), "rope_freqs.weight");
        c.rope.freqDivisors.resize(static_cast<std::size_t>(c.headDim / 2));
        std::memcpy(c.rope.freqDivisors.data(), g.bytes(*f), c.rope.freqDivisors.size() * sizeof(float));
    }
}

// Rotary embeddings' extent and scaling as llama.cpp writes them: the rotated dimensions, YaRN or linear scaling,
// Phi-3's LongRoPE factor tensors, Llama 3's frequency divisors.
void readGgufRope(const GgufFile& g, LlamaConfig& c)
{
    const std::string arch = c.modelType;
    auto key = [&](const std::string& k) { return arch + "." + k; };
    c.rope.theta = g.numberOr(key("rope.freq_base")).value_or(10000.0);
    if (const auto dims = g.uintOr(key("rope.dimension_count")); dims && *dims != static_cast<std::uint64_t>(c.headDim)) {
        if (*dims < 2 || *dims > static_cast<std::uint64_t>(c.headDim) || *dims % 2 != 0)
            throw Error(ErrorCode::BadConfig,
                        "rotary embeddings over " + std::to_string(*dims) + " of " + std::to_string(c.headDim) +
                            " head dimensions: must be an even number from 2 to the head size",
                        g.path(), key("rope.dimension_count"));
        c.rotaryDims = static_cast<int>(*dims);
    }
    const auto scaling = g.stringOr(key("rope.scaling.type"));
    if (scaling && *scaling == "yarn") {
        // llama.cpp always rounds the correction range outwards (truncate) and derives the attention factor.
        c.rope.scaling = RopeConfig::Scaling::Yarn;
        c.rope.factor = g.number(key("rope.scaling.factor"));
        if (!(c.rope.factor >= 1.0) || !std::isfinite(c.rope.factor))
            throw Error(ErrorCode::BadConfig, "a YaRN factor must be at least 1", g.path(), key("rope.scaling.factor"));
        c.rope.originalMaxPositions = g.number(key("rope.scaling.original_context_length"));
        c.rope.betaFast = g.numberOr(key("rope.scaling.yarn_beta_fast")).value_or(32.0);
        c.rope.betaSlow = g.numberOr(key("rope.scaling.yarn_beta_slow")).value_or(1.0);
        c.rope.truncate = true;
        c.rope.attentionFactor = 0.1 * std::log(c.rope.factor) + 1.0;
    } else if (scaling && *scaling != "none") {
        if (*scaling != "linear")
            throw Error(ErrorCode::BadConfig, "rope scaling \"" + *scaling + "\" is not supported (linear is)", g.path(),
                        key("rope.scaling.type"));
        c.rope.scaling = RopeConfig::Scaling::Linear;
        c.rope.factor = g.number(key("rope.scaling.factor"));
    }
    readGgufRopeFactors(g, c);
}

// Key/value heads: one number, or in a hybrid model's file one per layer (0 where a layer has no attention; the
// family's row says what mixes those), of which the attention layers must agree.
int ggufKeyValueHeads(const GgufFile& g, const std::string& key, const LlamaConfig& c)
{
    const GgufValue* v = g.value(key);
    if (!v)
        return c.nHead;
    if (v->kind != GgufValue::Kind::Array)
        return ggufPositive(g, key);
    if (v->ints.size() != static_cast<std::size_t>(c.nLayer))
        throw Error(ErrorCode::BadConfig,
                    "holds " + std::to_string(v->arraySize()) + " integers for " + std::to_string(c.nLayer) + " layers",
                    g.path(), key);
    std::int64_t heads = 0;
    for (const std::int64_t n : v->ints) {
        if (n < 0 || n > c.nHead || (n > 0 && heads > 0 && n != heads))
            throw Error(ErrorCode::BadConfig, "the attention layers' key/value heads must be one number from 1 to " +
                                                  std::to_string(c.nHead) + " (0: a layer without attention)",
                        g.path(), key);
        heads = std::max(heads, n);
    }
    if (heads == 0)
        throw Error(ErrorCode::BadConfig, "no layer has attention", g.path(), key);
    return static_cast<int>(heads);
}

// A width llama.cpp writes as one number, or per layer in a hybrid's file (0 where a layer has none): the largest.
int ggufLargestCount(const GgufFile& g, const std::string& key, int layers)
{
    const GgufValue* v = g.value(key);
    if (!v || v->kind != GgufValue::Kind::Array)
        return ggufPositive(g, key);
    if (v->ints.size() != static_cast<std::size_t>(layers))
        throw Error(ErrorCode::BadConfig,
                    "holds " + std::to_string(v->arraySize()) + " integers for " + std::to_string(layers) + " layers",
                    g.path(), key);
    std::int64_t largest = 0;
    for (const std::int64_t n : v->ints) {
        if (n < 0 || n > kMaxConfigInt)
            throw Error(ErrorCode::BadConfig, "value " + std::to_string(n) + " is outside 0 .. " + std::to_string(kMaxConfigInt),
                        g.path(), key);
        largest = std::max(largest, n);
    }
    if (largest == 0)
        throw Error(ErrorCode::BadConfig, "no layer has one", g.path(), key);
    return static_cast<int>(largest);
}

// The sizes llama.cpp writes under the architecture's prefix: layers, widths, heads, context, norm epsilon.
void readGgufShape(const GgufFile& g, LlamaConfig& c)
{
    auto key = [&](const std::string& k) { return c.modelType + "." + k; };
    auto positive = [&](const std::string& k) { return ggufPositive(g, k); };
    c.nLayer = positive(key("block_count"));
    if (c.nLayer > kMaxLayers)
        throw Error(ErrorCode::BadConfig,
                    std::to_string(c.nLayer) + " layers is more than any model has (at most " + std::to_string(kMaxLayers) +
                        " are read)",
                    g.path(), key("block_count"));
    c.hidden = positive(key("embedding_length"));
    c.intermediate = ggufLargestCount(g, key("feed_forward_length"), c.nLayer);
    c.nHead = positive(key("attention.head_count"));
    c.nKvHead = ggufKeyValueHeads(g, key("attention.head_count_kv"), c);
    c.headDim = g.value(key("attention.key_length")) ? positive(key("attention.key_length")) : c.hidden / c.nHead;
    c.maxPositions = g.value(key("context_length")) ? positive(key("context_length")) : 2048;
    c.rmsNormEps = static_cast<float>(
        g.numberOr(key("attention.layer_norm_rms_epsilon")).value_or(g.numberOr(key("attention.layer_norm_epsilon")).value_or(1e-5)));
    if (const auto parallel = g.boolOr(key("use_parallel_residual")))
        c.parallelResidual = *parallel;
}

// What the tensors themselves say: the vocabulary (token_embd's rows), tying (no output.weight), biases and fused q/k/v.
void readGgufTensorFacts(const GgufFile& g, LlamaConfig& c)
{
    const auto* embd = g.find("token_embd.weight");
    if (!embd)
        throw Error(ErrorCode::MissingTensor, "tensor not found in the file", g.path(), "token_embd.weight");
    if (embd->dims.size() != 2)
        throw Error(ErrorCode::ShapeMismatch, "must be 2-D", g.path(), "token_embd.weight");
    c.vocabSize = static_cast<int>(embd->dims[1]);
    const std::string vocabKey = c.modelType + ".vocab_size";
    if (const auto v = g.uintOr(vocabKey); v && *v != static_cast<std::uint64_t>(c.vocabSize))
        throw Error(ErrorCode::BadConfig,
                    "says " + std::to_string(*v) + " tokens but token_embd.weight has " + std::to_string(c.vocabSize),
                    g.path(), vocabKey);
    c.tieEmbeddings = g.find("output.weight") == nullptr;
    c.qkvBias = g.find("blk.0.attn_q.bias") != nullptr || g.find("blk.0.attn_qkv.bias") != nullptr;
    if (g.find("blk.0.attn_qkv.weight"))
        c.qkv = LlamaConfig::Qkv::Blocks; // llama.cpp's converter stores fused q/k/v as [q; k; v] row blocks
    c.oBias = g.find("blk.0.attn_output.bias") != nullptr;
    c.mlpBias = g.find("blk.0.ffn_up.bias") != nullptr;
}

// Keys llama.cpp writes for whichever architecture has them: soft caps and the sliding layers' rotary base (Gemma;
// query_pre_attn_scalar is not written: head_dim), the window, and a router's size.
void readGgufOptionalKeys(const GgufFile& g, LlamaConfig& c)
{
    auto key = [&](const std::string& k) { return c.modelType + "." + k; };
    auto positive = [&](const std::string& k) { return ggufPositive(g, k); };
    if (const auto cap = g.numberOr(key("attn_logit_softcapping")))
        c.attnSoftCap = static_cast<float>(*cap);
    if (const auto cap = g.numberOr(key("final_logit_softcapping")))
        c.finalSoftCap = static_cast<float>(*cap);
    c.localRopeTheta = g.numberOr(key("rope.freq_base_swa")).value_or(0.0);
    if (const auto w = g.uintOr(key("attention.sliding_window")))
        c.slidingWindow = static_cast<int>(std::min<std::uint64_t>(*w, 100'000'000));
    if (const auto e = g.uintOr(key("expert_count")); e && *e > 0) {
        c.experts = positive(key("expert_count"));
        c.expertsUsed = positive(key("expert_used_count"));
        if (c.expertsUsed > c.experts)
            throw Error(ErrorCode::BadConfig, "chooses more experts than there are", g.path(), key("expert_used_count"));
        c.expertFfn = g.value(key("expert_feed_forward_length")) ? positive(key("expert_feed_forward_length")) : c.intermediate;
    }
}

void checkGgufHeads(const GgufFile& g, const LlamaConfig& c)
{
    auto key = [&](const std::string& k) { return c.modelType + "." + k; };
    if (c.nHead % c.nKvHead != 0)
        throw Error(ErrorCode::BadConfig, "cannot share " + std::to_string(c.nHead) + " heads evenly", g.path(),
                    key("attention.head_count_kv"));
    if (c.headDim % 2 == 0)
        return;
    if (g.value(key("attention.key_length")))
        throw Error(ErrorCode::BadConfig, "head size " + std::to_string(c.headDim) + " must be even", g.path(),
                    key("attention.key_length"));
    throw Error(ErrorCode::BadConfig,
                "embedding length " + std::to_string(c.hidden) + " / " + std::to_string(c.nHead) + " heads gives heads of " +
                    std::to_string(c.headDim) + " dimensions; must be even",
                g.path(), key("embedding_length"));
}

} // namespace

LlamaConfig ggufDecoderConfig(const GgufFile& g)
{
    LlamaConfig c;
    c.modelType = g.string("general.architecture");
    c.family = familyOfGgufArchitecture(c.modelType, g.path()).id;
    c.fromGguf = true;
    const DecoderFamily& family = decoderFamilyOf(c.family);
    readGgufShape(g, c);
    readGgufRope(g, c);
    readGgufTensorFacts(g, c);
    readGgufOptionalKeys(g, c);
    if (family.ggufKeys)
        family.ggufKeys(g, c);
    checkGgufHeads(g, c);
    if (family.quirks)
        family.quirks(c);
    checkLongRope(c, g.path(), "rope_factors_short.weight");
    checkDecoderNumbers(c, g.path(), true);
    return c;
}


ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& file)
{
    if (!json.is_object())
        throw Error(ErrorCode::BadConfig, "config is not a JSON object", file);
    const auto it = json.find("model_type");
    if (it == json.end() || !it->is_string())
        throw Error(ErrorCode::UnknownModelType,
                    "no \"model_type\" string; supported model types: " + supportedModelTypes(), file, "model_type");
    const std::string type = it->get<std::string>();
    return familyOfModelType(type, file).fromJson(json, file, type);
}

ModelConfig ggufModelConfig(const GgufFile& g)
{
    const auto& row = familyOfGgufArchitecture(g.string("general.architecture"), g.path());
    return row.fromGguf(g);
}

TransfoXLConfig parseTransfoXLConfig(const nlohmann::json& json, const std::string& file)
{
    return parseTransfoXL(ConfigReader(json, file));
}

GPT2Config parseGPT2Config(const nlohmann::json& json, const std::string& file) { return parseGPT2(ConfigReader(json, file)); }

namespace {
// `given` over `defaults`: what a configuration class fills in where a config.json is silent. Keys the file gives
// win, null included.
nlohmann::json withDefaults(nlohmann::json defaults, const nlohmann::json& given)
{
    for (const auto& [key, value] : given.items())
        defaults[key] = value;
    return defaults;
}

// Gemma 3's (transformers' Gemma3TextConfig): a multimodal folder's text_config often gives only the sizes and the
// window.
nlohmann::json withGemma3TextDefaults(const nlohmann::json& given)
{
    return withDefaults({{"vocab_size", 262208},
                         {"hidden_size", 2304},
                         {"intermediate_size", 9216},
                         {"num_hidden_layers", 26},
                         {"num_attention_heads", 8},
                         {"num_key_value_heads", 4},
                         {"head_dim", 256},
                         {"hidden_activation", "gelu_pytorch_tanh"},
                         {"max_position_embeddings", 131072},
                         {"rms_norm_eps", 1e-6},
                         {"tie_word_embeddings", true},
                         {"rope_theta", 1000000.0},
                         {"attention_bias", false},
                         {"query_pre_attn_scalar", 256},
                         {"sliding_window", 4096},
                         {"rope_local_base_freq", 10000.0},
                         {"sliding_window_pattern", 6}},
                        given);
}

// LlamaConfig's and CLIPVisionConfig's defaults: llava-hf's folders give only what differs from them (LLaVA-1.5-7B's
// text_config names the vocabulary and the context, its vision_config the sizes).
nlohmann::json withLlamaDefaults(const nlohmann::json& given)
{
    return withDefaults({{"vocab_size", 32000},
                         {"hidden_size", 4096},
                         {"intermediate_size", 11008},
                         {"num_hidden_layers", 32},
                         {"num_attention_heads", 32},
                         {"max_position_embeddings", 2048},
                         {"rms_norm_eps", 1e-6},
                         {"rope_theta", 10000.0},
                         {"tie_word_embeddings", false}},
                        given);
}

nlohmann::json withClipVisionDefaults(const nlohmann::json& given)
{
    return withDefaults({{"hidden_size", 768},
                         {"intermediate_size", 3072},
                         {"num_hidden_layers", 12},
                         {"num_attention_heads", 12},
                         {"image_size", 224},
                         {"patch_size", 32},
                         {"hidden_act", "quick_gelu"},
                         {"layer_norm_eps", 1e-5}},
                        given);
}

// A nested object of a multimodal config (text_config, vision_config), or Error(BadConfig) naming it.
const nlohmann::json& nestedConfig(const nlohmann::json& json, const std::string& file, const char* key,
                                   const char* what)
{
    const auto it = json.find(key);
    if (it == json.end() || !it->is_object())
        throw Error(ErrorCode::BadConfig, std::string("needs a \"") + key + "\" object: " + what, file, key);
    return *it;
}
} // namespace

LlamaConfig parseDecoderConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    return parseLlama(ConfigReader(json, file), json, file, modelType);
}

LlamaConfig parseGptNeoXConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    return parseGptNeoX(ConfigReader(json, file), modelType, file);
}

namespace {
// A multimodal folder's config (model_type `wrapper`) read as its text model's: its text_config (the vision tower is
// left unread); the config itself otherwise.
const nlohmann::json& textConfigOf(const nlohmann::json& json, const std::string& file, const std::string& modelType,
                                   const char* wrapper, const char* family)
{
    if (modelType != wrapper)
        return json;
    const auto it = json.find("text_config");
    if (it == json.end() || !it->is_object())
        throw Error(ErrorCode::BadConfig,
                    std::string("a multimodal ") + family + " config (model_type " + wrapper +
                        ") needs a \"text_config\" object: the text model's settings",
                    file, "text_config");
    return *it;
}
} // namespace

namespace {
// SiglipVisionConfig's defaults, where Gemma 3's vision_config is silent.
nlohmann::json withSiglipDefaults(const nlohmann::json& given)
{
    return withDefaults({{"hidden_size", 768},
                         {"intermediate_size", 3072},
                         {"num_hidden_layers", 12},
                         {"num_attention_heads", 12},
                         {"image_size", 224},
                         {"patch_size", 16},
                         {"hidden_act", "gelu_pytorch_tanh"},
                         {"layer_norm_eps", 1e-6}},
                        given);
}

// Gemma 3's picture side (Gemma3ForConditionalGeneration): a SigLIP tower, its normed output averaged to
// mm_tokens_per_image cells, the soft-token norm and projection; <start_of_image> / <end_of_image> frame each
// picture's tokens, which see each other both ways.
VisionLanguageConfig gemma3Picture(const nlohmann::json& json, const std::string& file, int textHidden, int vocab)
{
    const ConfigReader top(json, file);
    const nlohmann::json vision = withSiglipDefaults(nestedConfig(json, file, "vision_config", "the vision tower's settings"));
    const std::string type = vision.contains("model_type") && vision["model_type"].is_string()
                                 ? vision["model_type"].get<std::string>()
                                 : "siglip_vision_model";
    if (type != "siglip_vision_model")
        top.fail("vision_config", "a Gemma 3 vision tower of type \"" + type + "\" is not supported "
                                  "(siglip_vision_model is)");
    VisionLanguageConfig v;
    v.family = ModelFamily::Gemma3;
    v.tower = parseVisionConfig(vision, file, type);
    v.tower.place = "vision_tower.";
    v.normedOutput = true;
    v.dropClass = false;
    const int side = v.tower.imageSize / v.tower.patch;
    const int tokens = top.intOr("mm_tokens_per_image", 256, 1);
    const int perSide = static_cast<int>(std::lround(std::sqrt(static_cast<double>(tokens))));
    if (perSide * perSide != tokens || side % perSide != 0)
        top.fail("mm_tokens_per_image", std::to_string(tokens) + " tokens are not a square grid that divides the " +
                                            std::to_string(side) + " x " + std::to_string(side) + " patches");
    v.poolKernel = side / perSide;
    v.bidirectionalPicture = true;
    auto token = [&](const char* key, const char* alias, int fallback) {
        const int id = json.contains(alias) ? top.intOr(alias, fallback, 0) : top.intOr(key, fallback, 0);
        if (id >= vocab)
            top.fail(key, "token " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab));
        return id;
    };
    v.imageToken = token("image_token_index", "image_token_id", 262144);
    v.beginToken = token("boi_token_index", "boi_token_id", 255999);
    v.endToken = token("eoi_token_index", "eoi_token_id", 256000);
    v.projectorHidden = textHidden;
    return v;
}
} // namespace

LlamaConfig parseGemma3Config(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    const nlohmann::json merged = withGemma3TextDefaults(textConfigOf(json, file, modelType, "gemma3", "Gemma 3"));
    LlamaConfig c = parseLlama(ConfigReader(merged, file), merged, file, modelType);
    if (modelType == "gemma3" && json.contains("vision_config") && json["vision_config"].is_object())
        c.vision = gemma3Picture(json, file, c.hidden, c.vocabSize);
    return c;
}

LlamaConfig parseLlavaConfig(const nlohmann::json& json, const std::string& file, const std::string&)
{
    const ConfigReader top(json, file);
    const nlohmann::json text = withLlamaDefaults(nestedConfig(json, file, "text_config", "the language model's settings"));
    const std::string textType = text.contains("model_type") && text["model_type"].is_string()
                                     ? text["model_type"].get<std::string>()
                                     : "llama";
    if (textType != "llama" && textType != "mistral" && textType != "qwen2")
        top.fail("text_config", "a LLaVA language model of type \"" + textType + "\" is not supported (llama, "
                                "mistral and qwen2 are)");
    LlamaConfig c = parseLlama(ConfigReader(text, file), text, file, textType);
    const nlohmann::json vision =
        withClipVisionDefaults(nestedConfig(json, file, "vision_config", "the vision tower's settings"));
    const std::string visionType = vision.contains("model_type") && vision["model_type"].is_string()
                                       ? vision["model_type"].get<std::string>()
                                       : "clip_vision_model";
    if (visionType != "clip_vision_model")
        top.fail("vision_config", "a LLaVA vision tower of type \"" + visionType + "\" is not supported "
                                  "(clip_vision_model is)");
    VisionLanguageConfig v;
    v.tower = parseVisionConfig(vision, file, visionType);
    v.tower.place = "vision_tower.";
    if (json.contains("vision_feature_layer") && json["vision_feature_layer"].is_array())
        top.fail("vision_feature_layer", "several feature layers (a list) are not supported; one layer is");
    v.featureLayer = top.intOr("vision_feature_layer", -2, -v.tower.layers - 1);
    if (v.featureLayer > v.tower.layers)
        top.fail("vision_feature_layer", "the tower has hidden states 0 .. " + std::to_string(v.tower.layers) +
                                             " (or -1 .. -" + std::to_string(v.tower.layers + 1) + "), not " +
                                             std::to_string(v.featureLayer));
    const std::string strategy = top.stringOr("vision_feature_select_strategy", "default");
    if (strategy != "default" && strategy != "full")
        top.fail("vision_feature_select_strategy", "\"" + strategy + "\" is not a strategy (default, full)");
    v.dropClass = strategy == "default";
    const int token = json.contains("image_token_id") ? top.intOr("image_token_id", 32000, 0)
                                                      : top.intOr("image_token_index", 32000, 0);
    if (token >= c.vocabSize)
        top.fail("image_token_index", "the image token " + std::to_string(token) + " is outside the vocabulary of " +
                                          std::to_string(c.vocabSize));
    v.imageToken = token;
    const std::string act = top.stringOr("projector_hidden_act", "gelu");
    if (act != "gelu")
        top.fail("projector_hidden_act", "\"" + act + "\" is not supported (gelu is)");
    v.projectorBias = top.boolOr("multimodal_projector_bias", true);
    v.projectorHidden = c.hidden;
    c.vision = std::move(v);
    return c;
}

LlamaConfig parseQwen35Config(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    const nlohmann::json& text = textConfigOf(json, file, modelType, "qwen3_5", "Qwen3.5");
    return parseLlama(ConfigReader(text, file), text, file, modelType);
}

namespace {
EncoderConfig::Activation encoderActivation(const ConfigReader& r, const char* key)
{
    const std::string act = r.stringOr(key, "gelu");
    if (act == "gelu")
        return EncoderConfig::Activation::Gelu;
    if (act == "gelu_new" || act == "gelu_pytorch_tanh")
        return EncoderConfig::Activation::GeluNew;
    if (act == "relu")
        return EncoderConfig::Activation::Relu;
    r.fail(key, "\"" + act + "\" is not supported (gelu, gelu_new, relu)");
}
} // namespace

EncoderConfig parseEncoderConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    const ConfigReader r(json, file);
    EncoderConfig c;
    c.family = familyOfModelType(modelType, file).id;
    c.vocabSize = r.positiveInt("vocab_size");
    c.maxPositions = r.positiveInt("max_position_embeddings");
    if (c.family == ModelFamily::DistilBert) { // DistilBERT's own key names; its LayerNorms use 1e-12, fixed in code
        c.hidden = r.positiveInt("dim");
        c.nHead = r.positiveInt("n_heads");
        c.nLayer = layerCount(r.positiveInt("n_layers"), r, "n_layers");
        c.intermediate = r.positiveInt("hidden_dim");
        c.activation = encoderActivation(r, "activation");
        c.padTokenId = r.intOr("pad_token_id", 0, 0);
        c.typeVocabSize = 0;
    } else {
        c.hidden = r.positiveInt("hidden_size");
        c.nHead = r.positiveInt("num_attention_heads");
        c.nLayer = layerCount(r.positiveInt("num_hidden_layers"), r, "num_hidden_layers");
        c.intermediate = r.positiveInt("intermediate_size");
        c.activation = encoderActivation(r, "hidden_act");
        c.layerNormEps = r.floatOr("layer_norm_eps", 1e-12f);
        c.typeVocabSize = r.intOr("type_vocab_size", 2, 0);
        c.positionsAfterPadding = c.family == ModelFamily::Roberta;
        c.padTokenId = r.intOr("pad_token_id", c.positionsAfterPadding ? 1 : 0, 0);
        const std::string pos = r.stringOr("position_embedding_type", "absolute");
        if (pos != "absolute")
            r.fail("position_embedding_type", "\"" + pos + "\" is not supported (absolute is)");
        if (r.boolOr("is_decoder", false))
            r.fail("is_decoder", "a BERT-style decoder is not supported (encoders are)");
    }
    if (c.hidden % c.nHead != 0)
        r.fail(c.family == ModelFamily::DistilBert ? "dim" : "hidden_size",
               std::to_string(c.hidden) + " is not divisible by the " + std::to_string(c.nHead) + " heads");
    if (c.padTokenId >= c.vocabSize)
        r.fail("pad_token_id", "must be below vocab_size " + std::to_string(c.vocabSize));
    if (c.maxTokens() < 1)
        r.fail("max_position_embeddings", "leaves no position for a token after pad_token_id " +
                                              std::to_string(c.padTokenId) + " (positions start after it)");
    return c;
}

namespace {
Seq2SeqConfig::Activation seq2seqActivation(const ConfigReader& r, const char* key, const std::string& name)
{
    if (name == "relu")
        return Seq2SeqConfig::Activation::Relu;
    if (name == "gelu")
        return Seq2SeqConfig::Activation::Gelu;
    if (name == "gelu_new" || name == "gelu_pytorch_tanh")
        return Seq2SeqConfig::Activation::GeluNew;
    if (name == "swish" || name == "silu")
        return Seq2SeqConfig::Activation::Silu;
    r.fail(key, "activation \"" + name + "\" is not supported (relu, gelu, gelu_new, swish / silu are)");
}

// The numbers an encoder-decoder's forward divides by, checked where they are read. T5's relative positions fall in
// buckets: a stack reading both ways gives half of them to each side, each half exact for its first half of
// distances and log-spaced from there up to the maximum distance, so there must be two exact buckets a side and the
// maximum distance must lie past the decoder's exact ones (buckets / 2), or the spacing divides by zero or goes
// negative. `keys` name the bucket count, the maximum distance and the epsilon as the file spells them.
void checkSeq2SeqNumbers(const Seq2SeqConfig& c, const std::string& file, const std::array<std::string, 3>& keys)
{
    if (!(std::isfinite(c.eps) && c.eps >= 1e-30f && c.eps <= 1.0f))
        throw Error(ErrorCode::BadConfig, "the norm epsilon must be a positive finite number of at most 1, got " +
                                              formatNumber(c.eps), file, keys[2]);
    if (c.positions != Seq2SeqConfig::Positions::RelativeBuckets)
        return;
    if (c.buckets < 4 || c.buckets > 1'000'000)
        throw Error(ErrorCode::BadConfig, "T5's relative positions need from 4 to 1,000,000 buckets (two exact a side), got " +
                                              std::to_string(c.buckets), file, keys[0]);
    if (c.maxDistance <= c.buckets / 2)
        throw Error(ErrorCode::BadConfig, "the maximum distance " + std::to_string(c.maxDistance) +
                                              " must be above the " + std::to_string(c.buckets / 2) +
                                              " exact buckets (the log-spaced ones reach from there to it)",
                    file, keys[1]);
}

// T5 / Flan-T5: RMS norms before each sub-layer and after each stack, relative-position buckets, no score scaling, no
// biases; v1.0's ReLU feed-forward and tied read-out scaled by dModel^-1/2, v1.1's gated GELU and untied head.
void parseT5(const ConfigReader& r, Seq2SeqConfig& c)
{
    c.dModel = r.positiveInt("d_model");
    c.heads = r.positiveInt("num_heads");
    c.dHead = r.positiveInt("d_kv");
    c.scaleScores = false;
    c.encLayers = layerCount(r.positiveInt("num_layers"), r, "num_layers");
    c.decLayers = layerCount(r.intOr("num_decoder_layers", c.encLayers, 1), r, "num_decoder_layers");
    c.encFfn = c.decFfn = r.positiveInt("d_ff");
    c.eps = r.floatOr("layer_norm_epsilon", 1e-6f);
    c.buckets = r.intOr("relative_attention_num_buckets", 32, 2);
    c.maxDistance = r.intOr("relative_attention_max_distance", 128, 1);
    std::string ff = r.stringOr("feed_forward_proj", "relu");
    c.gatedFfn = ff.rfind("gated-", 0) == 0;
    std::string act = c.gatedFfn ? ff.substr(6) : ff;
    if (act == "gelu" && c.gatedFfn) // transformers maps "gated-gelu" to the tanh GELU
        act = "gelu_new";
    c.activation = seq2seqActivation(r, "feed_forward_proj", act);
    c.tiedHead = r.boolOr("tie_word_embeddings", true);
    c.scaleTiedHead = c.tiedHead;
    c.pad = r.intOr("pad_token_id", 0, 0);
    c.eos = r.intOr("eos_token_id", 1, 0);
    c.decoderStart = r.intOr("decoder_start_token_id", c.pad, 0);
}

// BART, mBART and Marian: learned (offset 2) or sinusoidal positions, LayerNorm with bias, biases everywhere, scores
// scaled by dHead^-1/2, the tied read-out plus final_logits_bias; post-norm (BART, Marian) or pre-norm with a norm
// after each stack (mBART).
// BART's shape keys, which Marian and Whisper share: widths, one head count for both stacks, depths, feed-forwards.
void readBartShape(const ConfigReader& r, Seq2SeqConfig& c)
{
    c.dModel = r.positiveInt("d_model");
    c.heads = r.positiveInt("encoder_attention_heads");
    if (r.intOr("decoder_attention_heads", c.heads, 1) != c.heads)
        r.fail("decoder_attention_heads", "differs from encoder_attention_heads: one head count per model is supported");
    if (c.dModel % c.heads != 0)
        r.fail("d_model", std::to_string(c.dModel) + " is not divisible by the " + std::to_string(c.heads) + " heads");
    c.dHead = c.dModel / c.heads;
    c.encLayers = layerCount(r.positiveInt("encoder_layers"), r, "encoder_layers");
    c.decLayers = layerCount(r.positiveInt("decoder_layers"), r, "decoder_layers");
    c.encFfn = r.positiveInt("encoder_ffn_dim");
    c.decFfn = r.positiveInt("decoder_ffn_dim");
}

void parseBartLike(const ConfigReader& r, const std::string& type, Seq2SeqConfig& c)
{
    readBartShape(r, c);
    c.eps = 1e-5f;
    c.norm = Seq2SeqConfig::Norm::Layer;
    c.maxPositions = r.positiveInt("max_position_embeddings");
    c.scaleEmbedding = r.boolOr("scale_embedding", false);
    c.activation = seq2seqActivation(r, "activation_function", r.stringOr("activation_function", "gelu"));
    c.scaleScores = true;
    c.biases = true;
    c.tiedHead = true;
    c.finalLogitsBias = true;
    c.pad = r.intOr("pad_token_id", 1, 0);
    c.eos = r.intOr("eos_token_id", 2, 0);
    c.decoderStart = r.intOr("decoder_start_token_id", c.eos, 0);
    if (type == "marian") {
        c.family = ModelFamily::Marian;
        c.positions = Seq2SeqConfig::Positions::Sinusoidal;
        c.preNorm = false;
        c.finalNorms = false;
        if (r.intOr("decoder_vocab_size", c.vocabSize, 1) != c.vocabSize ||
            !r.boolOr("share_encoder_decoder_embeddings", true))
            r.fail("share_encoder_decoder_embeddings", "separate source and target vocabularies are not supported");
        if (c.dModel % 2 != 0)
            r.fail("d_model", "sinusoidal positions need an even d_model");
    } else {
        c.family = ModelFamily::Bart;
        c.positions = Seq2SeqConfig::Positions::Learned;
        c.positionOffset = 2;
        c.embeddingNorm = true;
        c.preNorm = type == "mbart";
        c.finalNorms = type == "mbart";
    }
}
// Whisper: a speech encoder (convolutions over num_mel_bins, max_source_positions sinusoid rows) and a pre-norm
// decoder with learned positions; LayerNorm everywhere, GELU, biases except on the keys, the read-out tied.
void parseWhisper(const ConfigReader& r, Seq2SeqConfig& c)
{
    readBartShape(r, c);
    c.audioMels = r.positiveInt("num_mel_bins");
    if (c.audioMels > 512)
        r.fail("num_mel_bins", std::to_string(c.audioMels) + " is more mel bins than a spectrogram has");
    c.sourcePositions = r.intOr("max_source_positions", 1500, 1);
    if (c.sourcePositions > 100'000)
        r.fail("max_source_positions", std::to_string(c.sourcePositions) + " is longer than a window of speech");
    c.maxPositions = r.intOr("max_target_positions", 448, 1);
    c.eps = 1e-5f;
    c.norm = Seq2SeqConfig::Norm::Layer;
    c.positions = Seq2SeqConfig::Positions::Learned;
    c.scaleEmbedding = r.boolOr("scale_embedding", false);
    c.activation = seq2seqActivation(r, "activation_function", r.stringOr("activation_function", "gelu"));
    c.scaleScores = true;
    c.biases = true;
    c.keyBias = false;
    c.tiedHead = true;
    c.pad = r.intOr("pad_token_id", 50256, 0);
    c.eos = r.intOr("eos_token_id", 50256, 0);
    c.decoderStart = r.intOr("decoder_start_token_id", 50257, 0);
}
} // namespace

Seq2SeqConfig parseSeq2SeqConfig(const nlohmann::json& json, const std::string& file, const std::string& modelType)
{
    const ConfigReader r(json, file);
    Seq2SeqConfig c;
    c.family = familyOfModelType(modelType, file).id;
    c.vocabSize = r.positiveInt("vocab_size");
    if (c.family == ModelFamily::T5)
        parseT5(r, c);
    else if (c.family == ModelFamily::Whisper)
        parseWhisper(r, c);
    else
        parseBartLike(r, modelType, c);
    for (auto [id, key] : {std::pair{c.pad, "pad_token_id"}, {c.eos, "eos_token_id"}, {c.decoderStart, "decoder_start_token_id"}})
        if (id >= c.vocabSize)
            r.fail(key, std::to_string(id) + " is not below vocab_size " + std::to_string(c.vocabSize));
    checkSeq2SeqNumbers(c, file, {"relative_attention_num_buckets", "relative_attention_max_distance",
                                   c.family == ModelFamily::T5 ? "layer_norm_epsilon" : "layer_norm_eps"});
    return c;
}

// llama.cpp's t5 architecture. GGUF has no key for the relative buckets' maximum distance (llama.cpp uses 128, the
// Hugging Face default) nor for tying: a file without output.weight reads out through token_embd scaled by
// dModel^-1/2, as Hugging Face's tied T5 does. The feed-forward is gated GELU when ffn_gate exists, else ReLU.
Seq2SeqConfig ggufSeq2SeqConfig(const GgufFile& g)
{
    Seq2SeqConfig c;
    c.family = ModelFamily::T5;
    c.fromGguf = true;
    const std::string a = g.string("general.architecture");
    auto positive = [&](const std::string& k) { return ggufPositive(g, k); };
    const GgufTensor* emb = g.find("token_embd.weight");
    if (!emb)
        throw Error(ErrorCode::MissingTensor, "the file has no token_embd.weight", g.path(), "token_embd.weight");
    const auto shape = emb->shape();
    if (shape.size() != 2 || shape[0] < 1 || shape[0] > 100'000'000)
        throw Error(ErrorCode::BadConfig, "token_embd.weight is not a [vocab, d_model] matrix", g.path(), "token_embd.weight");
    c.vocabSize = static_cast<int>(shape[0]);
    c.dModel = positive(a + ".embedding_length");
    c.heads = positive(a + ".attention.head_count");
    c.dHead = positive(a + ".attention.key_length");
    c.encLayers = positive(a + ".block_count");
    if (c.encLayers > kMaxLayers)
        throw Error(ErrorCode::BadConfig, "more layers than any model has", g.path(), a + ".block_count");
    c.decLayers = g.uintOr(a + ".decoder_block_count") ? positive(a + ".decoder_block_count") : c.encLayers;
    if (c.decLayers > kMaxLayers)
        throw Error(ErrorCode::BadConfig, "more layers than any model has", g.path(), a + ".decoder_block_count");
    c.encFfn = c.decFfn = positive(a + ".feed_forward_length");
    c.eps = static_cast<float>(g.numberOr(a + ".attention.layer_norm_rms_epsilon").value_or(1e-6));
    c.buckets = positive(a + ".attention.relative_buckets_count");
    c.maxDistance = 128;
    c.scaleScores = false;
    c.gatedFfn = g.find("enc.blk.0.ffn_gate.weight") != nullptr;
    c.activation = c.gatedFfn ? Seq2SeqConfig::Activation::GeluNew : Seq2SeqConfig::Activation::Relu;
    c.tiedHead = g.find("output.weight") == nullptr;
    c.scaleTiedHead = c.tiedHead;
    c.pad = static_cast<int>(g.uintOr("tokenizer.ggml.padding_token_id").value_or(0));
    c.eos = static_cast<int>(g.uintOr("tokenizer.ggml.eos_token_id").value_or(1));
    c.decoderStart = static_cast<int>(g.uintOr(a + ".decoder_start_token_id").value_or(static_cast<std::uint64_t>(c.pad)));
    for (auto [id, key] : {std::pair{c.pad, "tokenizer.ggml.padding_token_id"}, {c.eos, "tokenizer.ggml.eos_token_id"},
                           {c.decoderStart, "decoder_start_token_id"}})
        if (id < 0 || id >= c.vocabSize)
            throw Error(ErrorCode::BadConfig, std::to_string(id) + " is not below the vocabulary's " +
                                                  std::to_string(c.vocabSize) + " tokens", g.path(), key);
    checkSeq2SeqNumbers(c, g.path(), {a + ".attention.relative_buckets_count", a + ".attention.relative_buckets_count",
                                      a + ".attention.layer_norm_rms_epsilon"});
    return c;
}

ModelConfig readModelConfig(const std::string& configPath)
{
    return parseModelConfig(readJsonFile(configPath), configPath);
}

} // namespace attnscope::core

namespace attnscope::core {

VisionConfig parseVisionConfig(const nlohmann::json& json, const std::string& file, const std::string& type)
{
    // A whole CLIP folder (model_type clip) keeps its vision tower's settings in vision_config.
    const nlohmann::json& j = type == "clip" && json.contains("vision_config") && json["vision_config"].is_object()
                                  ? json["vision_config"]
                                  : json;
    const ConfigReader r(j, file);
    VisionConfig c;
    c.family = familyOfModelType(type, file).id;
    c.hidden = r.positiveInt("hidden_size");
    c.heads = r.positiveInt("num_attention_heads");
    c.layers = layerCount(r.positiveInt("num_hidden_layers"), r, "num_hidden_layers");
    c.patch = r.positiveInt("patch_size");
    c.imageSize = r.positiveInt("image_size");
    c.channels = r.intOr("num_channels", 3, 1);
    if (c.channels != 3)
        r.fail("num_channels", "images have 3 channels (RGB) here, not " + std::to_string(c.channels));
    if (c.hidden % c.heads != 0)
        r.fail("hidden_size", "hidden_size " + std::to_string(c.hidden) + " is not divisible by num_attention_heads " +
                                  std::to_string(c.heads));
    if (c.imageSize % c.patch != 0)
        r.fail("image_size", "image_size " + std::to_string(c.imageSize) + " is not a whole number of " +
                                 std::to_string(c.patch) + "-pixel patches");
    const bool dino = c.family == ModelFamily::Dinov2 || c.family == ModelFamily::Dinov2Registers;
    const bool clip = c.family == ModelFamily::ClipVision;
    const bool siglip = c.family == ModelFamily::SiglipVision;
    c.eps = r.floatOr("layer_norm_eps", clip ? 1e-5f : dino || siglip ? 1e-6f : 1e-12f);
    if (dino) {
        c.ffn = c.hidden * r.intOr("mlp_ratio", 4, 1);
        if (r.boolOr("use_swiglu_ffn", false))
            r.fail("use_swiglu_ffn", "DINOv2's SwiGLU feed-forward (the giant model) is not supported");
        c.layerScale = true;
        c.positions = c.family == ModelFamily::Dinov2 ? VisionConfig::Positions::Bicubic
                                                      : VisionConfig::Positions::AntialiasedBicubic;
        if (c.family == ModelFamily::Dinov2Registers)
            c.registers = r.intOr("num_register_tokens", 4, 0);
    } else {
        c.ffn = r.positiveInt("intermediate_size");
    }
    const std::string act = r.stringOr("hidden_act", clip ? "quick_gelu" : siglip ? "gelu_pytorch_tanh" : "gelu");
    if (act != "gelu" && act != "quick_gelu" && act != "gelu_pytorch_tanh")
        r.fail("hidden_act", "\"" + act + "\" is not supported (gelu, quick_gelu and gelu_pytorch_tanh are)");
    c.quickGelu = act == "quick_gelu";
    c.tanhGelu = act == "gelu_pytorch_tanh";
    c.distillationToken = c.family == ModelFamily::Deit;
    if (const auto it = json.find("id2label"); it != json.end() && it->is_object() && it->size() <= 100000) {
        c.labels.assign(it->size(), std::string());
        for (const auto& [key, value] : it->items()) {
            char* end = nullptr;
            const long i = std::strtol(key.c_str(), &end, 10);
            if (*end == '\0' && i >= 0 && static_cast<std::size_t>(i) < c.labels.size() && value.is_string())
                c.labels[static_cast<std::size_t>(i)] = value.get<std::string>();
        }
    }
    c.preNorm = clip;
    c.finalNorm = !clip;
    c.patchBias = !clip;
    c.classToken = !siglip;
    return c;
}

} // namespace attnscope::core
