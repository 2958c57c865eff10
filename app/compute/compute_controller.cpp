// ComputeController: the submit mechanism and one short job per request.
#include "compute/compute_controller.h"

#include "model/vision_language.h"
#include "run/picture_prompt.h"
#include "run/speech_run.h"
#include "analysis/speech_alignment.h"
#include "views/speech_figures.h"

#include "image/image_capture.h"

#include "util/error.h"
#include "util/text_file.h"
#include "analysis/atlas_recipe.h"
#include "analysis/head_ablation.h"
#include "run/patch_prompts.h"
#include "analysis/qk_space.h"
#include "analysis/scan_recipe.h"
#include "analysis/rollout.h"
#include "analysis/surprisal.h"
#include "views/analysis_figures.h"
#include "views/patching_figures.h"
#include "views/sentence_figures.h"
#include "views/comparison_builder.h"
#include "views/grid_builder.h"
#include "views/thumbnails.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <spdlog/spdlog.h>

namespace attnscope::app {

ComputeController::ComputeController(std::vector<std::string> builtinDirs, QObject* parent)
    : QObject(parent)
    , m_builtinDirs(std::move(builtinDirs))
    , m_compareCache(std::make_shared<std::map<QString, ModelBundlePtr>>())
{
}

ComputeController::~ComputeController()
{
    for (JobTracker& t : m_jobs)
        t.invalidate();
    m_interactive.join();
    m_background.join();
}

bool ComputeController::busy() const
{
    for (const JobKindRow& row : kJobKinds)
        if (row.showsBusy && job(row.kind).running())
            return true;
    return false;
}

bool ComputeController::idle() const
{
    for (const JobTracker& t : m_jobs)
        if (t.running())
            return false;
    return true;
}

void ComputeController::reportBusy(const QString& what)
{
    emit busyChanged(busy(), what);
}

void ComputeController::invalidate(Lifetime lifetime)
{
    for (const JobKindRow& row : kJobKinds)
        if (row.lifetime != Lifetime::Independent && static_cast<int>(row.lifetime) >= static_cast<int>(lifetime))
            job(row.kind).invalidate();
}

void ComputeController::holdLanesUntil(std::shared_future<void> release)
{
    for (ComputeLane* lane : {&m_interactive, &m_background})
        lane->post([release] { release.wait(); });
}

template <typename T, typename Work, typename Done>
void ComputeController::submit(JobKind kind, const QString& busyText, Work work, Done done, const QString& what)
{
    JobTracker& tracker = job(kind);
    const quint64 generation = tracker.begin();
    const auto stop = tracker.stopToken();
    JobTracker* t = &tracker;
    if (!busyText.isEmpty())
        reportBusy(busyText);
    // Runs `fn` on the GUI thread if this job is still the newest of its kind then.
    auto toGui = [this, t, generation](std::function<void()> fn) {
        QMetaObject::invokeMethod(
            this, [t, generation, fn = std::move(fn)] {
                if (t->isCurrent(generation))
                    fn();
            },
            Qt::QueuedConnection);
    };
    JobFailure failure{kind, what.isEmpty() ? jobName(kind) : what, {}, core::ErrorCode::Internal};
    ComputeLane& lane = jobRow(kind).lane == Lane::Interactive ? m_interactive : m_background;
    lane.post([this, t, generation, stop, toGui, failure, work = std::move(work), done = std::move(done)]() mutable {
        if (!t->isCurrent(generation))
            return; // superseded before it started: a newer request of this kind is queued behind it
        std::shared_ptr<const T> result;
        auto fail = [&failure](core::ErrorCode code, const QString& message) {
            failure.code = code;
            failure.message = message;
        };
        try {
            if (stop->stopRequested() && !jobRow(failure.kind).keepsPartial) // cancelled while it waited
                throw core::Error(core::ErrorCode::Cancelled, "cancelled before it started");
            result = work(JobContext(failure.kind, stop, toGui));
        } catch (const core::Error& e) {
            fail(e.code(), QString::fromStdString(e.what()));
        } catch (const std::bad_alloc&) {
            fail(core::ErrorCode::OutOfMemory, tr("Not enough memory for this request."));
        } catch (const std::exception& e) {
            fail(core::ErrorCode::Internal, QString::fromStdString(e.what()));
        } catch (...) {
            fail(core::ErrorCode::Internal, tr("An unexpected internal error stopped this request."));
        }
        if (!result && failure.message.isEmpty())
            failure.message = tr("The request produced no result.");
        if (!result && !failure.cancelled())
            spdlog::info("{} failed: {}", failure.what.toStdString(), failure.message.toStdString());
        toGui([this, t, generation, result, failure, done = std::move(done)] {
            t->finished(generation);
            if (result)
                done(result);
            else
                emit jobFailed(failure);
            reportBusy();
        });
    });
}

void ComputeController::loadModel(const QString& spec)
{
    const auto dirs = m_builtinDirs;
    submit<ModelBundle>(
        JobKind::Load, tr("Loading %1…").arg(spec),
        [spec, dirs](const JobContext&) {
            // Opening maps the files and reads their headers: no progress to report, whatever the model's size.
            return loadBundle(spec, dirs);
        },
        [this](ModelBundlePtr m) {
            // Everything computed for the previous model is dropped at once.
            invalidate(Lifetime::Model);
            m_model = std::move(m);
            m_text.reset();
            m_pictures.clear();
            m_audio.clear();
            m_audioFeatures.reset();
            emit modelLoaded(m_model);
        },
        spec);
}

void ComputeController::runText(const QString& text, const QString& secondText, int segmentLen, int memLen,
                                std::optional<ViewSelection> preview)
{
    TextRequest request;
    request.text = text;
    request.secondText = secondText;
    request.segmentLen = segmentLen;
    request.memLen = memLen;
    runText(request, preview);
}

namespace {

// What a text request reads beside the text: its run options and the streams read whole (an encoder-decoder model's
// source, typed).
core::CaptureOptions captureOptionsOf(const ModelBundle& model, const TextRequest& request, const core::StopToken* stop)
{
    core::CaptureOptions opt;
    opt.segmentLen = request.segmentLen;
    if (request.memLen >= 0)
        opt.run.memLen = request.memLen;
    opt.run.stop = stop;
    if (model.info().typedReadStream() >= 0) {
        if (request.source.trimmed().isEmpty())
            throw core::Error(core::ErrorCode::BadInput, "type a source sentence to translate");
        opt.streams = core::typedSource(model.info(), *model.tokenizer, request.source.toStdString());
    }
    return opt;
}

// A vision-language model's typed prompt with its pictures (PNG, read as the model folder's processor says): the
// expanded tokens to capture, the pictures into the run options.
std::vector<core::Token> picturePromptTokens(const ModelBundle& model, const TextRequest& request,
                                             core::CaptureOptions& opt, ImageCapture& shown)
{
    std::vector<std::string> files;
    for (const auto& f : request.pictures)
        files.push_back(f.toStdString());
    const auto prompt = core::picturePromptOfText(*model.loaded.model, *model.tokenizer, model.loaded.folder, files,
                                                  request.text.toStdString());
    const core::RunOptions pictures = prompt.runOptions();
    opt.run.image = pictures.image;
    opt.run.morePictures = pictures.morePictures;
    // The first picture as the model read it, and where its cells are among the tokens (the Image dock's overlay).
    const auto& vlm = core::asVisionLanguage(*model.loaded.model);
    const auto grid = vlm.imageGrid(prompt.pictures.front()->height, prompt.pictures.front()->width);
    shown.seen = std::make_shared<const core::Image8>(prompt.prepared.front());
    shown.rows = grid.first;
    shown.cols = grid.second;
    const auto first = std::find(prompt.expanded.begin(), prompt.expanded.end(), vlm.picture().imageToken);
    shown.firstCell = static_cast<int>(first - prompt.expanded.begin());
    return core::pictureTokens(*model.loaded.model, prompt, model.tokenizer.get());
}

} // namespace

void ComputeController::runText(const TextRequest& given, std::optional<ViewSelection> preview)
{
    if (!m_model) {
        emit jobFailed({JobKind::Text, jobName(JobKind::Text), tr("No model is loaded."), core::ErrorCode::BadInput});
        return;
    }
    const ModelBundlePtr model = m_model;
    TextRequest request = given;
    if (request.pictures.isEmpty() && model->info().pictureToken >= 0)
        request.pictures = m_pictures;
    if (!request.audio && model->info().can.audio)
        request.audio = m_audioFeatures;
    // The last delivered text of this model: its unchanged prefix is reused (an edit reruns from the first change);
    // not across pictures, whose rows the prefix holds, nor across recordings.
    const TextCapturePtr previous = m_text && m_text->model == model && request.pictures.isEmpty() &&
                                            m_text->capture->audio == request.audio
                                        ? m_text->capture
                                        : nullptr;
    submit<TextResult>(
        JobKind::Text, request.generate > 0 ? tr("Writing…") : tr("Computing attention…"),
        [this, model, request, previous, preview, previewAfter = m_previewAfterMs](const JobContext& ctx) {
            core::CaptureOptions opt = captureOptionsOf(*model, request, &ctx.stop());
            opt.previous = previous;
            QElapsedTimer clock, started;
            clock.start();
            started.start();
            opt.progress = [&](double done) {
                if (clock.elapsed() >= 100) {
                    clock.restart();
                    ctx.post([this, done] {
                        emit jobProgress(JobKind::Text, jobName(JobKind::Text), static_cast<qint64>(done * 1000), 1000);
                    });
                }
            };
            const auto& m = *model->loaded.model;
            if (preview)
                opt.layerDone = [&, sent = false](int segment, int site, const core::CaptureOptions::PartialCapture& partial) mutable {
                    // Worth a grid of its own only when the run is slow and the rest of it is not a blink away.
                    if (sent || site != preview->site || site + 1 == m.info().siteCount() || started.elapsed() < previewAfter)
                        return;
                    const auto sofar = partial();
                    if (segment != (preview->segment >= 0 ? preview->segment : autoSegment(*sofar)))
                        return;
                    sent = true;
                    try {
                        auto grid = buildGrid(*sofar, model->displayName, *preview, &ctx.stop(), {},
                                              model->targetTokenizer.get());
                        ctx.post([this, grid] { emit gridPreviewReady(grid); });
                    } catch (const std::exception& e) { // the grid requested with the whole text says what is wrong
                        spdlog::info("no early grid: {}", e.what());
                    }
                };
            auto result = std::make_shared<TextResult>();
            result->model = model;
            captureRequest(ctx, model, request, opt, *result);
            return std::shared_ptr<const TextResult>(result);
        },
        [this](TextResultPtr r) {
            m_text = r;
            emit textReady(r);
        });
}

void ComputeController::captureRequest(const JobContext& ctx, const ModelBundlePtr& model, const TextRequest& request,
                                       core::CaptureOptions& opt, TextResult& result)
{
    const auto& m = *model->loaded.model;
    if (m.info().can.image) {
        auto image = std::make_shared<ImageCapture>(
            captureImage(m, QString::fromStdString(model->loaded.folder), request.text, opt));
        result.capture = image->capture;
        result.image = std::move(image);
        return;
    }
    std::optional<std::vector<core::Token>> pictureTokens;
    ImageCapture picture;
    if (!request.pictures.isEmpty()) // a vision-language model's prompt with its pictures
        pictureTokens = picturePromptTokens(*model, request, opt, picture);
    if (m.info().can.audio) { // a speech model: the recording with its transcript, or the model's own
        if (!request.audio)
            throw core::Error(core::ErrorCode::BadInput,
                              "open a recording for the model to listen to: File > Open Audio… (WAV, FLAC, OGG)");
        result.capture = core::captureRecording(m, model->loaded.folder, *model->tokenizer, request.audio,
                                                request.text.toStdString(), request.generate, opt);
        result.written = request.generate > 0 ? 1 : 0;
        result.alignmentHeads = core::rankAlignmentHeads(*result.capture, 0);
        return;
    }
    // The picture over a capture of the prompt (and of what was written after it), for the Image dock.
    auto pictureOver = [&](const TextCapturePtr& c) -> std::shared_ptr<const ImageCapture> {
        if (!pictureTokens)
            return nullptr;
        auto shown = std::make_shared<ImageCapture>(picture);
        shown->capture = c;
        return shown;
    };
    if (request.generate > 0) {
        // Each written token reaches the window while the next is computed: the class sees it appear.
        opt.layerDone = {};
        auto tokens = pictureTokens ? *pictureTokens
                                    : core::streamTokens(m.info(), m.info().segmentStream(), *model->targetTokenizer,
                                                         request.text.toStdString());
        const int typed = static_cast<int>(tokens.size());
        result.capture = core::writeGreedily(
            m, std::move(tokens), request.generate, *model->targetTokenizer, opt,
            [&](const TextCapturePtr& c, int written) {
                auto step = std::make_shared<TextResult>(TextResult{model, c, pictureOver(c), true, written, {}});
                ctx.post([this, step] {
                    m_text = step;
                    emit textReady(step);
                });
            },
            request.text.toStdString());
        result.written = static_cast<int>(result.capture->tokens.size()) - typed;
    } else if (pictureTokens) {
        result.capture = core::captureText(m, std::move(*pictureTokens), opt, request.text.toStdString());
    } else {
        result.capture = request.secondText.isEmpty()
                             ? core::captureText(m, *model->targetTokenizer, request.text.toStdString(), opt)
                             : core::captureTextPair(m, *model->tokenizer, request.text.toStdString(),
                                                     request.secondText.toStdString(), opt);
    }
    result.alignmentHeads = core::rankAlignmentHeads(*result.capture, 0);
    result.image = pictureOver(result.capture);
}

void ComputeController::requestGrid(const ViewSelection& selection)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    submit<widgets::GridData>(
        JobKind::Grid, {},
        [this, text, selection](const JobContext& ctx) {
            // Quick grids say nothing; one that takes a while (many heads of a long text) reports its heads.
            QElapsedTimer clock;
            clock.start();
            return buildGrid(*text->capture, text->model->displayName, selection, &ctx.stop(), [&](int done, int total) {
                if (clock.elapsed() >= 250 && done < total)
                    ctx.post([this, done, total] { emit jobProgress(JobKind::Grid, jobName(JobKind::Grid), done, total); });
            }, text->model->targetTokenizer.get());
        },
        [this](widgets::GridDataPtr g) { emit gridReady(g); });
}

