// One CSV field as RFC 4180 spells it: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
#pragma once

#include <string>

namespace attnscope::core {

inline std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n\r") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

} // namespace attnscope::core
