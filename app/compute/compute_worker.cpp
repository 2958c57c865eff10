// ComputeWorker: every exception stops here and becomes a message (nothing throws across the thread).
#include "compute/compute_worker.h"

#include "run/text_capture.h"
#include "ui/grid_builder.h"
#include "ui/thumbnails.h"
#include "util/error.h"

#include <QElapsedTimer>
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

void ComputeWorker::compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens,
                                  quint64 generation)
{
    try {
        auto data = std::make_shared<widgets::ComparisonData>();
        int shownTokens = 0;
        for (const QString& spec : specs) {
            auto& bundle = m_compareCache[spec];
            if (!bundle)
                bundle = loadBundle(spec, m_builtinDirs);
            auto tokens = bundle->tokenizer->encode(text.toStdString());
            if (static_cast<int>(tokens.size()) > maxTokens)
                tokens.resize(static_cast<std::size_t>(maxTokens));
            shownTokens = static_cast<int>(tokens.size());
            core::CaptureOptions opt;
            opt.segmentLen = std::max(1, shownTokens); // one segment: the same rows and columns for every model
            const auto capture = core::captureText(*bundle->loaded.model, std::move(tokens), opt);
            std::vector<widgets::GridDataPtr> row;
            ViewSelection sel;
            sel.layer = std::min(layer, bundle->info().layers - 1);
            for (int h = 0; h < bundle->info().heads; ++h) {
                sel.heads = {h};
                row.push_back(buildGrid(*capture, bundle->displayName, sel));
            }
            data->rowTitles << tr("%1 (layer %2)").arg(bundle->displayName).arg(sel.layer + 1);
            data->grids.push_back(std::move(row));
        }
        data->title = tr("Same text, %1 tokens: each model's heads side by side (shared colour scale 0..1)").arg(shownTokens);
        emit comparisonReady(data, generation);
    } catch (const std::exception& e) {
        emit comparisonFailed(QString::fromStdString(e.what()), generation);
    }
}

void ComputeWorker::scanCorpus(const ScanRequest& request, quint64 generation)
{
    if (!m_model) {
        emit scanFailed(tr("No model is loaded."), generation);
        return;
    }
    try {
        core::ScanOptions opt;
        opt.memLen = request.memLen;
        opt.segmentLen = request.segmentLen;
        opt.maxTokens = request.maxTokens;
        opt.terms = request.terms.toStdString();
        opt.stop = request.stop.get();
        QElapsedTimer progressClock, partialClock;
        progressClock.start();
        partialClock.start();
        opt.progress = [&](std::int64_t done, std::int64_t total) {
            if (progressClock.elapsed() >= 100) {
                progressClock.restart();
                emit scanProgress(done, total, generation);
            }
        };
        opt.partial = [&](const core::ScanResult& r) {
            if (partialClock.elapsed() >= 1000) {
                partialClock.restart();
                emit scanPartial(std::make_shared<core::ScanResult>(r), generation);
            }
        };
        const auto& model = *m_model->loaded.model;
        auto result = request.textFile.isEmpty()
                          ? core::scanText(model, *m_model->tokenizer, request.text.toStdString(), opt)
                          : core::scanTextFile(model, *m_model->tokenizer, request.textFile.toStdString(), opt);
        if (request.textFile.isEmpty())
            result.metadata["text"] = "built-in sample";
        emit scanFinished(std::make_shared<core::ScanResult>(std::move(result)), generation);
    } catch (const std::exception& e) {
        emit scanFailed(QString::fromStdString(e.what()), generation);
    }
}

} // namespace attnscope::app
