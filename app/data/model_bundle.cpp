// loadBundle: model + tokenizer from one spec.
#include "data/model_bundle.h"

#include "model/model_loader.h"
#include "tokenize/tokenizer.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

namespace attnscope::app {

ModelBundlePtr loadBundle(const QString& spec, const std::vector<std::string>& builtinDirs, const core::LoadOptions& options)
{
    auto b = std::make_shared<ModelBundle>();
    b->loaded = core::loadModel(spec.toStdString(), builtinDirs, options);
    // A GGUF file carries its vocabulary; reference test folders ship without one: then the user types token ids.
    b->tokenizer = core::loadModelTokenizer(b->loaded);
    b->targetTokenizer = b->loaded.model->info().can.encoderDecoder ? std::shared_ptr<const core::Tokenizer>(
                                                                          core::loadModelTargetTokenizer(b->loaded))
                                                                    : b->tokenizer;
    // The folder's own samples, when small (a GGUF file's folder is anybody's).
    auto folderSample = [&](const char* name) {
        QFile f(QDir(QString::fromStdString(b->loaded.folder)).filePath(QString::fromLatin1(name)));
        return b->loaded.ggufPath.empty() && f.size() < 4096 && f.open(QIODevice::ReadOnly)
                   ? QString::fromUtf8(f.readAll()).trimmed()
                   : QString();
    };
    b->sampleSource = folderSample("sample-source.txt");
    b->sampleText = folderSample("sample.txt");
    if (b->tokenizer)
        b->controlIds = core::controlTokenIds(*b->tokenizer);
    b->spec = spec;
    // A built-in by its name, a file by the model's own name when it has one (a GGUF's metadata), else by the file.
    b->displayName = core::isBuiltinSpec(spec.toStdString()) ? QString::fromStdString(core::builtinName(spec.toStdString()))
                     : !b->loaded.name.empty()                  ? QString::fromStdString(b->loaded.name).trimmed()
                                                                : QFileInfo(QString::fromStdString(b->loaded.ggufPath.empty() ? b->loaded.folder : b->loaded.ggufPath)).fileName();
    if (b->displayName.isEmpty() || b->displayName == QLatin1String("."))
        b->displayName = QDir(QString::fromStdString(b->loaded.folder)).dirName();
    return b;
}

} // namespace attnscope::app