void ComputeController::requestThumbnails(const ViewSelection& selection)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    submit<widgets::HeadThumbnails>(
        JobKind::Thumbnails, {},
        [text, selection](const JobContext&) {
            return text->image && !text->image->inPrompt() ? makeImageThumbnails(*text->capture, text->image->rows, text->image->cols,
                                                     text->image->specialTokens)
                               : makeThumbnails(*text->capture, selection);
        },
        [this](widgets::HeadThumbnailsPtr t) { emit thumbnailsReady(t); });
}

void ComputeController::requestTextProfile(const std::string& profiles, const std::optional<core::BandSplit>& bands)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    // On the background lane: a long text's profile recomputes every head, and must not hold up the grid.
    submit<core::ScanResult>(
        JobKind::TextProfile, {},
        [text, profiles, bands](const JobContext& ctx) {
            return std::make_shared<const core::ScanResult>(
                core::relposFromCapture(*text->capture, profiles, &ctx.stop(), bands ? &*bands : nullptr));
        },
        [this](ScanResultPtr r) { emit textProfileReady(r); });
}

void ComputeController::scanCorpus(const ScanRequest& request)
{
    if (!m_model) {
        emit jobFailed({JobKind::Scan, jobName(JobKind::Scan), tr("No model is loaded."), core::ErrorCode::BadInput});
        return;
    }
    const ModelBundlePtr model = m_model;
    submit<core::ScanResult>(
        JobKind::Scan, tr("Scanning…"),
        [this, model, request](const JobContext& ctx) {
            core::ScanChoices choices;
            choices.memLen = request.memLen;
            choices.segmentLen = request.segmentLen;
            choices.maxTokens = request.maxTokens;
            choices.terms = request.terms.toStdString();
            choices.bands = request.bands;
            core::ScanOptions opt = core::scanOptionsFor(model->info(), choices);
            opt.stop = &ctx.stop();
            QElapsedTimer progressClock, partialClock;
            progressClock.start();
            partialClock.start();
            // Throttled: about ten progress reports and one partial heatmap a second.
            opt.progress = [&](std::int64_t done, std::int64_t total) {
                if (progressClock.elapsed() >= 100) {
                    progressClock.restart();
                    ctx.post([this, done, total] { emit jobProgress(JobKind::Scan, jobName(JobKind::Scan), done, total); });
                }
            };
            opt.partial = [&](const core::ScanResult& r) {
                if (partialClock.elapsed() >= 1000) {
                    partialClock.restart();
                    auto copy = std::make_shared<const core::ScanResult>(r);
                    ctx.post([this, copy] { emit scanPartial(copy); });
                }
            };
            const auto& m = *model->loaded.model;
            auto result = request.textFile.isEmpty()
                              ? core::scanText(m, *model->tokenizer, request.text.toStdString(), opt)
                              : core::scanTextFile(m, *model->tokenizer, request.textFile.toStdString(), opt);
            if (request.textFile.isEmpty())
                result.metadata["text"] = request.textName.isEmpty() ? "text" : request.textName.toStdString();
            return std::make_shared<const core::ScanResult>(std::move(result));
        },
        [this](ScanResultPtr r) { emit scanFinished(r); });
}

