// attnscope-cli head-contexts (cli_head_contexts.h).
#include "cli_head_contexts.h"

#include "analysis/head_contexts.h"
#include "model/model_loader.h"
#include "util/error.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kHeadContextOptions = {"model", "text", "text-file", "stat", "window", "top",
                                                      "per-decile", "max-tokens", "ablation-tokens", "shard", "shards",
                                                      "out"};

int cmdHeadContexts(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    const std::string& out = require(a, "out");
    HeadContextOptions o;
    o.statistic = contextStatisticNamed(a.has("stat") ? a.options.at("stat") : "max-away");
    o.window = parseInt(a, "window", std::min(64, loaded.model->info().maxSegmentLen));
    o.top = parseInt(a, "top", o.top);
    o.perDecile = parseInt(a, "per-decile", o.perDecile);
    o.maxTokens = parseInt(a, "max-tokens", static_cast<int>(o.maxTokens));
    o.ablationTokens = parseInt(a, "ablation-tokens", 0);
    if (a.has("shard") && a.has("shards"))
        throw Error(ErrorCode::BadInput, "give --shard (one array task's first pass) or --shards (the merge), not both");
    const auto tokens = tok->encodeWithSpecial(textArgument(a));
    const bool tty = ::isatty(2);
    auto progress = [&](int done, int total) {
        if (tty || done == total)
            std::fprintf(stderr, "%sstep %d of %d%s", tty ? "\r" : "", done, total, done == total ? "\n" : "");
    };
    if (a.has("shard")) { // one array task: the first pass over its part of the windows
        const auto [shard, shards] = parseShard(a);
        const auto v = headContextValues(*loaded.model, tokens, o, shard, shards, nullptr, progress);
        v.save(out);
        std::cerr << "wrote " << out << " (shard " << shard << " of " << shards << ": "
                  << (v.endWindow > v.firstWindow ? "windows " + std::to_string(v.firstWindow + 1) + " to " + std::to_string(v.endWindow)
                                                  : std::string("no window; there are more shards than windows"))
                  << ")\n";
        return 0;
    }
    HeadContexts r;
    if (a.has("shards")) { // the merge: every shard file in the folder
        namespace fs = std::filesystem;
        const std::string& dir = a.options.at("shards");
        std::vector<std::string> files;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.is_regular_file() && e.path().extension() == ".safetensors")
                files.push_back(e.path().string());
        if (ec || files.empty())
            throw Error(ErrorCode::BadInput, ec ? "cannot read the folder: " + ec.message() : "holds no .safetensors shards", dir);
        std::sort(files.begin(), files.end());
        std::vector<HeadContextValues> shards;
        for (const auto& f : files)
            shards.push_back(HeadContextValues::load(f));
        r = mergeHeadContexts(*loaded.model, tokens, o, std::move(shards), nullptr, progress);
    } else {
        r = headContexts(*loaded.model, tokens, o, nullptr, progress);
    }
    const auto files = writeHeadContexts(r, loaded.model->info().source, out);
    std::cerr << "wrote " << files.size() << " files to " << out << " (" << r.tokens << " tokens, statistic "
              << contextStatisticName(r.statistic) << ")\n";
    return 0;
}

} // namespace attnscope::cli
