// Headless export: the same builders and views as the window, drawn off screen.
#include "model/model_loader.h"
#include "headless/headless_export.h"

#include "image/image_capture.h"
#include "image_overlay_view.h"
#include "views/image_views.h"
#include "export/data_export.h"

#include "attention/rotary_bands.h"

#include "attention_grid_view.h"
#include "data/model_bundle.h"
#include "export/data_export.h"
#include "export/figure_export.h"
#include "figures/paper_figure_view.h"
#include "run/text_capture.h"
#include "util/error.h"
#include "util/stop_token.h"
#include "util/text_file.h"
#include "views/grid_builder.h"
#include "run/speech_run.h"
#include "views/analysis_figures.h"
#include "views/patching_figures.h"
#include "run/patch_prompts.h"
#include "export/attention_page.h"
#include "views/paper_figures.h"

#include "analysis/atlas_recipe.h"
#include "analysis/head_ablation.h"
#include "analysis/head_atlas.h"
#include "analysis/qk_space.h"
#include "analysis/rollout.h"
#include "analysis/scan_recipe.h"


#include <QFile>
#include <QFileInfo>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace attnscope::app {

namespace {

// An export's error message becomes the exception the one catch below prints.
void throwIfFailed(const QString& err)
{
    if (!err.isEmpty())
        throw std::runtime_error(err.toStdString());
}

QString textOf(const QCommandLineParser& p, const std::vector<std::string>& dirs)
{
    if (p.isSet("text-file"))
        return QString::fromStdString(core::readTextFile(p.value("text-file").toStdString()));
    return p.isSet("text") ? p.value("text") : builtinSampleText(dirs);
}

int intOption(const QCommandLineParser& p, const char* name, int lo, int hi)
{
    bool ok = false;
    const int v = p.value(name).toInt(&ok);
    if (!ok || v < lo || v > hi)
        throw core::Error(core::ErrorCode::BadInput, std::string("--") + name + " must be a whole number from " +
                                                         std::to_string(lo) + " to " + std::to_string(hi));
    return v;
}

// The scan options a headless export takes from --mem-len, --segment-length and --max-tokens (core/analysis/scan_recipe.h
// fills in the model's defaults and checks them).
core::ScanOptions scanOptionsOf(const QCommandLineParser& p, const core::ModelInfo& info, const std::string& profiles)
{
    core::ScanChoices c;
    if (p.isSet("mem-len"))
        c.memLen = intOption(p, "mem-len", 0, 1 << 20);
    if (p.isSet("segment-length"))
        c.segmentLen = intOption(p, "segment-length", 1, info.maxSegmentLen);
    c.maxTokens = p.isSet("max-tokens") ? p.value("max-tokens").toLongLong() : -1;
    c.terms = profiles;
    return core::scanOptionsFor(info, c);
}

// --paper-figure 5 | 6 | 7: scan the text with memory, then draw the figure from the scan (and, for Fig. 6, from
// the grids of the text's first segments).
void paperFigure(const QCommandLineParser& p, const ModelBundle& bundle, const std::vector<std::string>& dirs)
{
    const int fig = intOption(p, "paper-figure", 5, 7);
    const auto& info = bundle.info();
    const core::ScanOptions opt = scanOptionsOf(p, info, fig == 7 ? "a,b,d" : "");
    const QString text = textOf(p, dirs);
    const auto scan = core::scanText(*bundle.loaded.model, *bundle.tokenizer, text.toStdString(), opt);
    PaperFigure figure;
    if (fig == 6) {
        auto tokens = bundle.tokenizer->encode(text.toStdString());
        // Enough segments for the memory to fill (fig6Segment picks the first full one).
        const auto want = static_cast<std::size_t>(opt.memLen / std::max(1, opt.segmentLen) + 2) * static_cast<std::size_t>(opt.segmentLen);
        if (tokens.size() > want)
            tokens.resize(want);
        core::CaptureOptions copt;
        copt.segmentLen = opt.segmentLen;
        copt.run.memLen = opt.memLen;
        const auto capture = core::captureText(*bundle.loaded.model, std::move(tokens), copt);
        figure = paperFigure6(scan, *capture, bundle.displayName);
    } else {
        figure = paperFigureFromScan(fig, scan, QObject::tr("%1 · %2 tokens · memory %3")
                                                    .arg(bundle.displayName).arg(scan.tokens).arg(opt.memLen));
    }
    PaperFigureView view;
    const int w = p.value("width").toInt() * (fig == 5 ? 1 : 2) * (fig == 6 ? 3 : 2) / 2;
    const int h = p.value("height").toInt();
    view.resize(w, h);
    view.setFigure(figure);
    throwIfFailed(view.exportTo(p.value("export"), {w, h, p.value("scale").toDouble()}));
    std::fprintf(stderr, "wrote %s (Fig. %d, %lld tokens scanned)\n", qPrintable(p.value("export")), fig,
                 static_cast<long long>(scan.tokens));
}

// --view atlas|bands|rollout|ablation|patch|lens: an analysis of the text drawn like its window shows it.
void analysisView(const QCommandLineParser& p, const ModelBundle& bundle, const std::vector<std::string>& dirs)
{
    const QString view = p.value("view");
    const auto& info = bundle.info();
    const auto& model = *bundle.loaded.model;
    const QString text = textOf(p, dirs);
    const QString out = p.value("export");
    PaperFigure figure;
    auto scanOptions = [&](const std::string& profiles) { return scanOptionsOf(p, info, profiles); };
    if (view == QLatin1String("bands")) {
        if (info.rotaryFrequencies.empty())
            throw core::Error(core::ErrorCode::BadInput, "--view bands needs a model with rotary embeddings (Llama family)");
        // Every band of the default split (fewer than three when a head has fewer pairs).
        const auto scan = core::scanText(model, *bundle.tokenizer, text.toStdString(),
                                         scanOptions(core::everyBandProfile(info)));
        figure = paperFigureFromScan(7, scan, QObject::tr("%1 · %2 tokens").arg(bundle.displayName).arg(scan.tokens));
    } else if (view == QLatin1String("atlas")) {
        // The one recipe (analysis/atlas_recipe.h), its profile columns from a scan of the whole text (causal models).
        core::AtlasRecipe recipe;
        if (info.can.causal)
            recipe.profile = std::make_shared<const core::ScanResult>(
                core::scanText(model, *bundle.tokenizer, text.toStdString(), scanOptions("")));
        const auto capture = core::captureText(model, *bundle.tokenizer, text.toStdString(), {});
        recipe.capture = capture.get();
        recipe.tokenizer = bundle.tokenizer.get();
        const auto made = core::atlasOfText(model, recipe);
        const auto& atlas = made.atlas;
        if (out.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive) || out.endsWith(QLatin1String(".json"), Qt::CaseInsensitive)) {
            const std::string table = core::formatAtlas(atlas, out.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)
                                                                   ? core::TableFormat::Csv
                                                                   : core::TableFormat::Json);
            if (const QString err = saveFileAtomically(out, QByteArray::fromStdString(table)); !err.isEmpty())
                throw std::runtime_error(err.toStdString());
            std::fprintf(stderr, "wrote %s (head atlas of %d heads)\n", qPrintable(out), atlas.layers * atlas.heads);
            return;
        }
        if (!made.profile)
            throw core::Error(core::ErrorCode::BadInput, "the head similarity compares relative-distance profiles, which an "
                                                         "encoder has not; export the atlas table (.csv or .json) instead");
        const auto& scan = *made.profile;
        const auto distances = core::headDistances(scan);
        const auto order = core::clusterOrder(distances, scan.layers * scan.heads);
        figure.number = 0;
        figure.name = QObject::tr("Head similarity");
        figure.title = QObject::tr("%1 · head similarity (Jensen-Shannon distance of profiles), clustered · %2 tokens")
                           .arg(bundle.displayName)
                           .arg(scan.tokens);
        figure.grids.push_back(similarityGrid(distances, order, scan.heads, figure.title));
    } else if (view == QLatin1String("rollout") || view == QLatin1String("ablation")) {
        core::CaptureOptions opt;
        if (p.isSet("segment-length"))
            opt.segmentLen = intOption(p, "segment-length", 1, info.maxSegmentLen);
        const auto capture = core::captureText(model, *bundle.tokenizer, text.toStdString(), opt);
        if (view == QLatin1String("rollout")) {
            figure = rolloutFigure(core::attentionRollout(*capture, autoSegment(*capture)), *capture, bundle.displayName);
        } else {
            std::vector<std::int32_t> ids = idsOf(capture->tokens);
            const auto r = core::headAblation(model, ids, capture->segmentLen, nullptr, [](int done, int total) {
                std::fprintf(stderr, "\rablation: %d of %d forwards", done, total);
            });
            std::fprintf(stderr, "\n");
            figure = ablationFigure(r, bundle.displayName, static_cast<int>(ids.size()));
        }
    } else if (view == QLatin1String("patch")) {
        // Activation patching: --text is the clean prompt, --corrupt the corrupted one.
        PatchingResult r;
        r.model = ModelBundlePtr(std::shared_ptr<void>(), &bundle); // not owned: the figure reads its name
        r.request.clean = text;
        r.request.corrupt = p.value("corrupt");
        r.request.answer = p.value("answer");
        r.request.wrong = p.value("wrong");
        r.request.component = core::patchComponentNamed(p.isSet("patch") ? p.value("patch").toStdString() : "head-out");
        r.request.perPosition = p.isSet("per-position");
        r.request.noising = p.isSet("noising");
        if (r.request.corrupt.isEmpty() || r.request.answer.isEmpty() || r.request.wrong.isEmpty())
            throw core::Error(core::ErrorCode::BadInput, "--view patch needs --corrupt TEXT, --answer WORD and --wrong WORD");
        for (const auto& t : bundle.tokenizer->encodeWithSpecial(text.toStdString())) {
            r.cleanIds.push_back(t.id);
            r.cleanTokens << tokenLabel(t);
        }
        for (const auto& t : bundle.tokenizer->encodeWithSpecial(r.request.corrupt.toStdString())) {
            r.corruptIds.push_back(t.id);
            r.corruptTokens << tokenLabel(t);
        }
        if (const auto problem = core::promptLengthProblem(*bundle.tokenizer, r.cleanIds, r.corruptIds); !problem.empty())
            throw core::Error(core::ErrorCode::BadInput, problem);
        core::PatchRequest request;
        request.clean = r.cleanIds;
        request.corrupt = r.corruptIds;
        request.component = r.request.component;
        request.perPosition = r.request.perPosition;
        request.noising = r.request.noising;
        request.metric.answer = core::answerToken(*bundle.tokenizer, r.request.answer.toStdString());
        request.metric.wrong = core::answerToken(*bundle.tokenizer, r.request.wrong.toStdString());
        r.result = core::patchActivations(model, request, [](const core::PatchResult&, int done, int total) {
            std::fprintf(stderr, "\rpatching: %d of %d", done, total);
        });
        std::fprintf(stderr, "\n");
        figure = patchingFigure(r);
    } else if (view == QLatin1String("lens")) {
        core::CaptureOptions opt;
        if (p.isSet("segment-length"))
            opt.segmentLen = intOption(p, "segment-length", 1, info.maxSegmentLen);
        const auto capture = core::captureText(model, *bundle.tokenizer, text.toStdString(), opt);
        const auto lens = core::logitLens(model, *capture, autoSegment(*capture));
        if (out.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
            const std::string table = core::logitLensCsv(lens, *capture, *bundle.tokenizer);
            if (const QString err = saveFileAtomically(out, QByteArray::fromStdString(table)); !err.isEmpty())
                throw std::runtime_error(err.toStdString());
            std::fprintf(stderr, "wrote %s (logit lens: %d layers x %d positions)\n", qPrintable(out), lens.layers,
                         lens.positions);
            return;
        }
        figure = logitLensFigure(lens, *capture, *bundle.tokenizer, bundle.displayName);
    } else if (view == QLatin1String("dla")) {
        core::CaptureOptions opt;
        if (p.isSet("segment-length"))
            opt.segmentLen = intOption(p, "segment-length", 1, info.maxSegmentLen);
        const auto capture = core::captureText(model, *bundle.tokenizer, text.toStdString(), opt);
        const int tokens = static_cast<int>(capture->tokens.size());
        const int position = p.isSet("position") ? intOption(p, "position", 1, tokens) - 1 : tokens - 1;
        const auto a = core::logitAttribution(model, *capture, position);
        if (out.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
            if (const QString err = saveFileAtomically(out, QByteArray::fromStdString(core::logitAttributionCsv(a)));
                !err.isEmpty())
                throw std::runtime_error(err.toStdString());
            std::fprintf(stderr, "wrote %s (direct logit attribution after token %d: logit %.3f)\n", qPrintable(out),
                         position + 1, a.logit);
            return;
        }
        figure = logitAttributionFigure(a, *capture, *bundle.tokenizer, bundle.displayName);
    } else if (view == QLatin1String("qk")) {
        core::CaptureOptions opt;
        if (p.isSet("segment-length"))
            opt.segmentLen = intOption(p, "segment-length", 1, info.maxSegmentLen);
        const auto capture = core::captureText(model, *bundle.tokenizer, text.toStdString(), opt);
        const int layer = intOption(p, "layer", 1, info.layers) - 1;
        const int head = intOption(p, "head", 1, info.heads) - 1;
        const std::string methodName = p.isSet("qk-method") ? p.value("qk-method").toStdString() : "pca";
        const auto method = core::qkMethodNamed(methodName);
        if (!method)
            throw core::Error(core::ErrorCode::BadInput, "--qk-method must be pca, tsne or umap, got \"" + methodName + "\"");
        auto vectors = core::headQkVectors(*capture, autoSegment(*capture), layer, head);
        core::normaliseQk(vectors);
        const auto e = core::embedQk(vectors, *method);
        const bool json = out.endsWith(QLatin1String(".json"), Qt::CaseInsensitive);
        if (!json && !out.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive))
            throw core::Error(core::ErrorCode::BadInput,
                              "--view qk exports its points as .csv (kind,position,token,x,y) or .json");
        const std::string table = json ? core::qkJson(vectors, e, capture->tokens) : core::qkCsv(vectors, e, capture->tokens);
        if (const QString err = saveFileAtomically(out, QByteArray::fromStdString(table)); !err.isEmpty())
            throw std::runtime_error(err.toStdString());
        std::fprintf(stderr, "wrote %s (query-key space of layer %d head %d: %d queries, %d keys, %s, correlation of "
                             "closeness and dot product %.2f)\n",
                     qPrintable(out), layer + 1, head + 1, e.queries, e.keys, methodName.c_str(), e.correlation);
        return;
    } else {
        throw core::Error(core::ErrorCode::BadInput, "--view must be atlas, bands, rollout, ablation, lens, qk or dla, got \"" +
                                                         view.toStdString() + "\"");
    }
    PaperFigureView v;
    v.setFigure(figure);
    // The size the window would give it, unless asked for another.
    const int w = p.isSet("width") ? p.value("width").toInt() : v.readableSize().width();
    const int h = p.isSet("height") ? p.value("height").toInt() : v.readableSize().height();
    v.resize(w, h);
    throwIfFailed(v.exportTo(out, {w, h, p.value("scale").toDouble()}));
    std::fprintf(stderr, "wrote %s (%s)\n", qPrintable(out), qPrintable(figure.displayName()));
}

