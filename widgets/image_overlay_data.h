// What the image view draws: the picture as the model saw it, one value per patch (an attention row over the
// patches), which token the row belongs to, and labels. Filled by the app (views/image_views.h).
#pragma once

#include <QImage>
#include <QString>

#include <memory>
#include <vector>

namespace attnscope::widgets {

struct ImageOverlayData {
    QImage image;               // RGB, the pixels the model read (after resize and crop)
    int rows = 0, cols = 0;     // the patch grid over it
    std::vector<float> values;  // [rows * cols], row-major: the attention each patch gets
    float maxValue = 1.0f;      // the colour scale's top (the row's largest patch value, so faint rows still show)
    int selectedPatch = -1;     // the query patch (row * cols + col), or -1 for a special token
    QString title;              // "shapes-vit · layer 3 · head 2 · from CLS"
    QString subtitle;           // a second line: what the special tokens took, what the model sees
    QString valueLabel;         // "attention"
    // Several rows side by side instead of `values` (the special tokens' maps), each with its label; one colour scale.
    struct Map {
        QString label;
        std::vector<float> values; // [rows * cols]
    };
    std::vector<Map> maps;
};
using ImageOverlayDataPtr = std::shared_ptr<const ImageOverlayData>;

} // namespace attnscope::widgets