void ComputeController::compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens)
{
    compareModels(ComparisonRequest{specs, text, layer, maxTokens});
}

void ComputeController::compareModels(const ComparisonRequest& request)
{
    const auto cache = m_compareCache;
    const auto dirs = m_builtinDirs;
    submit<widgets::ComparisonData>(
        JobKind::Comparison, tr("Comparing models…"),
        [request, cache, dirs](const JobContext&) {
            std::vector<ModelBundlePtr> models;
            for (const QString& spec : request.specs) {
                auto& bundle = (*cache)[spec];
                if (!bundle)
                    bundle = loadBundle(spec, dirs);
                models.push_back(bundle);
            }
            return buildComparison(models, request.text, request.layer, request.maxTokens);
        },
        [this](widgets::ComparisonPtr d) { emit comparisonReady(d); });
}

namespace {
// Progress of an analysis, about ten times a second.
std::function<void(int, int)> throttled(const JobContext& ctx, ComputeController* c, const QString& what)
{
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    return [&ctx, c, what, clock](int done, int total) {
        if (clock->elapsed() >= 100 || done == total) {
            clock->restart();
            ctx.post([c, kind = ctx.kind(), what, done, total] { emit c->jobProgress(kind, what, done, total); });
        }
    };
}
} // namespace