// Writes a page to --export (atomically) and says its size.
void savePage(const QCommandLineParser& p, const std::string& html)
{
    throwIfFailed(saveFileAtomically(p.value("export"), QByteArray::fromStdString(html)));
    std::fprintf(stderr, "wrote %s (%zu KiB)\n", qPrintable(p.value("export")), html.size() / 1024);
}

// --export page.html: the self-contained interactive page of the text (every layer, or --layer's; every head, or
// --head's).
void attentionPage(const QCommandLineParser& p, const ModelBundle& bundle, const std::vector<std::string>& dirs)
{
    core::PageOptions o;
    if (p.isSet("layer"))
        o.layers = {intOption(p, "layer", 1, bundle.info().layers) - 1};
    if (p.isSet("head") && p.value("head") != QLatin1String("avg"))
        o.heads = {intOption(p, "head", 1, bundle.info().heads) - 1};
    const auto capture = core::captureText(*bundle.loaded.model, *bundle.tokenizer, textOf(p, dirs).toStdString(), {});
    savePage(p, core::attentionPageHtml(*capture, bundle.displayName.toStdString(), o));
}

void headGrid(const QCommandLineParser& p, const ModelBundle& bundle, const std::vector<std::string>& dirs)
{
    ViewSelection sel;
    sel.site = p.value("layer").toInt() - 1;
    sel.heads = p.value("head") == QLatin1String("avg") ? std::vector<int>{} : std::vector<int>{p.value("head").toInt() - 1};
    if (sel.site < 0 || sel.site >= bundle.info().layers)
        throw core::Error(core::ErrorCode::BadInput, "--layer must be 1 .. " + std::to_string(bundle.info().layers));
    if (!sel.heads.empty() && (sel.heads[0] < 0 || sel.heads[0] >= bundle.info().heads))
        throw core::Error(core::ErrorCode::BadInput, "--head must be 1 .. " + std::to_string(bundle.info().heads) + " or avg");
    const widgets::AttentionGridView style; // the default look
    // Square cells at the width unless a height is asked for.
    const FigureSize size{p.value("width").toInt(), p.isSet("height") ? p.value("height").toInt() : 0,
                          p.value("scale").toDouble()};
    core::CaptureOptions opt;
    if (p.isSet("segment-length"))
        opt.segmentLen = intOption(p, "segment-length", 1, bundle.info().maxSegmentLen);
    // The grid is drawn as soon as its layer of the shown segment is done, as the window shows it first; the layers
    // after it change nothing in it, so the run stops there.
    core::StopToken stop;
    opt.run.stop = &stop;
    bool written = false;
    opt.layerDone = [&](int segment, int layer, const core::CaptureOptions::PartialCapture& partial) {
        if (written || layer != sel.site)
            return;
        const auto sofar = partial();
        if (segment != autoSegment(*sofar))
            return;
        throwIfFailed(exportGrid(buildGrid(*sofar, bundle.displayName, sel), style, p.value("export"), size));
        written = true;
        stop.requestStop();
    };
    try {
        core::captureText(*bundle.loaded.model, *bundle.tokenizer, textOf(p, dirs).toStdString(), opt);
    } catch (const core::Error& e) {
        if (!(written && e.code() == core::ErrorCode::Cancelled))
            throw;
    }
    if (!written)
        throw std::logic_error("the run ended before layer " + std::to_string(sel.site + 1) + " was done");
    std::fprintf(stderr, "wrote %s\n", qPrintable(p.value("export")));
}
} // namespace

