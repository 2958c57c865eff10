// Word timings as figures.
#include "views/speech_figures.h"

#include "util/message_text.h"

#include <QObject>

#include <algorithm>
#include <memory>

namespace attnscope::app {

namespace {

QString seconds(double s)
{
    return QString::number(s, 'f', 2);
}

// The words and their times, as the title says them: "Hello 0.00–0.04 · world 0.04–0.40 · …".
QString wordLine(const core::SpeechAlignment& timing)
{
    QStringList words;
    for (const auto& w : timing.words)
        words << QStringLiteral("%1 %2–%3").arg(QString::fromStdString(core::bytesSpelled(w.word)).trimmed(),
                                                 seconds(w.start), seconds(w.end));
    return words.join(QStringLiteral(" · "));
}

std::shared_ptr<widgets::GridData> alignmentGrid(const core::SpeechAlignment& timing, const core::TranscriptRun& run,
                                                 const core::Tokenizer& tokenizer, const QString& modelName)
{
    auto g = std::make_shared<widgets::GridData>();
    const int frames = timing.steps.frames, rows = static_cast<int>(timing.steps.matrix.size()) / std::max(frames, 1);
    g->rows = rows;
    g->cols = frames;
    g->values = timing.steps.matrix;
    g->highlight.assign(g->values.size(), 0);
    for (std::size_t k = 0; k < timing.path.text.size(); ++k)
        if (timing.path.text[k] >= 0 && timing.path.time[k] >= 0)
            g->highlight[static_cast<std::size_t>(timing.path.text[k]) * frames + timing.path.time[k]] = 1;
    // Each row is its token; a word's first token also names the word and its times.
    g->rowLabels << QStringLiteral("<|notimestamps|>");
    std::size_t word = 0, firstOfWord = 0;
    for (std::size_t k = 0; k < run.text.size(); ++k) {
        QString label = QString::fromStdString(core::bytesSpelled(tokenizer.pieceOf(run.text[k])));
        if (word < timing.words.size() && k == firstOfWord) {
            const auto& w = timing.words[word];
            label += QStringLiteral("   %1 %2–%3 s").arg(QString::fromStdString(core::bytesSpelled(w.word)).trimmed(),
                                                         seconds(w.start), seconds(w.end));
            firstOfWord += w.tokens.size();
            ++word;
        }
        g->rowLabels << label;
    }
    for (int j = 0; j < frames; ++j)
        g->colLabels << seconds(j * run.secondsPerPosition) + QStringLiteral(" s");
    g->diverging = true;
    g->valueLabel = QObject::tr("standardised cross-attention (mean of the alignment heads)");
    g->rowAxis = QObject::tr("token (each row predicts the next)");
    g->colAxis = QObject::tr("time in the recording (the DTW path outlined)");
    g->title = QObject::tr("%1 · word timings over the recording (OpenAI's recipe)").arg(modelName);
    g->labelChars = 30;
    return g;
}

std::shared_ptr<widgets::GridData> rankingGrid(const std::vector<core::HeadAlignmentScore>& ranking,
                                               const std::vector<core::DecoderHead>& chosen)
{
    auto g = std::make_shared<widgets::GridData>();
    const int n = static_cast<int>(ranking.size());
    g->rows = n;
    g->cols = 4;
    g->colLabels = {QObject::tr("frame error"), QObject::tr("path score"), QObject::tr("monotonicity"),
                    QObject::tr("sharpness")};
    // Colour = the head's place among all heads on that column (1: best), so every column reads the same way.
    auto value = [&](int r, int c) {
        const auto& s = ranking[static_cast<std::size_t>(r)];
        return c == 0 ? -s.meanFrameError : c == 1 ? s.pathScore : c == 2 ? s.monotonicity : s.sharpness;
    };
    g->values.resize(static_cast<std::size_t>(n) * 4);
    for (int r = 0; r < n; ++r) {
        const auto& s = ranking[static_cast<std::size_t>(r)];
        const bool isChosen = std::find(chosen.begin(), chosen.end(), s.head) != chosen.end();
        g->rowLabels << QStringLiteral("%1D%2 H%3").arg(isChosen ? QStringLiteral("★ ") : QString()).arg(s.head.layer + 1).arg(s.head.head + 1);
        for (int c = 0; c < 4; ++c) {
            int below = 0;
            for (int o = 0; o < n; ++o)
                below += value(o, c) < value(r, c) ? 1 : 0;
            g->values[static_cast<std::size_t>(r) * 4 + c] = n > 1 ? static_cast<float>(below) / (n - 1) : 1.0f;
        }
        g->cellTexts << QString::number(s.meanFrameError, 'f', 1) << QString::number(s.pathScore, 'f', 2)
                     << QString::number(s.monotonicity, 'f', 2) << QString::number(s.sharpness, 'f', 2);
    }
    g->fromZero = true;
    g->labelChars = 16;
    g->valueLabel = QObject::tr("place among the heads (1: best)");
    g->rowAxis = QObject::tr("decoder head, best aligned first (★: the alignment heads)");
    g->colAxis = QObject::tr("each head's own DTW path against the alignment heads' (frame error in 20-ms positions)");
    g->title = QObject::tr("Every head ranked by how well it aligns: click one to show it");
    return g;
}

} // namespace

PaperFigure wordTimingFigure(const core::SpeechAlignment& timing, const std::vector<core::HeadAlignmentScore>& ranking,
                             const std::vector<core::DecoderHead>& chosen, const core::TranscriptRun& run,
                             const core::Tokenizer& tokenizer, const QString& modelName)
{
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Word timings");
    f.grids.push_back(alignmentGrid(timing, run, tokenizer, modelName));
    f.grids.push_back(rankingGrid(ranking, chosen));
    f.title = QObject::tr("%1 · word timings: %2").arg(modelName, wordLine(timing));
    f.stacked = true; // the matrix over time and the ranking each take the figure's width
    f.values = true;  // the ranking's numbers in its cells
    return f;
}

} // namespace attnscope::app
