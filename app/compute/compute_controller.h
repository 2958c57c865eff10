// GUI-side handle of the compute threads. Every request is a job of one kind of the job table (compute/job_kinds.h)
// submitted through one mechanism: the newest request of a kind wins, an older one is stopped, and only the newest
// result of each kind is delivered, on the GUI thread, as a typed signal; every failure of every kind comes as one
// jobFailed. The table's lane, lifetime and busy columns decide where a kind runs, when the text or the model makes
// it out of date, and whether the status bar says busy; cancel() reaches every kind. Lives on the GUI thread.
#pragma once

#include "analysis/qk_space.h"
#include "comparison_data.h"
#include "compute/compute_lane.h"
#include "compute/job_tracker.h"
#include "data/requests.h"
#include "data/results.h"
#include "grid_data.h"
#include "qk_scatter_data.h"
#include "thumbnail_data.h"
#include "views/view_selection.h"

#include <QObject>
#include <vector>
#include <QStringList>
#include <map>
#include <future>
#include <optional>

namespace attnscope::core {
struct Surprisal;
}

namespace attnscope::app {

class ComputeController : public QObject {
    Q_OBJECT
public:
    explicit ComputeController(std::vector<std::string> builtinDirs, QObject* parent = nullptr);
    ~ComputeController() override;

    void loadModel(const QString& spec);
    // A new text request stops and supersedes the running one.
    // `secondText`: sentence B of a pair (encoders), empty for one text. `preview`: the grid on screen; when its layer
    // is done while the run still has a while to go (a big model), its grid comes as gridPreviewReady first.
    void runText(const QString& text, const QString& secondText = {}, int segmentLen = 0, int memLen = -1,
                 std::optional<ViewSelection> preview = {});
    // The same with everything a text request can carry: an encoder-decoder model's source, and a greedy generation
    // after the text (each written token delivered as a textReady whose result is running).
    void runText(const TextRequest& request, std::optional<ViewSelection> preview = {});
    // A vision-language model's pictures, read with every text run from now on (until another model opens).
    void setPictures(const QStringList& files) { m_pictures = files; }
    const QStringList& pictures() const { return m_pictures; }
    // A speech model's recording, heard with every text run from now on (until another model opens): read and made
    // into features at once (a few hundredths of a second), so a file that is no recording is refused here, by name.
    // Returns "" or the error.
    QString setAudio(const QString& file);
    const QString& audio() const { return m_audio; }
    // Views of the newest text result (nothing happens before there is one).
    void requestGrid(const ViewSelection& selection);
    void requestThumbnails(const ViewSelection& selection); // its segment, terms and bands
    // Relative-position profile of the current text: full attention and these extra profiles ("a,b,c,d", "1,2,3", ...)
    // with the rotary bands of `bands`.
    void requestTextProfile(const std::string& profiles, const std::optional<core::BandSplit>& bands = {});
    // Corpus scan of a file (or of `request.text` when the path is empty); a new scan stops a running one.
    void scanCorpus(const ScanRequest& request);
    // Analyses of the current text, on the background lane with progress (jobProgress) and Cancel:
    // the head atlas (scan columns from `scan`, or from the text's own profile when null), attention rollout of a
    // segment (-1: the automatic one), head ablation (one forward per head).
    void requestAtlas(ScanResultPtr scan);
    void requestRollout(int segment, int stream = -1); // stream -1: the segment stream (the text, a target)
    // A speech model's transcript timed word by word over its recording (OpenAI's recipe over the alignment heads)
    // and every decoder head ranked by how well it aligns (wordTimingsReady; background lane).
    void requestWordTimings();
    void requestAblation();
    // An encoder's top fillers of every [MASK] in the current text (interactive lane: one forward per segment).
    void requestMaskedFills(int k = 10);
    // A causal model's next-token logits after token `position` of the current text (-1: the last token).
    void requestNextToken(int position);
    // A mixture-of-experts model's routing of the current text's segment (-1: the automatic one), background lane.
    void requestRouting(int segment);
    // How head `head` of `layer` computes the row of token `position` (all from 0) of the shown text.
    void requestExplanation(int layer, int head, std::int64_t position);
    // A vision model's picture on screen: attention rollout over its tokens for the Image dock (imageRolloutReady).
    void requestImageRollout();
    // The logit lens of a segment (-1: the automatic one), on the background lane with progress and Cancel.
    void requestLogitLens(int segment);
    // Direct logit attribution at token `position` (-1: the text's last) for the token that follows it.
    void requestLogitAttribution(int position);
    // Each token's surprisal and the perplexity of the current text (causal models with a head).
    void requestSurprisal();
    // One head's query-key space in the segment, over the first kMaxCorpusQkTokens tokens of a corpus file when the
    // request names one (progress reported).
    void requestQkSpace(const QkRequest& request);
    // Every head's query-key space in the segment, with progress (the all-heads matrix).
    void requestQkMatrix(int segment, core::QkMethod method);
    // Activation patching of the loaded decoder (background lane): partial heatmaps as cells finish (patchingUpdated
    // with running set), then the whole one; Cancel keeps what was measured.
    void requestPatching(const PatchingRequest& request);
    // One head's attention on both prompts of a patching result, side by side (promptPairReady).
    void requestPromptPair(const PatchingResultPtr& patching, int layer, int head);
    // The current text's sentences: the shown head between sentences, receiver heads, and (decoders) attention
    // suppression of each sentence (sentencesReady; background lane, progress, Cancel).
    void requestSentences(int layer, const std::vector<int>& heads);
    // Every head over a corpus: contexts by a statistic and per-head metrics (background lane, progress, Cancel).
    void requestHeadContexts(const HeadContextsRequest& request);
    void compareModels(const ComparisonRequest& request);
    // Compatibility form used by the window.
    void compareModels(const QStringList& specs, const QString& text, int layer, int maxTokens = 24);
    void cancel();              // stops every running job (each reports a cancelled JobFailure; partial results kept)
    void cancel(JobKind kind);  // stops the running job of one kind (a window's own Cancel button)
    void dropText(); // the text was emptied: stop and forget everything computed for the old one (scans go on)

