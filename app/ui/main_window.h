// The main window: a shell that places the panels (token grid in the centre; docks for text, translation, heads,
// text view, display, model, image and the analyses tabbed below the grid), builds the menus, and hands the work to
// its controllers: what is selected and shown (selection_controller.h), the text or translation and what comes back
// (stream_controller.h), the analyses (analysis_launcher.h), the files (file_actions.h), dock sizes (dock_fitter.h).
// Menus live in main_menus.cpp, presentation mode and fitting the screen in window_layout.h, the status bar in
// status_area.h. The public functions below are the window's face for main(), headless use and the tests.
#pragma once

#include "compute/compute_controller.h"
#include "export/figure_export.h"
#include "ui/analysis_launcher.h"
#include "ui/dock_fitter.h"
#include "ui/file_actions.h"
#include "ui/selection_controller.h"
#include "ui/stream_controller.h"
#include "ui/window_parts.h"

#include <QMainWindow>

class QDockWidget;
class QMenu;
class QPlainTextEdit;

namespace attnscope::widgets {
class ComparisonView;
class HeadOverviewView;
} // namespace attnscope::widgets

namespace attnscope::app {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent = nullptr);
    ~MainWindow() override;

    // The controllers, for whoever drives the window (main(), the tests).
    SelectionController* selectionController() const { return m_selection; }
    StreamController* streams() const { return m_streams; }
    AnalysisLauncher* analyses() const { return m_analyses; }
    FileActions* files() const { return m_files; }

    void openModel(const QString& spec) { m_parts.compute->loadModel(spec); }
    void setText(const QString& text) { m_streams->setText(text); }
    void setSource(const QString& text) { m_streams->setSource(text); }
    QString openTextFile(const QString& path) { return m_files->openTextFile(path); } // "" or the error
    QString openSession(const QString& path) { return m_files->openSession(path); }
    QString saveSession(const QString& path) { return m_files->saveSession(path); }
    QString exportFigureTo(const QString& path, const FigureSize& size = {}) { return m_files->exportFigureTo(path, size); }
    QString exportDataTo(const QString& path) { return m_files->exportDataTo(path); }
    QString exportAllHeadsTo(const QString& folder) { return m_files->exportAllHeadsTo(folder); }
    // 0-based layer; heads empty = average of all heads of the layer.
    void setSelection(int layer, const std::vector<int>& heads) { m_selection->setSelection(layer, heads); }
    const ViewSelection& selection() const { return m_selection->selection(); }
    TextResultPtr result() const { return m_parts.compute->textResult(); }
    void setTerms(const core::TermSelection& terms) { m_selection->setTerms(terms); }
    void setRevealRows(int rows) { m_selection->setRevealRows(rows); }
    void setPresentation(bool on);
    bool presentation() const;

    widgets::AttentionGridView* grid() const { return m_parts.grid; }
    widgets::HeadOverviewView* headOverview() const;
    widgets::TextAttentionView* textView() const { return m_parts.textView; }
    QPlainTextEdit* textEdit() const;
    TextPanel* textPanel() const { return m_parts.text; }
    HeadsPanel* headsPanel() const { return m_parts.heads; }
    DisplayPanel* displayPanel() const { return m_parts.display; }
    ModelPanel* modelPanel() const { return m_parts.model; }
    RelposPanel* relposPanel() const { return m_parts.relpos; }
    AtlasPanel* atlasPanel() const { return m_parts.atlas; }
    widgets::ComparisonView* comparison() const;
    QDockWidget* dock(const char* objectName) const { return m_docks->dock(objectName); }
    // Shows and raises a dock; a bottom tab gets the height it asks for.
    void showDock(const char* objectName) { m_docks->show(objectName); }
    int wantedDockHeight(const QDockWidget* d) const { return m_docks->wantedHeight(d); }
    QString statusText() const;

public slots:
    void showStatus(const QString& text);
    // A message that must not be missed (it stays in the status bar for a while, over the view titles).
    void notify(const QString& text);

protected:
    void closeEvent(QCloseEvent* event) override;
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void buildPanels();
    void buildControllers();
    void buildMenus(); // main_menus.cpp
    void buildFileMenu();
    void buildAnalysisMenu();
    void buildHelpMenu();
    void onModelShown(const ModelBundlePtr& m);
    void rememberRecent(const QString& spec);
    void rebuildRecentMenu();
    // After a menu's file action: a warning box with the error, else `done` (if any) in the status bar.
    void reportSave(const QString& err, const QString& failTitle, const QString& done);
    // `content` is wrapped in a scroll area unless it copes with any size itself.
    void addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area,
                 bool scrollable = true);

    WindowParts m_parts;
    DockFitter* m_docks = nullptr;
    SelectionController* m_selection = nullptr;
    StreamController* m_streams = nullptr;
    AnalysisLauncher* m_analyses = nullptr;
    FileActions* m_files = nullptr;
    QMenu* m_recentMenu = nullptr;
};

} // namespace attnscope::app
