// What the prediction bars show: the top tokens at one position with their probabilities (plain data).
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

namespace attnscope::widgets {

struct PredictionData {
    QString title;              // e.g. "[MASK] at token 7"
    QStringList tokens;         // most probable first
    std::vector<double> probabilities;
    int marked = -1;            // index into tokens of the token actually there (drawn in another colour), -1: none
    int markedRank = 0;         // its rank (1 = most probable) when it is outside the top shown above it, else 0
    std::vector<bool> excluded; // per token: outside a sampler's top-k / top-p cut-off (drawn pale), or empty
};
using PredictionPtr = std::shared_ptr<const PredictionData>;

} // namespace attnscope::widgets
