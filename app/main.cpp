// attnscope GUI entry point: the window, or headless figure export with --export.
#include "attention_grid_view.h"
#include "builtin_paths.h"
#include "compute/compute_controller.h"
#include "compute/model_bundle.h"
#include "export/figure_export.h"
#include "run/text_capture.h"
#include "ui/grid_builder.h"
#include "ui/main_window.h"
#include "ui/relpos_builder.h"
#include "relpos_heatmap_view.h"
#include "analysis/relpos_scan.h"
#include "util/cpu_features.h"
#include "util/error.h"
#include "util/text_file.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QTimer>
#include <qcustomplot.h>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

using namespace attnscope;

namespace {
// An export's error message becomes the exception the headless paths report (one place prints errors).
void throwIfFailed(const QString& err)
{
    if (!err.isEmpty())
        throw std::runtime_error(err.toStdString());
}


constexpr const char* kDefaultModel = "builtin:txl-wikitext2";

QString sampleText(const std::vector<std::string>& dirs)
{
    for (const auto& d : dirs) {
        QFile f(QString::fromStdString((std::filesystem::path(d) / "sample.txt").string()));
        if (f.open(QIODevice::ReadOnly))
            return QString::fromUtf8(f.readAll());
    }
    return QStringLiteral("The quick brown fox jumps over the lazy dog .");
}

// --paper-figure 5 | 7: scan the text (file) with memory and export the layer x relative-position heatmaps.
int paperFigureExport(const QCommandLineParser& p, const std::vector<std::string>& dirs)
{
    try {
        const int fig = p.value("paper-figure").toInt();
        if (fig != 5 && fig != 6 && fig != 7)
            throw core::Error(core::ErrorCode::BadInput, "--paper-figure must be 5, 6 or 7");
        const QString spec = p.isSet("model") ? p.value("model") : QString::fromLatin1(kDefaultModel);
        const auto bundle = app::loadBundle(spec, dirs);
        const auto& info = bundle->info();
        core::ScanOptions opt;
        opt.memLen = p.isSet("mem-len") ? p.value("mem-len").toInt() : info.defaultMemLen;
        opt.segmentLen = p.isSet("segment-length") ? p.value("segment-length").toInt() : info.defaultSegmentLen;
        opt.maxTokens = p.isSet("max-tokens") ? p.value("max-tokens").toLongLong() : -1;
        opt.terms = fig == 7 ? "a,b,d" : "";
        core::ScanResult scan;
        if (p.isSet("text-file"))
            scan = core::scanTextFile(*bundle->loaded.model, *bundle->tokenizer, p.value("text-file").toStdString(), opt);
        else
            scan = core::scanText(*bundle->loaded.model, *bundle->tokenizer,
                                  (p.isSet("text") ? p.value("text") : sampleText(dirs)).toStdString(), opt);
        const QString what = QObject::tr("%1 · %2 tokens · memory %3").arg(bundle->displayName).arg(scan.tokens).arg(opt.memLen);
        if (fig == 6) {
            // The three widest heads by the ranking, each as the token grid of a segment with full memory (the
            // first few segments of the text), top 20% of every row outlined in red.
            const QString text = p.isSet("text-file") ? QString::fromStdString(core::readTextFile(p.value("text-file").toStdString()))
                                                      : (p.isSet("text") ? p.value("text") : sampleText(dirs));
            auto tokens = bundle->tokenizer->encode(text.toStdString());
            const auto want = static_cast<std::size_t>(opt.memLen / std::max(1, opt.segmentLen) + 2) * static_cast<std::size_t>(opt.segmentLen);
            if (tokens.size() > want)
                tokens.resize(want);
            core::CaptureOptions copt;
            copt.segmentLen = opt.segmentLen;
            copt.run.memLen = opt.memLen;
            const auto capture = core::captureText(*bundle->loaded.model, std::move(tokens), copt);
            const auto summary = core::summariseHeads(scan, "full");
            const auto order = core::rankByWidth(summary);
            std::vector<std::unique_ptr<widgets::AttentionGridView>> views;
            std::vector<QCustomPlot*> plots;
            const int w = p.value("width").toInt() * 3 / 2, h = p.value("height").toInt();
            for (std::size_t r = 0; r < std::min<std::size_t>(3, order.size()); ++r) {
                app::ViewSelection sel;
                sel.layer = summary[order[r]].layer;
                sel.heads = {summary[order[r]].head};
                auto v = std::make_unique<widgets::AttentionGridView>();
                v->setShowValues(false);
                v->resize(w / 3, h);
                auto grid = std::make_shared<widgets::GridData>(*app::buildGrid(*capture, bundle->displayName, sel));
                grid->title = QObject::tr("L%1 H%2 · widest #%3").arg(sel.layer + 1).arg(sel.heads[0] + 1).arg(r + 1);
                v->setData(grid);
                plots.push_back(v->plot());
                views.push_back(std::move(v));
            }
            throwIfFailed(app::exportComposite(plots, p.value("export"), {w, h, p.value("scale").toDouble()}));
            std::fprintf(stderr, "wrote %s (the three widest heads of %lld scanned tokens)\n", qPrintable(p.value("export")),
                         static_cast<long long>(scan.tokens));
            return 0;
        }
        const auto figure = fig == 5 ? app::relposFigure(scan, QObject::tr("Attention by relative distance (Fig. 5) · %1").arg(what), {"full"})
                                     : app::relposFigure(scan, QObject::tr("Attention of each score term alone (Fig. 7) · %1").arg(what),
                                                         {"term_a", "term_b", "term_d"});
        widgets::RelposHeatmapView view;
        const int w = p.value("width").toInt() * (fig == 7 ? 2 : 1), h = p.value("height").toInt();
        view.resize(w, h);
        view.setData(figure);
        throwIfFailed(app::exportFigure(view.plot(), p.value("export"), {w, h, p.value("scale").toDouble()}));
        std::fprintf(stderr, "wrote %s (%lld tokens scanned)\n", qPrintable(p.value("export")),
                     static_cast<long long>(scan.tokens));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: error: %s\n", e.what());
        return 1;
    }
}

int headlessExport(const QCommandLineParser& p, const std::vector<std::string>& dirs)
{
    try {
        const QString spec = p.isSet("model") ? p.value("model") : QString::fromLatin1(kDefaultModel);
        const auto bundle = app::loadBundle(spec, dirs);
        QString text = p.value("text");
        if (p.isSet("text-file"))
            text = QString::fromStdString(core::readTextFile(p.value("text-file").toStdString()));
        if (!p.isSet("text") && !p.isSet("text-file"))
            text = sampleText(dirs);
        core::CaptureOptions opt;
        if (p.isSet("segment-length"))
            opt.segmentLen = p.value("segment-length").toInt();
        const auto capture = core::captureText(*bundle->loaded.model, bundle->tokenizer->encode(text.toStdString()), opt);
        app::ViewSelection sel;
        sel.layer = p.value("layer").toInt() - 1;
        sel.heads = p.value("head") == QLatin1String("avg") ? std::vector<int>{}
                                                             : std::vector<int>{p.value("head").toInt() - 1};
        if (sel.layer < 0 || sel.layer >= bundle->info().layers)
            throw core::Error(core::ErrorCode::BadInput, "--layer must be 1 .. " + std::to_string(bundle->info().layers));
        if (!sel.heads.empty() && (sel.heads[0] < 0 || sel.heads[0] >= bundle->info().heads))
            throw core::Error(core::ErrorCode::BadInput,
                              "--head must be 1 .. " + std::to_string(bundle->info().heads) + " or avg");
        widgets::AttentionGridView view;
        view.setData(app::buildGrid(*capture, bundle->displayName, sel));
        const int w = p.value("width").toInt(), h = p.value("height").toInt();
        view.resize(w, h);
        view.resetView();
        throwIfFailed(app::exportFigure(view.plot(), p.value("export"), {w, h, p.value("scale").toDouble()}));
        std::fprintf(stderr, "wrote %s\n", qPrintable(p.value("export")));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnscope: error: %s\n", e.what());
        return 1;
    }
}

} // namespace

