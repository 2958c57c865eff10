// Model configuration read from a Hugging Face config.json (transfo-xl, gpt2, llama / mistral / qwen2) or from a
// GGUF file's metadata (architectures llama and qwen2).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <variant>
#include <vector>

namespace attnscope::core {

enum class ModelFamily { TransfoXL, GPT2, Llama };
const char* familyName(ModelFamily f);
// The model_type strings we accept, for messages: "transfo-xl, gpt2, llama, mistral, qwen2".
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

// Rotary position embedding (Hugging Face rotate_half layout: dimensions i and i + d/2 of a head form pair i).
struct RopeConfig {
    double theta = 10000.0;
    enum class Scaling { None, Linear, Llama3 } scaling = Scaling::None;
    double factor = 1.0;          // linear: positions divided by it; llama3: low frequencies divided by it
    double lowFreqFactor = 1.0;   // llama3
    double highFreqFactor = 4.0;  // llama3
    double originalMaxPositions = 8192; // llama3
    // Per-frequency divisors given by the file itself (GGUF rope_freqs.weight), used instead of the formula.
    std::vector<float> freqDivisors;
};

struct LlamaConfig {
    std::string modelType = "llama"; // llama, mistral, qwen2 (or the GGUF architecture)
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
    bool fromGguf = false;
    bool ggufInterleavedQK = false; // GGUF q/k rows in Meta's interleaved order (architecture llama)
};

using ModelConfig = std::variant<TransfoXLConfig, GPT2Config, LlamaConfig>;

// Parses and validates a config; `file` is used in messages. Throws Error(UnknownModelType / BadConfig).
ModelConfig parseModelConfig(const nlohmann::json& json, const std::string& file);
ModelConfig readModelConfig(const std::string& configPath);

class GgufFile;
// The configuration of a GGUF model from its metadata (and tensor shapes). Throws Error(UnknownModelType / BadConfig)
// naming the file and the key.
LlamaConfig ggufModelConfig(const GgufFile& file);

} // namespace attnscope::core
