// attnscope-cli: the command-line front end over the core (no Qt). Subcommands: dump, tokenize, info.
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/text_file.h"

#include "builtin_paths.h"

#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace attnscope::core;

namespace {

const char* kUsage = R"(attnscope-cli: attention capture from the command line

  attnscope-cli dump --model MODEL --input INPUT.json --out OUT.safetensors
  attnscope-cli tokenize --tokenizer DIR (--text TEXT | --text-file FILE)
  attnscope-cli info --model MODEL
  attnscope-cli list-builtin

MODEL is a model folder (Hugging Face layout), its config.json, or builtin:NAME.
)";

struct Args {
    std::string command;
    std::map<std::string, std::string> options;
};

Args parseArgs(int argc, char** argv, const std::vector<std::string>& known)
{
    Args a;
    if (argc < 2)
        throw Error(ErrorCode::BadInput, "no command given");
    a.command = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0)
            throw Error(ErrorCode::BadInput, "unexpected argument \"" + arg + "\"");
        const std::string key = arg.substr(2);
        if (std::find(known.begin(), known.end(), key) == known.end())
            throw Error(ErrorCode::BadInput, "unknown option --" + key + " for " + a.command);
        if (i + 1 >= argc)
            throw Error(ErrorCode::BadInput, "option --" + key + " needs a value");
        a.options[key] = argv[++i];
    }
    return a;
}

const std::string& require(const Args& a, const std::string& key)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        throw Error(ErrorCode::BadInput, a.command + " needs --" + key);
    return it->second;
}

int cmdDump(const Args& a, const std::vector<std::string>& builtins)
{
    const auto& inputPath = require(a, "input");
    const auto& outPath = require(a, "out");
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto input = readJsonFile(inputPath);
    const auto tensors = dumpReference(*loaded.model, input, inputPath);
    writeSafetensors(outPath, tensors, {{"source", "attnscope-cli dump"}, {"model", loaded.model->info().source}});
    std::cerr << "wrote " << tensors.size() << " tensors to " << outPath << "\n";
    return 0;
}

int cmdTokenize(const Args& a, const std::vector<std::string>& builtins)
{
    // A tokenizer folder needs no config.json; only builtin:NAME goes through model resolution.
    const std::string& spec = require(a, "tokenizer");
    const std::string folder = spec.rfind("builtin:", 0) == 0 ? resolveModelFolder(spec, builtins) : spec;
    std::string text;
    if (a.options.count("text") && a.options.count("text-file"))
        throw Error(ErrorCode::BadInput, "give either --text or --text-file, not both");
    if (a.options.count("text"))
        text = a.options.at("text");
    else if (a.options.count("text-file"))
        text = readTextFile(a.options.at("text-file"));
    else
        throw Error(ErrorCode::BadInput, "tokenize needs --text or --text-file");
    const auto tok = loadTokenizer(folder);
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& t : tok->encode(text))
        ids.push_back(t.id);
    std::cout << ids.dump() << "\n";
    return 0;
}

int cmdInfo(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& i = loaded.model->info();
    nlohmann::ordered_json j;
    j["family"] = familyName(i.family);
    j["source"] = i.source;
    j["layers"] = i.layers;
    j["heads"] = i.heads;
    j["d_model"] = i.dModel;
    j["d_head"] = i.dHead;
    j["vocab_size"] = i.vocabSize;
    j["mem_len"] = i.defaultMemLen;
    j["parameters"] = i.parameterCount;
    std::cout << j.dump(2) << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
            std::cout << kUsage;
            return 0;
        }
        const std::string command = argc >= 2 ? argv[1] : "";
        const auto builtins = attnscope::builtinModelDirs(argv[0]);
        if (command == "dump")
            return cmdDump(parseArgs(argc, argv, {"model", "input", "out"}), builtins);
        if (command == "tokenize")
            return cmdTokenize(parseArgs(argc, argv, {"tokenizer", "text", "text-file"}), builtins);
        if (command == "info")
            return cmdInfo(parseArgs(argc, argv, {"model"}), builtins);
        if (command == "list-builtin") {
            for (const auto& n : listBuiltinModels(builtins))
                std::cout << "builtin:" << n << "\n";
            return 0;
        }
        std::cerr << "attnscope-cli: " << (command.empty() ? "no command given" : "unknown command \"" + command + "\"")
                  << "\n\n"
                  << kUsage;
        return 2;
    } catch (const Error& e) {
        std::cerr << "attnscope-cli: error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "attnscope-cli: error: " << e.what() << "\n";
        return 1;
    }
}
