// Model loading: path resolution, config parsing, family dispatch.
#include "model/model_loader.h"

#include "io/checkpoint.h"
#include "model/config.h"
#include "io/gguf.h"
#include "io/pytorch_file.h"
#include "model/families.h"
#include "tokenize/id_tokenizer.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>
#include "util/error.h"
#include "util/memory_info.h"

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace attnscope::core {

namespace {
constexpr std::string_view kBuiltinPrefix = "builtin:";
}

std::string builtinSpec(const std::string& name)
{
    return std::string(kBuiltinPrefix) + name;
}

bool isBuiltinSpec(const std::string& spec)
{
    return spec.rfind(kBuiltinPrefix, 0) == 0;
}

std::string builtinName(const std::string& spec)
{
    return isBuiltinSpec(spec) ? spec.substr(kBuiltinPrefix.size()) : std::string();
}

std::vector<std::string> listBuiltinModels(const std::vector<std::string>& builtinDirs)
{
    std::vector<std::string> names;
    for (const auto& dir : builtinDirs) {
        std::error_code ec;
        if (!fs::is_directory(dir, ec))
            continue;
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_directory() && fs::exists(entry.path() / "config.json"))
                names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
}

std::string resolveModelFolder(const std::string& spec, const std::vector<std::string>& builtinDirs)
{
    if (isBuiltinSpec(spec)) {
        const std::string name = builtinName(spec);
        // Only the names list-builtin prints: a folder's own name, never a path out of the built-in folders.
        const bool plainName = !name.empty() && name != "." && name != ".." &&
                               name.find_first_of("/\\") == std::string::npos;
        for (const auto& dir : plainName ? builtinDirs : std::vector<std::string>{}) {
            const fs::path p = fs::path(dir) / name;
            if (fs::exists(p / "config.json"))
                return p.string();
        }
        std::string known;
        for (const auto& n : listBuiltinModels(builtinDirs))
            known += (known.empty() ? "" : ", ") + n;
        throw Error(ErrorCode::Io, "no built-in model of that name (available: " + (known.empty() ? "none found" : known) + ")",
                    spec);
    }
    std::error_code ec;
    if (!fs::exists(spec, ec))
        throw Error(ErrorCode::Io, "no such file or folder", spec);
    if (fs::is_directory(spec, ec)) {
        if (!fs::exists(fs::path(spec) / "config.json"))
            throw Error(ErrorCode::Io, "the folder has no config.json (expected a Hugging Face model folder)", spec);
        return spec;
    }
    // A FIFO or a device would block the first read (the GGUF magic's) for ever.
    if (!fs::is_regular_file(spec, ec))
        throw Error(ErrorCode::Io, "not a regular file", spec);
    if (fs::path(spec).filename() == "config.json")
        return fs::path(spec).parent_path().empty() ? std::string(".") : fs::path(spec).parent_path().string();
    if (looksLikeGguf(spec) || fs::path(spec).extension() == ".gguf")
        return spec; // a .gguf without the magic gets the GGUF reader's own message
    if (PytorchFile::hasCheckpointExtension(spec)) {
        const fs::path config = fs::path(spec).parent_path() / "config.json";
        if (!fs::exists(config, ec))
            throw Error(ErrorCode::Io,
                        "a PyTorch checkpoint holds no configuration: put the model's config.json beside it", spec);
        return spec;
    }

    throw Error(ErrorCode::Io, "expected a model folder, its config.json, a .gguf file, or a PyTorch checkpoint "
                               "(.bin, .pt, .pth) with config.json beside it",
                spec);
}

namespace {
// Refuses a model whose weights, as stored, could not stay in memory while a forward pass reads them all: mapped
// pages would be dropped and read again from disk for every layer of every token.
void checkMemory(const Checkpoint& weights, const LoadOptions& options)
{
    const std::uint64_t need = weights.storedBytes();
    const std::uint64_t have = options.memoryBudget > 0 ? options.memoryBudget : totalMemoryBytes();
    if (have > 0 && need > have / 10 * 9)
        throw Error(ErrorCode::BadInput,
                    "the model's weights take " + formatBytes(need) + " as stored, more than this machine's " +
                        formatBytes(have) + " of memory can hold while they are read",
                    weights.source());
}
} // namespace

LoadedModel loadModel(const std::string& spec, const std::vector<std::string>& builtinDirs, const LoadOptions& options)
{
    LoadedModel out;
    const std::string resolved = resolveModelFolder(spec, builtinDirs);
    const bool builtin = spec.rfind(kBuiltinPrefix, 0) == 0;
    const bool pytorchFile = fs::is_regular_file(resolved) && !looksLikeGguf(resolved) &&
                             PytorchFile::hasCheckpointExtension(resolved);
    if (fs::is_regular_file(resolved) && !pytorchFile) { // a GGUF file: configuration, weights and tokenizer in one
        out.ggufPath = resolved;
        out.folder = fs::path(resolved).parent_path().empty() ? "." : fs::path(resolved).parent_path().string();
        auto weights = Checkpoint::openGguf(resolved);
        const auto& row = familyOfGgufArchitecture(weights->gguf()->string("general.architecture"), resolved);
        const ModelConfig config = row.fromGguf(*weights->gguf());
        out.name = weights->gguf()->stringOr("general.name").value_or("");
        checkMemory(*weights, options);
        out.model = row.build(config, weights, builtin ? spec : resolved);
        return out;
    }
    out.folder = pytorchFile ? (fs::path(resolved).parent_path().empty() ? "." : fs::path(resolved).parent_path().string())
                             : resolved;
    const std::string configPath = (fs::path(out.folder) / "config.json").string();
    const auto json = readJsonFile(configPath);
    const ModelConfig config = parseModelConfig(json, configPath);
    auto weights = pytorchFile ? Checkpoint::openPytorch(resolved) : Checkpoint::openFolder(out.folder);
    checkMemory(*weights, options);
    const auto& row = familyOfModelType(json.at("model_type").get<std::string>(), configPath);
    out.model = row.build(config, weights, builtin ? spec : out.folder);
    return out;
}

std::unique_ptr<Tokenizer> loadModelTokenizer(const LoadedModel& model)
{
    if (model.ggufPath.empty() && !hasTokenizerFiles(model.folder))
        return std::make_unique<IdTokenizer>(model.model->info().vocabSize);
    auto tokenizer = loadTokenizer(model.tokenizerSource(), familyRow(model.model->info().family).vocabTxt);
    tokenizer->bindToModelVocabulary(model.model->info().vocabSize);
    return tokenizer;
}

std::unique_ptr<Tokenizer> loadModelTargetTokenizer(const LoadedModel& model)
{
    if (model.ggufPath.empty())
        if (auto target = marianTokenizer(model.folder, true)) {
            target->bindToModelVocabulary(model.model->info().vocabSize);
            return target;
        }
    return loadModelTokenizer(model);
}

std::unique_ptr<Tokenizer> loadFolderTokenizer(const std::string& folderOrFile)
{
    const fs::path config = fs::is_directory(folderOrFile) ? fs::path(folderOrFile) / "config.json"
                                                           : fs::path(folderOrFile).parent_path() / "config.json";
    VocabTxt vocabTxt = VocabTxt::WordList;
    std::error_code ec;
    if (fs::is_regular_file(config, ec)) {
        try {
            const auto json = readJsonFile(config.string());
            if (json.is_object() && json.contains("model_type") && json["model_type"].is_string())
                vocabTxt = familyOfModelType(json["model_type"].get<std::string>(), config.string()).vocabTxt;
        } catch (const Error&) {
            // Not a config this core reads: the tokenizer files alone decide.
        }
    }
    return loadTokenizer(folderOrFile, vocabTxt);
}

} // namespace attnscope::core
