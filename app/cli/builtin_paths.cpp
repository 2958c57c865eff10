// builtinModelDirs: resolves search folders from the executable's own location.
#include "builtin_paths.h"

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace attnscope {

std::vector<std::string> builtinModelDirs(const char* argv0)
{
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("ATTNSCOPE_MODELS_DIR"); env && *env)
        dirs.emplace_back(env);
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec && argv0)
        exe = fs::absolute(argv0, ec);
    const fs::path binDir = exe.parent_path();
    dirs.push_back(ATTNSCOPE_SOURCE_MODELS_DIR); // build tree: models straight from the sources
    dirs.push_back((binDir / ".." / "share" / "attnscope" / "models").lexically_normal().string());
    return dirs;
}

std::string userGuidePath()
{
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    for (const fs::path& dir : {fs::path(ATTNSCOPE_SOURCE_DOCS_DIR),
                                (exe.parent_path() / ".." / "share" / "doc" / "attnscope").lexically_normal()})
        if (fs::exists(dir / "user-guide.md", ec))
            return (dir / "user-guide.md").string();
    return {};
}

} // namespace attnscope
