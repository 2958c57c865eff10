// config.json parsing with a message per missing or out-of-range key.
#include "model/config.h"

#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

namespace attnscope::core {

const char* familyName(ModelFamily f)
{
    return f == ModelFamily::TransfoXL ? "Transformer-XL" : "GPT-2";
}

std::string supportedModelTypes()
{
    return "transfo-xl, gpt2";
}

namespace {

class Reader {
public:
    Reader(const nlohmann::json& j, const std::string& file)
        : m_j(j)
        , m_file(file)
    {
    }

    int positiveInt(const char* key) const { return intAtLeast(key, 1); }

    int intAtLeast(const char* key, int minimum) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            throw Error(ErrorCode::BadConfig, "required key is missing", m_file, key);
        return checkedInt(*it, key, minimum);
    }

    int intOr(const char* key, int fallback, int minimum) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        return checkedInt(*it, key, minimum);
    }

    bool boolOr(const char* key, bool fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_boolean())
            throw Error(ErrorCode::BadConfig, "must be true or false, got " + it->dump(), m_file, key);
        return it->get<bool>();
    }

    float floatOr(const char* key, float fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_number() || it->get<double>() <= 0)
            throw Error(ErrorCode::BadConfig, "must be a positive number, got " + it->dump(), m_file, key);
        return it->get<float>();
    }

    std::vector<int> intList(const char* key) const
    {
        std::vector<int> out;
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return out;
        if (!it->is_array())
            throw Error(ErrorCode::BadConfig, "must be a list of integers, got " + it->dump(), m_file, key);
        for (const auto& v : *it)
            out.push_back(checkedInt(v, key, 1));
        return out;
    }

    std::string stringOr(const char* key, const std::string& fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_string())
            throw Error(ErrorCode::BadConfig, "must be a string, got " + it->dump(), m_file, key);
        return it->get<std::string>();
    }

    [[noreturn]] void fail(const std::string& key, const std::string& msg) const
    {
        throw Error(ErrorCode::BadConfig, msg, m_file, key);
    }

private:
    int checkedInt(const nlohmann::json& v, const char* key, int minimum) const
    {
        if (!v.is_number_integer())
            throw Error(ErrorCode::BadConfig, "must be an integer, got " + v.dump(), m_file, key);
        const auto x = v.get<long long>();
        if (x < minimum || x > 100'000'000)
            throw Error(ErrorCode::BadConfig,
                        "value " + std::to_string(x) + " is out of range (minimum " + std::to_string(minimum) + ")",
                        m_file, key);
        return static_cast<int>(x);
    }

    const nlohmann::json& m_j;
    const std::string& m_file;
};

TransfoXLConfig parseTransfoXL(const Reader& r)
{
    TransfoXLConfig c;
    c.vocabSize = r.positiveInt("vocab_size");
    c.dModel = r.positiveInt("d_model");
    c.dEmbed = r.intOr("d_embed", c.dModel, 1);
    c.nHead = r.positiveInt("n_head");
    c.dHead = r.positiveInt("d_head");
    c.dInner = r.positiveInt("d_inner");
    c.nLayer = r.positiveInt("n_layer");
    c.divVal = r.intOr("div_val", 1, 1);
    c.cutoffs = r.intList("cutoffs");
    c.preLnorm = r.boolOr("pre_lnorm", false);
    c.untieR = r.boolOr("untie_r", false);
    c.memLen = r.intOr("mem_len", 0, 0);
    c.clampLen = r.intOr("clamp_len", -1, -1);
    c.sameLength = r.boolOr("same_length", false);
    c.tgtLen = r.intOr("tgt_len", 128, 1);
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

GPT2Config parseGPT2(const Reader& r)
{
    GPT2Config c;
    c.vocabSize = r.positiveInt("vocab_size");
    c.nPositions = r.intOr("n_positions", r.intOr("n_ctx", 0, 0), 1);
    if (c.nPositions <= 0)
        r.fail("n_positions", "required key is missing");
    c.nEmbd = r.positiveInt("n_embd");
    c.nHead = r.positiveInt("n_head");
    c.nLayer = r.positiveInt("n_layer");
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

} // namespace

ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& file)
{
    if (!json.is_object())
        throw Error(ErrorCode::BadConfig, "config is not a JSON object", file);
    const auto it = json.find("model_type");
    if (it == json.end() || !it->is_string())
        throw Error(ErrorCode::UnknownModelType,
                    "no \"model_type\" string; supported model types: " + supportedModelTypes(), file, "model_type");
    const std::string type = it->get<std::string>();
    const Reader r(json, file);
    if (type == "transfo-xl")
        return parseTransfoXL(r);
    if (type == "gpt2")
        return parseGPT2(r);
    throw Error(ErrorCode::UnknownModelType,
                "model type \"" + type + "\" is not supported; supported model types: " + supportedModelTypes(), file,
                "model_type");
}

ModelConfig readModelConfig(const std::string& configPath)
{
    return parseModelConfig(readJsonFile(configPath), configPath);
}

} // namespace attnscope::core
