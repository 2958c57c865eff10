// Small helpers to read whole text / JSON files with errors that name the file.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace attnscope::core {

std::string readTextFile(const std::string& path);
// Parses a JSON file; throws Error(BadJson) with the parser's position on failure.
nlohmann::json readJsonFile(const std::string& path);

} // namespace attnscope::core