void ComputeController::requestAtlas(ScanResultPtr scan)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const auto cache = m_induction;
    const QString what = jobName(JobKind::Atlas);
    submit<AtlasResult>(
        JobKind::Atlas, tr("Computing the head atlas…"),
        [this, text, scan, cache, what](const JobContext& ctx) {
            const auto& capture = *text->capture;
            const auto& model = *text->model->loaded.model;
            auto progress = throttled(ctx, this, what);
            auto r = std::make_shared<AtlasResult>();
            r->source = scan && scan->metadata.count("text") ? tr("corpus scan of %1").arg(QString::fromStdString(scan->metadata.at("text")))
                                                             : tr("current text");
            core::AtlasRecipe recipe; // the one recipe (analysis/atlas_recipe.h); induction kept per model
            recipe.profile = scan;
            recipe.capture = &capture;
            recipe.tokenizer = text->model->tokenizer.get();
            recipe.knownInduction = cache->model == &model ? &cache->scores : nullptr;
            auto made = core::atlasOfText(model, recipe, &ctx.stop(), progress);
            if (!made.profile)
                r->source = tr("current text (an encoder: no distance profiles)");
            r->atlas = std::move(made.atlas);
            for (const auto& rule : model.info().layerRules)
                r->windows.push_back(rule.window);
            if (!model.info().can.image) {
                cache->scores = std::move(made.induction);
                cache->model = &model;
            }
            if (made.profile) {
                r->distances = core::headDistances(*made.profile);
                r->order = core::clusterOrder(r->distances, made.profile->layers * made.profile->heads);
            }
            return std::shared_ptr<const AtlasResult>(r);
        },
        [this](AtlasResultPtr r) { emit atlasReady(r); });
}

void ComputeController::requestMaskedFills(int k)
{
    if (!m_text || !m_text->model->info().can.maskedTokens)
        return;
    const TextResultPtr text = m_text;
    submit<MaskedFillResult>(
        JobKind::MaskedFills, {},
        [text, k](const JobContext&) {
            auto r = std::make_shared<MaskedFillResult>();
            r->text = text;
            r->fills = core::maskedFills(*text->model->loaded.model, *text->capture, k);
            for (const auto& f : r->fills) {
                QStringList l;
                for (const auto& p : f.top)
                    l << QString::fromStdString(text->model->tokenizer->pieceOf(p.id));
                r->labels.push_back(l);
            }
            return std::shared_ptr<const MaskedFillResult>(r);
        },
        [this](MaskedFillResultPtr r) { emit maskedFillsReady(r); });
}

void ComputeController::requestNextToken(int position)
{
    if (!m_text || !m_text->model->info().can.nextTokenLoss)
        return;
    const TextResultPtr text = m_text;
    submit<NextTokenResult>(
        JobKind::NextToken, {},
        [text, position](const JobContext& ctx) {
            const auto& tokens = text->capture->tokens;
            auto r = std::make_shared<NextTokenResult>();
            r->text = text;
            r->position = position >= 0 ? std::min(position, static_cast<int>(tokens.size()) - 1)
                                        : static_cast<int>(tokens.size()) - 1;
            r->logits = core::nextTokenLogits(*text->model->loaded.model, *text->capture, r->position, &ctx.stop());
            if (r->position + 1 < static_cast<int>(tokens.size()))
                r->actual = tokens[static_cast<std::size_t>(r->position) + 1].id;
            return std::shared_ptr<const NextTokenResult>(r);
        },
        [this](NextTokenResultPtr r) { emit nextTokenReady(r); });
}

void ComputeController::requestRouting(int segment)
{
    if (!m_text || !m_text->model->info().can.experts)
        return;
    const TextResultPtr text = m_text;
    submit<RoutingResult>(
        JobKind::Routing, tr("Routing the text through the experts…"),
        [text, segment](const JobContext& ctx) {
            auto r = std::make_shared<RoutingResult>();
            r->text = text;
            r->segment = segment >= 0 ? segment : autoSegment(*text->capture);
            r->routing = core::textRouting(*text->model->loaded.model, *text->capture, r->segment, &ctx.stop());
            return std::shared_ptr<const RoutingResult>(r);
        },
        [this](RoutingResultPtr r) { emit routingReady(r); });
}

