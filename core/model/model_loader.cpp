// Model loading: path resolution, config parsing, family dispatch.
#include "model/model_loader.h"

#include "io/checkpoint.h"
#include "model/config.h"
#include "model/gpt2.h"
#include "model/transfo_xl.h"
#include "util/error.h"

#include <algorithm>
#include <filesystem>

namespace fs = std::filesystem;

namespace attnscope::core {

namespace {
constexpr std::string_view kBuiltinPrefix = "builtin:";
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
    if (spec.rfind(kBuiltinPrefix, 0) == 0) {
        const std::string name = spec.substr(kBuiltinPrefix.size());
        for (const auto& dir : builtinDirs) {
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
    if (fs::path(spec).filename() == "config.json")
        return fs::path(spec).parent_path().empty() ? std::string(".") : fs::path(spec).parent_path().string();
    throw Error(ErrorCode::Io, "expected a model folder or its config.json", spec);
}

LoadedModel loadModel(const std::string& spec, const std::vector<std::string>& builtinDirs)
{
    LoadedModel out;
    out.folder = resolveModelFolder(spec, builtinDirs);
    const std::string configPath = (fs::path(out.folder) / "config.json").string();
    const ModelConfig config = readModelConfig(configPath);
    auto weights = Checkpoint::openFolder(out.folder);
    const std::string source = spec.rfind(kBuiltinPrefix, 0) == 0 ? spec : out.folder;
    if (const auto* txl = std::get_if<TransfoXLConfig>(&config))
        out.model = std::make_shared<TransfoXLModel>(*txl, weights, source);
    else
        out.model = std::make_shared<GPT2Model>(std::get<GPT2Config>(config), weights, source);
    return out;
}

} // namespace attnscope::core
