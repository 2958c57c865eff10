// SelectionController implementation.
#include "ui/selection_controller.h"

#include "attention_grid_view.h"
#include "text_attention_view.h"
#include "ui/atlas_panel.h"
#include "ui/display_panel.h"
#include "ui/experts_panel.h"
#include "ui/heads_panel.h"
#include "ui/image_panel.h"
#include "ui/qk_panel.h"
#include "ui/relpos_panel.h"
#include "ui/session.h"
#include "ui/text_panel.h"
#include "ui/translation_panel.h"
#include "qk_scatter_view.h"
#include "views/grid_builder.h"

#include <QMainWindow>
#include <QStringList>

namespace attnscope::app {

SelectionController::SelectionController(const WindowParts& parts)
    : QObject(parts.window)
    , m_parts(parts)
{
    connectControls();
    connectViews();
}

void SelectionController::connectControls()
{
    const WindowParts& p = m_parts;
    connect(p.heads, &HeadsPanel::selectionEdited, this, [this](int layer, int head, bool average) {
        setSelection(layer, average ? std::vector<int>{} : std::vector<int>{head});
    });
    connect(p.heads, &HeadsPanel::segmentChosen, this, [this](int seg) {
        const auto r = m_parts.compute->textResult();
        m_selection.segment = r && seg == autoSegment(*r->capture) ? -1 : seg;
        m_selection.revealRows = -1; // another segment opens whole, not at the last one's reveal position
        m_parts.text->setStepping(shownSegmentRows(), m_selection.revealRows);
        refreshThumbnails();
        refreshGrid();
    });
    connect(p.heads, &HeadsPanel::headsChosen, this, &SelectionController::setSelection);
    connect(p.text, &TextPanel::revealRequested, this, &SelectionController::setRevealRows);
    const auto selectHead = [this](int layer, int head) { setSelection(layer, {head}); };
    connect(p.relpos, &RelposPanel::headSelected, this, selectHead);
    connect(p.atlas, &AtlasPanel::headSelected, this, selectHead);
    connect(p.qk, &QkPanel::headChosen, this, selectHead);
    connect(p.display, &DisplayPanel::termsChanged, this, &SelectionController::setTerms);
    connect(p.display, &DisplayPanel::bandsChanged, this, [this](const std::optional<core::BandSplit>& bands) {
        m_selection.bands = bands;
        m_parts.relpos->setBands(bands); // the grid and thumbnails follow with the terms (full again) emitted next
    });
    connect(p.display, &DisplayPanel::highlightChanged, this, [this](double fraction, HighlightScope scope) {
        m_selection.topFraction = fraction;
        m_selection.highlightScope = scope;
        refreshGrid();
    });
    connect(p.display, &DisplayPanel::settingsChanged, this, [this](const DisplaySettings& s) {
        m_parts.grid->setColourMap(s.colourMap);
        m_parts.grid->setNormalisation(s.normalisation);
        m_parts.grid->setShowValues(s.values);
        m_parts.grid->setShowHighlight(s.highlight);
    });
    connect(p.display, &DisplayPanel::resetZoom, p.grid, &widgets::AttentionGridView::resetView);
    connect(p.display, &DisplayPanel::regroupChanged, this, &SelectionController::regroup);
    connect(p.translation, &TranslationPanel::selectionChanged, this, [this](int site, int head, bool average) {
        const auto& m = m_parts.compute->model();
        if (!m || site >= m->info().siteCount())
            return;
        m_selection.site = site;
        m_selection.siteAverage = average;
        m_selection.heads = head >= 0 ? std::vector<int>{head} : std::vector<int>{};
        m_parts.heads->setSelection(m_selection);
        refreshGrid();
    });
}

void SelectionController::connectViews()
{
    const WindowParts& p = m_parts;
    connect(p.grid, &widgets::AttentionGridView::cellClicked, this, [this](int row, int, Qt::KeyboardModifiers) {
        if (m_gridIsPreview) // its text is still running: a row of it is not yet a position of result()
            return;
        m_parts.grid->setLockedRow(m_parts.grid->lockedRow() == row ? -1 : row);
        // The next-token panel follows the locked query (the text's last token when none is locked); so does the
        // mechanism window.
        m_parts.compute->requestNextToken(lockedPosition());
        emit queryChanged();
    });
    connect(p.grid, &widgets::AttentionGridView::cellHovered, this, [this](int row, int col) {
        if (m_gridIsPreview)
            return;
        const auto r = m_parts.compute->textResult();
        m_parts.text->shadeTokens(r ? r->capture : nullptr, m_gridData && row >= 0 ? m_gridData->colPosition(col) : -1);
    });
    connect(p.textView, &widgets::TextAttentionView::tokenHovered, this, [this](int pos) {
        const auto r = m_parts.compute->textResult();
        m_parts.text->shadeTokens(r ? r->capture : nullptr, pos);
    });
    connect(p.textView, &widgets::TextAttentionView::pairActivated, this, [this](int row, int col) {
        m_parts.grid->setLockedRow(row);
        m_parts.grid->setFocusCell(row, col);
        m_parts.textView->setFocusColumn(col);
    });
    connect(p.qk, &QkPanel::positionClicked, this, &SelectionController::lockPosition);
    connect(p.qk, &QkPanel::positionsMarked, this, &SelectionController::markTokens);
    // The new text's grid while its other layers run: shown, but its positions are not yet those of result().
    connect(p.compute, &ComputeController::gridPreviewReady, this, [this](widgets::GridDataPtr g) { showGrid(g, true); });
    connect(p.compute, &ComputeController::gridReady, this, [this](widgets::GridDataPtr g) {
        showGrid(g);
        if (m_relockPosition >= 0) { // the row whose token or word holds the locked position (rows start in order)
            int row = -1;
            for (int r = 0; r < g->rows; ++r)
                if (g->rowPosition(r) >= 0 && g->rowPosition(r) <= m_relockPosition)
                    row = r;
            m_parts.grid->setLockedRow(row);
            m_relockPosition = -1;
        }
        emit status(g->title);
        emit gridShown();
    });
    connect(p.compute, &ComputeController::thumbnailsReady, this,
            [this](widgets::HeadThumbnailsPtr t) { m_parts.heads->setThumbnails(std::move(t)); });
}

void SelectionController::regroup(bool wholeWords, bool hideSpecial)
{
    m_selection.wholeWords = wholeWords;
    m_selection.hideSpecial = hideSpecial;
    // The locked row follows its token into the regrouped grid (rows move when words join or specials go).
    m_relockPosition = lockedPosition();
    refreshGrid();
}

void SelectionController::setSelection(int site, const std::vector<int>& heads)
{
    if (m_selection.heads.size() == 1)
        m_headBeforeAverage = m_selection.heads.front();
    m_selection.site = site;
    m_selection.siteAverage = false;
    m_selection.heads = heads;
    m_parts.heads->setSelection(m_selection);
    // A model read by the Translation tab shows the choice there too (the Heads dock's rows are its sites).
    if (const auto& m = m_parts.compute->model(); m && m->info().typedReadStream() >= 0)
        m_parts.translation->showSelection(site, heads.size() == 1 ? heads.front() : -1);
    refreshGrid();
}

void SelectionController::setTerms(const core::TermSelection& terms)
{
    m_selection.terms = terms;
    m_parts.display->setTerms(terms);
    m_parts.relpos->setTerms(terms);
    refreshThumbnails();
    refreshGrid(); // with no term ticked the grid says so (a Grid JobFailure)
}

void SelectionController::setRevealRows(int rows)
{
    m_selection.revealRows = rows;
    m_parts.text->setStepping(shownSegmentRows(), rows);
    refreshGrid();
    // Predictions follow the reveal (stepping, Play): the bars are for the token just revealed, unless a row is locked.
    const auto r = m_parts.compute->textResult();
    if (r && m_parts.grid->lockedRow() < 0) {
        const auto& seg = r->capture->segment(shownSegment());
        m_parts.compute->requestNextToken(rows > 0 && rows < seg.qlen ? static_cast<int>(seg.firstPosition) + rows - 1 : -1);
    }
}

void SelectionController::stopStepping()
{
    if (m_selection.revealRows < 0)
        return;
    m_selection.revealRows = -1;
    m_parts.text->setStepping(shownSegmentRows(), -1);
}

void SelectionController::nextHead(int delta)
{
    const auto& m = m_parts.compute->model();
    if (!m)
        return;
    const int H = m->info().site(std::clamp(m_selection.site, 0, m->info().siteCount() - 1)).heads;
    const int cur = m_selection.heads.empty() ? (delta > 0 ? -1 : H) : m_selection.heads.front();
    setSelection(m_selection.site, {((cur + delta) % H + H) % H});
}

void SelectionController::nextLayer(int delta)
{
    const auto& m = m_parts.compute->model();
    if (!m)
        return;
    // Up / Down step sites: layers, or an encoder-decoder model's encoder layers, then each decoder layer's self and
    // cross-attention.
    const int L = m->info().siteCount();
    setSelection(((m_selection.site + delta) % L + L) % L, m_selection.heads);
}

void SelectionController::toggleAverage()
{
    if (m_selection.heads.empty())
        setSelection(m_selection.site, {m_headBeforeAverage});
    else
        setSelection(m_selection.site, {});
}

void SelectionController::startModel()
{
    const ViewSelection previous = m_selection;
    m_selection = ViewSelection{};
    m_selection.topFraction = previous.topFraction;
    m_selection.highlightScope = previous.highlightScope;
    m_selection.wholeWords = previous.wholeWords; // how the user reads grids, not a property of the model
    m_selection.hideSpecial = previous.hideSpecial;
    showGrid(nullptr);
}

void SelectionController::showSite(int site)
{
    m_selection.site = site;
    m_selection.siteAverage = false;
    m_selection.heads.clear();
    m_parts.heads->setSelection(m_selection);
}

void SelectionController::textArrived()
{
    const auto r = m_parts.compute->textResult();
    const int segments = static_cast<int>(r->capture->segments.size());
    if (m_selection.segment >= segments)
        m_selection.segment = -1;
    m_parts.heads->setSegments(segments, shownSegment());
    m_parts.text->setStepping(shownSegmentRows(), m_selection.revealRows);
    m_parts.text->shadeTokens(r->capture, -1);
    // The shown grid first (one interactive lane, first come first served), then the overview.
    refreshGrid();
    refreshThumbnails();
}

void SelectionController::applySession(const SessionState& s, QStringList& problems)
{
    const auto& info = m_parts.compute->model()->info();
    if (!info.rotaryFrequencies.empty() && !s.bandSplit.isEmpty())
        m_parts.display->setBandSplitText(s.bandSplit); // before the terms: a new split resets them
    SessionState state = s;
    // The previous release's Translation tab had one entry past the sites: every decoder layer's cross-attention.
    if (state.selection.site == info.siteCount() && info.typedReadStream() >= 0) {
        for (int site = 0; site < info.siteCount(); ++site)
            if (info.site(site).kind == core::SiteKind::Cross)
                state.selection.site = site;
        state.selection.siteAverage = true;
    }
    m_selection = validatedSelection(state, info.siteCount(), info.heads,
                                     static_cast<int>(m_parts.compute->textResult()->capture->segments.size()),
                                     info.hasRelativeTerms || !info.rotaryFrequencies.empty(), problems);
    if (info.typedReadStream() >= 0) // the Translation tab shows the session's site and head
        m_parts.translation->showSelection(m_selection.siteAverage ? info.siteCount() : m_selection.site,
                                           m_selection.heads.size() == 1 ? m_selection.heads[0] : -1);
    m_selection.bands = m_parts.display->bands();
    m_parts.heads->setSelection(m_selection);
    m_parts.display->setSettings(s.display);
    m_parts.display->setHighlight(m_selection.topFraction, m_selection.highlightScope);
    m_parts.display->setTerms(m_selection.terms);
    m_parts.relpos->setTerms(m_selection.terms);
    m_parts.relpos->setRowOrder(s.relposOrder, s.relposLog);
    m_parts.text->setStepping(shownSegmentRows(), m_selection.revealRows);
}

void SelectionController::refreshGrid()
{
    m_parts.compute->requestGrid(m_selection);
    m_parts.qk->refresh();      // the plot follows the selected head
    m_parts.experts->refresh(); // and the router its layer
    m_parts.image->refresh();   // and the picture its head
}

void SelectionController::refreshThumbnails()
{
    m_parts.compute->requestThumbnails(m_selection);
}

void SelectionController::showGrid(widgets::GridDataPtr grid, bool preview)
{
    m_gridData = grid;
    m_gridIsPreview = grid && preview;
    m_parts.grid->setData(grid);
    m_parts.textView->setData(grid);
    emit queryChanged(); // a new head, layer or text: the mechanism window explains what the grid shows
}

int SelectionController::lockedPosition() const
{
    const int row = m_parts.grid->lockedRow();
    return row >= 0 && m_gridData ? m_gridData->rowPosition(row) : -1;
}

void SelectionController::lockPosition(int position)
{
    // The token's row in the grid, locked as a click there would (its attention row shown).
    int row = -1;
    if (m_gridData && position >= 0)
        for (int r = 0; r < m_gridData->rows; ++r)
            if (m_gridData->rowPosition(r) == position)
                row = r;
    m_parts.grid->setLockedRow(row);
}

void SelectionController::markTokens(const std::vector<int>& positions)
{
    m_parts.grid->setMarkedPositions(positions);
    m_parts.textView->setMarkedPositions(positions);
    m_parts.qk->view()->setMarkedPositions(positions);
    if (positions.empty())
        return;
    const auto r = m_parts.compute->textResult();
    QStringList words;
    for (const int p : positions)
        if (r && p >= 0 && p < static_cast<int>(r->capture->tokens.size()) && words.size() < 12)
            words << QString::fromStdString(r->capture->tokens[static_cast<std::size_t>(p)].text).trimmed();
    emit status(tr("%n token(s) marked in the grid and the Text View: %1%2", "", static_cast<int>(positions.size()))
                    .arg(words.join(QStringLiteral(" · ")), positions.size() > 12 ? QStringLiteral(" …") : QString()));
}

int SelectionController::shownSegment() const
{
    const auto r = m_parts.compute->textResult();
    if (!r)
        return 0;
    return m_selection.segment < 0 ? autoSegment(*r->capture) : m_selection.segment;
}

int SelectionController::shownSegmentRows() const
{
    const auto r = m_parts.compute->textResult();
    return r ? r->capture->segment(shownSegment()).qlen : 0;
}

} // namespace attnscope::app
