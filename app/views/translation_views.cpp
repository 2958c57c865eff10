// Builders of an encoder-decoder model's views.
#include "views/translation_views.h"

#include "analysis/seq2seq_lens.h"
#include "analysis/token_predictions.h"
#include "colour_maps.h"
#include "views/analysis_figures.h"
#include "tokenize/tokenizer.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::app {

namespace {
QString pieceText(const core::Tokenizer& tok, std::int32_t id)
{
    return QString::fromStdString(tok.pieceOf(id));
}

QString shortSite(const core::AttentionSite& s)
{
    if (s.stack == core::Stack::Encoder)
        return QStringLiteral("E%1").arg(s.layer + 1);
    return QStringLiteral("D%1 %2").arg(s.layer + 1).arg(s.kind == core::SiteKind::Cross ? QStringLiteral("cross")
                                                                                          : QStringLiteral("self"));
}
} // namespace

TranslationResultPtr describeTranslation(ModelBundlePtr model, core::Translation translation, bool running)
{
    auto r = std::make_shared<TranslationResult>();
    const core::Tokenizer& src = *model->tokenizer;
    const core::Tokenizer& tgt = *model->targetTokenizer;
    for (const auto id : translation.source)
        r->sourceLabels << pieceText(src, id);
    for (const auto id : translation.target)
        r->targetLabels << pieceText(tgt, id);
    // Row i is the decoder reading target token i and writing the next: label it by what it writes.
    const int rows = static_cast<int>(translation.logits.size() / std::max(1, translation.vocab));
    const int eos = core::asEncoderDecoder(*model->loaded.model).config().eos;
    std::string text;
    for (int i = 0; i < rows; ++i) {
        std::int32_t written;
        if (i + 1 < static_cast<int>(translation.target.size())) {
            written = translation.target[static_cast<std::size_t>(i) + 1];
        } else {
            const float* row = translation.logits.data() + static_cast<std::size_t>(i) * translation.vocab;
            written = static_cast<std::int32_t>(std::max_element(row, row + translation.vocab) - row);
        }
        r->writtenLabels << pieceText(tgt, written);
    }
    if (rows > 0) { // the next token's likeliest choices after the last row
        const float* row = translation.logits.data() + static_cast<std::size_t>(rows - 1) * translation.vocab;
        QStringList choices;
        for (const auto& p : core::distributionOf(std::span<const float>(row, static_cast<std::size_t>(translation.vocab)), 1.0, 5).top)
            choices << QStringLiteral("%1 (%2%)").arg(pieceText(tgt, p.id)).arg(100.0 * p.probability, 0, 'f', 1);
        r->nextChoices = choices.join(QStringLiteral(", "));
    }
    for (std::size_t i = 1; i < translation.target.size(); ++i)
        if (translation.target[i] != eos)
            text += tgt.textOf(translation.target[i]);
    r->targetText = QString::fromStdString(text).trimmed();
    r->model = std::move(model);
    r->translation = std::move(translation);
    r->running = running;
    return r;
}

int allCrossSites(const core::ModelInfo& info) { return static_cast<int>(info.sites.size()); }

QString siteTitle(const core::ModelInfo& info, int site)
{
    if (site == allCrossSites(info))
        return QObject::tr("cross-attention, mean of all decoder layers (target × source)");
    const auto& s = info.sites[static_cast<std::size_t>(site)];
    const QString what = QString::fromStdString(s.label());
    if (s.stack == core::Stack::Encoder)
        return QObject::tr("%1 self-attention (source × source)").arg(what);
    return s.kind == core::SiteKind::Cross ? QObject::tr("%1 (target × source)").arg(what)
                                           : QObject::tr("%1 (target × target, causal)").arg(what);
}

std::vector<int> wordsOfPieces(const QStringList& pieces)
{
    static const QString spaceMark = QString::fromUtf8("\xE2\x96\x81"), byteSpace = QString::fromUtf8("\xC4\xA0");
    bool marksStarts = false; // SentencePiece / byte-level: a word starts with a mark; WordPiece: ## continues one
    for (const auto& p : pieces)
        marksStarts = marksStarts || p.startsWith(spaceMark) || p.startsWith(byteSpace) || p.startsWith(QLatin1Char(' '));
    auto alone = [](const QString& p) {
        return p.isEmpty() || (p.startsWith(QLatin1Char('<')) && p.endsWith(QLatin1Char('>'))) ||
               (p.startsWith(QLatin1Char('[')) && p.endsWith(QLatin1Char(']'))) || !p.back().isLetterOrNumber();
    };
    std::vector<int> word(static_cast<std::size_t>(pieces.size()));
    int w = -1;
    bool prevAlone = true;
    for (int i = 0; i < pieces.size(); ++i) {
        const QString& p = pieces[i];
        const bool starts = marksStarts ? (p.startsWith(spaceMark) || p.startsWith(byteSpace) || p.startsWith(QLatin1Char(' ')))
                                        : !p.startsWith(QLatin1String("##"));
        const bool own = alone(p);
        if (w < 0 || starts || own || prevAlone)
            ++w;
        word[static_cast<std::size_t>(i)] = w;
        prevAlone = own;
    }
    return word;
}

