// Paper figures: profiles for Figs. 5 and 7, the widest heads' grids for Fig. 6.
#include "views/paper_figures.h"

#include "util/error.h"
#include "views/grid_builder.h"
#include "views/relpos_builder.h"

#include <QObject>

namespace attnscope::app {

PaperFigure paperFigureFromScan(int number, const core::ScanResult& scan, const QString& what)
{
    PaperFigure f;
    f.number = number;
    if (number == 5) {
        f.title = QObject::tr("Attention by relative distance (Fig. 5) · %1").arg(what);
        f.heatmap = relposFigure(scan, f.title, {"full"});
        return f;
    }
    if (number != 7)
        throw core::Error(core::ErrorCode::BadInput, "only Figs. 5 and 7 are drawn from a scan alone");
    // A rotary model's counterpart: each frequency band alone.
    std::vector<std::string> bands;
    for (int b = 1; b <= core::kMaxBands; ++b)
        if (scan.sums.count("band_" + std::to_string(b)))
            bands.push_back("band_" + std::to_string(b));
    if (!bands.empty()) {
        f.title = QObject::tr("Attention of each rotary frequency band alone (the Fig. 7 counterpart) · %1").arg(what);
        f.heatmap = relposFigure(scan, f.title, bands);
        return f;
    }
    std::vector<std::string> keys;
    for (const auto& t : {core::TermSelection{true, false, false, false}, core::TermSelection{false, true, false, false},
                          core::TermSelection{false, false, false, true}})
        keys.push_back(core::Profile::ofTerms(t).key());
    for (const auto& k : keys)
        if (!scan.sums.count(k))
            throw core::Error(core::ErrorCode::BadInput,
                              "Fig. 7 needs the profiles of terms (a), (b) and (d) (Transformer-XL) or of each frequency "
                              "band (Llama family): scan again with them ticked in the scan dialog");
    f.title = QObject::tr("Attention of each score term alone (Fig. 7) · %1").arg(what);
    f.heatmap = relposFigure(scan, f.title, keys);
    return f;
}

int fig6Segment(const core::TextCapture& capture)
{
    int best = 0;
    std::size_t bestPairs = 0;
    for (std::size_t s = 0; s < capture.segments.size(); ++s) {
        std::size_t pairs = 0;
        for (const auto& span : capture.segments[s]->spans)
            pairs += static_cast<std::size_t>(span.len);
        if (pairs >= bestPairs) {
            bestPairs = pairs;
            best = static_cast<int>(s);
        }
    }
    return best;
}

PaperFigure paperFigure6(const core::ScanResult& ranking, const core::TextCapture& capture, const QString& modelName,
                         int count)
{
    if (capture.segments.empty())
        throw core::Error(core::ErrorCode::BadInput, "Fig. 6 needs a text");
    const auto summary = core::summariseHeads(ranking, "full");
    const auto order = core::rankByWidth(summary);
    PaperFigure f;
    f.number = 6;
    f.title = QObject::tr("The %1 widest heads (Fig. 6) · %2").arg(std::min<std::size_t>(count, order.size())).arg(modelName);
    for (std::size_t i = 0; i < std::min<std::size_t>(static_cast<std::size_t>(count), order.size()); ++i) {
        ViewSelection sel;
        sel.site = summary[order[i]].layer;
        sel.heads = {summary[order[i]].head};
        sel.segment = fig6Segment(capture);
        sel.topFraction = 0.2;
        sel.highlightScope = HighlightScope::Memory;
        auto grid = std::make_shared<widgets::GridData>(*buildGrid(capture, modelName, sel));
        grid->title = QObject::tr("L%1 H%2 · widest #%3").arg(sel.site + 1).arg(sel.heads[0] + 1).arg(i + 1);
        f.grids.push_back(std::move(grid));
    }
    return f;
}

} // namespace attnscope::app
