// ComputeLane: a QThread with an executor object that receives queued closures.
#include "compute/compute_lane.h"

namespace attnscope::app {

ComputeLane::ComputeLane(const QString& name)
    : m_executor(new QObject)
{
    m_thread.setObjectName(name);
    m_executor->moveToThread(&m_thread);
    QObject::connect(&m_thread, &QThread::finished, m_executor, &QObject::deleteLater);
    m_thread.start();
}

ComputeLane::~ComputeLane()
{
    join();
}

void ComputeLane::post(std::function<void()> fn)
{
    QMetaObject::invokeMethod(m_executor, std::move(fn), Qt::QueuedConnection);
}

void ComputeLane::join()
{
    if (m_thread.isRunning()) {
        m_thread.quit();
        m_thread.wait();
    }
}

} // namespace attnscope::app
