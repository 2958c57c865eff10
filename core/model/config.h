// Model configuration read from a Hugging Face config.json (transfo-xl and gpt2).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <variant>
#include <vector>

namespace attnscope::core {

enum class ModelFamily { TransfoXL, GPT2 };
const char* familyName(ModelFamily f);
// The model_type strings we accept, for messages: "transfo-xl, gpt2".
std::string supportedModelTypes();

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

using ModelConfig = std::variant<TransfoXLConfig, GPT2Config>;

// Parses and validates a config; `file` is used in messages. Throws Error(UnknownModelType / BadConfig).
ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& file);
ModelConfig readModelConfig(const std::string& configPath);

} // namespace attnscope::core
