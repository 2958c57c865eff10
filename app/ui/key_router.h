// Keyboard routing for the main window: the arrow keys step heads (Left/Right) and layers (Up/Down) and A toggles the
// average, wherever the focus is, except in controls that need the arrows themselves (text boxes, lists and tables,
// combo boxes, sliders, other spin boxes) and while a popup (an open combo list) or a dialog is up. Alt+arrows step
// from anywhere. The layer and head boxes are "steppers": there the arrows step the same way as everywhere else.
#pragma once

#include <QObject>

class QWidget;

namespace attnscope::app {

// Marks a control whose arrow keys should step heads/layers like the rest of the window.
void markAsStepper(QWidget* w);

class KeyRouter : public QObject {
    Q_OBJECT
public:
    // Routes keys for `window` (and its docks) only; installs itself on the application.
    explicit KeyRouter(QWidget* window);
    // Whether an arrow key pressed with `focus` focused should step (false: the control keeps it).
    static bool stepsWithFocus(const QWidget* focus);

signals:
    void stepHead(int delta);
    void stepLayer(int delta);
    void toggleAverage();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget* m_window;
};

} // namespace attnscope::app
