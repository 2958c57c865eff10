// Text and JSON file readers.
#include "util/text_file.h"

#include "util/error.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attnscope::core {

std::string readTextFile(const std::string& path)
{
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorCode::Io, "is a folder, not a file", path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(ErrorCode::Io, "cannot open file", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw Error(ErrorCode::Io, "read failed", path);
    return ss.str();
}

nlohmann::json readJsonFile(const std::string& path)
{
    const std::string text = readTextFile(path);
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) { // malformed, or a number such as 1e400 out of range
        throw Error(ErrorCode::BadJson, std::string("not valid JSON (") + e.what() + ")", path);
    }
}

} // namespace attnscope::core
