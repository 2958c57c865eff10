// One mechanism for every request that crosses to a compute thread (after KDAB/hotspot's jobtracker.h): each kind
// of request has a tracker with a generation number (the newest request wins: an older one is skipped if it has not
// started, stopped through its StopToken if it has, and its result dropped if it arrives anyway).
#pragma once

#include "compute/job_kinds.h"
#include "util/stop_token.h"

#include <QString>
#include <atomic>
#include <functional>
#include <memory>

namespace attnscope::app {

// What a job's work function gets: its kind, its stop token, and a way to send something to the GUI thread that arrives only
// while the job is still the newest of its kind (progress, partial results).
class JobContext {
public:
    using Post = std::function<void(std::function<void()>)>;
    JobContext(JobKind kind, std::shared_ptr<const core::StopToken> stop, Post post)
        : m_kind(kind)
        , m_stop(std::move(stop))
        , m_post(std::move(post))
    {
    }
    JobKind kind() const { return m_kind; }
    const core::StopToken& stop() const { return *m_stop; }
    bool stopRequested() const { return m_stop->stopRequested(); }
    void post(std::function<void()> fn) const { m_post(std::move(fn)); }

private:
    JobKind m_kind;
    std::shared_ptr<const core::StopToken> m_stop;
    Post m_post;
};

// Lives on the GUI thread; only isCurrent() is called from compute threads.
class JobTracker {
public:
    // A new request of this kind: the previous one is stopped and superseded. Returns the new generation.
    quint64 begin()
    {
        m_stop->requestStop();
        m_stop = std::make_shared<core::StopToken>();
        m_running = true;
        return ++m_latest;
    }
    bool isCurrent(quint64 generation) const { return generation == m_latest.load(); }
    std::shared_ptr<const core::StopToken> stopToken() const { return m_stop; }
    // The job of `generation` has delivered its result or failure.
    void finished(quint64 generation)
    {
        if (isCurrent(generation))
            m_running = false;
    }
    // Stops the running job; it still reports (as cancelled), so partial results are not lost.
    void cancel() { m_stop->requestStop(); }
    // Drops whatever runs or waits: nothing of it will be delivered (e.g. the model it was for is gone).
    void invalidate()
    {
        m_stop->requestStop();
        ++m_latest;
        m_running = false;
    }
    bool running() const { return m_running; }

private:
    std::atomic<quint64> m_latest{0};
    std::shared_ptr<core::StopToken> m_stop = std::make_shared<core::StopToken>();
    bool m_running = false;
};

} // namespace attnscope::app
