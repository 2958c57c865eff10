// The main window: token grid in the centre; docks for text, heads (with the all-heads overview), the text view,
// display options and the model; menus for models, export and view; status bar with progress and Cancel.
// Talks to the model only through the ComputeController.
#pragma once

#include "compute/compute_controller.h"
#include "grid_data.h"
#include "ui/view_selection.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QMainWindow>
#include <QTimer>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QDockWidget;
class QFormLayout;
class QLabel;
class QListWidget;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace attnscope::widgets {
class AttentionGridView;
class ComparisonView;
class HeadOverviewView;
class TextAttentionView;
} // namespace attnscope::widgets

namespace attnscope::app {

class RelposPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent = nullptr);

    void openModel(const QString& spec);
    void setText(const QString& text);
    // 0-based layer; heads empty = average of all heads of the layer.
    void setSelection(int layer, const std::vector<int>& heads);
    const ViewSelection& selection() const { return m_selection; }
    const TextResultPtr& result() const { return m_result; }

    widgets::AttentionGridView* grid() const { return m_grid; }
    widgets::HeadOverviewView* headOverview() const { return m_overview; }
    widgets::TextAttentionView* textView() const { return m_textView; }
    QPlainTextEdit* textEdit() const { return m_text; }
    RelposPanel* relposPanel() const { return m_relpos; }
    widgets::ComparisonView* comparison() const { return m_comparison; }
    // Compares the given models on the current text (side by side, shared colour scale).
    void compareModels(const QStringList& specs);

    // Corpus scan on the compute thread (empty path: the built-in sample text); the heatmap fills in as it runs.
    void startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms);
    // The paper's figures for the current model and corpus: 5 (all heads x distances), 6 (the widest head's
    // grid with the top-20% highlight), 7 (terms (a), (b), (d) side by side).
    void showPaperFigure(int figure);

    QString exportFigureTo(const QString& path, double scale = 1.0);
    QString exportDataTo(const QString& path);
    // One figure per head of the current layer into `folder` (PNG, SVG or PDF); returns the error or "".
    QString exportAllHeadsTo(const QString& folder, const QString& extension = QStringLiteral("png"));
    void setPresentation(bool on);
    // Token-by-token stepping through the shown segment: -1 shows every row.
    void setRevealRows(int rows);
    // Sessions: model, text, selections, term toggles, view settings and the scan result, reopened as saved.
    QString saveSession(const QString& path);
    QString openSession(const QString& path);
    // Term toggles (Transformer-XL): which of (a) (b) (c) (d) make up the score, and raw scores vs softmax.
    void setTerms(const core::TermSelection& terms);

public slots:
    void nextHead(int delta);
    void nextLayer(int delta);
    void toggleAverage();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildDocks();
    void buildMenus();
    void rebuildRecentMenu();
    void rememberRecent(const QString& spec);
    void requestRun();
    void refreshGrid();
    void refreshModelPanel();
    void syncSelectorsFromSelection();
    void highlightTokens(int hoveredPosition);
    void scanDialog();
    // After a save or export from a menu: a warning box (over `parent`) with the error, else `done` in the status bar.
    void reportSave(QWidget* parent, const QString& err, const QString& failTitle, const QString& done);
    QDockWidget* dockNamed(const char* objectName) const;
    void showDock(const char* objectName); // shows and raises a (possibly tabbed) dock
    QDockWidget* addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area);

    ComputeController* m_compute;
    std::vector<std::string> m_builtinDirs;
    widgets::AttentionGridView* m_grid = nullptr;
    widgets::HeadOverviewView* m_overview = nullptr;
    widgets::TextAttentionView* m_textView = nullptr;
    RelposPanel* m_relpos = nullptr;
    widgets::ComparisonView* m_comparison = nullptr;
    QListWidget* m_compareList = nullptr;
    QElapsedTimer m_scanClock;
    QPlainTextEdit* m_text = nullptr;
    QCheckBox* m_live = nullptr;
    QLabel* m_tokenInfo = nullptr;
    QSpinBox* m_layerSpin = nullptr;
    QSpinBox* m_headSpin = nullptr;
    QSpinBox* m_segmentSpin = nullptr;
    QCheckBox* m_average = nullptr;
    QComboBox* m_colourMap = nullptr;
    QComboBox* m_normalisation = nullptr;
    QCheckBox* m_values = nullptr;
    QCheckBox* m_highlight = nullptr;
    QDoubleSpinBox* m_topPercent = nullptr;
    QCheckBox* m_termBox[4] = {nullptr, nullptr, nullptr, nullptr};
    QCheckBox* m_rawScores = nullptr;
    QWidget* m_termPanel = nullptr;
    QFormLayout* m_modelForm = nullptr;
    QMenu* m_recentMenu = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QList<QDockWidget*> m_secondaryDocks; // hidden in presentation mode
    QTimer m_debounce;
    QTimer m_playTimer;
    QLabel* m_stepLabel = nullptr;
    QByteArray m_defaultState;
    QByteArray m_statePresentation;
    ViewSelection m_selection;
    TextResultPtr m_result;
    widgets::GridDataPtr m_gridData;
    QJsonObject m_pendingSession; // applied when the session's model and text are ready
    bool m_updatingSelectors = false;
    bool m_presentation = false;
};

} // namespace attnscope::app
