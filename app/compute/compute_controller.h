// GUI-side handle of the compute thread: sends requests by value, drops stale results, cancels superseded work.
// Lives on the GUI thread; all signals are emitted there.
#pragma once

#include "compute/compute_worker.h"

#include <QObject>
#include <QThread>

namespace attnscope::app {

class ComputeController : public QObject {
    Q_OBJECT
public:
    explicit ComputeController(std::vector<std::string> builtinDirs, QObject* parent = nullptr);
    ~ComputeController() override;

    // Returns the request's generation. A newer text request cancels and supersedes older ones.
    quint64 loadModel(const QString& spec);
    quint64 runText(const QString& text, int segmentLen = 0, int memLen = -1);
    // Corpus scan of a file (or of `text` when the path is empty); a new scan cancels a running one.
    quint64 scanCorpus(const QString& textFile, const QString& text, int memLen, int segmentLen, qint64 maxTokens,
                       const QString& terms);
    void cancel(); // stops the running text request and scan
    quint64 compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens = 24);

    const ModelBundlePtr& model() const { return m_model; }
    bool busy() const { return m_pendingLoads > 0 || m_textInFlight || m_scanInFlight; }
    bool scanning() const { return m_scanInFlight; }

signals:
    void modelLoaded(attnscope::app::ModelBundlePtr model);
    void modelFailed(const QString& spec, const QString& message);
    void textReady(attnscope::app::TextResultPtr result);
    void textFailed(const QString& message, bool cancelled);
    void busyChanged(bool busy, const QString& what);
    void scanProgress(qint64 done, qint64 total);
    void scanPartial(attnscope::app::ScanResultPtr result);
    void scanFinished(attnscope::app::ScanResultPtr result);
    void scanFailed(const QString& message);
    void comparisonReady(attnscope::widgets::ComparisonPtr data);
    void comparisonFailed(const QString& message);

private:
    QThread m_thread;
    ComputeWorker* m_worker;
    ModelBundlePtr m_model;
    quint64 m_generation = 0;
    quint64 m_latestText = 0;
    int m_pendingLoads = 0;
    bool m_textInFlight = false;
    bool m_scanInFlight = false;
    quint64 m_latestScan = 0;
    quint64 m_latestComparison = 0;
    std::shared_ptr<core::StopToken> m_currentStop;
    std::shared_ptr<core::StopToken> m_scanStop;
};

} // namespace attnscope::app
