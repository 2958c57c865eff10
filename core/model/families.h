// The family table: the one place a model family is named. A row gives the config.json model_type values and GGUF
// architectures it opens, how its configuration is read (config.json or GGUF metadata) and how its model is built.
// Loading and messages read this table; everything after loading reads the model's capabilities (ModelInfo::can and
// ModelInfo::layerRules), never a family's name. docs/architecture.md, "Adding a family", lists what a new row needs.
#pragma once

#include "model/attention_model.h"
#include "model/config.h"
#include "tokenize/tokenizer.h"

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace attnscope::core {

class Checkpoint;
class GgufFile;
struct DecoderFamily;

struct FamilyRow {
    ModelFamily id;
    const char* name;                         // as users read it: "Llama", "Qwen3", "OLMo 2"
    std::vector<std::string> modelTypes;      // config.json "model_type" values it opens
    std::vector<std::string> ggufArchitectures; // GGUF "general.architecture" values it opens (empty: no GGUF)
    // The configuration from config.json (`type` is its model_type) or from a GGUF file's metadata. Throw
    // Error(BadConfig) naming the file and key.
    ModelConfig (*fromJson)(const nlohmann::json& config, const std::string& file, const std::string& type);
    ModelConfig (*fromGguf)(const GgufFile& file); // null when ggufArchitectures is empty
    // The model over its weights; `source` names it in the UI.
    std::shared_ptr<AttentionModel> (*build)(const ModelConfig& config, std::shared_ptr<const Checkpoint> weights,
                                             std::string source);
    // What a vocab.txt in the model's folder is (BERT's WordPiece vocabulary or a word list).
    VocabTxt vocabTxt = VocabTxt::WordList;
    // A rotary decoder's tensor names, own keys and quirks (model/decoder_families.h); null for the other kinds.
    const DecoderFamily* decoder = nullptr;
};

const std::vector<FamilyRow>& familyTable();
// The row opening a model_type / GGUF architecture; Error(UnknownModelType) naming `file` and listing what opens.
const FamilyRow& familyOfModelType(const std::string& modelType, const std::string& file);
const FamilyRow& familyOfGgufArchitecture(const std::string& architecture, const std::string& file);
const FamilyRow& familyRow(ModelFamily id);

// "transfo-xl, gpt2, llama, ...", "llama, qwen2, ...": for messages and docs.
std::string supportedModelTypes();
std::string supportedGgufArchitectures();

} // namespace attnscope::core
