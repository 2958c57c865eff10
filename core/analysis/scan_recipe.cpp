// scanOptionsFor and everyBandProfile (scan_recipe.h).
#include "analysis/scan_recipe.h"

#include "util/error.h"

namespace attnscope::core {

ScanOptions scanOptionsFor(const ModelInfo& info, const ScanChoices& choices)
{
    ScanOptions o;
    o.memLen = choices.memLen.value_or(defaultScanMemLen(info));
    o.segmentLen = choices.segmentLen.value_or(defaultScanSegmentLen(info));
    o.maxTokens = choices.maxTokens;
    o.sameLength = choices.sameLength;
    o.clampLen = choices.clampLen;
    o.terms = choices.terms;
    o.bands = choices.bands;
    checkScanOptions(info, o);
    return o;
}

std::string everyBandProfile(const ModelInfo& info)
{
    if (info.rotaryFrequencies.empty())
        throw Error(ErrorCode::BadInput, "band profiles need a model with rotary embeddings (Llama family)");
    const int bands = bandsFor(info).count();
    std::string terms;
    for (int b = 1; b <= bands; ++b)
        terms += (b > 1 ? "," : "") + std::to_string(b);
    return terms;
}

} // namespace attnscope::core