namespace {
// An encoder-decoder model's run as the window makes it: --source translated greedily, or read with --target.
std::shared_ptr<const core::TextCapture> translationCapture(const QCommandLineParser& p, const ModelBundle& bundle)
{
    const auto& m = *bundle.loaded.model;
    const auto& info = m.info();
    if (info.can.audio) { // a speech model: --audio heard with --text as its transcript (empty: the prompt alone)
        if (!p.isSet("audio"))
            throw core::Error(core::ErrorCode::BadInput, "a speech model needs --audio FILE (WAV, FLAC, OGG)");
        const auto audio = core::audioFeaturesOfFile(m, bundle.loaded.folder, p.value("audio").toStdString());
        return core::captureRecording(m, bundle.loaded.folder, *bundle.tokenizer, audio, p.value("text").toStdString(),
                                      0, {});
    }
    if (!p.isSet("source"))
        throw core::Error(core::ErrorCode::BadInput, "an encoder-decoder model needs --source (the text to translate)");
    core::CaptureOptions opt;
    opt.streams = core::typedSource(info, *bundle.tokenizer, p.value("source").toStdString());
    const std::string target = p.value("target").toStdString();
    if (p.isSet("target"))
        return core::captureText(m, *bundle.targetTokenizer, target, opt);
    auto start = core::streamTokens(info, info.segmentStream(), *bundle.targetTokenizer, target);
    return core::writeGreedily(m, std::move(start), 64, *bundle.targetTokenizer, opt, {}, target);
}

// --site cross (the default), self (the decoder's) or encoder, of --layer within its stack; --site all: every decoder
// layer's cross-attention averaged.
ViewSelection translationSelection(const QCommandLineParser& p, const core::ModelInfo& info)
{
    const QString which = p.isSet("site") ? p.value("site") : QStringLiteral("cross");
    if (which != QLatin1String("cross") && which != QLatin1String("self") && which != QLatin1String("encoder") &&
        which != QLatin1String("all"))
        throw core::Error(core::ErrorCode::BadInput, "--site must be cross, self, encoder or all");
    const std::string key = which == QLatin1String("all") ? "cross" : which == QLatin1String("self") ? "decoder"
                                                                                                     : which.toStdString();
    ViewSelection sel;
    sel.siteAverage = which == QLatin1String("all");
    const int layer = p.value("layer").toInt() - 1;
    int layers = 0, site = -1;
    for (int s = 0; s < info.siteCount(); ++s)
        if (info.site(s).key() == key) {
            ++layers;
            if (info.site(s).layer == layer || sel.siteAverage)
                site = s;
        }
    if (site < 0)
        throw core::Error(core::ErrorCode::BadInput, std::string("--layer must be 1 .. ") + std::to_string(layers) +
                                                         (key == "encoder" ? " (encoder layers)" : " (decoder layers)"));
    sel.site = site;
    const int head = p.value("head") == QLatin1String("avg") ? -1 : p.value("head").toInt() - 1;
    if (head < -1 || head >= info.site(site).heads)
        throw core::Error(core::ErrorCode::BadInput, "--head must be 1 .. " + std::to_string(info.site(site).heads) + " or avg");
    sel.heads = head < 0 ? std::vector<int>{} : std::vector<int>{head};
    return sel;
}
} // namespace

