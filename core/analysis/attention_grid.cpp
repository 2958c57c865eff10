// attentionGrid: head selection, term recombination and the top-fraction highlight.
#include "analysis/attention_grid.h"

#include "attention/attention_scores.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

std::vector<std::uint8_t> topFractionMask(const std::vector<float>& values, int rows, int cols, double fraction,
                                          bool probabilities)
{
    std::vector<std::uint8_t> out(values.size(), 0);
#pragma omp parallel for schedule(static) if (static_cast<double>(rows) * cols > 1e6)
    for (int r = 0; r < rows; ++r) {
        thread_local std::vector<float> row;
        row.clear();
        for (int c = 0; c < cols; ++c) {
            const float v = values[static_cast<std::size_t>(r) * cols + c];
            if (!std::isnan(v))
                row.push_back(v);
        }
        if (row.empty())
            continue; // (inside an OpenMP loop: no early exit)
        const auto keep = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(fraction * row.size() - 1e-9)));
        std::nth_element(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(keep - 1), row.end(), std::greater<>());
        float threshold = row[keep - 1];
        if (probabilities)
            threshold = std::max({threshold, 1.0f / static_cast<float>(row.size()) + 1e-7f, 0.005f});
        for (int c = 0; c < cols; ++c) {
            const float v = values[static_cast<std::size_t>(r) * cols + c];
            if (!std::isnan(v) && v >= threshold)
                out[static_cast<std::size_t>(r) * cols + c] = 1;
        }
    }
    return out;
}

namespace {
// The top fraction of each row: of the probabilities, or of a signed map's magnitudes (a strong negative weight reads
// as much as a positive one).
std::vector<std::uint8_t> highlightOf(const AttentionGrid& g, const MixerRow& kind, double fraction, bool raw)
{
    if (kind.probabilities)
        return topFractionMask(g.values, g.rows, g.cols, fraction, !raw);
    std::vector<float> magnitude(g.values.size());
    for (std::size_t c = 0; c < magnitude.size(); ++c)
        magnitude[c] = std::abs(g.values[c]);
    return topFractionMask(magnitude, g.rows, g.cols, fraction, false);
}
} // namespace

void placeGrid(const TextCapture& capture, int segment, int site, AttentionGrid& g)
{
    const auto& seg = capture.segment(segment);
    const auto& rec = capture.record(segment, site);
    const AttentionSite& where = capture.model.site(site);
    const int segmentStream = capture.model.segmentStream();
    g.rowStream = where.queryStream;
    g.colStream = where.keyStream;
    g.rows = rec.qlen;
    g.cols = rec.klen;
    // Rows and columns of the segment stream are its tokens at the segment's positions; a read stream's from its first.
    const int rowFirst = where.queryStream == segmentStream ? static_cast<int>(seg.firstPosition) : 0;
    const bool keysOfSegments = where.keyStream == segmentStream;
    g.memoryCols = keysOfSegments ? rec.mlen : 0;
    const int colFirst = keysOfSegments ? static_cast<int>(seg.firstPosition) - rec.mlen : 0;
    g.rowTokens.resize(static_cast<std::size_t>(g.rows));
    g.colTokens.resize(static_cast<std::size_t>(g.cols));
    for (int i = 0; i < g.rows; ++i)
        g.rowTokens[static_cast<std::size_t>(i)] = rowFirst + i;
    for (int j = 0; j < g.cols; ++j)
        g.colTokens[static_cast<std::size_t>(j)] = colFirst + j;
}

