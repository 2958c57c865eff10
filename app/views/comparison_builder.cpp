// buildComparison: one capture per model over the same tokens (one segment), one grid per head.
#include "views/comparison_builder.h"

#include "run/text_capture.h"
#include "views/grid_builder.h"

#include <QObject>

namespace attnscope::app {

widgets::ComparisonPtr buildComparison(const std::vector<ModelBundlePtr>& models, const QString& text, int layer,
                                       int maxTokens)
{
    auto data = std::make_shared<widgets::ComparisonData>();
    int shownTokens = 0;
    for (const auto& bundle : models) {
        auto tokens = bundle->tokenizer->encode(text.toStdString());
        if (static_cast<int>(tokens.size()) > maxTokens)
            tokens.resize(static_cast<std::size_t>(maxTokens));
        shownTokens = static_cast<int>(tokens.size());
        core::CaptureOptions opt;
        opt.segmentLen = std::max(1, shownTokens); // one segment: the same rows and columns for every model
        const auto capture = core::captureText(*bundle->loaded.model, std::move(tokens), opt);
        std::vector<widgets::GridDataPtr> row;
        ViewSelection sel;
        sel.site = std::min(layer, bundle->info().layers - 1);
        for (int h = 0; h < bundle->info().heads; ++h) {
            sel.heads = {h};
            row.push_back(buildGrid(*capture, bundle->displayName, sel));
        }
        data->rowTitles << QObject::tr("%1 (layer %2)").arg(bundle->displayName).arg(sel.site + 1);
        data->grids.push_back(std::move(row));
    }
    data->title = QObject::tr("Same text, %1 tokens: each model's heads side by side (shared colour scale 0..1)").arg(shownTokens);
    return data;
}

} // namespace attnscope::app
