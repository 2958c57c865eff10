// attnscope-cli patch and path-patch: activation and path patching from the command line (analysis/activation_patching.h).
#pragma once

#include "cli_args.h"

#include <string>
#include <vector>

namespace attnscope::cli {

// Options each command takes (for parseArgs): values, then flags.
extern const std::vector<std::string> kPatchOptions, kPatchFlags, kPathPatchOptions, kPathPatchFlags;

int cmdPatch(const Args& a, const std::vector<std::string>& builtins);
int cmdPathPatch(const Args& a, const std::vector<std::string>& builtins);

} // namespace attnscope::cli
