// ComputeWorker: every exception stops here and becomes a message (nothing throws across the thread).
#include "compute/compute_worker.h"

#include "run/text_capture.h"
#include "ui/thumbnails.h"
#include "util/error.h"

#include <spdlog/spdlog.h>

namespace attnscope::app {

ComputeWorker::ComputeWorker(std::vector<std::string> builtinDirs)
    : m_builtinDirs(std::move(builtinDirs))
{
}

void ComputeWorker::loadModel(const QString& spec, quint64 generation)
{
    try {
        auto bundle = loadBundle(spec, m_builtinDirs);
        m_model = bundle; // only replaced on success: a failed load keeps the previous model
        emit modelLoaded(bundle, generation);
    } catch (const std::exception& e) {
        spdlog::warn("loading {} failed: {}", spec.toStdString(), e.what());
        emit modelFailed(spec, QString::fromStdString(e.what()), generation);
    }
}

void ComputeWorker::runText(const TextRequest& request, quint64 generation)
{
    if (generation < latestTextGeneration.load())
        return; // a newer request is queued behind this one
    if (!m_model) {
        emit textFailed(tr("No model is loaded."), generation, false);
        return;
    }
    try {
        core::CaptureOptions opt;
        opt.segmentLen = request.segmentLen;
        if (request.memLen >= 0)
            opt.run.memLen = request.memLen;
        opt.run.stop = request.stop.get();
        auto capture = core::captureText(*m_model->loaded.model, *m_model->tokenizer, request.text.toStdString(), opt);
        auto result = std::make_shared<TextResult>();
        result->thumbnails = makeThumbnails(*capture, -1);
        result->capture = std::move(capture);
        emit textReady(result, generation);
    } catch (const core::Error& e) {
        emit textFailed(QString::fromStdString(e.what()), generation, e.code() == core::ErrorCode::Cancelled);
    } catch (const std::exception& e) {
        emit textFailed(QString::fromStdString(e.what()), generation, false);
    }
}

} // namespace attnscope::app
