// Small helpers to read whole text / JSON files with errors that name the file.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace attnscope::core {

#include <string_view>

std::string readTextFile(const std::string& path);
// Parses a JSON file; throws Error(BadJson) with the parser's position on failure.
nlohmann::json readJsonFile(const std::string& path);

// JSON nested deeper than this is refused before it is parsed: messages and writers walk values recursively, and a
// hostile file of 100,000 nested brackets would overflow the stack. Real configs, tokenizers and headers nest < 10.
inline constexpr int kMaxJsonDepth = 128;
// Parses JSON text; throws Error(BadJson) naming `file` (and what it is, e.g. "header") for malformed text, numbers
// out of range and nesting past kMaxJsonDepth, in words (no library error codes).
nlohmann::json parseJson(std::string_view text, const std::string& file, const std::string& what = "");
// A value for a message: scalars as written (cut to about 60 characters), arrays and objects by their size. Never
// walks the value, so any value can be quoted.
std::string jsonPreview(const nlohmann::json& value);

} // namespace attnscope::core
