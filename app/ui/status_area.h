// The status bar's parts: a line for what is shown, notices that stay a while, and while the compute threads work,
// a progress bar (a percentage during scans) with Cancel.
#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

class QLabel;
class QProgressBar;
class QPushButton;
class QStatusBar;

namespace attnscope::app {

class ComputeController;

class StatusArea : public QObject {
    Q_OBJECT
public:
    explicit StatusArea(QStatusBar* bar);
    void show(const QString& text);   // replaces the status line
    void notify(const QString& text); // a notice over the status line for 15 s
    QString text() const;             // the notice if one is up, else the status line
    void setBusy(bool busy, const QString& what); // `what` shows while busy; then the status line returns
    void setProgress(qint64 done, qint64 total); // total 0: just busy
    // Every job's progress and busy state from `compute`, and Cancel to it.
    void attach(ComputeController* compute);

signals:
    void cancelClicked();

private:
    QStatusBar* m_bar;
    QLabel* m_label;
    QProgressBar* m_progress;
    QPushButton* m_cancel;
    void refresh(); // the label shows the notice, else the busy text, else the status line

    QString m_line;   // what show() last set: back in place when the busy text or notice goes
    QString m_busy;   // what is being computed, while busy
    QString m_notice; // a notice, for 15 s
    QTimer m_noticeTimer;
    // One label for all three: QStatusBar's own temporary message hides the label, and a window shown again (full
    // screen) showed it back under the message, two texts drawn over each other.
};

} // namespace attnscope::app
