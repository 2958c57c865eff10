// Sentence figures (sentence_figures.h).
#include "views/sentence_figures.h"

#include "analysis/grid_regroup.h"
#include "views/analysis_figures.h"

#include <QObject>

#include <cmath>

namespace attnscope::app {

PaperFigure sentenceFigure(const core::AttentionGrid& tokenGrid, const core::TextCapture& capture,
                           const core::ReceiverHeads& receivers, const std::optional<core::SentenceSuppression>& suppression,
                           const QString& modelName, const QString& headName)
{
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Sentences");
    f.title = QObject::tr("%1 · the text by sentences · %2").arg(modelName, headName);

    const auto s = core::sentenceLevelGrid(tokenGrid, capture.tokens, capture.text, 0.2);
    auto a = std::make_shared<widgets::GridData>();
    a->rows = s.rows;
    a->cols = s.cols;
    a->values = s.values;
    a->highlight = s.highlight;
    for (const auto& l : s.rowLabels)
        a->rowLabels << QString::fromStdString(l);
    for (const auto& l : s.colLabels)
        a->colLabels << QString::fromStdString(l);
    a->labelChars = 18;
    a->rowAxis = QObject::tr("query sentence");
    a->colAxis = QObject::tr("key sentence");
    a->valueLabel = QObject::tr("attention (summed over the key sentence, averaged over the query's)");
    a->title = QObject::tr("%1 by sentence").arg(headName);
    f.grids.push_back(a);

    auto b = std::make_shared<widgets::GridData>();
    b->rows = receivers.layers;
    b->cols = receivers.heads;
    for (double k : receivers.kurtosis)
        b->values.push_back(std::isfinite(k) ? static_cast<float>(k) : std::nanf(""));
    b->highlight.assign(b->values.size(), 0);
    for (int l = 0; l < receivers.layers; ++l)
        b->rowLabels << QObject::tr("layer %1").arg(l + 1);
    for (int h = 0; h < receivers.heads; ++h)
        b->colLabels << QObject::tr("H%1").arg(h + 1);
    b->rowAxis = QObject::tr("layer");
    b->colAxis = QObject::tr("head");
    b->valueLabel = QObject::tr("kurtosis of the attention sentences receive (high: receiver head)");
    b->diverging = true;
    b->title = QObject::tr("receiver heads (%1 sentences)").arg(receivers.sentences);
    f.grids.push_back(b);

    if (suppression) {
        auto c = std::make_shared<widgets::GridData>();
        const int S = suppression->sentences;
        c->rows = c->cols = S;
        for (double v : suppression->effect)
            c->values.push_back(std::isfinite(v) ? static_cast<float>(v) : std::nanf(""));
        c->highlight.assign(c->values.size(), 0);
        for (int i = 0; i < S; ++i) {
            c->rowLabels << QObject::tr("S%1 suppressed").arg(i + 1);
            c->colLabels << QObject::tr("S%1").arg(i + 1);
        }
        c->rowAxis = QObject::tr("sentence whose attention is removed");
        c->colAxis = QObject::tr("later sentence");
        c->valueLabel = QObject::tr("mean KL divergence of the next-token predictions (nats)");
        c->fromZero = true;
        c->title = QObject::tr("suppressing a sentence's attention");
        f.grids.push_back(c);
    }
    return f;
}

} // namespace attnscope::app
