// attnscope-cli: the command-line front end over the core (no Qt). Subcommands: dump, tokenize, info.
#include "analysis/relpos_scan.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "tokenize/tokenizer.h"
#include "util/cpu_features.h"
#include "util/memory_info.h"
#include "util/error.h"
#include "util/text_file.h"

#include "builtin_paths.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

using namespace attnscope::core;

namespace {

const char* kUsage = R"(attnscope-cli: attention capture from the command line

  attnscope-cli dump --model MODEL --input INPUT.json --out OUT.safetensors
  attnscope-cli tokenize --tokenizer DIR|FILE (--text TEXT | --text-file FILE) [--special]
  attnscope-cli scan --model MODEL --text-file FILE [--mem-len M] [--segment-length T]
                     [--max-tokens N] [--terms a,b,c,d] [--shard I/N] [--same-length 0|1] [--clamp-len C]
                     --out RESULT.safetensors
  attnscope-cli merge A.safetensors B.safetensors ... --out RESULT.safetensors
  attnscope-cli heads RESULT.safetensors [--profile full|term_a|...] [--top N] [--sort width|sink]
  attnscope-cli info --model MODEL
  attnscope-cli list-builtin

MODEL is a model folder (Hugging Face layout), its config.json, a .gguf file, or builtin:NAME.
A tokenizer is a folder (tokenizer.json, tokenizer.model, vocab.json + merges.txt, or vocab.txt), one of those
files, or a .gguf file (its own vocabulary). tokenize prints the ids without special tokens; --special adds what
the tokenizer adds by default (Llama's BOS).

scan: Transformer-XL runs segments of T tokens with a memory of M (defaults: the model's). GPT-2 and Llama-family
models run chunks of T tokens (default: the context, at most 1024), each from an empty cache (--mem-len 0, the
default); rotary models may carry a cache of the last M tokens from chunk to chunk (--mem-len M, sliding window).
heads lists each head's entropy, mean distance, near mass, first-key mass and sink rate (queries from a chunk's
second token on putting more than 0.3 on its first key).
)";

struct Args {
    std::string command;
    std::map<std::string, std::string> options;
};

// `known` options take a value; `flags` take none (they are stored as "1").
Args parseArgs(int argc, char** argv, const std::vector<std::string>& known, const std::vector<std::string>& flags = {})
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
        if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
            a.options[key] = "1";
            continue;
        }
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
    const bool special = a.options.count("special") != 0;
    nlohmann::json ids = nlohmann::json::array();
    for (const auto& t : special ? tok->encodeWithSpecial(text) : tok->encode(text))
        ids.push_back(t.id);
    std::cout << ids.dump() << "\n";
    return 0;
}

int parseInt(const Args& a, const std::string& key, int fallback)
{
    const auto it = a.options.find(key);
    if (it == a.options.end())
        return fallback;
    try {
        std::size_t used = 0;
        const int v = std::stoi(it->second, &used);
        if (used == it->second.size())
            return v;
    } catch (const std::exception&) {
    }
    throw Error(ErrorCode::BadInput, "--" + key + " expects an integer, got \"" + it->second + "\"");
}

// A progress bar on stderr, redrawn at most ten times a second.
class ProgressBar {
public:
    void update(std::int64_t done, std::int64_t total)
    {
        const auto now = std::chrono::steady_clock::now();
        if (done < total && now - m_last < std::chrono::milliseconds(100))
            return;
        m_last = now;
        const double secs = std::chrono::duration<double>(now - m_start).count();
        const double frac = total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 0.0;
        const int width = 30, filled = static_cast<int>(frac * width);
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0.0;
        const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0.0;
        std::fprintf(stderr, "\r[%s%s] %3.0f%% %lld/%lld tokens, %.0f tokens/s, %.0f s left   ",
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(width - filled), '.').c_str(), 100 * frac,
                     static_cast<long long>(done), static_cast<long long>(total), rate, std::max(0.0, eta));
        std::fflush(stderr);
    }
    void finish() { std::fprintf(stderr, "\n"); }

private:
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now(), m_last{};
};

int cmdScan(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& textFile = require(a, "text-file");
    const auto& out = require(a, "out");
    ScanOptions opt;
    const auto& info = loaded.model->info();
    opt.memLen = a.options.count("mem-len") ? parseInt(a, "mem-len", -1) : defaultScanMemLen(info);
    opt.segmentLen = a.options.count("segment-length") ? parseInt(a, "segment-length", -1) : defaultScanSegmentLen(info);
    opt.maxTokens = parseInt(a, "max-tokens", -1);
    if (a.options.count("same-length"))
        opt.sameLength = parseInt(a, "same-length", 0) != 0;
    if (a.options.count("clamp-len"))
        opt.clampLen = parseInt(a, "clamp-len", -1);
    opt.terms = a.options.count("terms") ? a.options.at("terms") : "";
    int shardI = 1, shardN = 1;
    if (a.options.count("shard")) {
        const auto& s = a.options.at("shard");
        const auto slash = s.find('/');
        try {
            if (slash == std::string::npos)
                throw std::invalid_argument("no slash");
            shardI = std::stoi(s.substr(0, slash));
            shardN = std::stoi(s.substr(slash + 1));
        } catch (const std::exception&) {
            throw Error(ErrorCode::BadInput, "--shard expects I/N, e.g. 2/8, got \"" + s + "\"");
        }
    }
    checkScanOptions(info, opt); // before the tokenizer: a wrong option is the first thing to hear about
    const auto tokenizer = loadTokenizer(loaded.tokenizerSource());
    ProgressBar bar;
    opt.progress = [&bar](std::int64_t done, std::int64_t total) { bar.update(done, total); };
    auto result = scanTextFile(*loaded.model, *tokenizer, textFile, opt, shardI, shardN);
    bar.finish();
    result.save(out);
    std::fprintf(stderr, "scanned %lld tokens; wrote %s\n", static_cast<long long>(result.tokens), out.c_str());
    return 0;
}

