// Where the executables look for built-in models: the build tree, then the install prefix.
#pragma once

#include <string>
#include <vector>

namespace attnscope {

// Folders that may hold built-in model folders, in search order: $ATTNSCOPE_MODELS_DIR, the source tree's
// resources/models (when run from a build tree), and <prefix>/share/attnscope/models next to the executable.
std::vector<std::string> builtinModelDirs(const char* argv0);

// The bundled user guide (docs/user-guide.md with its images): the source tree's docs/ from a build tree, else
// <prefix>/share/doc/attnscope next to the executable. Empty when neither exists.
std::string userGuidePath();

} // namespace attnscope