namespace {
// A grid over words: cell (w, v) = mean over w's rows of the sum over v's columns (masked cells count 0; a cell with
// nothing visible stays masked), as the encoder views' whole-word grids are.
widgets::GridDataPtr wordGrid(const widgets::GridData& g, const std::vector<int>& rowWord, const std::vector<int>& colWord)
{
    static const QString spaceMark = QString::fromUtf8("\xE2\x96\x81"), byteSpace = QString::fromUtf8("\xC4\xA0");
    auto clean = [&](QString p) {
        p.replace(spaceMark, QString()).replace(byteSpace, QString());
        if (p.startsWith(QLatin1String("##")))
            p = p.mid(2);
        return p;
    };
    auto out = std::make_shared<widgets::GridData>(g);
    const int R = rowWord.empty() ? 0 : rowWord.back() + 1, C = colWord.empty() ? 0 : colWord.back() + 1;
    out->rows = R;
    out->cols = C;
    out->rowLabels = QStringList(R, QString());
    out->colLabels = QStringList(C, QString());
    out->rowPositions.assign(static_cast<std::size_t>(R), 0);
    out->colPositions.assign(static_cast<std::size_t>(C), 0);
    for (int i = 0; i < g.rows; ++i) {
        const int w = rowWord[static_cast<std::size_t>(i)];
        QString piece = g.rowLabels[i];
        const bool arrow = piece.startsWith(QStringLiteral("→ "));
        piece = clean(arrow ? piece.mid(2) : piece);
        out->rowLabels[w] = out->rowLabels[w].isEmpty() ? (arrow ? QStringLiteral("→ ") : QString()) + piece : out->rowLabels[w] + piece;
        out->rowPositions[static_cast<std::size_t>(w)] = w;
    }
    for (int j = 0; j < g.cols; ++j) {
        const int v = colWord[static_cast<std::size_t>(j)];
        out->colLabels[v] += clean(g.colLabels[j]);
        out->colPositions[static_cast<std::size_t>(v)] = v;
    }
    out->values.assign(static_cast<std::size_t>(R) * C, 0.0f);
    std::vector<int> rowsIn(static_cast<std::size_t>(R), 0);
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(R) * C, 0);
    for (int i = 0; i < g.rows; ++i) {
        const int w = rowWord[static_cast<std::size_t>(i)];
        ++rowsIn[static_cast<std::size_t>(w)];
        for (int j = 0; j < g.cols; ++j) {
            const float v = g.at(i, j);
            const std::size_t at = static_cast<std::size_t>(w) * C + colWord[static_cast<std::size_t>(j)];
            if (!std::isnan(v)) {
                out->values[at] += v;
                seen[at] = 1;
            }
        }
    }
    for (int w = 0; w < R; ++w)
        for (int v = 0; v < C; ++v) {
            auto& x = out->values[static_cast<std::size_t>(w) * C + v];
            x = seen[static_cast<std::size_t>(w) * C + v] ? x / static_cast<float>(rowsIn[static_cast<std::size_t>(w)])
                                                          : std::numeric_limits<float>::quiet_NaN();
        }
    out->title += QObject::tr(" · whole words");
    return out;
}
} // namespace

