// Per-stage time accumulators: one relaxed atomic per stage, a monotonic clock read at each end of a scope.
#include "util/stage_timer.h"

#include <atomic>
#include <chrono>

namespace attnscope::core {

namespace {
constexpr std::size_t kStages = static_cast<std::size_t>(Stage::Count);
std::atomic<bool> g_enabled{false};
std::array<std::atomic<long long>, kStages> g_nanoseconds{};

long long now()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

const char* stageName(Stage s)
{
    static constexpr const char* names[kStages] = {
        "embedding, masks", "norms", "projections (q, k, v, o)", "rotary embedding", "attention (region)",
        "scores (products)", "relative shift / term gather", "softmax", "copies for the observer",
        "profile accumulation (rows as computed)", "probabilities x values", "feed-forward", "caches and memories", "profile accumulation"};
    return names[static_cast<std::size_t>(s)];
}

void enableStageTimes(bool on)
{
    if (on)
        for (auto& ns : g_nanoseconds)
            ns.store(0, std::memory_order_relaxed);
    g_enabled.store(on, std::memory_order_relaxed);
}

bool stageTimesEnabled()
{
    return g_enabled.load(std::memory_order_relaxed);
}

std::array<double, kStages> stageSeconds()
{
    std::array<double, kStages> s{};
    for (std::size_t i = 0; i < kStages; ++i)
        s[i] = static_cast<double>(g_nanoseconds[i].load(std::memory_order_relaxed)) * 1e-9;
    return s;
}

StageScope::StageScope(Stage s)
    : m_stage(s)
{
    if (g_enabled.load(std::memory_order_relaxed))
        m_start = now();
}

StageScope::~StageScope()
{
    if (m_start >= 0)
        g_nanoseconds[static_cast<std::size_t>(m_stage)].fetch_add(now() - m_start, std::memory_order_relaxed);
}

} // namespace attnscope::core
