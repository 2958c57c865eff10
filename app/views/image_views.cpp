// imageOverlay: the query's row, recomputed for the heads asked (one row per head), its patch columns kept.
#include "views/image_views.h"

#include "attention/attention_scores.h"

#include <QObject>

#include <algorithm>

namespace attnscope::app {

QImage toQImage(const core::Image8& image)
{
    QImage out(image.width, image.height, QImage::Format_RGB888);
    for (int y = 0; y < image.height; ++y)
        std::copy_n(image.rgb.data() + static_cast<std::size_t>(y) * image.width * 3, image.width * 3, out.scanLine(y));
    return out;
}

namespace {
// Query `query`'s row over every token, for one head or the mean of the layer's heads.
std::vector<float> attentionRow(const core::TextCapture& capture, int layer, int head, bool mean, int query)
{
    const int T = static_cast<int>(capture.tokens.size()), heads = capture.model.heads;
    const core::ScoreInputs in = capture.inputs(0, layer);
    std::vector<float> row(static_cast<std::size_t>(T), 0.0f), one(row.size());
    const int rows[1] = {query};
    for (int h = 0; h < heads; ++h) {
        if (!mean && h != head)
            continue;
        core::headAttentionRows(in, h, {}, rows, one.data(), T, 0.0f);
        for (int j = 0; j < T; ++j)
            row[static_cast<std::size_t>(j)] += one[static_cast<std::size_t>(j)] / static_cast<float>(mean ? heads : 1);
    }
    return row;
}
} // namespace

widgets::ImageOverlayDataPtr imageOverlay(const TextResult& result, int layer, int head, ImageSource source, int query,
                                          const core::AttentionGrid* rollout, const QString& modelName)
{
    if (source == ImageSource::SpecialTokens && result.image && !result.image->inPrompt() && result.capture && layer >= 0 &&
        layer < result.capture->model.layers) {
        const auto& img = *result.image;
        auto d = std::make_shared<widgets::ImageOverlayData>();
        d->image = toQImage(*img.seen);
        d->rows = img.rows;
        d->cols = img.cols;
        const bool mean = head < 0;
        for (int t = 0; t < img.specialTokens; ++t) {
            const auto row = attentionRow(*result.capture, layer, std::max(0, head), mean, t);
            d->maps.push_back({QString::fromStdString(result.capture->tokens[static_cast<std::size_t>(t)].text),
                               std::vector<float>(row.begin() + img.specialTokens, row.end())});
        }
        d->title = QObject::tr("%1 · layer %2 · %3 · the special tokens' maps")
                       .arg(modelName)
                       .arg(layer + 1)
                       .arg(mean ? QObject::tr("mean of heads") : QObject::tr("head %1").arg(head + 1));
        d->subtitle = QObject::tr("each special token's attention over the patches, one colour scale");
        d->valueLabel = QObject::tr("attention");
        return d;
    }
    if (!result.image || !result.capture)
        return nullptr;
    const auto& img = *result.image;
    const auto& capture = *result.capture;
    const int T = static_cast<int>(capture.tokens.size()), P = img.patchOffset(), cells = img.rows * img.cols;
    if (P + cells > T)
        return nullptr;
    if (query < 0 || query >= T || layer < 0 || layer >= capture.model.layers)
        return nullptr;
    std::vector<float> row(static_cast<std::size_t>(T), 0.0f);
    if (source == ImageSource::Rollout) {
        if (!rollout || rollout->cols != T)
            return nullptr;
        for (int j = 0; j < T; ++j)
            row[static_cast<std::size_t>(j)] = rollout->at(query, j);
    } else {
        row = attentionRow(capture, layer, head, source == ImageSource::LayerMean, query);
    }
    auto d = std::make_shared<widgets::ImageOverlayData>();
    d->image = toQImage(*img.seen);
    d->rows = img.rows;
    d->cols = img.cols;
    d->values.assign(row.begin() + P, row.begin() + P + cells);
    d->maxValue = std::max(1e-6f, *std::max_element(d->values.begin(), d->values.end()));
    d->selectedPatch = query >= P && query < P + cells ? query - P : -1;
    // What the patches take of the row, and what the rest keeps (a vision model's registers and CLS often take the
    // most; in a prompt, the text around the picture).
    double special = 0;
    for (int j = 0; j < T; ++j)
        if (j < P || j >= P + cells)
            special += row[static_cast<std::size_t>(j)];
    const QString from = QString::fromStdString(capture.tokens[static_cast<std::size_t>(query)].text);
    const QString what = source == ImageSource::Rollout ? QObject::tr("rollout")
                         : source == ImageSource::LayerMean
                             ? QObject::tr("layer %1 · mean of heads").arg(layer + 1)
                             : QObject::tr("layer %1 · head %2").arg(layer + 1).arg(head + 1);
    d->title = QObject::tr("%1 · %2 · from %3").arg(modelName, what, from);
    const double picture = std::clamp(1.0 - special, 0.0, 1.0), rest = std::clamp(special, 0.0, 1.0);
    if (!img.inPrompt())
        d->subtitle = QObject::tr("special tokens take %1% of the row").arg(rest * 100.0, 0, 'f', 0);
    else if (query < P && source != ImageSource::Rollout) // causal: a word before the picture cannot see it
        d->subtitle = QObject::tr("“%1” comes before the picture: it cannot look at it").arg(from);
    else
        d->subtitle = QObject::tr("the picture takes %1% of the row, the text %2%")
                          .arg(picture * 100.0, 0, 'f', 0)
                          .arg(rest * 100.0, 0, 'f', 0);
    if (!img.prediction.isEmpty())
        d->subtitle += QObject::tr(" · the model sees: %1").arg(img.prediction);
    d->valueLabel = source == ImageSource::Rollout ? QObject::tr("rollout") : QObject::tr("attention");
    return d;
}

} // namespace attnscope::app
