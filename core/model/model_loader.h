// Opens a model from a folder (Hugging Face layout), its config.json, a .gguf file, a PyTorch checkpoint with
// config.json beside it, or "builtin:NAME".
#pragma once

#include "model/attention_model.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;

struct LoadedModel {
    std::shared_ptr<const AttentionModel> model;
    std::string folder;   // where config.json and the tokenizer files live (a GGUF file's folder)
    std::string ggufPath; // the GGUF file when the model is one (its tokenizer is inside it), else empty
    std::string name;     // the model's own name where its file says it (a GGUF's general.name), else empty
    // Where the tokenizer comes from: the GGUF file, or the folder.
    const std::string& tokenizerSource() const { return ggufPath.empty() ? folder : ggufPath; }
};

struct LoadOptions {
    // Memory the mapped weights may take once read; 0 = the machine's physical memory (/proc/meminfo).
    std::uint64_t memoryBudget = 0;
};

// `spec` is a folder, a path to config.json, a .gguf file, a .bin/.pt/.pth file (config.json beside it), or
// "builtin:NAME" looked up as NAME/ in `builtinDirs`.
// Opening maps the weight files and reads headers only: nothing is converted or read in (see io/checkpoint.h).
// Throws Error naming the file and the problem (unknown model type, missing tensor, wrong shape, weights larger than
// the machine's memory, ...).
LoadedModel loadModel(const std::string& spec, const std::vector<std::string>& builtinDirs = {},
                      const LoadOptions& options = {});

// Resolves a spec to the model folder (or the .gguf file) without loading weights (same rules and messages).
std::string resolveModelFolder(const std::string& spec, const std::vector<std::string>& builtinDirs = {});

class Tokenizer;
// The model's tokenizer: from its GGUF file or its folder, a vocab.txt read as its family says (BERT's WordPiece or a
// word list). A folder without tokenizer files (the reference cases, a bare checkpoint) reads its text as token ids
// ("3 14 15"). Throws Error naming the file when one is broken. The tokenizer is bound to the model's vocabulary: a
// text that gives a token past it is refused naming the tokenizer's file (Tokenizer::bindToModelVocabulary).
std::unique_ptr<Tokenizer> loadModelTokenizer(const LoadedModel& model);
// The tokenizer of an encoder-decoder model's target side: Marian's target.spm (through the same vocab.json), else
// the model's one tokenizer.
std::unique_ptr<Tokenizer> loadModelTargetTokenizer(const LoadedModel& model);
// A tokenizer folder or file as loadTokenizer reads it, except that a folder's config.json (when it names a family
// the core knows) decides what its vocab.txt is.
std::unique_ptr<Tokenizer> loadFolderTokenizer(const std::string& folderOrFile);

// Names of the built-in models found in `builtinDirs` (folders holding a config.json), sorted.
std::vector<std::string> listBuiltinModels(const std::vector<std::string>& builtinDirs);
// How a built-in model is named in a model spec ("builtin:NAME"), in one place for every front end.
std::string builtinSpec(const std::string& name);
bool isBuiltinSpec(const std::string& spec);
std::string builtinName(const std::string& spec); // "" when `spec` names no built-in
// The model the app, headless export and the Python module open when none is named: the decoder the lessons of
// docs/teaching.md start with (Predictions and Generate need a next-token model).
inline constexpr const char* kDefaultBuiltinSpec = "builtin:llama-wikitext2";

} // namespace attnscope::core
