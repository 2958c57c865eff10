// The benchmarks' one clock: wall time between two points in seconds.
#pragma once

#include <chrono>

namespace attnscope::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

} // namespace attnscope::bench