int main(int argc, char** argv)
{
    if (!attnscope::core::cpuCanRunThisBuild("attnscope"))
        return 1;
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("attnscope"));
    QApplication::setOrganizationName(QStringLiteral("attnscope"));
    QApplication::setApplicationVersion(QStringLiteral(ATTNSCOPE_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/attnscope.svg")));

    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Look inside transformer attention."));
    p.addHelpOption();
    p.addVersionOption();
    p.addOptions({
        {"model", "Model folder, its config.json, or builtin:NAME (default builtin:txl-wikitext2).", "MODEL"},
        {"text", "Text to analyse.", "TEXT"},
        {"text-file", "File with the text to analyse.", "FILE"},
        {"layer", "Layer to show, from 1.", "L", "1"},
        {"head", "Head to show, from 1, or 'avg'.", "H", "1"},
        {"segment-length", "Tokens per segment (default: the model's).", "N"},
        {"paper-figure", "With --export: the Transformer-XL paper's Fig. 5, 6 or 7 for the text (a corpus scan).", "N"},
        {"mem-len", "Memory length for scans (default: the model's).", "M"},
        {"max-tokens", "Scan at most N tokens.", "N"},
        {"export", "Write the figure to FILE (.png, .svg, .pdf) and exit without a window.", "FILE"},
        {"width", "Exported figure width in pixels.", "W", "1000"},
        {"height", "Exported figure height in pixels.", "H", "900"},
        {"scale", "PNG pixel scale (2 = double resolution).", "S", "1"},
    });
    p.process(app);
    const auto dirs = builtinModelDirs(argv[0]);
    if (p.isSet("export"))
        return p.isSet("paper-figure") ? paperFigureExport(p, dirs) : headlessExport(p, dirs);

    app::ComputeController compute(dirs);
    app::MainWindow window(&compute, dirs);
    window.show();
    QString text = p.value("text");
    if (p.isSet("text-file")) {
        try {
            text = QString::fromStdString(core::readTextFile(p.value("text-file").toStdString()));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "attnscope: %s\n", e.what());
        }
    }
    if (text.isEmpty())
        text = sampleText(dirs);
    window.setText(text);
    const bool explicitModel = p.isSet("model");
    const QString spec = explicitModel ? p.value("model") : QString::fromLatin1(kDefaultModel);
    window.openModel(spec);
    const int layer = p.value("layer").toInt() - 1, head = p.value("head").toInt() - 1;
    if (layer > 0 || head > 0)
        QObject::connect(&compute, &app::ComputeController::modelLoaded, &window,
                         [&window, layer, head] { window.setSelection(layer, {head}); }, Qt::SingleShotConnection);
    return QApplication::exec();
}
