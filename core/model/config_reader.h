// Reading a model's configuration: a config.json object key by key, each value checked with a message that names the
// file and the key (ConfigReader), and the checks the family readers share (layer counts, GGUF counts, layer types,
// a router's size). Internal to model/config.cpp and model/decoder_families.cpp.
#pragma once

#include "model/config.h"
#include "util/error.h"
#include "util/text_file.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnscope::core {

class GgufFile;

constexpr long long kMaxConfigInt = 100'000'000; // no size or count of a model comes near it
// A layer count checked before anything is sized by it (num_hidden_layers 1e8 reserved 1e8 layer records).
constexpr int kMaxLayers = 4096;

class ConfigReader {
public:
    ConfigReader(const nlohmann::json& j, const std::string& file)
        : m_j(j)
        , m_file(file)
    {
    }

    bool has(const char* key) const { return m_j.contains(key) && !m_j.at(key).is_null(); }
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
            throw Error(ErrorCode::BadConfig, "must be true or false, got " + jsonPreview(*it), m_file, key);
        return it->get<bool>();
    }

    float floatOr(const char* key, float fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<float>()))
            throw Error(ErrorCode::BadConfig, "must be a positive finite number, got " + jsonPreview(*it), m_file, key);
        return it->get<float>();
    }

    std::vector<int> intList(const char* key) const
    {
        std::vector<int> out;
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return out;
        if (!it->is_array())
            throw Error(ErrorCode::BadConfig, "must be a list of integers, got " + jsonPreview(*it), m_file, key);
        for (const auto& v : *it)
            out.push_back(checkedInt(v, key, 1));
        return out;
    }

    double doubleOr(const char* key, double fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_number() || !(it->get<double>() > 0) || !std::isfinite(it->get<double>()))
            throw Error(ErrorCode::BadConfig, "must be a positive number, got " + jsonPreview(*it), m_file, key);
        return it->get<double>();
    }

    const nlohmann::json* object(const char* key) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return nullptr;
        if (!it->is_object())
            throw Error(ErrorCode::BadConfig, "must be an object or null, got " + jsonPreview(*it), m_file, key);
        return &*it;
    }

    std::string stringOr(const char* key, const std::string& fallback) const
    {
        const auto it = m_j.find(key);
        if (it == m_j.end() || it->is_null())
            return fallback;
        if (!it->is_string())
            throw Error(ErrorCode::BadConfig, "must be a string, got " + jsonPreview(*it), m_file, key);
        return it->get<std::string>();
    }

    [[noreturn]] void fail(const std::string& key, const std::string& msg) const
    {
        throw Error(ErrorCode::BadConfig, msg, m_file, key);
    }
    const std::string& file() const { return m_file; }

private:
    int checkedInt(const nlohmann::json& v, const char* key, int minimum) const
    {
        if (!v.is_number_integer())
            throw Error(ErrorCode::BadConfig, "must be an integer, got " + jsonPreview(v), m_file, key);
        const auto x = v.get<long long>();
        if (x < minimum || x > kMaxConfigInt) // the bound it passed, not always the minimum
            throw Error(ErrorCode::BadConfig,
                        "value " + std::to_string(x) + (x < minimum ? " is below the minimum " + std::to_string(minimum)
                                                                    : " is above the maximum " + std::to_string(kMaxConfigInt)),
                        m_file, key);
        return static_cast<int>(x);
    }

    const nlohmann::json& m_j;
    const std::string& m_file;
};

// A GGUF metadata count that must be from 1 to kMaxConfigInt.
int ggufPositive(const GgufFile& g, const std::string& key);
int layerCount(int n, const ConfigReader& r, const char* key);
// layer_types: "sliding_attention" or "full_attention" for every layer (true: sliding). Anything else is refused: an
// unknown kind read as full attention would show a model's attention wrongly without a word.
std::vector<bool> slidingLayersOf(const ConfigReader& r, const nlohmann::json& j, int layers);
// A router's size: `countKey` experts (each family names it differently), `usedKey` of them per token (required
// unless `usedDefault` is positive), never more than there are.
void readExpertCount(const ConfigReader& r, LlamaConfig& c, const char* countKey,
                     const char* usedKey = "num_experts_per_tok", int usedDefault = 0);

} // namespace attnscope::core
