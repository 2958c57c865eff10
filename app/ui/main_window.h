// The main window: a thin shell that places the panels (token grid in the centre; docks for text, heads, text view,
// display, model, relative position, comparison), wires them to the ComputeController, and holds what the user has
// selected. Menus live in main_menus.cpp, presentation mode and fitting the screen in window_layout.h, sessions in
// session.h, the status bar in status_area.h, the scan dialog and figure windows in their own files.
#pragma once

#include "analysis/attention_grid.h"
#include "compute/compute_controller.h"
#include "export/figure_export.h"
#include "grid_data.h"
#include "ui/session.h"
#include "views/view_selection.h"

#include <QMainWindow>
#include <QPointer>
#include <random>
#include <optional>
#include <tuple>

class QDockWidget;
class QMenu;
class QPlainTextEdit;

namespace attnscope::widgets {
class AttentionGridView;
class ComparisonView;
class HeadOverviewView;
class TextAttentionView;
} // namespace attnscope::widgets

namespace attnscope::app {

class ComparisonPanel;
class DisplayPanel;
class FigureWindow;
class PatchingWindow;
class MechanismWindow;
class HeadContextsWindow;
class HeadsPanel;
class ModelPanel;
class RelposPanel;
class AtlasPanel;
class Generation;
class PredictionPanel;
class QkPanel;
class StatusArea;
class TextPanel;
class TranslationPanel;
class ExpertsPanel;
class ImagePanel;
class WindowLayout;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent = nullptr);
    ~MainWindow() override;

    void openModel(const QString& spec);
    void setText(const QString& text);
    // An encoder-decoder model's source sentence (the Translation tab's), translated when such a model is open.
    void setSource(const QString& text);
    QString openTextFile(const QString& path); // "" or the error
    // 0-based layer; heads empty = average of all heads of the layer.
    void setSelection(int layer, const std::vector<int>& heads);
    const ViewSelection& selection() const { return m_selection; }
    TextResultPtr result() const { return m_compute->textResult(); }
    void setTerms(const core::TermSelection& terms);
    void setRevealRows(int rows); // token-by-token stepping: -1 shows every row
    void compareModels(const QStringList& specs);
    // Corpus scan on the background thread (empty path: the built-in sample text); the heatmap fills in as it runs.
    void startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms);
    // The paper's figures in a window of their own (5: every head by distance, 6: the widest heads' grids, 7: terms).
    FigureWindow* showPaperFigure(int figure);
    void setPresentation(bool on);
    bool presentation() const;

    // The grid as a figure: no screen state, `size` or 1000 wide with square cells.
    QString exportFigureTo(const QString& path, const FigureSize& size = {});
    QString exportDataTo(const QString& path);
    // One figure per head of the current layer into `folder`; returns the error or "".
    QString exportAllHeadsTo(const QString& folder, const QString& extension = QStringLiteral("png"));
    QString saveSession(const QString& path);
    QString openSession(const QString& path);

    widgets::AttentionGridView* grid() const { return m_grid; }
    widgets::HeadOverviewView* headOverview() const;
    widgets::TextAttentionView* textView() const { return m_textView; }
    QPlainTextEdit* textEdit() const;
    TextPanel* textPanel() const { return m_textPanel; }
    HeadsPanel* headsPanel() const { return m_headsPanel; }
    DisplayPanel* displayPanel() const { return m_displayPanel; }
    ModelPanel* modelPanel() const { return m_modelPanel; }
    RelposPanel* relposPanel() const { return m_relpos; }
    AtlasPanel* atlasPanel() const { return m_atlas; }
    // Analyses of the current text in figure windows (Analysis menu); the window opens when the result arrives.
    void showRollout();
    void showAblation();
    // The activation-patching window (one at a time), its clean prompt the text on screen when it opens.
    PatchingWindow* showPatching();
    // Every head over a corpus (the text on screen until a file is chosen).
    HeadContextsWindow* showHeadContexts();
    // The text by sentences (reasoning traces): the shown head, receiver heads, attention suppression.
    void showSentences();
    // Each head's share of the logit of the token after the locked query row (or the text's last token).
    void showLogitAttribution();
    MechanismWindow* showMechanism(); // "How this head computes", following the grid's head and query
    FigureWindow* openFigureWindow(const PaperFigure& figure);
    widgets::ComparisonView* comparison() const;
    QDockWidget* dock(const char* objectName) const;
    // Shows and raises a dock; a bottom tab gets the height it asks for (fitBottomDock).
    void showDock(const char* objectName);
    QString statusText() const;
    // The height a bottom tab asks for when it comes up: the Text tab its content (controls and the text's lines),
    // a tab with plots 40% of the window; the grid keeps the rest (at least 45% of a 1280x800 window).
    int wantedDockHeight(const QDockWidget* d) const;

