// Opens a model from a folder (Hugging Face layout), its config.json, or "builtin:NAME".
#pragma once

#include "model/attention_model.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

struct LoadedModel {
    std::shared_ptr<const AttentionModel> model;
    std::string folder; // where config.json and the tokenizer files live
};

// `spec` is a folder, a path to config.json, or "builtin:NAME" looked up as NAME/ in `builtinDirs`.
// Throws Error naming the file and the problem (unknown model type, missing tensor, wrong shape, ...).
LoadedModel loadModel(const std::string& spec, const std::vector<std::string>& builtinDirs = {});

// Resolves a spec to the model folder without loading weights (same rules and messages as loadModel).
std::string resolveModelFolder(const std::string& spec, const std::vector<std::string>& builtinDirs = {});

// Names of the built-in models found in `builtinDirs` (folders holding a config.json), sorted.
std::vector<std::string> listBuiltinModels(const std::vector<std::string>& builtinDirs);

} // namespace attnscope::core