// An encoder-decoder model: the grid of one site (translationSelection) of --source translated or read with --target,
// through the window's own grid builder; an image as PNG/SVG/PDF, the numbers with both token lists as CSV/NPY/JSON,
// or (.html) the page of every site.
void translationExport(const QCommandLineParser& p, const ModelBundlePtr& bundle)
{
    const auto capture = translationCapture(p, *bundle);
    const QString out = p.value("export");
    if (out.endsWith(QLatin1String(".html"), Qt::CaseInsensitive)) { // every site's page
        core::PageOptions o;
        if (p.isSet("layer"))
            o.layers = {p.value("layer").toInt() - 1};
        savePage(p, core::attentionPageHtml(*capture, bundle->displayName.toStdString(), o));
        return;
    }
    const auto grid = buildGrid(*capture, bundle->displayName, translationSelection(p, bundle->info()), nullptr, {},
                                bundle->targetTokenizer.get());
    for (const char* data : {".csv", ".npy", ".json"})
        if (out.endsWith(QLatin1String(data), Qt::CaseInsensitive)) {
            throwIfFailed(exportGridData(*grid, out));
            std::fprintf(stderr, "wrote %s\n", qPrintable(out));
            return;
        }
    const widgets::AttentionGridView style;
    const FigureSize size{p.value("width").toInt(), p.isSet("height") ? p.value("height").toInt() : 0,
                          p.value("scale").toDouble()};
    throwIfFailed(exportGrid(grid, style, out, size));
    std::fprintf(stderr, "wrote %s\n", qPrintable(out));
}

