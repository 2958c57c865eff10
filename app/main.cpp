// attnscope GUI entry point: the window, or headless figure export with --export.
#include "model/model_loader.h"
#include "builtin_paths.h"
#include "compute/compute_controller.h"
#include "headless/headless_export.h"
#include "ui/main_window.h"
#include "util/cpu_features.h"
#include "util/memory_info.h"
#include "util/text_file.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <cstdio>

using namespace attnscope;

int main(int argc, char** argv)
{
    if (!attnscope::core::cpuCanRunThisBuild("attnscope"))
        return 1;
    attnscope::core::returnLargeBlocksToSystem();
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
        {"model", "Model folder, its config.json, a .gguf file, a PyTorch checkpoint (.bin, .pt, .pth) with config.json beside it, or builtin:NAME (default builtin:llama-wikitext2).", "MODEL"},
        {"text", "Text to analyse.", "TEXT"},
        {"text-file", "File with the text to analyse.", "FILE"},
        {"audio", "Speech models (Whisper): the recording to listen to (WAV, FLAC, OGG); --text is then its transcript.", "FILE"},
        {"image", "Vision models: the picture to look at (PNG, JPEG; default: the model folder's own); vision-language models: the PNG read beside --text.", "FILE"},
        {"query", "Vision models, with --export: whose attention over the picture (CLS, a register such as REG1, or a "
                  "patch as r3c5; default CLS).", "TOKEN"},
        {"layer", "Layer to show, from 1.", "L", "1"},
        {"source", "Encoder-decoder models: the source text, translated by the model unless --target is given.", "TEXT"},
        {"target", "Encoder-decoder models: a target the model reads (teacher forcing) instead of writing its own.", "TEXT"},
        {"site", "Encoder-decoder models, with --export: cross (default), self (the decoder's), encoder, or all (every "
                 "decoder layer's cross-attention averaged).", "SITE"},
        {"head", "Head to show, from 1, or 'avg'.", "H", "1"},
        {"segment-length", "Tokens per segment (default: the model's).", "N"},
        {"paper-figure", "With --export: the Transformer-XL paper's Fig. 5, 6 or 7 for the text (a corpus scan).", "N"},
        {"view", "With --export: an analysis of the text: atlas (head similarity matrix; a .csv or .json export "
                 "writes the atlas table), bands (each rotary frequency band's profile), rollout, ablation, lens (the logit lens; a .csv export writes its table), qk (the query-key space of --layer/--head as a .csv of kind,position,token,x,y, or .json), dla (direct logit attribution of the token after --position: layers x heads; a .csv export writes layer,head,share), patch (activation patching of --text against --corrupt: layers x heads), position-bias (T5: each head's learned bias by signed distance, encoder and decoder).", "VIEW"},
        {"corrupt", "With --view patch: the corrupted prompt (--text is the clean one; the same number of tokens).", "TEXT"},
        {"answer", "With --view patch: the answer (one token, a word or an id); the metric is logit[answer] - logit[wrong].", "WORD"},
        {"wrong", "With --view patch: the wrong answer.", "WORD"},
        {"patch", "With --view patch: what is patched: head-out (default), q, k, v, pattern or resid.", "COMPONENT"},
        {"per-position", "With --view patch: a score per position as well."},
        {"noising", "With --view patch: the corrupted activation into the clean run (default: denoising)."},
        {"qk-method", "With --view qk: pca (default), tsne or umap.", "METHOD"},
        {"position", "With --view dla: the token (from 1) whose next token is attributed (default: the last).", "N"},
        {"mem-len", "Memory length for scans (default: the model's).", "M"},
        {"max-tokens", "Scan at most N tokens.", "N"},
        {"export", "Write the figure to FILE (.png, .svg, .pdf) and exit without a window.", "FILE"},
        {"width", "Exported figure width in pixels.", "W", "1000"},
        {"height", "Exported figure height in pixels (a grid: by default the height that makes its cells square).", "H", "900"},
        {"scale", "PNG pixel scale (2 = double resolution).", "S", "1"},
    });
    p.addPositionalArgument(QStringLiteral("session"), QStringLiteral("A session file (.attnscope) to open: its model, text "
                                                                      "and view (what attnscope.show() in Python writes)."),
                            QStringLiteral("[SESSION]"));
    p.process(app);
    const auto dirs = builtinModelDirs(argv[0]);
    if (p.isSet("export"))
        return app::runHeadlessExport(p, dirs);

    app::ComputeController compute(dirs);
    app::MainWindow window(&compute, dirs);
    window.show();
    if (!p.positionalArguments().isEmpty()) { // a session names its model and text: the options below do not apply
        if (const QString err = window.openSession(p.positionalArguments().constFirst()); !err.isEmpty()) {
            std::fprintf(stderr, "attnscope: %s\n", qPrintable(err));
            window.showStatus(err);
        } else {
            return QApplication::exec();
        }
    }
    QString text = p.value("text");
    if (p.isSet("text-file")) {
        try {
            text = QString::fromStdString(core::readTextFile(p.value("text-file").toStdString()));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "attnscope: %s\n", e.what());
        }
    }
    if (p.isSet("image")) { // a vision model's text box names its picture
        const QString picture = QFileInfo(p.value("image")).absoluteFilePath();
        // A vision-language model reads it beside the typed prompt instead.
        const QString prompt = text.isEmpty() ? QObject::tr("Describe the picture.") : text;
        QObject::connect(&compute, &app::ComputeController::modelLoaded, &window,
                         [&window, picture, prompt](const app::ModelBundlePtr& m) {
                             if (m->info().pictureToken < 0)
                                 return;
                             window.setText(prompt);
                             window.files()->openImage(picture); // beside the prompt, with the Image dock
                         },
                         Qt::SingleShotConnection);
        text = picture;
    }
    if (p.isSet("audio")) { // a speech model hears the recording; the text box holds the transcript (or nothing)
        const QString recording = QFileInfo(p.value("audio")).absoluteFilePath();
        QObject::connect(&compute, &app::ComputeController::modelLoaded, &window,
                         [&window, recording, transcript = text](const app::ModelBundlePtr& m) {
                             if (!m->info().can.audio)
                                 return;
                             window.setText(transcript); // --text is the recording's transcript
                             window.files()->openAudio(recording);
                         },
                         Qt::SingleShotConnection);
    }
    if (text.isEmpty() && !p.isSet("audio"))
        text = app::builtinSampleText(dirs);
    window.setText(text);
    if (p.isSet("source"))
        window.setSource(p.value("source"));
    window.openModel(p.isSet("model") ? p.value("model") : QString::fromLatin1(core::kDefaultBuiltinSpec));
    const int layer = p.value("layer").toInt() - 1, head = p.value("head").toInt() - 1;
    if (layer > 0 || head > 0)
        QObject::connect(&compute, &app::ComputeController::modelLoaded, &window,
                         [&window, layer, head] { window.setSelection(layer, {head}); }, Qt::SingleShotConnection);
    return QApplication::exec();
}
