// makeThumbnails: nearest-neighbour downsampling of each head's grid; probabilities in Viridis (square root, so
// weak structure shows), raw scores in the diverging map around 0.
#include "views/thumbnails.h"

#include "analysis/relpos_scan.h"
#include "attention/attention_scores.h"
#include "colour_maps.h"
#include "views/grid_builder.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::app {

widgets::HeadThumbnailsPtr makeThumbnails(const core::TextCapture& capture, const ViewSelection& selection, int maxSide)
{
    auto t = std::make_shared<widgets::HeadThumbnails>();
    const auto& terms = selection.terms;
    const bool rotary = !capture.model.rotaryFrequencies.empty();
    if (capture.segments.empty() || !terms.any() || (!terms.isFull() && !capture.hasTerms() && !rotary))
        return t;
    std::optional<core::BandSplit> bands;
    if (rotary)
        bands = core::bandsFor(capture.model, selection.bands);
    const int seg = selection.segment < 0 ? autoSegment(capture) : selection.segment;
    const auto& info = capture.model;
    t->layers = info.siteCount(); // a row per site: a single-stream model's layers
    // A column per head of the widest site (a hybrid's scans may have more heads than its attention; a convolution's
    // channels are summed up in their grid, not each shown); a row with fewer heads leaves its last cells blank.
    t->heads = info.heads;
    for (const auto& site : info.sites)
        if (core::mixerRow(site.mixer).aggregate == core::HeadAggregate::Mean)
            t->heads = std::clamp(site.heads, t->heads, 32);
    t->kvHeads = info.streams.size() == 1 && t->heads == info.heads ? info.kvHeads : 0;
    const auto& rules = info.layerRules;
    const bool local = std::any_of(rules.begin(), rules.end(), [](const core::LayerRule& r) { return r.window > 0; });
    const bool global = std::any_of(rules.begin(), rules.end(), [](const core::LayerRule& r) { return r.window <= 0; });
    if (local && global) // marked only where they differ: a model of one kind has nothing to tell apart
        for (const auto& r : rules)
            t->windows.push_back(std::max(0, r.window));
    // Rows say which site they are where a model has several kinds ("E1", "D1 self", "D1 cross"), and layers without
    // positions (SmolLM3's NoPE layers) are named so.
    // A hybrid's rows name their kind ("L1 conv"): a row of channels is no row of attention heads.
    const bool noPositions = std::any_of(rules.begin(), rules.end(), [](const core::LayerRule& r) { return !r.positions; });
    const bool hybrid = std::any_of(info.sites.begin(), info.sites.end(),
                                    [](const core::AttentionSite& a) { return a.mixer != core::Mixer::Softmax; });
    auto rowLabel = [&](int site) {
        const core::AttentionSite& a = info.site(site);
        QString label = QString::fromStdString(a.shortLabel());
        if (a.mixer != core::Mixer::Softmax)
            return label + QStringLiteral(" ") + QString::fromUtf8(core::mixerRow(a.mixer).key);
        return label + (rules[static_cast<std::size_t>(site)].positions ? QString() : QStringLiteral(" NoPE"));
    };
    if (info.streams.size() > 1 || noPositions || hybrid)
        for (int site = 0; site < t->layers; ++site)
            t->rowLabels << rowLabel(site);
    t->images.resize(static_cast<std::size_t>(t->layers) * t->heads);
    // A learned sink takes what a row's probabilities leave: measured on the sampled rows of the full attention.
    const bool sinks = terms.isFull() && !terms.raw &&
                       std::any_of(rules.begin(), rules.end(), [](const core::LayerRule& r) { return !r.sinks.empty(); });
    if (sinks)
        t->sinkMass.assign(t->images.size(), 0.0f);
    for (int l = 0; l < t->layers; ++l) {
        auto in = capture.inputs(seg, l);
        if (bands)
            in.bands = &*bands;
        // Nearest-neighbour sampling: only the sampled query rows are computed, so a long text's thumbnails cost
        // maxSide rows per head, not the whole grid.
        const int w = std::min(in.klen, maxSide), hgt = std::min(in.qlen, maxSide), klen = in.klen;
        const bool signedValues = terms.raw || !core::mixerRow(in.mixer).probabilities; // a score or an implicit map
        std::vector<int> rows(static_cast<std::size_t>(hgt));
        for (int y = 0; y < hgt; ++y)
            rows[static_cast<std::size_t>(y)] = static_cast<int>(static_cast<std::int64_t>(y) * in.qlen / hgt);
#pragma omp parallel for schedule(dynamic)
        for (int h = 0; h < std::min(t->heads, in.heads); ++h) {
            std::vector<float> values(static_cast<std::size_t>(hgt) * klen);
            core::headAttentionRows(in, h, terms, rows, values.data(), klen, std::numeric_limits<float>::quiet_NaN());
            float maxAbs = 1e-9f;
            if (signedValues)
                for (float v : values)
                    if (!std::isnan(v))
                        maxAbs = std::max(maxAbs, std::abs(v));
            if (sinks && in.sinks) {
                double mass = 0;
                for (int y = 0; y < hgt; ++y) {
                    double row = 0;
                    for (int x = 0; x < klen; ++x) {
                        const float v = values[static_cast<std::size_t>(y) * klen + static_cast<std::size_t>(x)];
                        row += std::isnan(v) ? 0.0 : v;
                    }
                    mass += std::max(0.0, 1.0 - row);
                }
                t->sinkMass[static_cast<std::size_t>(l) * t->heads + h] = static_cast<float>(mass / std::max(1, hgt));
            }
            QImage img(w, hgt, QImage::Format_RGB32);
            for (int y = 0; y < hgt; ++y) {
                auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
                for (int x = 0; x < w; ++x) {
                    const float v = values[static_cast<std::size_t>(y) * klen + static_cast<std::size_t>(x) * klen / w];
                    QRgb c = qRgb(235, 235, 235);
                    if (!std::isnan(v))
                        c = signedValues ? widgets::colourAt(widgets::ColourMap::RedBlue, 0.5 + 0.5 * v / maxAbs).rgb()
                                      : widgets::colourAt(widgets::ColourMap::Viridis, std::sqrt(std::max(0.0f, v))).rgb();
                    line[x] = c;
                }
            }
            t->images[static_cast<std::size_t>(l) * t->heads + h] = img;
        }
    }
    if (sinks) { // rank 1: the head whose rows go most to the sink
        std::vector<int> order(t->sinkMass.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            order[i] = static_cast<int>(i);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
            return t->sinkMass[static_cast<std::size_t>(a)] > t->sinkMass[static_cast<std::size_t>(b)];
        });
        t->sinkRank.assign(order.size(), 0);
        for (std::size_t r = 0; r < order.size(); ++r)
            t->sinkRank[static_cast<std::size_t>(order[r])] = static_cast<int>(r) + 1;
    }
    return t;
}

