// buildGrid implementation.
#include "views/grid_builder.h"

#include "analysis/attention_grid.h"
#include "audio/audio_features.h"
#include "analysis/grid_regroup.h"
#include "analysis/relpos_scan.h"

#include <algorithm>
#include <cmath>
#include <QObject>

namespace attnscope::app {

QString tokenLabel(const core::Token& t)
{
    QString s = QString::fromStdString(t.text);
    s.replace('\n', QStringLiteral("↵"));
    s.replace('\t', QStringLiteral("⇥"));
    if (s.startsWith(' '))
        s = QStringLiteral("␣") + s.mid(1); // GPT-2 tokens carry their leading space
    return s;
}

int autoSegment(const core::TextCapture& capture)
{
    const int tokens = static_cast<int>(capture.tokens.size()), len = std::max(1, capture.segmentLen);
    const int n = (tokens + len - 1) / len;
    // The last segment, unless it is a short tail: then the full one before it shows more.
    if (n >= 2 && (tokens - (n - 1) * len) * 2 < len)
        return n - 2;
    return std::max(0, n - 1);
}

QString componentsLabel(const core::ModelInfo& info, const ViewSelection& s, bool withRaw)
{
    const bool rotary = !info.rotaryFrequencies.empty();
    const int count = rotary ? core::bandsFor(info, s.bands).count() : info.hasRelativeTerms ? 4 : 1;
    if (s.terms.covers(count) && !(withRaw && s.terms.raw))
        return {};
    if (!rotary)
        return QObject::tr("terms %1").arg(QString::fromStdString(core::TermSelection{s.terms.a, s.terms.b, s.terms.c, s.terms.d}.label()));
    const auto split = core::bandsFor(info, s.bands);
    QStringList on;
    const bool sel[4] = {s.terms.a, s.terms.b, s.terms.c, s.terms.d};
    for (int b = 0; b < split.count(); ++b)
        if (sel[b])
            on << QString::fromStdString(split.shortName(b));
    if (split.fixedTerms())
        return (on.size() == 1 ? QObject::tr("%1 term") : QObject::tr("%1 terms")).arg(on.join(QLatin1Char('+')));
    return (on.size() == 1 ? QObject::tr("frequency band %1") : QObject::tr("frequency bands %1")).arg(on.join(QLatin1Char('+')));
}

QString siteTitle(const core::ModelInfo& info, int site, bool average, bool streams)
{
    const auto& s = info.site(site);
    if (info.streams.size() == 1 && s.mixer != core::Mixer::Softmax) // a hybrid's layer says what mixes it
        return QObject::tr("layer %1 (%2)").arg(s.layer + 1).arg(QString::fromUtf8(core::mixerRow(s.mixer).name));
    if (info.streams.size() == 1)
        return QObject::tr("layer %1").arg(s.layer + 1);
    const QString rows = QString::fromStdString(info.streams[static_cast<std::size_t>(s.queryStream)].name);
    const QString cols = QString::fromStdString(info.streams[static_cast<std::size_t>(s.keyStream)].name);
    const QString shape = !streams                       ? QString()
                          : s.causal && s.sameStream() ? QObject::tr(" (%1 × %2, causal)").arg(rows, cols)
                                                       : QObject::tr(" (%1 × %2)").arg(rows, cols);
    if (average) {
        const QString stack = s.stack == core::Stack::Decoder ? QObject::tr("decoder") : s.stack == core::Stack::Encoder
                                                                                         ? QObject::tr("encoder")
                                                                                         : QString();
        const QString kind = s.kind == core::SiteKind::Cross ? QObject::tr("cross-attention") : QObject::tr("self-attention");
        return QObject::tr("%1, mean of all %2 layers%3").arg(kind, stack, shape);
    }
    return QString::fromStdString(s.label()) + shape;
}

QString selectionTitle(const QString& modelName, const ViewSelection& s, const core::ModelInfo& info)
{
    const bool known = s.site >= 0 && s.site < info.siteCount();
    const int headsInLayer = known ? info.site(s.site).heads : info.heads;
    // What one grid of the site is, by its kind: a head, a convolution's channel.
    const core::MixerRow& kind = core::mixerRow(known ? info.site(s.site).mixer : core::Mixer::Softmax);
    const QString noun = QString::fromUtf8(kind.headNoun), nouns = noun + QStringLiteral("s");
    const QString mean = kind.aggregate == core::HeadAggregate::MeanMagnitude ? QObject::tr("mean magnitude of")
                                                                               : QObject::tr("average of");
    QString heads;
    if (headsInLayer == 1)
        heads = QObject::tr("%1 1").arg(noun);
    else if (s.heads.empty() || static_cast<int>(s.heads.size()) == headsInLayer)
        heads = QObject::tr("%1 all %2 %3").arg(mean).arg(headsInLayer).arg(nouns);
    else if (s.heads.size() == 1)
        heads = QObject::tr("%1 %2").arg(noun).arg(s.heads.front() + 1);
    else {
        QStringList l;
        for (int h : s.heads)
            l << QString::number(h + 1);
        heads = QObject::tr("%1 %2 %3").arg(mean, nouns, l.join(QStringLiteral(", ")));
    }
    // The axes say which streams a site reads: the title names only the site.
    QString t = QObject::tr("%1 · %2 · %3").arg(modelName, siteTitle(info, s.site, s.siteAverage, false), heads);
    const QString parts = componentsLabel(info, s, false);
    if (!parts.isEmpty())
        t += QStringLiteral(" · ") + parts;
    if (s.terms.raw && kind.probabilities)
        t += s.terms.uncapped && info.softCapsScores() ? QObject::tr(" · raw scores before the soft cap") : QObject::tr(" · raw scores");
    if (s.terms.heuristic && kind.heuristic)
        t += QObject::tr(" · TransformerLens's heuristic map");
    return t;
}

namespace {
struct Axes;
std::shared_ptr<widgets::GridData> fillGrid(const core::TextCapture& capture, const QString& modelName, const ViewSelection& s,
                                            int segment, core::AttentionGrid grid, const Axes& axes);
}

namespace {
// The grid of the selection's site, or the mean over every site of its kind.
core::AttentionGrid siteGrid(const core::TextCapture& capture, const ViewSelection& s, int segment,
                             const core::GridOptions& opt)
{
    if (s.siteAverage)
        return core::attentionGridOfSites(capture, segment, core::sitesLike(capture.model, s.site), s.heads, opt);
    return core::attentionGrid(capture, segment, s.site, s.heads, opt);
}

// Stepping: the first k rows are what the model computes for the first k tokens (same_length models aside); a causal
// site's later keys are simply not shown yet, an encoder's query sees the whole text from the start (every column).
core::AttentionGrid revealed(const core::AttentionGrid& grid, int k, bool causal)
{
    const int cols = causal ? std::min(grid.cols, grid.memoryCols + k) : grid.cols;
    core::AttentionGrid cut;
    cut.rows = k;
    cut.cols = cols;
    cut.memoryCols = grid.memoryCols;
    cut.rowStream = grid.rowStream;
    cut.colStream = grid.colStream;
    for (int r = 0; r < k; ++r)
        for (int c = 0; c < cols; ++c) {
            cut.values.push_back(grid.at(r, c));
            cut.highlight.push_back(grid.highlight[static_cast<std::size_t>(r) * grid.cols + c]);
        }
    cut.rowTokens.assign(grid.rowTokens.begin(), grid.rowTokens.begin() + k);
    cut.colTokens.assign(grid.colTokens.begin(), grid.colTokens.begin() + cols);
    if (!grid.rowLabels.empty()) {
        cut.rowLabels.assign(grid.rowLabels.begin(), grid.rowLabels.begin() + k);
        cut.colLabels.assign(grid.colLabels.begin(), grid.colLabels.begin() + cols);
    }
    return cut;
}

// The tokens and text of a grid's rows and of its columns. The rows of a stream the model writes (a decoder's target:
// its stream has a start token) are labelled by what each writes, the next token (the last row: its own prediction,
// spelled by `writer`), so a translation reads as the words it writes; other rows and every column are their tokens.
struct Axes {
    std::vector<core::Token> written; // the written stream's tokens shifted by one, its prediction last
    std::string writtenText;
    bool rowsWrite = false;
    const std::vector<core::Token>* rowTokens = nullptr;
    const std::vector<core::Token>* colTokens = nullptr;
    std::string_view rowText, colText;
    core::GridAxis rows() const { return {rowsWrite ? written : *rowTokens, rowsWrite ? std::string_view(writtenText) : rowText}; }
    core::GridAxis cols() const { return {*colTokens, colText}; }
};

std::string_view streamText(const core::TextCapture& capture, int stream)
{
    return stream == capture.model.segmentStream() ? std::string_view(capture.text)
                                                   : std::string_view(capture.streams[static_cast<std::size_t>(stream)].text);
}

Axes axesOf(const core::TextCapture& capture, const core::AttentionGrid& grid, const core::Tokenizer* writer)
{
    Axes a;
    a.rowTokens = &capture.streamTokens(grid.rowStream);
    a.colTokens = &capture.streamTokens(grid.colStream);
    a.rowText = streamText(capture, grid.rowStream);
    a.colText = streamText(capture, grid.colStream);
    const auto& stream = capture.model.streams[static_cast<std::size_t>(grid.rowStream)];
    a.rowsWrite = stream.startToken >= 0 && grid.rowStream == capture.model.segmentStream();
    if (!a.rowsWrite)
        return a;
    a.written.assign(a.rowTokens->begin() + 1, a.rowTokens->end());
    a.writtenText = capture.text;
    core::Token next{-1, "?", a.writtenText.size(), a.writtenText.size()};
    if (!capture.lastLogits.empty()) {
        next.id = static_cast<std::int32_t>(std::max_element(capture.lastLogits.begin(), capture.lastLogits.end()) -
                                            capture.lastLogits.begin());
        next.text = writer ? writer->pieceOf(next.id) : "<" + std::to_string(next.id) + ">";
        const std::string said = writer && next.id != stream.endToken ? writer->textOf(next.id) : std::string();
        next.end = next.begin + said.size();
        a.writtenText += said;
    }
    a.written.push_back(std::move(next));
    return a;
}
} // namespace

namespace {
// A recording's spectrogram under the columns of a grid whose keys are its encoder positions: each position the mean
// of the two 10-ms frames it reads most directly (the second convolution's stride), the padding past the recording
// marked.
void addSpectrogram(const core::TextCapture& capture, widgets::GridData& d)
{
    if (!capture.audio || d.cols != capture.audio->frames / 2 || d.cols < 1)
        return;
    const core::AudioFeatures& a = *capture.audio;
    auto strip = std::make_shared<widgets::KeyStrip>();
    strip->bins = a.mels;
    strip->cols = d.cols;
    strip->contentCols = (a.contentFrames + 1) / 2;
    strip->label = QObject::tr("mel");
    strip->values.resize(static_cast<std::size_t>(a.mels) * d.cols);
    for (int m = 0; m < a.mels; ++m)
        for (int j = 0; j < d.cols; ++j)
            strip->values[static_cast<std::size_t>(m) * d.cols + j] = 0.5f * (a.at(m, 2 * j) + a.at(m, 2 * j + 1));
    d.keyStrip = std::move(strip);
    d.labelChars = std::max(d.labelChars, 7); // "12.34 s" whole
    d.colAxis = QObject::tr("time in the recording (20-ms encoder positions)");
}
} // namespace

widgets::GridDataPtr buildGrid(const core::TextCapture& capture, const QString& modelName, const ViewSelection& s,
                               const core::StopToken* stop, const std::function<void(int, int)>& headsDone,
                               const core::Tokenizer* writer)
{
    const int segment = s.segment < 0 ? autoSegment(capture) : s.segment;
    core::GridOptions opt;
    opt.terms = s.terms;
    std::optional<core::BandSplit> bands;
    if (!capture.model.rotaryFrequencies.empty()) {
        bands = core::bandsFor(capture.model, s.bands);
        opt.bands = &*bands;
    }
    opt.topFraction = s.topFraction;
    opt.highlightMemoryOnly = s.highlightScope == HighlightScope::Memory;
    opt.stop = stop;
    opt.headsDone = headsDone;
    auto grid = siteGrid(capture, s, segment, opt);
    const Axes axes = axesOf(capture, grid, writer);
    // Encoder readings (Clark et al.): without the special tokens, and over whole words.
    if (s.hideSpecial)
        grid = core::withoutSpecialTokens(grid, axes.rows(), axes.cols(), !s.terms.raw, s.topFraction);
    if (s.wholeWords)
        grid = core::wordLevelGrid(grid, axes.rows(), axes.cols(), !s.terms.raw, s.topFraction);
    if ((s.hideSpecial || s.wholeWords) && opt.highlightMemoryOnly) // the regrouped grid ranked its rows anew
        core::restrictHighlightToMemory(grid);
    if (s.revealRows >= 0 && s.revealRows < grid.rows) {
        const int frameRows = grid.rows, frameCols = grid.cols;
        const bool causal = capture.model.site(s.site).causal;
        auto d = fillGrid(capture, modelName, s, segment, revealed(grid, std::max(1, s.revealRows), causal), axes);
        d->frameRows = frameRows;
        d->frameCols = frameCols;
        addSpectrogram(capture, *d);
        return d;
    }
    auto d = fillGrid(capture, modelName, s, segment, std::move(grid), axes);
    if (capture.model.can.audio && capture.model.site(s.site).keyStream == 0)
        addSpectrogram(capture, *d);
    return d;
}

namespace {
void addSinkColumn(const core::ModelInfo& model, const ViewSelection& s, widgets::GridData& d);

// A site whose grid is an implicit map (a convolution's): signed, so a colour range symmetric around 0 and a label
// that says so and names what the map multiplies; several channels at once are their mean magnitude, from 0.
void labelImplicitMap(const core::ModelInfo& model, const ViewSelection& s, widgets::GridData& d)
{
    const core::MixerRow& kind = core::mixerRow(model.site(s.site).mixer);
    if (kind.probabilities)
        return;
    const bool several = s.heads.size() != 1 && model.site(s.site).heads > 1;
    const bool magnitudes = several && kind.aggregate == core::HeadAggregate::MeanMagnitude;
    // Short enough for the colour bar at 1280x800: the kind is in the title, the values here.
    const QString values = QString::fromUtf8(kind.values);
    const QString map = kind.heuristic && s.terms.heuristic ? QObject::tr("heuristic map, not exact") : QObject::tr("exact map");
    d.valueLabel = magnitudes ? QObject::tr("mean |weight| of %1 (%2)").arg(values, map)
                              : QObject::tr("signed weight of %1 (%2)").arg(values, map);
    d.diverging = d.signedWeights = !magnitudes;
    d.fromZero = magnitudes;
}

std::shared_ptr<widgets::GridData> fillGrid(const core::TextCapture& capture, const QString& modelName, const ViewSelection& s,
                                            int segment, core::AttentionGrid grid, const Axes& axes)
{
    auto d = std::make_shared<widgets::GridData>();
    d->title = selectionTitle(modelName, s, capture.model);
    if (s.wholeWords)
        d->title += QObject::tr(" · words");
    if (s.hideSpecial)
        d->title += QObject::tr(" · without special tokens");
    if (capture.segments.size() > 1)
        d->title += QObject::tr(" · segment %1 of %2").arg(segment + 1).arg(capture.segments.size());
    d->rows = grid.rows;
    d->cols = grid.cols;
    d->memoryCols = grid.memoryCols;
    d->values = std::move(grid.values); // a 4096 x 4096 grid is 64 MB: moved, not copied
    d->highlight = std::move(grid.highlight);
    d->rowPositions = grid.rowTokens;
    d->colPositions = grid.colTokens;
    const int segmentStream = capture.model.segmentStream();
    for (std::size_t r = 0; r < grid.rowTokens.size(); ++r)
        if (capture.secondText >= 0 && grid.rowStream == segmentStream && grid.rowTokens[r] == capture.secondText)
            d->secondRow = static_cast<int>(r);
    for (std::size_t c = 0; c < grid.colTokens.size(); ++c)
        if (capture.secondText >= 0 && grid.colStream == segmentStream && grid.colTokens[c] == capture.secondText)
            d->secondCol = static_cast<int>(c);
    // Word rows carry their own texts (analysis/grid_regroup.h); token rows are labelled by their tokens.
    auto label = [&](const std::vector<std::string>& words, std::size_t i, const core::GridAxis& axis, int token) {
        core::Token t;
        t.text = i < words.size() ? words[i] : axis.tokens[static_cast<std::size_t>(token)].text;
        return tokenLabel(t);
    };
    const QString writes = axes.rowsWrite ? QStringLiteral("→ ") : QString();
    for (std::size_t r = 0; r < grid.rowTokens.size(); ++r)
        d->rowLabels << writes + label(grid.rowLabels, r, axes.rows(), grid.rowTokens[r]);
    for (std::size_t c = 0; c < grid.colTokens.size(); ++c)
        d->colLabels << label(grid.colLabels, c, axes.cols(), grid.colTokens[c]);
    if (capture.model.streams.size() > 1) { // which stream each axis is, in words
        const auto name = [&](int stream) { return QString::fromStdString(capture.model.streams[static_cast<std::size_t>(stream)].name); };
        d->rowAxis = axes.rowsWrite ? QObject::tr("writes (query)") : QObject::tr("%1 (query)").arg(name(grid.rowStream));
        d->colAxis = grid.colStream == segmentStream && axes.rowsWrite ? QObject::tr("%1 token read (key)").arg(name(grid.colStream))
                                                                        : QObject::tr("%1 token (key)").arg(name(grid.colStream));
        d->labelChars = 12; // whole words: a translation's tokens are few
    }
    const QString parts = componentsLabel(capture.model, s, false);
    if (s.terms.raw && s.terms.uncapped && capture.model.softCapsScores())
        d->valueLabel = parts.isEmpty() ? QObject::tr("score before soft cap and softmax")
                                        : QObject::tr("score of %1 before soft cap and softmax").arg(parts);
    else if (s.terms.raw)
        d->valueLabel = parts.isEmpty() ? QObject::tr("score before softmax") : QObject::tr("score of %1 before softmax").arg(parts);
    else
        d->valueLabel = parts.isEmpty() ? QObject::tr("attention probability") : QObject::tr("softmax of %1").arg(parts);
    d->diverging = s.terms.raw;
    labelImplicitMap(capture.model, s, *d);
    addSinkColumn(capture.model, s, *d);
    return d;
}

// gpt-oss: a head's learned sink takes part of every row's attention; it is drawn as a last column of its own
// ("sink", no token behind it), so each row visibly sums to one with it. Token and word grids alike.
void addSinkColumn(const core::ModelInfo& model, const ViewSelection& s, widgets::GridData& d)
{
    const auto layer = static_cast<std::size_t>(s.site);
    if (s.terms.raw || layer >= model.layerRules.size() || model.layerRules[layer].sinks.empty() || d.cols == 0)
        return;
    const int cols = d.cols + 1;
    std::vector<float> values(static_cast<std::size_t>(d.rows) * cols);
    std::vector<std::uint8_t> highlight(values.size(), 0);
    for (int r = 0; r < d.rows; ++r) {
        double sum = 0;
        for (int c = 0; c < d.cols; ++c) {
            const float v = d.at(r, c);
            values[static_cast<std::size_t>(r) * cols + c] = v;
            if (!d.highlight.empty())
                highlight[static_cast<std::size_t>(r) * cols + c] = d.highlight[static_cast<std::size_t>(r) * d.cols + c];
            if (!std::isnan(v))
                sum += v;
        }
        values[static_cast<std::size_t>(r) * cols + d.cols] = static_cast<float>(std::max(0.0, 1.0 - sum));
    }
    d.values = std::move(values);
    d.highlight = std::move(highlight);
    d.cols = cols;
    d.colLabels << QObject::tr("∅ sink");
    d.colPositions.push_back(-1);
    d.valueLabel += QObject::tr(" (last column: the sink's share)");
}
} // namespace

} // namespace attnscope::app
