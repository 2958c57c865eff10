// attnscope-cli head-contexts (cli_head_contexts.h).
#include "cli_head_contexts.h"

#include "analysis/head_contexts.h"
#include "model/model_loader.h"
#include "util/error.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kHeadContextOptions = {"model", "text", "text-file", "stat", "window", "top",
                                                      "per-decile", "max-tokens", "ablation-tokens", "out"};

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
    const auto tokens = tok->encodeWithSpecial(textArgument(a));
    const bool tty = ::isatty(2);
    const auto r = headContexts(*loaded.model, tokens, o, nullptr, [&](int done, int total) {
        if (tty || done == total)
            std::fprintf(stderr, "%sstep %d of %d%s", tty ? "\r" : "", done, total, done == total ? "\n" : "");
    });
    const auto files = writeHeadContexts(r, loaded.model->info().source, out);
    std::cerr << "wrote " << files.size() << " files to " << out << " (" << r.tokens << " tokens, statistic "
              << contextStatisticName(r.statistic) << ")\n";
    return 0;
}

} // namespace attnscope::cli
