// attnscope-cli explain: one head's computation for one query as JSON (analysis/head_explanation.h).
#pragma once

#include "cli_args.h"

#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kExplainOptions;

int cmdExplain(const Args& a, const std::vector<std::string>& builtins);

} // namespace attnscope::cli
