// What the user is looking at and the grid that shows it: the selected site (a layer; an encoder-decoder model's
// encoder, decoder or cross-attention of a layer),
// heads, segment, terms, highlight, stepping and regrouping; the grid and Text View showing it, their locked row and
// marked tokens. Every control that chooses a head or a layer (Heads dock, keys, Relative Position, atlas, query-key
// plot, figure windows) goes through setSelection, so the grid, thumbnails and head-following docks follow in one way.
#pragma once

#include "compute/compute_controller.h"
#include "grid_data.h"
#include "ui/window_parts.h"
#include "views/view_selection.h"

#include <QObject>

namespace attnscope::app {

struct SessionState;

class SelectionController : public QObject {
    Q_OBJECT
public:
    explicit SelectionController(const WindowParts& parts);

    const ViewSelection& selection() const { return m_selection; }
    // 0-based site (a single-stream model's layer); heads empty = average of all heads of the site.
    void setSelection(int site, const std::vector<int>& heads);
    void setTerms(const core::TermSelection& terms);
    void setRevealRows(int rows); // token-by-token stepping: -1 shows every row
    void nextHead(int delta);
    void nextLayer(int delta);
    void toggleAverage(); // the layer's average, and back to the head shown before it

    // A new model starts on layer 1, head 1, full attention; how the user reads grids (highlight, whole words,
    // hidden specials) stays.
    void startModel();
    void takeBands(const std::optional<core::BandSplit>& bands) { m_selection.bands = bands; } // the Display dock's
    void stopStepping(); // a new text opens whole
    void showSite(int site); // every head of a site (an encoder-decoder model opens on its last cross-attention)
    // A new text's result is in: its segments, stepping, the shown grid and the overview.
    void textArrived();
    // A session's view, checked against the model; what does not fit is named in `problems`.
    void applySession(const SessionState& s, QStringList& problems);

    void refreshGrid(); // the grid for the selection, and the docks that follow the head
    void refreshThumbnails();
    // The grid and the text view show `grid` (null: nothing); `preview`: gridPreviewReady's, before result() is its.
    void showGrid(widgets::GridDataPtr grid, bool preview = false);
    const widgets::GridDataPtr& gridData() const { return m_gridData; }
    bool gridIsPreview() const { return m_gridIsPreview; }
    // The token position of the grid's locked row (-1: none locked), and locking the row of a position.
    int lockedPosition() const;
    void lockPosition(int position);
    // Tokens picked in query-key space (a lasso), marked in the grid, the Text View and the plot; empty: none.
    void markTokens(const std::vector<int>& positions);
    int shownSegment() const;
    int shownSegmentRows() const;

signals:
    void gridShown();     // the grid (and text view) show the newest requested selection
    void queryChanged();  // another grid or locked row: the mechanism window follows
    void status(const QString& text);

private:
    void connectControls();
    void connectViews();
    void regroup(bool wholeWords, bool hideSpecial);

    WindowParts m_parts;
    ViewSelection m_selection;
    int m_headBeforeAverage = 0; // A toggles back to this head
    widgets::GridDataPtr m_gridData;
    bool m_gridIsPreview = false; // m_gridData is gridPreviewReady's: the new text's, before result() is
    int m_relockPosition = -1;    // a regrouped grid locks the row of this token position when it arrives
};

} // namespace attnscope::app