QString builtinSampleText(const std::vector<std::string>& dirs)
{
    for (const auto& d : dirs) {
        QFile f(QString::fromStdString((std::filesystem::path(d) / "sample.txt").string()));
        if (f.open(QIODevice::ReadOnly))
            return QString::fromUtf8(f.readAll());
    }
    return QStringLiteral("The quick brown fox jumps over the lazy dog .");
}

namespace {
// A vision model: --image (or the model folder's own picture named by --text) captured; --view image (the default)
// draws --query's attention (CLS unless given: a special token's name or a patch as r3c5) over the picture for
// --layer/--head (avg: the layer's mean), --view rollout its rollout; the numbers as .csv/.npy/.json; any other
// view (grid, atlas) as for text.
void imageExport(const QCommandLineParser& p, const ModelBundlePtr& bundle)
{
    const QString image = p.isSet("image") ? QFileInfo(p.value("image")).absoluteFilePath() // from where it was typed
                          : p.isSet("text") ? p.value("text")
                                            : modelPicture(QString::fromStdString(bundle->loaded.folder));
    const auto cap = captureImage(*bundle->loaded.model, QString::fromStdString(bundle->loaded.folder), image, {});
    TextResult result{bundle, cap.capture, std::make_shared<const ImageCapture>(cap)};
    const auto& info = bundle->info();
    if (p.value("export").endsWith(QLatin1String(".html"), Qt::CaseInsensitive)) { // the picture's page
        core::PageOptions o;
        if (p.isSet("layer"))
            o.layers = {p.value("layer").toInt() - 1};
        o.picture = cap.seen;
        savePage(p, core::attentionPageHtml(*cap.capture, bundle->displayName.toStdString(), o));
        return;
    }
    const int layer = p.value("layer").toInt() - 1;
    if (layer < 0 || layer >= info.layers)
        throw core::Error(core::ErrorCode::BadInput, "--layer must be 1 .. " + std::to_string(info.layers));
    const bool avg = p.value("head") == QLatin1String("avg");
    const int head = avg ? 0 : p.value("head").toInt() - 1;
    const int heads = layer < info.siteCount() ? info.site(layer).heads : info.heads; // a convolution: its channels
    if (head < 0 || head >= heads)
        throw core::Error(core::ErrorCode::BadInput, "--head must be 1 .. " + std::to_string(heads) + " or avg");
    int query = 0;
    if (p.isSet("query")) {
        query = -1;
        for (std::size_t t = 0; t < cap.capture->tokens.size(); ++t)
            if (QString::fromStdString(cap.capture->tokens[t].text).compare(p.value("query"), Qt::CaseInsensitive) == 0)
                query = static_cast<int>(t);
        if (query < 0)
            throw core::Error(core::ErrorCode::BadInput, "--query names no token of the image: CLS, a register (REG1), or a patch as r<row>c<col>");
    }
    const bool rollout = p.value("view") == QLatin1String("rollout");
    const auto roll = rollout ? std::optional(core::attentionRollout(*cap.capture, 0)) : std::nullopt;
    const auto data = imageOverlay(result, layer, head,
                                   rollout ? ImageSource::Rollout : avg ? ImageSource::LayerMean : ImageSource::Head,
                                   query, roll ? &*roll : nullptr, bundle->displayName);
    const QString out = p.value("export");
    for (const char* numbers : {".csv", ".npy", ".json"})
        if (out.endsWith(QLatin1String(numbers), Qt::CaseInsensitive)) { // the patch values as a rows x cols grid
            auto grid = std::make_shared<widgets::GridData>();
            grid->rows = data->rows;
            grid->cols = data->cols;
            grid->values = data->values;
            for (int r = 0; r < data->rows; ++r) {
                grid->rowLabels << QStringLiteral("row %1").arg(r + 1);
                grid->rowPositions.push_back(r);
            }
            for (int c = 0; c < data->cols; ++c) {
                grid->colLabels << QStringLiteral("col %1").arg(c + 1);
                grid->colPositions.push_back(c);
            }
            grid->title = data->title;
            throwIfFailed(exportGridData(*grid, out));
            std::fprintf(stderr, "wrote %s\n", qPrintable(out));
            return;
        }
    widgets::ImageOverlayView view;
    view.resize(p.value("width").toInt(), p.isSet("height") ? p.value("height").toInt() : p.value("width").toInt() * 9 / 10);
    view.setData(data);
    throwIfFailed(exportWidget(&view, out, {view.width(), view.height(), p.value("scale").toDouble()}));
    std::fprintf(stderr, "wrote %s\n", qPrintable(out));
}
} // namespace

