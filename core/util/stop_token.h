// Cooperative cancellation flag shared between a requester and a long computation.
#pragma once

#include <atomic>

namespace attnscope::core {

class StopToken {
public:
    void requestStop() noexcept { m_stop.store(true, std::memory_order_relaxed); }
    bool stopRequested() const noexcept { return m_stop.load(std::memory_order_relaxed); }

private:
    std::atomic<bool> m_stop{false};
};

} // namespace attnscope::core
