// The checks the configuration readers share (config_reader.h).
#include "model/config_reader.h"

#include "io/gguf.h"

namespace attnscope::core {

int ggufPositive(const GgufFile& g, const std::string& key)
{
    const auto v = g.uint(key);
    if (v < 1 || v > static_cast<std::uint64_t>(kMaxConfigInt))
        throw Error(ErrorCode::BadConfig,
                    "value " + std::to_string(v) + " is outside 1 .. " + std::to_string(kMaxConfigInt), g.path(), key);
    return static_cast<int>(v);
}

int layerCount(int n, const ConfigReader& r, const char* key)
{
    if (n > kMaxLayers)
        r.fail(key, std::to_string(n) + " layers is more than any model has (at most " + std::to_string(kMaxLayers) +
                        " are read)");
    return n;
}

std::vector<bool> slidingLayersOf(const ConfigReader& r, const nlohmann::json& j, int layers)
{
    const auto& list = j.at("layer_types");
    if (!list.is_array() || static_cast<int>(list.size()) != layers)
        r.fail("layer_types", "must list \"sliding_attention\" or \"full_attention\" for each of the " +
                                  std::to_string(layers) + " layers, got " + jsonPreview(list));
    std::vector<bool> sliding;
    for (const auto& t : list) {
        if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
            r.fail("layer_types", "layer " + std::to_string(sliding.size() + 1) + " is " + jsonPreview(t) +
                                      "; attnscope knows \"sliding_attention\" and \"full_attention\"");
        sliding.push_back(t == "sliding_attention");
    }
    return sliding;
}

void readExpertCount(const ConfigReader& r, LlamaConfig& c, const char* countKey, const char* usedKey, int usedDefault)
{
    c.experts = r.positiveInt(countKey);
    c.expertsUsed = usedDefault > 0 ? r.intOr(usedKey, usedDefault, 1) : r.positiveInt(usedKey);
    if (c.expertsUsed > c.experts)
        r.fail(usedKey, "chooses " + std::to_string(c.expertsUsed) + " experts per token, more than the " +
                            std::to_string(c.experts) + " there are (" + countKey + ")");
}

} // namespace attnscope::core
