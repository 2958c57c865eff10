// Plain data that the GUI thread sends to the compute threads (copied into each job).
#pragma once

#include <QString>

namespace attnscope::app {

struct TextRequest {
    QString text;
    int segmentLen = 0; // 0: the model's default
    int memLen = -1;    // -1: the model's default
};

struct ScanRequest {
    QString textFile;   // empty: scan `text`
    QString text;
    QString textName;   // how the result names the text when it is not a file ("built-in sample")
    int memLen = 0;
    int segmentLen = 0;
    qint64 maxTokens = -1;
    QString terms;      // "a,b,c,d" for term profiles
};

struct ComparisonRequest {
    QStringList specs;
    QString text;
    int layer = 0;      // 0-based; models with fewer layers show their last
    int maxTokens = 24; // the same first tokens for every model
};

} // namespace attnscope::app
