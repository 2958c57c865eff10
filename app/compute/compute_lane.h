// A long-lived thread that runs closures one after another (the compute threads of the window).
#pragma once

#include <QThread>
#include <functional>

namespace attnscope::app {

class ComputeLane {
public:
    explicit ComputeLane(const QString& name);
    ~ComputeLane(); // joins: call after everything that posts to this lane has stopped
    ComputeLane(const ComputeLane&) = delete;
    ComputeLane& operator=(const ComputeLane&) = delete;

    // Runs `fn` on the lane's thread after everything posted before it.
    void post(std::function<void()> fn);
    void join();

private:
    QThread m_thread;
    QObject* m_executor; // lives on m_thread; queued calls to it run there
};

} // namespace attnscope::app