void ComputeController::requestExplanation(int layer, int head, std::int64_t position)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    submit<ExplanationResult>(
        JobKind::Explanation, tr("Following the head's computation…"),
        [text, layer, head, position](const JobContext&) {
            return std::make_shared<const ExplanationResult>(
                ExplanationResult{text, core::explainHead(*text->model->loaded.model, *text->capture, layer, head, position)});
        },
        [this](ExplanationResultPtr r) { emit explanationReady(r); });
}

void ComputeController::requestImageRollout()
{
    if (!m_text || !m_text->image)
        return;
    const TextResultPtr text = m_text;
    submit<ImageRollout>(
        JobKind::ImageRollout, tr("Computing the attention rollout…"),
        [text](const JobContext& ctx) {
            return std::make_shared<const ImageRollout>(
                ImageRollout{text, core::attentionRollout(*text->capture, 0, &ctx.stop())});
        },
        [this](ImageRolloutPtr r) { emit imageRolloutReady(r); });
}

void ComputeController::requestLogitLens(int segment)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Lens);
    submit<PaperFigure>(
        JobKind::Lens, tr("Computing the logit lens…"),
        [text, segment](const JobContext& ctx) {
            const auto& capture = *text->capture;
            const int s = segment >= 0 ? segment : autoSegment(capture);
            const auto lens = core::logitLens(*text->model->loaded.model, capture, s, core::kLensTopK, &ctx.stop());
            return std::make_shared<const PaperFigure>(
                logitLensFigure(lens, capture, *text->model->tokenizer, text->model->displayName));
        },
        [this](FigurePtr f) { emit lensReady(f); });
}

void ComputeController::requestLogitAttribution(int position)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Attribution);
    submit<PaperFigure>(
        JobKind::Attribution, tr("Attributing the logit to heads…"),
        [text, position](const JobContext& ctx) {
            const auto& capture = *text->capture;
            const int p = position >= 0 ? position : static_cast<int>(capture.tokens.size()) - 1;
            const auto a = core::logitAttribution(*text->model->loaded.model, capture, p, -1, &ctx.stop());
            return std::make_shared<const PaperFigure>(
                logitAttributionFigure(a, capture, *text->model->tokenizer, text->model->displayName));
        },
        [this](FigurePtr f) { emit attributionReady(f); });
}

void ComputeController::requestSurprisal()
{
    if (!m_text || !m_text->model->info().can.causal || !m_text->model->info().can.nextTokenLoss)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Surprisal);
    submit<core::Surprisal>(
        JobKind::Surprisal, tr("Computing each token's surprisal…"),
        [text](const JobContext& ctx) {
            return std::make_shared<const core::Surprisal>(
                core::tokenSurprisal(*text->model->loaded.model, *text->capture, &ctx.stop()));
        },
        [this, text](std::shared_ptr<const core::Surprisal> s) { emit surprisalReady(text, s); });
}

