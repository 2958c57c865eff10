// The main window: the token grid in the centre, docks for text, heads and model; menus; the status bar with
// progress and Cancel. Talks to the model only through the ComputeController.
#pragma once

#include "compute/compute_controller.h"
#include "ui/view_selection.h"

#include <QMainWindow>
#include <QTimer>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QFormLayout;

namespace attnscope::widgets {
class AttentionGridView;
}

namespace attnscope::app {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent = nullptr);

    void openModel(const QString& spec);
    void setText(const QString& text);
    void setSelection(int layer, int head); // 0-based
    widgets::AttentionGridView* grid() const { return m_grid; }
    const ViewSelection& selection() const { return m_selection; }
    const TextCapturePtr& capture() const { return m_capture; }

public slots:
    void nextHead(int delta);
    void nextLayer(int delta);
    void toggleAverage();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    void buildDocks();
    void buildMenus();
    void requestRun();
    void refreshGrid();
    void refreshModelPanel();
    void syncSelectorsFromSelection();
    void exportFigureDialog();

    ComputeController* m_compute;
    std::vector<std::string> m_builtinDirs;
    widgets::AttentionGridView* m_grid = nullptr;
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
    QFormLayout* m_modelForm = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QTimer m_debounce;
    QByteArray m_defaultState;
    ViewSelection m_selection;
    TextCapturePtr m_capture;
    bool m_updatingSelectors = false;
};

} // namespace attnscope::app
