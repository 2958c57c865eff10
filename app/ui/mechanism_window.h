// "How this head computes": the mechanism view in a window of its own (a class sees it large; the grid keeps its
// room), stepping through one head's computation for one query token with Previous / Next (Space, arrows), each step
// exportable as a figure. Wires itself to the compute controller; the main window tells it which head and query.
#pragma once

#include "data/results.h"

#include <QWidget>

class QLabel;
class QPushButton;

namespace attnscope::widgets {
class MechanismView;
}

namespace attnscope::app {

class ComputeController;

class MechanismWindow : public QWidget {
    Q_OBJECT
public:
    explicit MechanismWindow(ComputeController* compute, QWidget* parent = nullptr);
    // Follow this head and query (from 0) of the shown text: recomputed on the compute thread.
    void follow(int layer, int head, std::int64_t position);
    widgets::MechanismView* view() const { return m_view; }
    // The shown step as a figure (PNG, SVG or PDF by extension); an empty string on success.
    QString exportStep(const QString& path);

protected:
    void keyPressEvent(QKeyEvent* e) override;

private:
    void showExplanation(const ExplanationResultPtr& r);
    void updateButtons();

    ComputeController* m_compute;
    widgets::MechanismView* m_view;
    QPushButton *m_previous, *m_next;
    QLabel* m_hint;
    int m_layer = -1, m_head = -1;
    std::int64_t m_position = -1;
};

} // namespace attnscope::app