namespace {
QString methodTitle(core::QkMethod method)
{
    switch (method) {
    case core::QkMethod::Tsne: return ComputeController::tr("t-SNE");
    case core::QkMethod::Umap: return ComputeController::tr("UMAP");
    case core::QkMethod::Pca: break;
    }
    return ComputeController::tr("PCA");
}

// Embeds a head's vectors into the plot's data `out` (whose points, labels and title are filled): AttentionViz's
// normalisation, the method, the exports and the trust note. `partial`, when given, receives the t-SNE or UMAP picture
// every few dozen steps while it converges.
widgets::QkScatterPtr embedIntoScatter(std::shared_ptr<widgets::QkScatterData> out, core::QkVectors v,
                                       const std::vector<core::Token>& tokens, core::QkMethod method,
                                       const core::StopToken* stop,
                                       const std::function<void(widgets::QkScatterPtr)>& partial,
                                       const std::function<void(int, int)>& steps = {})
{
    core::normaliseQk(v);
    core::TsneOptions o;
    core::EmbeddingProgress progress;
    if (steps && method != core::QkMethod::Pca) // the neighbour search first: the bar starts at 0
        steps(0, method == core::QkMethod::Tsne ? o.iterations : core::umapEpochs(v.nq() + v.nk()));
    if (partial)
        progress = [&](int done, int total, const std::vector<float>& xy) {
            if (steps)
                steps(done, total);
            auto now = std::make_shared<widgets::QkScatterData>(*out);
            now->x.resize(xy.size() / 2);
            now->y.resize(xy.size() / 2);
            for (std::size_t i = 0; i < now->x.size(); ++i) {
                now->x[i] = xy[i * 2];
                now->y[i] = xy[i * 2 + 1];
            }
            now->note = ComputeController::tr("%1 converging: step %2 of %3…").arg(methodTitle(method)).arg(done).arg(total);
            now->partial = true;
            partial(std::move(now));
        };
    const auto e = core::embedQk(v, method, o, stop, progress);
    out->x = e.x;
    out->y = e.y;
    out->csv = core::qkCsv(v, e, tokens);
    out->json = core::qkJson(v, e, tokens);
    out->note = ComputeController::tr("Near = high dot product? Per query, closeness and q·k correlate at r = %1")
                    .arg(e.correlation, 0, 'f', 2) +
                (method == core::QkMethod::Tsne ? ComputeController::tr(" · KL %1").arg(e.klDivergence, 0, 'f', 2) : QString());
    return out;
}

// The points' token positions and texts, queries first; Transformer-XL's relative encodings are no tokens (position
// -1, named by their distance).
void nameQkPoints(widgets::QkScatterData& out, const core::QkVectors& v, const std::vector<core::Token>& tokens)
{
    out.queries = v.nq();
    auto tokenText = [&](std::int64_t p) { return QString::fromStdString(tokens[static_cast<std::size_t>(p)].text); };
    for (auto p : v.queryPositions) {
        out.positions.push_back(static_cast<int>(p));
        out.labels << tokenText(p);
    }
    for (auto p : v.keyPositions) {
        out.positions.push_back(v.keysAreDistances ? -1 : static_cast<int>(p));
        out.labels << (v.keysAreDistances ? ComputeController::tr("R at distance %1").arg(p) : tokenText(p));
    }
    if (v.keysAreDistances)
        out.keyName = ComputeController::tr("R (relative encoding, by distance)");
}

// "model · layer L · head H · method of `points`": every query-key plot's title.
QString qkTitle(const TextResult& result, int layer, int head, core::QkMethod method, const QString& points)
{
    return ComputeController::tr("%1 · layer %2 · head %3 · %4 of %5")
        .arg(result.model->displayName)
        .arg(layer + 1)
        .arg(head + 1)
        .arg(methodTitle(method), points);
}

// One head's query-key space of the text as the plot shows it (both the single view and the all-heads matrix), with
// each query's strongest visible keys for the lines from a selected query.
widgets::QkScatterPtr qkScatter(const TextResult& result, int s, int layer, int head, core::QkMethod method,
                                const core::StopToken* stop,
                                const std::function<void(widgets::QkScatterPtr)>& partial = {})
{
    const auto& capture = *result.capture;
    auto v = core::headQkVectors(capture, s, layer, head);
    auto out = std::make_shared<widgets::QkScatterData>();
    out->topKeys = core::strongestKeys(v, capture.segment(s));
    nameQkPoints(*out, v, capture.tokens);
    out->title = qkTitle(result, layer, head, method, ComputeController::tr("%1 queries and %2 keys").arg(v.nq()).arg(v.nk()));
    return embedIntoScatter(std::move(out), std::move(v), capture.tokens, method, stop, partial);
}

// Transformer-XL's position part of a head: queries (q + v) against the relative encodings R, one point per distance
// (no token: position -1, named by the distance).
widgets::QkScatterPtr positionQkScatter(const TextResult& result, int s, int layer, int head, core::QkMethod method,
                                        const core::StopToken* stop,
                                        const std::function<void(widgets::QkScatterPtr)>& partial)
{
    const auto& capture = *result.capture;
    auto v = core::headPositionVectors(capture, s, layer, head);
    auto out = std::make_shared<widgets::QkScatterData>();
    nameQkPoints(*out, v, capture.tokens);
    out->title = qkTitle(result, layer, head, method,
                         ComputeController::tr("%1 queries (q + v) and the relative encodings R of %2 distances")
                             .arg(v.nq())
                             .arg(v.nk()));
    return embedIntoScatter(std::move(out), std::move(v), capture.tokens, method, stop, partial);
}

// The same head over the first kMaxCorpusQkTokens tokens of a corpus file (no strongest-key lines: a query sees
// thousands of keys across segments).
widgets::QkScatterPtr corpusQkScatter(const TextResult& result, const QString& corpus, int layer, int head,
                                      core::QkMethod method, const JobContext& ctx, ComputeController* controller,
                                      const std::function<void(widgets::QkScatterPtr)>& partial)
{
    const std::string text = core::readTextFile(corpus.toStdString());
    // A prefix generous enough for the token budget (a token is rarely over 12 bytes), not the whole file.
    auto tokens = result.model->tokenizer->encodeWithSpecial(
        std::string_view(text).substr(0, static_cast<std::size_t>(core::kMaxCorpusQkTokens) * 16));
    if (static_cast<int>(tokens.size()) > core::kMaxCorpusQkTokens)
        tokens.resize(static_cast<std::size_t>(core::kMaxCorpusQkTokens));
    const QString name = QFileInfo(corpus).fileName();
    const auto running = throttled(ctx, controller, ComputeController::tr("%1 through the model").arg(name));
    auto v = core::corpusQkVectors(*result.model->loaded.model, tokens, layer, head, &ctx.stop(),
                                   [&](double f) { running(static_cast<int>(f * 100), 100); });
    auto out = std::make_shared<widgets::QkScatterData>();
    out->fromText = false;
    nameQkPoints(*out, v, tokens);
    out->title = qkTitle(result, layer, head, method,
                         ComputeController::tr("corpus %1 (%2 tokens)").arg(name).arg(tokens.size()));
    return embedIntoScatter(std::move(out), std::move(v), tokens, method, &ctx.stop(), partial,
                            throttled(ctx, controller, ComputeController::tr("%1 of %2").arg(methodTitle(method), name)));
}
} // namespace

void ComputeController::requestQkSpace(const QkRequest& request)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = request.corpus.isEmpty()
                             ? tr("Computing the query-key space (%1)…").arg(methodTitle(request.method))
                             : tr("Query-key space of %1 (%2)").arg(QFileInfo(request.corpus).fileName(), methodTitle(request.method));
    submit<widgets::QkScatterData>(
        JobKind::QkSpace, what,
        [this, text, request](const JobContext& ctx) {
            // t-SNE and UMAP are drawn as they converge (posted only while this request is the current one).
            auto partial = [this, &ctx](widgets::QkScatterPtr now) { ctx.post([this, now] { emit qkReady(now); }); };
            if (!request.corpus.isEmpty())
                return corpusQkScatter(*text, request.corpus, request.layer, request.head, request.method, ctx, this, partial);
            const int s = request.segment >= 0 ? request.segment : autoSegment(*text->capture);
            if (request.positionPart)
                return positionQkScatter(*text, s, request.layer, request.head, request.method, &ctx.stop(), partial);
            return qkScatter(*text, s, request.layer, request.head, request.method, &ctx.stop(), partial);
        },
        [this](widgets::QkScatterPtr d) { emit qkReady(d); });
}

