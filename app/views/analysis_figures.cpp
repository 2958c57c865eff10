// Analysis figures: grid data with labels, titles and value names.
#include "views/analysis_figures.h"

#include "views/grid_builder.h"

#include <QObject>
#include <algorithm>
#include <cmath>

namespace attnscope::app {

QString headLabel(int layer, int head)
{
    return QStringLiteral("L%1 H%2").arg(layer + 1).arg(head + 1);
}

namespace {
// An analysis figure of one grid, titled as the grid is.
PaperFigure oneGridFigure(const QString& name, std::shared_ptr<widgets::GridData> g, bool values)
{
    PaperFigure f;
    f.number = 0;
    f.name = name;
    f.title = g->title;
    f.values = values;
    f.grids.push_back(std::move(g));
    return f;
}
} // namespace

PaperFigure rolloutFigure(const core::AttentionGrid& r, const core::TextCapture& capture, const QString& modelName)
{
    auto g = std::make_shared<widgets::GridData>();
    g->rows = r.rows;
    g->cols = r.cols;
    g->values = r.values;
    g->highlight = r.highlight;
    g->rowPositions = r.rowTokens;
    g->colPositions = r.colTokens;
    const auto& tokens = capture.streamTokens(r.rowStream);
    for (int t : r.rowTokens)
        g->rowLabels << tokenLabel(tokens[static_cast<std::size_t>(t)]);
    for (int t : r.colTokens)
        g->colLabels << tokenLabel(tokens[static_cast<std::size_t>(t)]);
    g->valueLabel = QObject::tr("share of the input token in the output (rollout)");
    g->rowAxis = QObject::tr("output position");
    g->colAxis = QObject::tr("input token");
    // The layers rolled out: every layer of a one-stream model, an encoder-decoder model's encoder over its source.
    int layers = 0;
    for (const auto& site : capture.model.sites)
        layers += site.queryStream == r.rowStream && site.sameStream() ? 1 : 0;
    const bool oneStream = capture.model.streams.size() == 1;
    g->title = oneStream ? QObject::tr("%1 · attention rollout over all %2 layers").arg(modelName).arg(layers)
                         : QObject::tr("%1 · attention rollout over the %2's %3 layers")
                               .arg(modelName, QString::fromStdString(capture.model.streams[static_cast<std::size_t>(r.rowStream)].name))
                               .arg(layers);
    return oneGridFigure(QObject::tr("Attention rollout"), std::move(g), false);
}

PaperFigure ablationFigure(const core::AblationResult& r, const QString& modelName, int tokens)
{
    auto g = std::make_shared<widgets::GridData>();
    g->rows = r.layers;
    g->cols = r.heads;
    for (int l = 0; l < r.layers; ++l)
        for (int h = 0; h < r.heads; ++h)
            g->values.push_back(static_cast<float>(r.change(l, h)));
    g->highlight.assign(g->values.size(), 0);
    for (int l = 0; l < r.layers; ++l)
        g->rowLabels << QObject::tr("layer %1").arg(l + 1);
    for (int h = 0; h < r.heads; ++h)
        g->colLabels << QObject::tr("H%1").arg(h + 1);
    g->valueLabel = QObject::tr("loss change when the head is zeroed (nats)");
    g->rowAxis = QObject::tr("layer");
    g->colAxis = QObject::tr("head");
    g->diverging = true;
    g->title = QObject::tr("%1 · head ablation · %2 tokens · intact loss %3 nats%4")
                   .arg(modelName)
                   .arg(tokens)
                   .arg(r.baseLoss, 0, 'f', 3)
                   .arg(r.partial ? QObject::tr(" (cancelled: blank heads were not run)") : QString());
    return oneGridFigure(QObject::tr("Head ablation"), std::move(g), true);
}

widgets::GridDataPtr similarityGrid(const std::vector<double>& distances, const std::vector<int>& order, int heads,
                                    const QString& title)
{
    auto g = std::make_shared<widgets::GridData>();
    const int n = static_cast<int>(order.size());
    const auto total = static_cast<std::size_t>(std::sqrt(static_cast<double>(distances.size())));
    g->rows = g->cols = n;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            g->values.push_back(static_cast<float>(distances[static_cast<std::size_t>(order[static_cast<std::size_t>(a)]) * total +
                                                             static_cast<std::size_t>(order[static_cast<std::size_t>(b)])]));
    g->highlight.assign(g->values.size(), 0);
    for (int i : order) {
        g->rowLabels << headLabel(i / heads, i % heads);
        g->colLabels << headLabel(i / heads, i % heads); // no token positions: the tooltip gives no distance
    }
    g->valueLabel = QObject::tr("Jensen-Shannon distance of the profiles");
    g->rowAxis = QObject::tr("head (clustered order)");
    g->colAxis = QObject::tr("head (clustered order)");
    g->title = title;
    return g;
}

PaperFigure tokenKindsFigure(const std::vector<core::TokenAttention>& byLayer, const QString& modelName)
{
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Attention by token kind");
    f.title = QObject::tr("%1 · attention by token kind, per layer").arg(modelName);
    f.values = true;
    auto g = std::make_shared<widgets::GridData>();
    g->title = f.title;
    g->rows = static_cast<int>(byLayer.size());
    // A kind the text does not have (a decoder's text has no [CLS] or [SEP]) is NaN in every layer: no column.
    using Kind = double core::TokenAttention::*;
    const std::vector<std::pair<QString, Kind>> kinds = {
        {QStringLiteral("[CLS]"), &core::TokenAttention::cls},          {QStringLiteral("[SEP]"), &core::TokenAttention::sep},
        {QObject::tr("punct."), &core::TokenAttention::punctuation}, {QObject::tr("previous"), &core::TokenAttention::previous},
        {QObject::tr("next"), &core::TokenAttention::next}};
    std::vector<Kind> shown;
    for (const auto& [label, kind] : kinds)
        if (std::any_of(byLayer.begin(), byLayer.end(), [kind = kind](const auto& t) { return !std::isnan(t.*kind); })) {
            shown.push_back(kind);
            g->colLabels << label;
            g->colPositions.push_back(-1);
        }
    g->cols = static_cast<int>(shown.size());
    for (int l = 0; l < g->rows; ++l) {
        for (Kind kind : shown)
            g->values.push_back(static_cast<float>(byLayer[static_cast<std::size_t>(l)].*kind));
        g->rowLabels << QObject::tr("layer %1").arg(l + 1);
        g->rowPositions.push_back(-1);
    }
    g->highlight.assign(g->values.size(), 0);
    g->rowAxis = QObject::tr("layer");
    g->colAxis = QObject::tr("attention to (Clark et al. 2019, Fig. 2)");
    g->valueLabel = QObject::tr("mean attention");
    f.grids.push_back(g);
    return f;
}

PaperFigure logitLensFigure(const core::LogitLens& lens, const core::TextCapture& capture,
                            const core::Tokenizer& tokenizer, const QString& modelName)
{
    QStringList columns;
    for (int p = 0; p < lens.positions; ++p)
        columns << tokenLabel(capture.tokens[static_cast<std::size_t>(lens.firstPosition + p)]);
    return logitLensFigure(lens, columns, tokenizer, modelName);
}

PaperFigure logitLensFigure(const core::LogitLens& lens, const QStringList& columns, const core::Tokenizer& tokenizer,
                            const QString& modelName)
{
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Logit lens");
    f.values = true;  // the cells name their top tokens
    f.stacked = true; // one panel above the other: each gets the width its cells' tokens need
    f.title = QObject::tr("%1 · logit lens: each layer's top %2").arg(modelName, lens.nextToken ? QObject::tr("next token")
                                                                                                : QObject::tr("token"));
    auto piece = [&](std::int32_t id) {
        core::Token t;
        t.text = tokenizer.pieceOf(id);
        return tokenLabel(t);
    };
    for (const bool byRank : {false, true}) {
        auto g = std::make_shared<widgets::GridData>();
        g->title = byRank ? QObject::tr("coloured by 1 / rank of the token that follows")
                          : QObject::tr("coloured by the top token's probability");
        g->rows = lens.layers;
        g->cols = lens.positions;
        for (int l = 0; l < lens.layers; ++l)
            g->rowLabels << QObject::tr("layer %1").arg(l + 1);
        for (int p = 0; p < lens.positions; ++p) {
            g->colLabels << columns.value(p);
            g->colPositions.push_back(lens.firstPosition + p);
        }
        for (int l = 0; l < lens.layers; ++l)
            for (int p = 0; p < lens.positions; ++p) {
                const auto i = static_cast<std::size_t>(l) * lens.positions + p;
                const auto& top = lens.top[i];
                const int rank = lens.actualRank[i];
                g->values.push_back(byRank ? (rank >= 0 ? 1.0f / static_cast<float>(rank + 1) : std::nanf(""))
                                           : (top.empty() ? 0.0f : static_cast<float>(top.front().probability)));
                g->cellTexts << (top.empty() ? QString() : piece(top.front().id));
                QStringList lines;
                for (const auto& t : top)
                    lines << QStringLiteral("%1 %2%").arg(piece(t.id).toHtmlEscaped()).arg(100 * t.probability, 0, 'f', 1);
                QString tip = QObject::tr("top: %1").arg(lines.join(QStringLiteral(" · ")));
                if (rank >= 0)
                    tip += QObject::tr("<br>%1 token: rank %2, %3%")
                               .arg(lens.nextToken ? QObject::tr("next") : QObject::tr("actual"))
                               .arg(rank + 1)
                               .arg(100 * lens.actualProbability[i], 0, 'f', 1);
                g->cellTips << tip;
            }
        g->highlight.assign(g->values.size(), 0);
        g->rowAxis = QObject::tr("after layer");
        g->colAxis = lens.nextToken ? QObject::tr("position (its top next token in the cell)")
                                    : QObject::tr("position (its top token in the cell)");
        g->valueLabel = byRank ? QObject::tr("1 / rank of the actual token") : QObject::tr("top token's probability");
        f.grids.push_back(g);
    }
    return f;
}

PaperFigure logitAttributionFigure(const core::LogitAttribution& a, const core::TextCapture& capture,
                                   const core::Tokenizer& tokenizer, const QString& modelName)
{
    core::Token t;
    t.text = tokenizer.pieceOf(a.token);
    const QString token = tokenLabel(t);
    const QString at = tokenLabel(capture.tokens[static_cast<std::size_t>(a.position)]);
    const bool bias = std::any_of(a.attentionBias.begin(), a.attentionBias.end(), [](double v) { return std::abs(v) > 1e-6; });
    auto g = std::make_shared<widgets::GridData>();
    g->rows = a.layers;
    g->cols = a.heads + (bias ? 2 : 1);
    for (int l = 0; l < a.layers; ++l) {
        for (int h = 0; h < a.heads; ++h)
            g->values.push_back(static_cast<float>(a.headShare(l, h)));
        if (bias)
            g->values.push_back(static_cast<float>(a.attentionBias[static_cast<std::size_t>(l)]));
        g->values.push_back(static_cast<float>(a.mlp[static_cast<std::size_t>(l)]));
        g->rowLabels << QObject::tr("layer %1").arg(l + 1);
    }
    g->highlight.assign(g->values.size(), 0);
    for (int h = 0; h < a.heads; ++h)
        g->colLabels << QObject::tr("H%1").arg(h + 1);
    if (bias)
        g->colLabels << QObject::tr("bias");
    g->colLabels << QObject::tr("MLP");
    g->valueLabel = QObject::tr("logit units (each cell adds this to the logit)");
    g->rowAxis = QObject::tr("layer");
    g->colAxis = bias ? QObject::tr("head, then the attention's bias and the feed-forward block (MLP)")
                      : QObject::tr("head, then the feed-forward block (MLP)");
    g->diverging = true;
    const QString capped = std::abs(a.cappedLogit - a.logit) > 1e-9
                               ? QObject::tr(" (%1 after the soft cap)").arg(a.cappedLogit, 0, 'f', 2)
                               : QString();
    // Two lines: a figure window's width holds neither whole.
    g->title = QObject::tr("%1 · direct logit attribution of \u201c%2\u201d after \u201c%3\u201d (token %4)\nlogit %5%6 = "
                           "embedding %7 + the cells + constant %8")
                   .arg(modelName, token, at)
                   .arg(a.position + 1)
                   .arg(a.logit, 0, 'f', 2)
                   .arg(capped)
                   .arg(a.embedding, 0, 'f', 2)
                   .arg(a.constant, 0, 'f', 2);
    return oneGridFigure(QObject::tr("Direct logit attribution"), std::move(g), true);
}

PaperFigure positionBiasFigure(const ModelBundle& model)
{
    const auto& m = *model.loaded.model;
    const auto& info = m.info();
    const int reach = std::min(info.positionBiasReach + info.positionBiasReach / 4 + 1, 160);
    PaperFigure f;
    f.name = QObject::tr("Position bias");
    f.title = QObject::tr("%1 · learned relative-position bias by head and signed distance (key − query)")
                  .arg(model.displayName);
    // A stack's bias is held by its first layer and shared by all its layers: one panel per stack that has one.
    for (int s = 0; s < info.siteCount(); ++s) {
        const auto& site = info.site(s);
        if (!site.positionBias || site.layer != 0)
            continue;
        auto g = std::make_shared<widgets::GridData>();
        const int lo = -reach, hi = site.causal ? 0 : reach;
        g->rows = site.heads;
        g->cols = hi - lo + 1;
        for (int h = 0; h < site.heads; ++h) {
            g->rowLabels << QObject::tr("head %1").arg(h + 1);
            g->rowPositions.push_back(h);
        }
        for (int o = lo; o <= hi; ++o) {
            g->colLabels << QString::number(o);
            g->colPositions.push_back(o - lo);
        }
        for (int h = 0; h < site.heads; ++h)
            for (int o = lo; o <= hi; ++o)
                g->values.push_back(m.positionBiasAt(s, h, o));
        const QString stack = site.stack == core::Stack::Encoder ? QObject::tr("encoder")
                              : site.stack == core::Stack::Decoder ? QObject::tr("decoder")
                                                                   : QObject::tr("the layers");
        g->title = site.causal ? QObject::tr("%1 (looks back only)").arg(stack) : QObject::tr("%1 (both directions)").arg(stack);
        g->valueLabel = QObject::tr("bias added to the score");
        g->rowAxis = QObject::tr("head");
        g->colAxis = QObject::tr("signed distance, key − query (tokens)");
        g->diverging = true;
        g->labelChars = 6;
        f.grids.push_back(g);
    }
    return f;
}

} // namespace attnscope::app