widgets::GridDataPtr translationGrid(const TranslationResult& t, int site, int head, bool wholeWords)
{
    const auto& info = t.model->info();
    const bool allLayers = site == allCrossSites(info);
    if (site < 0 || site > allCrossSites(info) || t.translation.sites.size() != info.sites.size())
        return nullptr;
    // The all-layers view averages the cross sites into one attention of the last cross site's shape.
    core::SiteAttention mean;
    int shapeSite = site;
    if (allLayers) {
        int count = 0;
        for (int k = 0; k < static_cast<int>(info.sites.size()); ++k) {
            if (info.sites[static_cast<std::size_t>(k)].kind != core::SiteKind::Cross)
                continue;
            const auto& a = t.translation.sites[static_cast<std::size_t>(k)];
            if (count++ == 0) {
                mean = a;
                shapeSite = k;
            } else {
                for (std::size_t i = 0; i < mean.p.size() && i < a.p.size(); ++i)
                    mean.p[i] += a.p[i];
            }
        }
        if (count == 0)
            return nullptr;
        for (auto& v : mean.p)
            v /= static_cast<float>(count);
    }
    const core::SiteAttention& a = allLayers ? mean : t.translation.sites[static_cast<std::size_t>(site)];
    const auto& s = info.sites[static_cast<std::size_t>(shapeSite)];
    auto g = std::make_shared<widgets::GridData>();
    const bool encoder = s.stack == core::Stack::Encoder;
    const QStringList& rowTokens = encoder ? t.sourceLabels : t.writtenLabels;
    const QStringList& colTokens = s.keyStream == 0 ? t.sourceLabels : t.targetLabels;
    g->rows = std::min<int>(a.rows, static_cast<int>(rowTokens.size()));
    g->cols = std::min<int>(a.cols, static_cast<int>(colTokens.size()));
    for (int i = 0; i < g->rows; ++i) {
        g->rowLabels << (encoder ? rowTokens[i] : QStringLiteral("→ ") + rowTokens[i]);
        g->rowPositions.push_back(i);
    }
    for (int j = 0; j < g->cols; ++j) {
        g->colLabels << colTokens[j];
        g->colPositions.push_back(j);
    }
    g->values.assign(static_cast<std::size_t>(g->rows) * g->cols, 0.0f);
    for (int i = 0; i < g->rows; ++i)
        for (int j = 0; j < g->cols; ++j) {
            float v = 0;
            if (s.causal && j > i) {
                v = std::numeric_limits<float>::quiet_NaN();
            } else if (head >= 0) {
                v = a.at(head, i, j);
            } else {
                for (int h = 0; h < a.heads; ++h)
                    v += a.at(h, i, j);
                v /= static_cast<float>(a.heads);
            }
            g->values[static_cast<std::size_t>(i) * g->cols + j] = v;
        }
    g->title = QStringLiteral("%1 · %2")
                   .arg(allLayers ? QObject::tr("cross-attention, all layers") : QString::fromStdString(s.label()),
                        head >= 0 ? QObject::tr("head %1").arg(head + 1) : QObject::tr("mean of %1 heads").arg(a.heads));
    g->rowAxis = encoder ? QObject::tr("source (query)") : QObject::tr("writes (query)");
    g->colAxis = s.keyStream == 0 ? QObject::tr("source token (key)") : QObject::tr("target token read (key)");
    g->labelChars = 12; // whole words: a translation's tokens are few
    if (!wholeWords)
        return g;
    const auto sourceWords = wordsOfPieces(t.sourceLabels);
    const auto rowWords = wordsOfPieces(encoder ? t.sourceLabels : t.writtenLabels);
    const auto colWords = s.keyStream == 0 ? sourceWords : wordsOfPieces(t.targetLabels);
    return wordGrid(*g, std::vector<int>(rowWords.begin(), rowWords.begin() + g->rows),
                    std::vector<int>(colWords.begin(), colWords.begin() + g->cols));
}

widgets::HeadThumbnailsPtr translationThumbnails(const TranslationResult& t, int maxSide)
{
    const auto& info = t.model->info();
    auto th = std::make_shared<widgets::HeadThumbnails>();
    th->layers = static_cast<int>(info.sites.size());
    th->heads = info.heads;
    th->images.resize(static_cast<std::size_t>(th->layers) * th->heads);
    for (int s = 0; s < th->layers; ++s) {
        th->rowLabels << shortSite(info.sites[static_cast<std::size_t>(s)]);
        const core::SiteAttention& a = t.translation.sites[static_cast<std::size_t>(s)];
        const int w = std::max(1, std::min(a.cols, maxSide)), hgt = std::max(1, std::min(a.rows, maxSide));
        for (int h = 0; h < th->heads; ++h) {
            QImage img(w, hgt, QImage::Format_RGB32);
            for (int y = 0; y < hgt; ++y) {
                auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
                const int i = a.rows > 0 ? y * a.rows / hgt : 0;
                for (int x = 0; x < w; ++x) {
                    const int j = a.cols > 0 ? x * a.cols / w : 0;
                    const bool masked = a.rows == 0 || (info.sites[static_cast<std::size_t>(s)].causal && j > i);
                    line[x] = masked ? qRgb(235, 235, 235)
                                     : widgets::colourAt(widgets::ColourMap::Viridis, std::sqrt(std::max(0.0f, a.at(h, i, j)))).rgb();
                }
            }
            th->images[static_cast<std::size_t>(s) * th->heads + h] = img;
        }
    }
    return th;
}

