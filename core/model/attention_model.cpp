// AttentionModel: segment loops shared by all families.
#include "model/attention_model.h"

#include "util/error.h"
#include "util/stop_token.h"

namespace attnscope::core {

void refuseIntervention(const RunOptions& options, const ModelInfo& info)
{
    if (options.intervene && !info.can.interventions)
        throw Error(ErrorCode::BadInput, "activation patching needs a decoder (GPT-2 or a Llama-family model); " +
                                                info.source + " is not one");
}

std::unique_ptr<RunState> AttentionModel::resumeWithin(const RunState&, int) const
{
    return nullptr;
}

void AttentionModel::run(const std::vector<std::vector<std::int32_t>>& segments, const RunOptions& options,
                         AttentionObserver& observer) const
{
    auto state = newState(options);
    for (const auto& seg : segments) {
        if (options.stop && options.stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "run cancelled");
        forwardSegment(*state, seg, observer);
    }
}

void AttentionModel::runSplit(std::span<const std::int32_t> ids, int segmentLen, const RunOptions& options,
                              AttentionObserver& observer) const
{
    if (segmentLen <= 0)
        throw Error(ErrorCode::BadInput, "segment length must be at least 1, got " + std::to_string(segmentLen));
    auto state = newState(options);
    for (std::size_t begin = 0; begin < ids.size(); begin += static_cast<std::size_t>(segmentLen)) {
        if (options.stop && options.stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "run cancelled");
        const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(segmentLen), ids.size() - begin);
        forwardSegment(*state, ids.subspan(begin, n), observer);
    }
}

bool AttentionModel::readOut(const float*, int, std::vector<float>&) const
{
    return false;
}

float AttentionModel::positionBiasAt(int, int, int) const
{
    return 0.0f;
}

bool AttentionModel::headParts(int, const float*, std::vector<float>&) const
{
    return false;
}

bool AttentionModel::logitDirection(const float*, std::int32_t, std::vector<float>&, double&) const
{
    return false;
}

} // namespace attnscope::core
