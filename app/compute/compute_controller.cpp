// ComputeController: generation bookkeeping on the GUI thread.
#include "compute/compute_controller.h"

namespace attnscope::app {

ComputeController::ComputeController(std::vector<std::string> builtinDirs, QObject* parent)
    : QObject(parent)
    , m_worker(new ComputeWorker(std::move(builtinDirs)))
{
    m_thread.setObjectName(QStringLiteral("attnscope-compute"));
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &ComputeWorker::modelLoaded, this, [this](ModelBundlePtr m, quint64) {
        --m_pendingLoads;
        m_model = m;
        emit busyChanged(busy(), QString());
        emit modelLoaded(m);
    });
    connect(m_worker, &ComputeWorker::modelFailed, this, [this](const QString& spec, const QString& msg, quint64) {
        --m_pendingLoads;
        emit busyChanged(busy(), QString()); // before the failure signal, whose handler may open a modal dialog
        emit modelFailed(spec, msg);
    });
    connect(m_worker, &ComputeWorker::textReady, this, [this](TextResultPtr c, quint64 gen) {
        if (gen != m_latestText)
            return; // stale: a newer request superseded it
        m_textInFlight = false;
        emit busyChanged(busy(), QString());
        emit textReady(c);
    });
    connect(m_worker, &ComputeWorker::textFailed, this, [this](const QString& msg, quint64 gen, bool cancelled) {
        if (gen != m_latestText)
            return;
        m_textInFlight = false;
        emit busyChanged(busy(), QString());
        emit textFailed(msg, cancelled);
    });
    connect(m_worker, &ComputeWorker::scanProgress, this, [this](qint64 done, qint64 total, quint64 gen) {
        if (gen == m_latestScan)
            emit scanProgress(done, total);
    });
    connect(m_worker, &ComputeWorker::scanPartial, this, [this](ScanResultPtr r, quint64 gen) {
        if (gen == m_latestScan)
            emit scanPartial(r);
    });
    connect(m_worker, &ComputeWorker::scanFinished, this, [this](ScanResultPtr r, quint64 gen) {
        if (gen != m_latestScan)
            return;
        m_scanInFlight = false;
        emit busyChanged(busy(), QString());
        emit scanFinished(r);
    });
    connect(m_worker, &ComputeWorker::scanFailed, this, [this](const QString& msg, quint64 gen) {
        if (gen != m_latestScan)
            return;
        m_scanInFlight = false;
        emit busyChanged(busy(), QString());
        emit scanFailed(msg);
    });
    connect(m_worker, &ComputeWorker::comparisonReady, this, [this](widgets::ComparisonPtr d, quint64 gen) {
        if (gen == m_latestComparison)
            emit comparisonReady(d);
    });
    connect(m_worker, &ComputeWorker::comparisonFailed, this, [this](const QString& msg, quint64 gen) {
        if (gen == m_latestComparison)
            emit comparisonFailed(msg);
    });
    m_thread.start();
}

quint64 ComputeController::compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens)
{
    const quint64 gen = ++m_generation;
    m_latestComparison = gen;
    QMetaObject::invokeMethod(
        m_worker, [w = m_worker, specs, text, layer, maxTokens, gen] { w->compareModels(specs, text, layer, maxTokens, gen); },
        Qt::QueuedConnection);
    return gen;
}

quint64 ComputeController::scanCorpus(const QString& textFile, const QString& text, int memLen, int segmentLen,
                                      qint64 maxTokens, const QString& terms)
{
    const quint64 gen = ++m_generation;
    m_latestScan = gen;
    if (m_scanStop)
        m_scanStop->requestStop();
    m_scanStop = std::make_shared<core::StopToken>();
    ScanRequest req{textFile, text, memLen, segmentLen, maxTokens, terms, m_scanStop};
    m_scanInFlight = true;
    emit busyChanged(true, tr("Scanning…"));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, req, gen] { w->scanCorpus(req, gen); }, Qt::QueuedConnection);
    return gen;
}

ComputeController::~ComputeController()
{
    cancel();
    m_thread.quit();
    m_thread.wait();
}

quint64 ComputeController::loadModel(const QString& spec)
{
    const quint64 gen = ++m_generation;
    ++m_pendingLoads;
    emit busyChanged(true, tr("Loading %1…").arg(spec));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, spec, gen] { w->loadModel(spec, gen); }, Qt::QueuedConnection);
    return gen;
}

quint64 ComputeController::runText(const QString& text, int segmentLen, int memLen)
{
    const quint64 gen = ++m_generation;
    m_latestText = gen;
    m_worker->latestTextGeneration.store(gen);
    if (m_currentStop)
        m_currentStop->requestStop(); // the running request is superseded
    m_currentStop = std::make_shared<core::StopToken>();
    TextRequest req{text, segmentLen, memLen, m_currentStop};
    m_textInFlight = true;
    emit busyChanged(true, tr("Computing attention…"));
    QMetaObject::invokeMethod(m_worker, [w = m_worker, req, gen] { w->runText(req, gen); }, Qt::QueuedConnection);
    return gen;
}

void ComputeController::cancel()
{
    if (m_currentStop)
        m_currentStop->requestStop();
    if (m_scanStop)
        m_scanStop->requestStop();
}

} // namespace attnscope::app
