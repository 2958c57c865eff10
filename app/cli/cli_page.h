// attnscope-cli page: a self-contained interactive HTML page of a text's attention (export/attention_page.h).
#pragma once

#include "cli_args.h"

#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kPageOptions;

int cmdPage(const Args& a, const std::vector<std::string>& builtins);

// "1,3,5" (from 1) to 0-based numbers; empty for an absent option.
std::vector<int> numberList(const Args& a, const std::string& key);

} // namespace attnscope::cli