widgets::HeadThumbnailsPtr makeImageThumbnails(const core::TextCapture& capture, int rows, int cols, int specialTokens,
                                               int maxSide)
{
    auto t = std::make_shared<widgets::HeadThumbnails>();
    if (capture.segments.empty() || rows < 1 || cols < 1)
        return t;
    t->layers = capture.model.layers;
    t->heads = capture.model.heads;
    const int T = static_cast<int>(capture.tokens.size());
    // Whole pixels per patch, the picture's shape kept.
    const int cell = std::max(1, maxSide / std::max(rows, cols));
    t->images.resize(static_cast<std::size_t>(t->layers) * t->heads);
    const int cls[1] = {0};
    for (int l = 0; l < t->layers; ++l) {
        const auto in = capture.inputs(0, l);
#pragma omp parallel for schedule(dynamic)
        for (int h = 0; h < t->heads; ++h) {
            std::vector<float> row(static_cast<std::size_t>(T));
            core::headAttentionRows(in, h, {}, cls, row.data(), T, 0.0f);
            const float top = std::max(1e-9f, *std::max_element(row.begin() + specialTokens, row.end()));
            QImage img(cols * cell, rows * cell, QImage::Format_RGB32);
            for (int y = 0; y < img.height(); ++y) {
                auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
                for (int x = 0; x < img.width(); ++x) {
                    const float v = row[static_cast<std::size_t>(specialTokens + (y / cell) * cols + x / cell)] / top;
                    line[x] = widgets::colourAt(widgets::ColourMap::Viridis, std::clamp(v, 0.0f, 1.0f)).rgb();
                }
            }
            t->images[static_cast<std::size_t>(l) * t->heads + h] = img;
        }
    }
    return t;
}

} // namespace attnscope::app