    // runText's preview grid comes only when the run has taken this long by the time its layer is done (a small
    // model's whole result is a blink away); 100 ms unless a test sets it.
    void setPreviewAfter(int milliseconds) { m_previewAfterMs = milliseconds; }

    const ModelBundlePtr& model() const { return m_model; }
    const TextResultPtr& textResult() const { return m_text; }
    bool busy() const;
    // No request of any kind is running or waiting to be delivered (tests wait for this).
    bool idle() const;
    bool scanning() const { return job(JobKind::Scan).running(); }
    // Test hook: holds both compute threads until `release` is ready (so requests queue behind it).
    void holdLanesUntil(std::shared_future<void> release);
    const std::vector<std::string>& builtinDirs() const { return m_builtinDirs; }

signals:
    // Every job of every kind that ends without a result (failed or cancelled), in one shape: the kind says whose.
    void jobFailed(const attnscope::app::JobFailure& failure);
    void modelLoaded(attnscope::app::ModelBundlePtr model);
    void textReady(attnscope::app::TextResultPtr result);
    void gridReady(attnscope::widgets::GridDataPtr grid);
    // The grid of runText's `preview` selection for the new text, before the text's other layers are done (textReady
    // and the grid requested then follow).
    void gridPreviewReady(attnscope::widgets::GridDataPtr grid);
    void thumbnailsReady(attnscope::widgets::HeadThumbnailsPtr thumbnails);
    void textProfileReady(attnscope::app::ScanResultPtr profile);
    void busyChanged(bool busy, const QString& what);
    void scanPartial(attnscope::app::ScanResultPtr result);
    void scanFinished(attnscope::app::ScanResultPtr result);
    void atlasReady(attnscope::app::AtlasResultPtr atlas);
    void rolloutReady(attnscope::app::FigurePtr figure);
    void wordTimingsReady(attnscope::app::FigurePtr figure);
    void ablationReady(attnscope::app::FigurePtr figure);
    void lensReady(attnscope::app::FigurePtr figure);
    void attributionReady(attnscope::app::FigurePtr figure);
    void qkReady(attnscope::widgets::QkScatterPtr data);
    void qkMatrixReady(attnscope::widgets::QkMatrixPtr data);
    void surprisalReady(attnscope::app::TextResultPtr text, std::shared_ptr<const attnscope::core::Surprisal> surprisal);
    // Progress of every job that reports it, in one shape, about ten times a second: `done` of `total` (a long text:
    // thousandths of its forward pass; a grid: heads; a scan: tokens; an analysis: its steps). `what`: the kind's
    // name or what exactly runs (a corpus file's name).
    void jobProgress(attnscope::app::JobKind kind, const QString& what, qint64 done, qint64 total);
    void comparisonReady(attnscope::widgets::ComparisonPtr data);
    void maskedFillsReady(attnscope::app::MaskedFillResultPtr result);
    void nextTokenReady(attnscope::app::NextTokenResultPtr result);
    void routingReady(attnscope::app::RoutingResultPtr result);
    void explanationReady(attnscope::app::ExplanationResultPtr result);
    void imageRolloutReady(attnscope::app::ImageRolloutPtr result);
    void patchingUpdated(attnscope::app::PatchingResultPtr result);
    void promptPairReady(attnscope::app::FigurePtr figure);
    void headContextsReady(attnscope::app::HeadContextsResultPtr result);
    void sentencesReady(attnscope::app::FigurePtr figure);

private:
    // The capture a text request makes on its job, into `result`: a vision model's picture, a picture prompt's, a
    // greedy continuation's (each written token posted as a running textReady), a text's or a sentence pair's.
    void captureRequest(const JobContext& ctx, const ModelBundlePtr& model, const TextRequest& request,
                        core::CaptureOptions& opt, TextResult& result);
    // Runs `work` on its kind's lane as the newest job of `kind`; `done` runs on the GUI thread if it is still the
    // newest when it ends, else jobFailed. Every exception stops at the job's boundary and becomes a JobFailure
    // (named `what`, the kind's name when empty). `busyText`: the status bar's words while it runs.
    template <typename T, typename Work, typename Done>
    void submit(JobKind kind, const QString& busyText, Work work, Done done, const QString& what = {});
    JobTracker& job(JobKind kind) { return m_jobs[jobIndex(kind)]; }
    const JobTracker& job(JobKind kind) const { return m_jobs[jobIndex(kind)]; }
    // Stops and forgets every job whose lifetime is at most `lifetime` (Text: only the text's; Model: also the model's).
    void invalidate(Lifetime lifetime);
    void reportBusy(const QString& what = {});

    std::vector<std::string> m_builtinDirs;
    int m_previewAfterMs = 100;
    QStringList m_pictures; // setPictures
    QString m_audio;        // setAudio
    std::shared_ptr<const core::AudioFeatures> m_audioFeatures;
    ModelBundlePtr m_model;
    TextResultPtr m_text;
    std::array<JobTracker, kJobKindCount> m_jobs; // one per row of the job table
    // Induction scores of the loaded model (a generated sequence: the same for every text); background lane only.
    struct InductionCache {
        const void* model = nullptr;
        std::vector<double> scores;
    };
    std::shared_ptr<InductionCache> m_induction = std::make_shared<InductionCache>();
    // Models opened for comparisons, kept for the next one; touched only on the background lane.
    std::shared_ptr<std::map<QString, ModelBundlePtr>> m_compareCache;
    ComputeLane m_interactive{QStringLiteral("attnscope-compute")};
    ComputeLane m_background{QStringLiteral("attnscope-background")};
};

} // namespace attnscope::app