public slots:
    void nextHead(int delta);
    void nextLayer(int delta);
    void toggleAverage();
    void showStatus(const QString& text);
    // A message that must not be missed (it stays in the status bar for a while, over the view titles).
    void notify(const QString& text);

signals:
    void gridShown(); // the grid (and text view) show the newest requested selection

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    // True when a model has computed a text; otherwise says so in a box titled `analysis`.
    bool haveText(const QString& analysis);
    // Gives a docked bottom tab the height it asks for (wantedDockHeight), up or down.
    void fitBottomDock(QDockWidget* d);
    void buildPanels();
    void buildMenus(); // main_menus.cpp
    void connectCompute();
    void onJobFailed(const JobFailure& failure); // every failed or cancelled job, by its kind
    void openOnSample(const ModelBundlePtr& m);  // the model's own sample text, when the user typed none
    void onModelLoaded(const ModelBundlePtr& m);
    // An encoder-decoder model replaces the Text tab with the Translation tab and translates its source; a
    // single-stream model brings the Text tab back.
    void showStreams(const ModelBundlePtr& m);
    // An analysis of one text asked of an encoder-decoder model: says where its attention is instead (true).
    bool refusesTwoStreams(const QString& analysis);
    void showPositionBias();
    void onTranslation(const TranslationResultPtr& r);
    void showTranslationGrid();
    void onTextReady(const TextResultPtr& r);
    void requestRun();
    void refreshGrid();
    // The grid and the text view show `grid` (null: nothing); `preview`: gridPreviewReady's, before result() is its.
    void showGrid(widgets::GridDataPtr grid, bool preview = false);
    void refreshThumbnails();
    // Tokens picked in query-key space (a lasso), marked in the grid, the Text View and the plot; empty: none.
    void markTokens(const std::vector<int>& positions);
    int shownSegment() const;
    int shownSegmentRows() const;
    void applySession(const SessionState& s);
    void rememberRecent(const QString& spec);
    void rebuildRecentMenu();
    // After a save or export from a menu: a warning box (over `parent`) with the error, else `done` in the status bar.
    void reportSave(QWidget* parent, const QString& err, const QString& failTitle, const QString& done);
    // `content` is wrapped in a scroll area unless it copes with any size itself.
    QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area,
                         bool scrollable = true);

    ComputeController* m_compute;
    std::vector<std::string> m_builtinDirs;
    widgets::AttentionGridView* m_grid = nullptr;
    widgets::TextAttentionView* m_textView = nullptr;
    TextPanel* m_textPanel = nullptr;
    TranslationPanel* m_translation = nullptr;
    ExpertsPanel* m_experts = nullptr;
    ImagePanel* m_image = nullptr;
    // A picture for the open vision model (a text model says it reads text).
    void openImage(const QString& path);
    void showImageDock(const ModelBundlePtr& m);
    TranslationResultPtr m_translationResult; // the translation on screen (an encoder-decoder model)
    HeadsPanel* m_headsPanel = nullptr;
    DisplayPanel* m_displayPanel = nullptr;
    ModelPanel* m_modelPanel = nullptr;
    RelposPanel* m_relpos = nullptr;
    AtlasPanel* m_atlas = nullptr;
    PatchingWindow* patchingWindow(); // made on first use
    MechanismWindow* m_mechanism = nullptr; // "How this head computes", made on first use
    void followMechanism();                 // tells it the selected head and query when it is open
    QList<QDockWidget*> presentationDocks(bool on) const;
    void placePresentationDocks();
    QPointer<PatchingWindow> m_patching; // deletes itself on close
    QString m_lastRunText; // the text last sent to run: a new text resets stepping
    QPointer<HeadContextsWindow> m_headContexts;
    PredictionPanel* m_predictions = nullptr;
    QkPanel* m_qk = nullptr;
    Generation* m_generation = nullptr; // Generate, Regenerate and Stop of the Predictions panel
    // Sizes the Heads dock to its thumbnails (once per model, when they first arrive).
    void fitHeadsDock();
    bool m_fitHeadsDock = false;
    ComparisonPanel* m_comparison = nullptr;
    WindowLayout* m_layout = nullptr;
    QMenu* m_recentMenu = nullptr;
    StatusArea* m_status = nullptr;
    ViewSelection m_selection;
    int m_headBeforeAverage = 0; // A toggles back to this head
    widgets::GridDataPtr m_gridData;
    QString m_sampleShown; // the model's own sample text the box was last given ("" = none)
    int m_relockPosition = -1; // a regrouped grid locks the row of this token position when it arrives
    bool m_gridIsPreview = false; // m_gridData is gridPreviewReady's: the new text's, before result() is
    std::optional<SessionState> m_pendingSession; // applied when the session's model and text are ready
    std::shared_ptr<const core::ScanResult> m_pendingScan;
    bool m_surprisalOn = false; // the Display dock's Surprisal toggle
    QString m_tokenInfo;        // the text panel's token count and memory line, before any perplexity
};

} // namespace attnscope::app