void ComputeController::requestQkMatrix(int segment, core::QkMethod method)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = tr("Query-key space of every head");
    submit<widgets::QkMatrixData>(
        JobKind::QkSpace, tr("Computing every head's query-key space…"),
        [this, text, segment, method, what](const JobContext& ctx) {
            const int s = segment >= 0 ? segment : autoSegment(*text->capture);
            const auto& info = text->model->info();
            auto out = std::make_shared<widgets::QkMatrixData>();
            out->layers = info.layers;
            out->heads = info.heads;
            out->title = tr("%1 · every head's query-key space (%2), segment %3 · click a head to open it")
                             .arg(text->model->displayName, methodTitle(method))
                             .arg(s + 1);
            const int total = info.layers * info.heads;
            const auto report = throttled(ctx, this, what);
            for (int l = 0; l < info.layers; ++l)
                for (int h = 0; h < info.heads; ++h) {
                    out->cells.push_back(qkScatter(*text, s, l, h, method, &ctx.stop()));
                    report(static_cast<int>(out->cells.size()), total);
                }
            return std::shared_ptr<const widgets::QkMatrixData>(std::move(out));
        },
        [this](widgets::QkMatrixPtr d) { emit qkMatrixReady(d); });
}

void ComputeController::requestRollout(int segment, int stream)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Rollout);
    submit<PaperFigure>(
        JobKind::Rollout, tr("Computing the attention rollout…"),
        [this, text, segment, stream, what](const JobContext& ctx) {
            const auto& capture = *text->capture;
            const int seg = segment < 0 ? autoSegment(capture) : segment;
            const auto grid = core::attentionRollout(capture, seg, &ctx.stop(), throttled(ctx, this, what), stream);
            return std::make_shared<const PaperFigure>(rolloutFigure(grid, capture, text->model->displayName));
        },
        [this](FigurePtr f) { emit rolloutReady(f); });
}

QString ComputeController::setAudio(const QString& file)
{
    if (!m_model)
        return tr("Open a speech model first.");
    try {
        m_audioFeatures = core::audioFeaturesOfFile(*m_model->loaded.model, m_model->loaded.folder, file.toStdString());
        m_audio = file;
        return {};
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

void ComputeController::requestWordTimings()
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    submit<PaperFigure>(
        JobKind::WordTimings, tr("Timing the words…"),
        [text](const JobContext&) {
            const auto& capture = *text->capture;
            const auto& model = *text->model;
            if (!capture.audio)
                throw core::Error(core::ErrorCode::BadInput, "open a recording first (File > Open Audio…)");
            const auto settings = core::readSpeechSettings(model.loaded.folder, model.info());
            const auto transcript = core::transcriptOf(idsOf(capture.tokens), {}, settings);
            const auto t = core::timeTranscript(*model.loaded.model, capture.audio, transcript, settings,
                                                settings.alignmentHeads, model.tokenizer.get());
            return std::make_shared<const PaperFigure>(wordTimingFigure(t.words, t.ranking, settings.alignmentHeads,
                                                                        t.run, *model.tokenizer, model.displayName));
        },
        [this](FigurePtr f) { emit wordTimingsReady(f); });
}

void ComputeController::requestAblation()
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Ablation);
    submit<PaperFigure>(
        JobKind::Ablation, tr("Ablating every head…"),
        [this, text, what](const JobContext& ctx) {
            const auto& capture = *text->capture;
            std::vector<std::int32_t> ids = idsOf(capture.tokens);
            const auto r = core::headAblation(*text->model->loaded.model, ids, capture.segmentLen, &ctx.stop(),
                                              throttled(ctx, this, what));
            return std::make_shared<const PaperFigure>(ablationFigure(r, text->model->displayName, static_cast<int>(ids.size())));
        },
        [this](FigurePtr f) { emit ablationReady(f); });
}

void ComputeController::dropText()
{
    // Whatever is still running for the old text is stopped and its results never delivered.
    job(JobKind::Text).invalidate();
    invalidate(Lifetime::Text);
    m_text.reset();
}

namespace {

// A patching request's prompts as the model reads them, with their tokens' labels for the heatmap.
std::shared_ptr<PatchingResult> tokenizedPatching(const ModelBundlePtr& model, const PatchingRequest& request)
{
    auto r = std::make_shared<PatchingResult>();
    r->model = model;
    r->request = request;
    const auto& tok = *model->tokenizer;
    for (const auto& t : tok.encodeWithSpecial(request.clean.toStdString())) {
        r->cleanIds.push_back(t.id);
        r->cleanTokens << tokenLabel(t);
    }
    for (const auto& t : tok.encodeWithSpecial(request.corrupt.toStdString())) {
        r->corruptIds.push_back(t.id);
        r->corruptTokens << tokenLabel(t);
    }
    const std::string lengths = core::promptLengthProblem(tok, r->cleanIds, r->corruptIds);
    if (!lengths.empty())
        throw core::Error(core::ErrorCode::BadInput, lengths);
    return r;
}

core::PatchMetric logitDifference(const core::Tokenizer& tok, const PatchingRequest& request)
{
    core::PatchMetric m;
    m.answer = core::answerToken(tok, request.answer.toStdString());
    m.wrong = core::answerToken(tok, request.wrong.toStdString());
    return m;
}

// The scores of a request's patching (activation patching, or path patching from its senders), progress as cells finish.
core::PatchResult runPatching(const PatchingResult& r, const core::PatchProgress& progress, const core::StopToken* stop)
{
    const auto& model = *r.model->loaded.model;
    const auto& request = r.request;
    if (request.mode == PatchingRequest::Mode::Path) {
        core::PathPatchRequest p;
        p.clean = r.cleanIds;
        p.corrupt = r.corruptIds;
        p.noising = request.noising;
        p.metric = logitDifference(*r.model->tokenizer, request);
        p.input = request.receiverInput;
        p.receivers = core::layerDotUnits(request.receivers.toStdString(), QObject::tr("Receivers").toStdString());
        p.receiverHeadOnly = request.receiverHeadOnly;
        p.freezeMlps = request.freezeMlps;
        return core::pathPatchSenders(model, p, core::layerDotUnits(request.senders.toStdString(), QObject::tr("Senders").toStdString()),
                                      progress, stop);
    }
    core::PatchRequest p;
    p.clean = r.cleanIds;
    p.corrupt = r.corruptIds;
    p.component = request.component;
    p.perPosition = request.perPosition;
    p.noising = request.noising;
    p.coarseToFine = request.coarseToFine;
    p.metric = logitDifference(*r.model->tokenizer, request);
    return core::patchActivations(model, p, progress, stop);
}

} // namespace

