// Run limits: the caps and the memory estimate.
#include "model/run_limits.h"

#include "util/error.h"
#include "util/memory_info.h"

#include <algorithm>

namespace attnscope::core {

int checkedMemoryLength(long long value, const std::string& file, const std::string& key)
{
    if (value < 0 || value > kMaxMemoryLength)
        throw Error(ErrorCode::BadInput, "memory length " + std::to_string(value) + " is outside 0 .. " +
                                             std::to_string(kMaxMemoryLength) + " tokens", file, key);
    return static_cast<int>(value);
}

int checkedSegmentLength(long long value, int modelMaximum, const std::string& file, const std::string& key)
{
    const long long limit = std::min<long long>(kMaxSegmentLength, modelMaximum);
    if (value < 1 || value > limit)
        throw Error(ErrorCode::BadInput, "segment length " + std::to_string(value) + " is outside 1 .. " +
                                             std::to_string(limit) + " tokens" +
                                             (limit == modelMaximum ? " (this model's limit)" : ""), file, key);
    return static_cast<int>(value);
}

std::uint64_t estimateRunBytes(const ModelInfo& info, int memLen, int segmentLen, bool keepProbabilities)
{
    const double f = sizeof(float), L = info.layers, H = info.heads, D = info.dHead;
    const double k = static_cast<double>(memLen) + segmentLen;
    double bytes = 0;
    if (info.can.carriesMemory) // memory rows, their keys and values; relative tables over k distances
        bytes = L * (static_cast<double>(memLen) * (info.dModel + 2 * H * D) + (static_cast<double>(memLen) + 1.5 * k) * H * D) * f;
    else // the key/value cache of the carried tokens and the segment
        bytes = L * k * 2 * info.kvHeads * D * f;
    if (keepProbabilities) // one layer's probabilities (and four terms for Transformer-XL) at a time
        bytes += H * segmentLen * k * f * (info.hasRelativeTerms ? 5 : 1);
    return static_cast<std::uint64_t>(bytes);
}

void checkRunFits(const ModelInfo& info, int memLen, int segmentLen, bool keepProbabilities, const std::string& what)
{
    checkFits(estimateRunBytes(info, memLen, segmentLen, keepProbabilities),
              what + " with memory " + std::to_string(memLen) + " and segments of " + std::to_string(segmentLen) + " tokens",
              "use a shorter memory or segment");
}

std::uint64_t logitsBytes(const ModelInfo& info, std::size_t tokens, int arrays)
{
    return static_cast<std::uint64_t>(static_cast<double>(tokens) * std::max(info.vocabSize, 0) * sizeof(float) * arrays);
}


} // namespace attnscope::core