int cmdMerge(int argc, char** argv)
{
    std::vector<std::string> inputs;
    std::string out;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--out") {
            if (i + 1 >= argc)
                throw Error(ErrorCode::BadInput, "--out needs a value");
            out = argv[++i];
        } else if (arg.rfind("--", 0) == 0) {
            throw Error(ErrorCode::BadInput, "unknown option " + arg + " for merge");
        } else {
            inputs.push_back(arg);
        }
    }
    if (out.empty())
        throw Error(ErrorCode::BadInput, "merge needs --out");
    if (inputs.empty())
        throw Error(ErrorCode::BadInput, "merge needs at least one scan result");
    ScanResult merged = ScanResult::load(inputs[0]);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
        try {
            merged.merge(ScanResult::load(inputs[i]));
        } catch (const Error& e) {
            if (e.file().empty())
                throw Error(e.code(), e.message(), inputs[i]);
            throw;
        }
    }
    merged.save(out);
    std::fprintf(stderr, "merged %zu results (%lld tokens); wrote %s\n", inputs.size(),
                 static_cast<long long>(merged.tokens), out.c_str());
    return 0;
}

int cmdHeads(int argc, char** argv)
{
    if (argc < 3)
        throw Error(ErrorCode::BadInput, "heads needs a scan result file");
    std::string profile = "full", sort = "width";
    int top = -1;
    for (int i = 3; i < argc; i += 2) {
        const std::string k = argv[i];
        if (i + 1 >= argc)
            throw Error(ErrorCode::BadInput, k + " needs a value");
        if (k == "--profile")
            profile = argv[i + 1];
        else if (k == "--top")
            top = std::atoi(argv[i + 1]);
        else if (k == "--sort")
            sort = argv[i + 1];
        else
            throw Error(ErrorCode::BadInput, "unknown option " + k + " for heads");
    }
    if (sort != "width" && sort != "sink")
        throw Error(ErrorCode::BadInput, "--sort must be width or sink, got \"" + sort + "\"");
    const auto r = ScanResult::load(argv[2]);
    if (sort == "sink" && !r.hasSinks())
        throw Error(ErrorCode::BadInput, "this scan result has no attention-sink counts (it predates them): scan again",
                    argv[2]);
    const auto s = summariseHeads(r, profile);
    auto order = rankByWidth(s);
    if (sort == "sink")
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return s[x].sinkRate > s[y].sinkRate; });
    const std::string mode = r.metadata.count("mode") ? r.metadata.at("mode") + ", " : std::string();
    std::printf("rank  head (#)        entropy  mean dist  mass<5  mass<50  first-key  sink rate   (%s, %s%lld tokens%s)\n",
                profile.c_str(), mode.c_str(), static_cast<long long>(r.tokens), r.partial ? ", partial" : "");
    int shown = 0;
    for (std::size_t k : order) {
        if (top >= 0 && shown >= top)
            break;
        const auto& h = s[k];
        std::printf("%4d  L%-2d H%-2d (%4d)  %7.3f  %9.1f  %6.3f  %7.3f", ++shown, h.layer + 1, h.head + 1,
                    h.layer * r.heads + h.head + 1, h.entropy, h.meanDistance, h.massNear5, h.massNear50);
        if (r.hasSinks())
            std::printf("  %9.3f  %9.3f\n", h.firstKeyMass, h.sinkRate);
        else
            std::printf("  %9s  %9s\n", "-", "-");
    }
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
    j["kv_heads"] = i.kvHeads;
    j["d_model"] = i.dModel;
    j["d_head"] = i.dHead;
    j["vocab_size"] = i.vocabSize;
    j["mem_len"] = i.defaultMemLen;
    j["positions"] = i.positions;
    j["weights"] = i.weightTypes;
    j["parameters"] = i.parameterCount;
    std::cout << j.dump(2) << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    if (!attnscope::core::cpuCanRunThisBuild("attnscope-cli"))
        return 1;
    attnscope::core::returnLargeBlocksToSystem();
    try {
        // --help anywhere (also after a command: `attnscope-cli scan --help`) prints the usage.
        for (int i = 1; i < argc; ++i)
            if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
                std::cout << kUsage;
                return 0;
            }
        const std::string command = argc >= 2 ? argv[1] : "";
        const auto builtins = attnscope::builtinModelDirs(argv[0]);
        if (command == "dump")
            return cmdDump(parseArgs(argc, argv, {"model", "input", "out"}), builtins);
        if (command == "tokenize")
            return cmdTokenize(parseArgs(argc, argv, {"tokenizer", "text", "text-file"}, {"special"}), builtins);
        if (command == "scan")
            return cmdScan(parseArgs(argc, argv, {"model", "text-file", "mem-len", "segment-length", "max-tokens",
                                                  "terms", "shard", "same-length", "clamp-len", "out"}),
                           builtins);
        if (command == "merge")
            return cmdMerge(argc, argv);
        if (command == "heads")
            return cmdHeads(argc, argv);
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
