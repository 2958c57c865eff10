// tensorName: pattern substitution for the name tables.
#include "model/tensor_names.h"

#include "io/checkpoint.h"

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

std::string detectPrefix(const Checkpoint& weights, const char* prefix, const char* probePattern)
{
    return weights.has(tensorName(prefix, probePattern, 0)) ? prefix : "";
}

} // namespace attnscope::core
