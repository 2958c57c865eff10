// attnscope-cli sentences: a text by sentences (analysis/sentence_analysis.h) as JSON.
#pragma once

#include "cli_args.h"

#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kSentenceOptions;

int cmdSentences(const Args& a, const std::vector<std::string>& builtins);

} // namespace attnscope::cli
