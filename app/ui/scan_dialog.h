// The Scan Corpus dialog: which text (the built-in sample or a file: a typed path counts, and is remembered), the
// memory and segment lengths, a token limit, and whether to also profile the score terms.
#pragma once

#include "data/model_bundle.h"

#include <QString>
#include <optional>

class QWidget;

namespace attnscope::app {

struct ScanSettings {
    QString textFile; // empty: the built-in sample
    int memLen = 0;
    int segmentLen = 0;
    qint64 maxTokens = -1;
    bool terms = false;
};

// Asks; nullopt when cancelled.
std::optional<ScanSettings> askScanSettings(QWidget* parent, const core::ModelInfo& model);

} // namespace attnscope::app
