// The compute thread's worker: owns the loaded model, runs requests, reports results as immutable snapshots.
// Lives on the controller's QThread; its slots are only invoked through queued connections.
#pragma once

#include "compute/model_bundle.h"
#include "util/stop_token.h"

#include "comparison_view.h"

#include <QObject>
#include <map>
#include <atomic>
#include <memory>

namespace attnscope::app {

struct TextRequest {
    QString text;
    int segmentLen = 0; // 0: model default
    int memLen = -1;    // -1: model default
    std::shared_ptr<core::StopToken> stop;
};

struct ScanRequest {
    QString textFile;   // empty: scan `text`
    QString text;
    int memLen = 0;
    int segmentLen = 0;
    qint64 maxTokens = -1;
    QString terms;      // "a,b,c,d" for term profiles
    std::shared_ptr<core::StopToken> stop;
};

class ComputeWorker : public QObject {
    Q_OBJECT
public:
    explicit ComputeWorker(std::vector<std::string> builtinDirs);
    // Requests older than this generation are skipped when they reach the worker (latest wins).
    std::atomic<quint64> latestTextGeneration{0};

public slots:
    void loadModel(const QString& spec, quint64 generation);
    void runText(const attnscope::app::TextRequest& request, quint64 generation);
    void scanCorpus(const attnscope::app::ScanRequest& request, quint64 generation);
    // Runs the first `maxTokens` tokens of `text` through each model; one grid per head of `layer` (0-based).
    void compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens, quint64 generation);

signals:
    void modelLoaded(attnscope::app::ModelBundlePtr model, quint64 generation);
    void modelFailed(const QString& spec, const QString& message, quint64 generation);
    void textReady(attnscope::app::TextResultPtr result, quint64 generation);
    void textFailed(const QString& message, quint64 generation, bool cancelled);
    // Throttled to about ten a second; partial results about once a second.
    void scanProgress(qint64 done, qint64 total, quint64 generation);
    void scanPartial(attnscope::app::ScanResultPtr result, quint64 generation);
    void scanFinished(attnscope::app::ScanResultPtr result, quint64 generation);
    void scanFailed(const QString& message, quint64 generation);
    void comparisonReady(attnscope::widgets::ComparisonPtr data, quint64 generation);
    void comparisonFailed(const QString& message, quint64 generation);

private:
    std::vector<std::string> m_builtinDirs;
    ModelBundlePtr m_model;
    std::map<QString, ModelBundlePtr> m_compareCache; // models opened for comparisons, kept for the next one
};

} // namespace attnscope::app
