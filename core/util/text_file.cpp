// Text and JSON file readers.
#include "util/text_file.h"

#include "util/error.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attnscope::core {

std::string readTextFile(const std::string& path)
{
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
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(ErrorCode::BadJson, std::string("not valid JSON (") + e.what() + ")", path);
    }
}

} // namespace attnscope::core
