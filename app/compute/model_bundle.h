// A loaded model with its tokenizer: what the compute thread owns and views read (immutable once built).
#pragma once

#include "model/model_loader.h"
#include "analysis/relpos_scan.h"
#include "head_overview_view.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"

#include <QMetaType>
#include <QString>
#include <memory>

namespace attnscope::app {

struct ModelBundle {
    core::LoadedModel loaded;
    std::shared_ptr<const core::Tokenizer> tokenizer;
    QString spec;        // as the user gave it: folder, config.json or builtin:NAME
    QString displayName; // short name for titles

    const core::ModelInfo& info() const { return loaded.model->info(); }
};

using ModelBundlePtr = std::shared_ptr<const ModelBundle>;
using TextCapturePtr = std::shared_ptr<const core::TextCapture>;

// What a text request produces: the captured attention and the head overview's images (built off the GUI thread).
struct TextResult {
    TextCapturePtr capture;
    widgets::HeadThumbnailsPtr thumbnails;
};
using TextResultPtr = std::shared_ptr<const TextResult>;
using ScanResultPtr = std::shared_ptr<const core::ScanResult>;

// Loads model and tokenizer; throws core::Error. Safe to call from any thread.
ModelBundlePtr loadBundle(const QString& spec, const std::vector<std::string>& builtinDirs);

} // namespace attnscope::app
