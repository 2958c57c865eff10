// tensorName: pattern substitution for the name tables.
#include "model/tensor_names.h"

namespace attnscope::core {

std::string tensorName(const std::string& prefix, const char* pattern, int index)
{
    std::string s = prefix + pattern;
    for (const char* ph : {"{l}", "{c}"}) {
        const auto pos = s.find(ph);
        if (pos != std::string::npos)
            s.replace(pos, 3, std::to_string(index));
    }
    return s;
}

} // namespace attnscope::core
