// loadBundle: model + tokenizer from one spec.
#include "compute/model_bundle.h"

#include "tokenize/id_tokenizer.h"

#include <QDir>
#include <QFileInfo>

namespace attnscope::app {

ModelBundlePtr loadBundle(const QString& spec, const std::vector<std::string>& builtinDirs)
{
    auto b = std::make_shared<ModelBundle>();
    b->loaded = core::loadModel(spec.toStdString(), builtinDirs);
    // Reference test models ship without a tokenizer: let the user type token ids instead.
    if (core::hasTokenizerFiles(b->loaded.folder))
        b->tokenizer = core::loadTokenizer(b->loaded.folder);
    else
        b->tokenizer = std::make_shared<core::IdTokenizer>(b->loaded.model->info().vocabSize);
    b->spec = spec;
    b->displayName = spec.startsWith(QLatin1String("builtin:")) ? spec.mid(8)
                                                                 : QFileInfo(QString::fromStdString(b->loaded.folder)).fileName();
    if (b->displayName.isEmpty() || b->displayName == QLatin1String("."))
        b->displayName = QDir(QString::fromStdString(b->loaded.folder)).dirName();
    return b;
}

} // namespace attnscope::app
