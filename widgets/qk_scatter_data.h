// What the query-key space plot shows: one head's queries and keys as 2-D points (plain data).
#pragma once

#include <QString>
#include <QStringList>
#include <array>
#include <memory>
#include <string>
#include <vector>

namespace attnscope::widgets {

struct QkScatterData {
    QString title;          // "layer 2 · head 3 · PCA"
    QString note;           // "closeness ~ dot product: r = 0.62 per query"
    std::vector<float> x, y; // queries first, then keys
    int queries = 0;
    QString keyName = QStringLiteral("key"); // what the second set is ("R", Transformer-XL's relative encodings)
    std::vector<int> positions; // absolute token position of each point, -1 for a point that is no token (an R)
    QStringList labels;         // token text of each point
    // Per query, the keys (point indices) it attends to most, strongest first: drawn as lines from a selected query.
    std::vector<std::array<int, 3>> topKeys;
    std::string csv;  // the points as exported: kind,position,token,x,y
    std::string json; // the same points with the correlation and KL divergence
    bool partial = false;  // a t-SNE picture still converging (nothing to export yet)
    bool fromText = true;  // positions are the text's tokens (false: a corpus's, not in the grid or the text view)
};
using QkScatterPtr = std::shared_ptr<const QkScatterData>;

// Every head's query-key space of one segment, for the all-heads matrix.
struct QkMatrixData {
    int layers = 0, heads = 0;
    QString title;
    std::vector<QkScatterPtr> cells; // [layer * heads + head]
};
using QkMatrixPtr = std::shared_ptr<const QkMatrixData>;

} // namespace attnscope::widgets