AttentionGrid attentionGrid(const TextCapture& capture, int segment, int site, const std::vector<int>& headsIn,
                            const GridOptions& options)
{
    const auto& terms = options.terms;
    ScoreInputs in = capture.inputs(segment, site);
    in.bands = options.bands;
    if (terms.raw && terms.uncapped) // the scores as the products make them, before the model caps them
        in.softCap = 0.0f;
    const int H = in.heads;
    std::vector<int> heads = headsIn;
    if (heads.empty())
        for (int h = 0; h < H; ++h)
            heads.push_back(h);
    for (int h : heads)
        if (h < 0 || h >= H)
            throw Error(ErrorCode::BadInput, "head " + std::to_string(h + 1) + " does not exist");
    const bool full = terms.covers(in.termCount()) && !terms.raw;
    if (!terms.any())
        throw Error(ErrorCode::BadInput, "no score term is selected: tick at least one of (a), (b), (c), (d)");
    if (!full && !capture.hasTerms() && !options.bands)
        throw Error(ErrorCode::BadInput, "this model has no relative score terms");
    if (options.bands) {
        const bool on[4] = {terms.a, terms.b, terms.c, terms.d};
        for (int b = options.bands->count(); b < 4; ++b)
            if (on[b] && !terms.covers(options.bands->count()))
                throw Error(ErrorCode::BadInput, "band " + std::to_string(b + 1) + " does not exist");
    }

    AttentionGrid g;
    placeGrid(capture, segment, site, g);
    const std::size_t cells = static_cast<std::size_t>(g.rows) * g.cols;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const int total = static_cast<int>(heads.size());
    auto headDone = [&](std::size_t k) {
        if (options.headsDone)
            options.headsDone(static_cast<int>(k) + 1, total);
        if (options.stop && options.stop->stopRequested() && k + 1 < heads.size())
            throw Error(ErrorCode::Cancelled, "grid cancelled");
    };
    // A signed map's heads (a convolution's channels) would cancel in a plain mean: its row says how they combine.
    const MixerRow& kind = mixerRow(in.mixer);
    const bool magnitudes = heads.size() > 1 && kind.aggregate == HeadAggregate::MeanMagnitude;
    auto addHead = [&](std::size_t k, float* into, bool first) {
        float* one = into;
        std::vector<float> scratch;
        if (!first) {
            scratch.resize(cells);
            one = scratch.data();
        }
        headAttention(in, heads[k], terms, one, g.cols, nan);
        if (magnitudes)
            for (std::size_t c = 0; c < cells; ++c)
                one[c] = std::abs(one[c]);
        if (!first)
            for (std::size_t c = 0; c < cells; ++c)
                into[c] += one[c];
        headDone(k);
    };
    g.values.resize(cells);
    for (std::size_t k = 0; k < heads.size(); ++k)
        addHead(k, g.values.data(), k == 0);
    if (heads.size() > 1) {
        const float inv = 1.0f / static_cast<float>(heads.size());
        for (auto& v : g.values)
            v *= inv;
    }

    g.highlight = highlightOf(g, kind, options.topFraction, terms.raw);
    if (options.highlightMemoryOnly)
        restrictHighlightToMemory(g);
    return g;
}

AttentionGrid attentionGridOfSites(const TextCapture& capture, int segment, const std::vector<int>& sites,
                                   const std::vector<int>& heads, const GridOptions& options)
{
    if (sites.empty())
        throw Error(ErrorCode::BadInput, "no site to average");
    AttentionGrid mean = attentionGrid(capture, segment, sites.front(), heads, options);
    for (std::size_t k = 1; k < sites.size(); ++k) {
        const AttentionGrid g = attentionGrid(capture, segment, sites[k], heads, options);
        if (g.rows != mean.rows || g.cols != mean.cols)
            throw Error(ErrorCode::BadInput, "the sites to average have different shapes");
        for (std::size_t c = 0; c < mean.values.size(); ++c)
            mean.values[c] += g.values[c];
    }
    const float inv = 1.0f / static_cast<float>(sites.size());
    for (auto& v : mean.values)
        v *= inv;
    mean.highlight = topFractionMask(mean.values, mean.rows, mean.cols, options.topFraction, !options.terms.raw);
    if (options.highlightMemoryOnly)
        restrictHighlightToMemory(mean);
    return mean;
}

std::vector<int> sitesLike(const ModelInfo& info, int site)
{
    const AttentionSite& like = info.site(site);
    std::vector<int> out;
    for (int s = 0; s < info.siteCount(); ++s)
        if (info.site(s).stack == like.stack && info.site(s).kind == like.kind && info.site(s).mixer == like.mixer)
            out.push_back(s);
    return out;
}

void restrictHighlightToMemory(AttentionGrid& g)
{
    if (g.highlight.size() != g.values.size())
        return;
    for (int i = 0; i < g.rows; ++i)
        for (int j = g.memoryCols; j < g.cols; ++j)
            g.highlight[static_cast<std::size_t>(i) * g.cols + j] = 0;
}

} // namespace attnscope::core
