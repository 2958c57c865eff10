// StatusArea implementation.
#include "ui/status_area.h"

#include "compute/compute_controller.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>

namespace attnscope::app {

void StatusArea::attach(ComputeController* compute)
{
    connect(this, &StatusArea::cancelClicked, compute, [compute] { compute->cancel(); });
    connect(compute, &ComputeController::busyChanged, this, &StatusArea::setBusy);
    connect(compute, &ComputeController::jobProgress, this, [this](JobKind kind, const QString& what, qint64 done, qint64 total) {
        setProgress(done, total);
        if (kind == JobKind::Text)
            setBusy(true, tr("Computing attention: %1%").arg(done * 100 / std::max<qint64>(1, total)));
        else if (kind == JobKind::Grid)
            setBusy(true, tr("Computing the grid: %1 of %2 heads").arg(done).arg(total));
        else if (kind != JobKind::Scan) // a scan's busy line says "Scanning…"; its rate and time left are in its dock
            setBusy(true, tr("%1: %2 of %3").arg(what).arg(done).arg(total));
    });
}

StatusArea::StatusArea(QStatusBar* bar)
    : QObject(bar)
    , m_bar(bar)
    , m_label(new QLabel(bar))
    , m_progress(new QProgressBar(bar))
    , m_cancel(new QPushButton(tr("Cancel"), bar))
{
    m_label->setMinimumWidth(10); // long messages are cut, never widen the window
    m_progress->setRange(0, 0);
    m_progress->setMaximumWidth(160);
    m_progress->hide();
    m_cancel->hide();
    bar->addWidget(m_label, 1);
    bar->addPermanentWidget(m_progress);
    bar->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &StatusArea::cancelClicked);
    m_noticeTimer.setSingleShot(true);
    m_noticeTimer.setInterval(15000);
    connect(&m_noticeTimer, &QTimer::timeout, this, [this] {
        m_notice.clear();
        refresh();
    });
}

void StatusArea::show(const QString& text)
{
    m_line = text;
    refresh();
}

void StatusArea::notify(const QString& text)
{
    m_notice = text;
    m_noticeTimer.start();
    refresh();
}

QString StatusArea::text() const
{
    return m_label->text();
}

void StatusArea::setBusy(bool busy, const QString& what)
{
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (!busy) {
        m_progress->setRange(0, 0);
        m_busy.clear();
    } else if (!what.isEmpty()) {
        m_busy = what;
    }
    refresh();
}

void StatusArea::refresh()
{
    m_label->setText(!m_notice.isEmpty() ? m_notice : !m_busy.isEmpty() ? m_busy : m_line);
}

void StatusArea::setProgress(qint64 done, qint64 total)
{
    if (total <= 0) {
        m_progress->setRange(0, 0);
        return;
    }
    m_progress->setRange(0, 1000);
    m_progress->setValue(static_cast<int>(1000 * std::min(done, total) / total));
}

} // namespace attnscope::app
