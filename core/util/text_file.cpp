// Text and JSON file readers.
#include "util/text_file.h"

#include "util/message_text.h"

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
    // A FIFO or device would block the read (or never end): only regular files are read.
    if (const auto st = std::filesystem::status(path, ec); !ec && st.type() != std::filesystem::file_type::regular)
        throw Error(ErrorCode::Io, "not a regular file", path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(ErrorCode::Io, "cannot open file", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw Error(ErrorCode::Io, "read failed", path);
    return ss.str();
}

nlohmann::json readJsonFile(const std::string& path) { return parseJson(readTextFile(path), path); }

namespace {
// The parser's message without its "[json.exception.parse_error.101] " code.
std::string plainMessage(const nlohmann::json::exception& e)
{
    std::string m = e.what();
    if (!m.empty() && m.front() == '[') {
        const auto close = m.find("] ");
        if (close != std::string::npos)
            m = m.substr(close + 2);
    }
    return m;
}
} // namespace

nlohmann::json parseJson(std::string_view text, const std::string& file, const std::string& what)
{
    const std::string subject = what.empty() ? std::string("not valid JSON") : what + " is not valid JSON";
    // Depth first, by brackets outside strings: cheap, and nothing deep is ever built.
    int depth = 0;
    bool inString = false, escaped = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (inString) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                inString = false;
        } else if (ch == '"') {
            inString = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > kMaxJsonDepth)
                throw Error(ErrorCode::BadJson,
                            subject + ": values nest deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                                std::to_string(i) + ")",
                            file);
        } else if (ch == ']' || ch == '}') {
            --depth;
        }
    }
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::out_of_range& e) { // a number such as 1e400
        throw Error(ErrorCode::BadJson, subject + ": a number is out of range (" + plainMessage(e) + ")", file);
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorCode::BadJson, subject + " (" + plainMessage(e) + ")", file);
    }
}

std::string jsonPreview(const nlohmann::json& v)
{
    if (v.is_array())
        return "a list of " + std::to_string(v.size()) + " values";
    if (v.is_object())
        return "an object of " + std::to_string(v.size()) + " keys";
    return excerpt(v.dump(), 60); // a scalar: no recursion
}

} // namespace attnscope::core
