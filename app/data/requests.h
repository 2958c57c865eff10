// Plain data that the GUI thread sends to the compute threads (copied into each job).
#pragma once

#include "analysis/qk_space.h"
#include "attention/rotary_bands.h"

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>

namespace attnscope::core {
struct AudioFeatures;
}

namespace attnscope::app {

struct TextRequest {
    QString text;
    QString secondText; // sentence B of a pair (encoders); empty: one text
    int segmentLen = 0; // 0: the model's default
    int memLen = -1;    // -1: the model's default
    QString source;     // the source read beside the text (an encoder-decoder model's); empty: none
    int generate = 0;   // > 0: the model continues the text greedily, up to this many tokens, each step delivered
    QStringList pictures; // a vision-language model's pictures (PNG files), read with the text; empty: the text alone
    std::shared_ptr<const core::AudioFeatures> audio; // a speech model's recording, heard with the text (its transcript)
};

struct ScanRequest {
    QString textFile;   // empty: scan `text`
    QString text;
    QString textName;   // how the result names the text when it is not a file ("built-in sample")
    int memLen = 0;
    int segmentLen = 0;
    qint64 maxTokens = -1;
    QString terms;      // extra profiles: "a,b,c,d" (terms) or "1,2,3" (rotary bands)
    std::optional<core::BandSplit> bands; // the split of band profiles
};

// One head's query-key space (the Query-Key Space tab).
struct QkRequest {
    int segment = -1; // -1: the shown one
    int layer = 0, head = 0;
    core::QkMethod method = core::QkMethod::Pca;
    QString corpus;            // a text file whose first tokens are embedded instead of the text
    bool positionPart = false; // Transformer-XL: queries against the relative encodings R instead of the keys
};

struct ComparisonRequest {
    QStringList specs;
    QString text;
    int layer = 0;      // 0-based; models with fewer layers show their last
    int maxTokens = 24; // the same first tokens for every model
};

} // namespace attnscope::app
