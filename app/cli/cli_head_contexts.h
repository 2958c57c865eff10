// attnscope-cli head-contexts: each head's contexts over a corpus and a scatter of all heads (analysis/head_contexts.h).
#pragma once

#include "cli_args.h"

#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kHeadContextOptions;

int cmdHeadContexts(const Args& a, const std::vector<std::string>& builtins);

} // namespace attnscope::cli