QString alignmentText(const TranslationResult& t, int site, int head)
{
    const auto& info = t.model->info();
    if (site == allCrossSites(info)) { // the mean over layers, as its grid shows it
        const auto grid = translationGrid(t, site, head);
        if (!grid)
            return {};
        QStringList parts;
        for (int i = 0; i < grid->rows && i < 24; ++i) {
            int best = 0;
            for (int j = 1; j < grid->cols; ++j)
                if (grid->at(i, j) > grid->at(i, best))
                    best = j;
            parts << QStringLiteral("%1 ← %2").arg(t.writtenLabels[i], grid->colLabels[best]);
        }
        return parts.join(QStringLiteral("   ·   "));
    }
    if (site < 0 || site >= static_cast<int>(info.sites.size()) ||
        info.sites[static_cast<std::size_t>(site)].kind != core::SiteKind::Cross)
        return {};
    const auto cols = core::strongestColumns(t.translation.sites[static_cast<std::size_t>(site)], head);
    QStringList parts;
    constexpr int kShown = 24; // a sentence's worth; the grid shows the rest
    for (int i = 0; i < static_cast<int>(cols.size()) && i < t.writtenLabels.size(); ++i) {
        if (i == kShown) {
            parts << QObject::tr("… (%1 more)").arg(static_cast<int>(cols.size()) - kShown);
            break;
        }
        const int j = cols[static_cast<std::size_t>(i)];
        parts << QStringLiteral("%1 ← %2").arg(t.writtenLabels[i], j < t.sourceLabels.size() ? t.sourceLabels[j] : QString());
    }
    return parts.join(QStringLiteral("   ·   "));
}

PaperFigure positionBiasFigure(const ModelBundle& model)
{
    const auto& m = core::asEncoderDecoder(*model.loaded.model);
    const int H = m.info().heads;
    const int reach = std::min(m.config().maxDistance + m.config().maxDistance / 4 + 1, 160);
    PaperFigure f;
    f.name = QObject::tr("Position bias");
    f.title = QObject::tr("%1 · learned relative-position bias by head and signed distance (key − query)")
                  .arg(model.displayName);
    for (const auto stack : {core::Stack::Encoder, core::Stack::Decoder}) {
        auto g = std::make_shared<widgets::GridData>();
        const bool encoder = stack == core::Stack::Encoder;
        const int lo = -reach, hi = encoder ? reach : 0;
        g->rows = H;
        g->cols = hi - lo + 1;
        for (int h = 0; h < H; ++h) {
            g->rowLabels << QObject::tr("head %1").arg(h + 1);
            g->rowPositions.push_back(h);
        }
        for (int o = lo; o <= hi; ++o) {
            g->colLabels << QString::number(o);
            g->colPositions.push_back(o - lo);
        }
        for (int h = 0; h < H; ++h)
            for (int o = lo; o <= hi; ++o)
                g->values.push_back(m.positionBiasAt(stack, h, o));
        g->title = encoder ? QObject::tr("encoder (both directions)") : QObject::tr("decoder (looks back only)");
        g->valueLabel = QObject::tr("bias added to the score");
        g->rowAxis = QObject::tr("head");
        g->colAxis = QObject::tr("signed distance, key − query (tokens)");
        g->diverging = true;
        g->labelChars = 6;
        f.grids.push_back(g);
    }
    return f;
}

PaperFigure encoderRolloutFigure(const TranslationResult& t)
{
    const auto& info = t.model->info();
    auto g = std::make_shared<widgets::GridData>();
    const int S = static_cast<int>(t.translation.source.size());
    g->rows = g->cols = S;
    g->values = core::encoderRollout(info, t.translation);
    g->highlight.assign(g->values.size(), 0);
    for (int i = 0; i < S; ++i) {
        g->rowLabels << t.sourceLabels[i];
        g->colLabels << t.sourceLabels[i];
        g->rowPositions.push_back(i);
        g->colPositions.push_back(i);
    }
    g->valueLabel = QObject::tr("share of the source token in the encoder's output (rollout)");
    g->rowAxis = QObject::tr("encoder output position");
    g->colAxis = QObject::tr("source token");
    g->title = QObject::tr("%1 · attention rollout over the encoder's %2 layers")
                   .arg(t.model->displayName)
                   .arg(core::asEncoderDecoder(*t.model->loaded.model).config().encLayers);
    PaperFigure f;
    f.number = 0;
    f.name = QObject::tr("Attention rollout");
    f.title = g->title;
    f.grids.push_back(g);
    return f;
}

PaperFigure decoderLensFigure(const TranslationResult& t, const core::StopToken* stop)
{
    const auto& m = core::asEncoderDecoder(*t.model->loaded.model);
    const auto lens = core::decoderLogitLens(m, t.translation, 5, stop);
    QStringList columns;
    for (int p = 0; p < lens.positions; ++p)
        columns << (p < t.targetLabels.size() ? t.targetLabels[p] : QString());
    auto f = logitLensFigure(lens, columns, *t.model->targetTokenizer, t.model->displayName);
    f.title = QObject::tr("%1 · logit lens over the decoder: after each layer, the next target token it would write")
                  .arg(t.model->displayName);
    return f;
}

} // namespace attnscope::app
