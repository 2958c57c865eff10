// The activation-patching window: two prompts, the answers to compare, what to patch; a heatmap that fills in as cells
// finish (Cancel keeps it), hover values, a click on a head's cell opens that head on both prompts side by side.
// Wires itself to the compute controller; the main window only opens it and hears which head to select.
#pragma once

#include "data/results.h"

#include <QWidget>

class QCheckBox;
class QDoubleSpinBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace attnscope::app {

class ComputeController;
class PaperFigureView;

class PatchingWindow : public QWidget {
    Q_OBJECT
public:
    explicit PatchingWindow(ComputeController* compute, QWidget* parent = nullptr);
    // The clean prompt to start from (the text on screen), and a corrupted one when the user has none yet.
    void setCleanPrompt(const QString& text);
    PatchingRequest request() const;
    void setRequest(const PatchingRequest& request);
    const PatchingResultPtr& result() const { return m_result; }
    PaperFigureView* view() const { return m_view; }

public slots:
    void run();

signals:
    void headWanted(int layer, int head); // 0-based

private:
    void showResult(const PatchingResultPtr& result);
    void updateTokenCounts();
    void showModeOptions();
    void buildLayout();
    QWidget* componentOptions();
    QWidget* pathOptions();
    QString doneMessage(const PatchingResult& result) const;

    ComputeController* m_compute;
    QLineEdit *m_clean, *m_corrupt, *m_answer, *m_wrong;
    QComboBox *m_mode, *m_component;
    QCheckBox *m_perPosition, *m_noising, *m_coarse;
    QDoubleSpinBox* m_threshold; // coarse to fine: the |score| a layer or head must reach to be looked at closer
    // Path patching: senders and receivers as "L.H, ..." (from 1), the receivers' input, the two path definitions.
    QLineEdit *m_senders, *m_receivers;
    QComboBox* m_input;
    QCheckBox *m_headOnly, *m_freezeMlps;
    QWidget *m_componentOptions, *m_pathOptions;
    QPushButton *m_run, *m_cancel, *m_exportFigure, *m_exportData;
    QLabel* m_status;
    PaperFigureView* m_view;
    PatchingResultPtr m_result;
};

} // namespace attnscope::app
