// A loaded model with its tokenizer: what the compute threads run and views read (immutable once built).
#pragma once

#include "model/model_loader.h"
#include "tokenize/tokenizer.h"

#include <QString>
#include <memory>

namespace attnscope::app {

struct ModelBundle {
    core::LoadedModel loaded;
    std::shared_ptr<const core::Tokenizer> tokenizer;
    // An encoder-decoder model's target side (Marian's target.spm); the same tokenizer otherwise.
    std::shared_ptr<const core::Tokenizer> targetTokenizer;
    // A text to open with (the model folder's sample.txt: the built-in stories decoder's story opening), or empty.
    QString sampleText;
    // A source sentence to open with (a built-in model's sample-source.txt), or empty.
    QString sampleSource;
    QString spec;        // as the user gave it: folder, config.json, .gguf or builtin:NAME
    QString displayName; // short name for titles
    std::vector<std::int32_t> controlIds; // the tokenizer's control tokens (<unk>, <eos>, ...): not generated unless asked

    const core::ModelInfo& info() const { return loaded.model->info(); }
};
using ModelBundlePtr = std::shared_ptr<const ModelBundle>;

// Loads model and tokenizer (from the folder, or from the GGUF file); throws core::Error. Any thread.
ModelBundlePtr loadBundle(const QString& spec, const std::vector<std::string>& builtinDirs,
                          const core::LoadOptions& options = {});

} // namespace attnscope::app