int runHeadlessExport(const QCommandLineParser& p, const std::vector<std::string>& dirs)
{
    try {
        intOption(p, "width", 50, 20000);
        intOption(p, "height", 50, 20000);
        const QString spec = p.isSet("model") ? p.value("model") : QString::fromLatin1(core::kDefaultBuiltinSpec);
        const auto bundle = loadBundle(spec, dirs);
        if (bundle->info().typedReadStream() >= 0 || bundle->info().can.audio) {
            if (p.value("view") == QLatin1String("position-bias")) { // T5's learned relative positions
                PaperFigureView view;
                const int w = p.value("width").toInt(), h = p.value("height").toInt();
                view.resize(w, h);
                view.setFigure(positionBiasFigure(*bundle));
                throwIfFailed(view.exportTo(p.value("export"), {w, h, p.value("scale").toDouble()}));
                std::fprintf(stderr, "wrote %s\n", qPrintable(p.value("export")));
                return 0;
            }
            if (p.isSet("paper-figure") || p.isSet("view"))
                throw core::Error(core::ErrorCode::BadInput,
                                  "the paper figures and text analyses read one causal text; an encoder-decoder model "
                                  "exports its attention grids: --source TEXT [--target TEXT] [--site cross|self|encoder|all], "
                                  "or --view position-bias (T5)");
            translationExport(p, bundle);
            return 0;
        }
        if (bundle->info().can.image && (!p.isSet("view") || p.value("view") == QLatin1String("image") ||
                                         p.value("view") == QLatin1String("rollout"))) {
            imageExport(p, bundle);
            return 0;
        }
        if (p.value("export").endsWith(QLatin1String(".html"), Qt::CaseInsensitive) && !p.isSet("view") &&
            !p.isSet("paper-figure"))
            attentionPage(p, *bundle, dirs);
        else if (p.isSet("paper-figure"))
            paperFigure(p, *bundle, dirs);
        else if (p.isSet("view"))
            analysisView(p, *bundle, dirs);
        else
            headGrid(p, *bundle, dirs);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: error: %s\n", e.what());
        return 1;
    }
}

} // namespace attnscope::app