void ComputeController::requestPatching(const PatchingRequest& request)
{
    if (!m_model)
        return;
    const ModelBundlePtr model = m_model;
    const QString what = jobName(JobKind::Patching);
    submit<PatchingResult>(
        JobKind::Patching, tr("Patching…"),
        [this, model, request, what](const JobContext& ctx) {
            const auto r = tokenizedPatching(model, request);
            // Partial heatmaps at most five times a second, and progress with them.
            auto clock = std::make_shared<QElapsedTimer>();
            clock->start();
            auto planned = std::make_shared<int>(0);
            auto progress = [&ctx, this, r, clock, planned, what](const core::PatchResult& partial, int done, int total) {
                *planned = total;
                if (clock->elapsed() < 200 && done != total)
                    return;
                clock->restart();
                auto copy = std::make_shared<PatchingResult>(*r);
                copy->result = partial;
                copy->running = done < total;
                copy->done = done;
                copy->total = total;
                ctx.post([this, copy, what, done, total] {
                    emit jobProgress(JobKind::Patching, what, done, total);
                    emit patchingUpdated(copy);
                });
            };
            r->result = runPatching(*r, progress, &ctx.stop());
            // Path patching runs only its senders' cells.
            r->total = request.mode == PatchingRequest::Mode::Path ? std::max(*planned, r->result.runs)
                                                                    : static_cast<int>(r->result.scores.size());
            r->done = r->result.partial ? r->result.runs : r->total;
            return std::shared_ptr<const PatchingResult>(r);
        },
        [this](PatchingResultPtr r) { emit patchingUpdated(r); });
}

void ComputeController::requestPromptPair(const PatchingResultPtr& patching, int layer, int head)
{
    if (!patching)
        return;
    submit<PaperFigure>(
        JobKind::PromptPair, tr("Capturing both prompts…"),
        [patching, layer, head](const JobContext&) {
            const auto& model = *patching->model;
            std::vector<widgets::GridDataPtr> grids;
            for (const QString& text : {patching->request.clean, patching->request.corrupt}) {
                const auto capture = core::captureText(*model.loaded.model, *model.tokenizer, text.toStdString(), {});
                ViewSelection s;
                s.site = layer;
                s.heads = {head};
                grids.push_back(buildGrid(*capture, model.displayName, s));
            }
            return std::make_shared<const PaperFigure>(promptPairFigure(grids[0], grids[1], model.displayName, layer, head));
        },
        [this](FigurePtr f) { emit promptPairReady(f); });
}

void ComputeController::requestHeadContexts(const HeadContextsRequest& request)
{
    if (!m_model)
        return;
    const ModelBundlePtr model = m_model;
    const QString what = jobName(JobKind::HeadContexts);
    submit<HeadContextsResult>(
        JobKind::HeadContexts, tr("Reading every head over the corpus…"),
        [this, model, request, what](const JobContext& ctx) {
            const std::string text = request.corpusPath.isEmpty() ? request.text.toStdString()
                                                                  : core::readTextFile(request.corpusPath.toStdString());
            auto r = std::make_shared<HeadContextsResult>();
            r->model = model;
            r->request = request;
            r->contexts = core::headContexts(*model->loaded.model, model->tokenizer->encodeWithSpecial(text), request.options,
                                             &ctx.stop(), throttled(ctx, this, what));
            return std::shared_ptr<const HeadContextsResult>(r);
        },
        [this](HeadContextsResultPtr r) { emit headContextsReady(r); });
}

void ComputeController::requestSentences(int layer, const std::vector<int>& heads)
{
    if (!m_text)
        return;
    const TextResultPtr text = m_text;
    const QString what = jobName(JobKind::Sentences);
    submit<PaperFigure>(
        JobKind::Sentences, tr("Reading the text by sentences…"),
        [this, text, layer, heads, what](const JobContext& ctx) {
            const auto& capture = *text->capture;
            const auto& model = *text->model->loaded.model;
            const int segment = autoSegment(capture);
            const auto receivers = core::receiverHeads(capture, segment, core::kReceiverProximity, &ctx.stop(),
                                                      throttled(ctx, this, what));
            std::optional<core::SentenceSuppression> suppression;
            if (model.info().can.interventions && capture.segments.size() == 1)
                suppression = core::sentenceSuppression(model, capture.tokens, &ctx.stop(), throttled(ctx, this, what));
            const QString headName = heads.size() == 1 ? tr("layer %1 head %2").arg(layer + 1).arg(heads.front() + 1)
                                                       : tr("layer %1 (heads averaged)").arg(layer + 1);
            return std::make_shared<const PaperFigure>(sentenceFigure(core::attentionGrid(capture, segment, layer, heads),
                                                                      capture, receivers, suppression,
                                                                      text->model->displayName, headName));
        },
        [this](FigurePtr f) { emit sentencesReady(f); });
}

void ComputeController::cancel()
{
    for (JobTracker& t : m_jobs)
        t.cancel();
}

void ComputeController::cancel(JobKind kind)
{
    job(kind).cancel();
}

} // namespace attnscope::app
