// KeyRouter implementation.
#include "ui/key_router.h"

#include <QAbstractItemView>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QKeyEvent>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QTextEdit>

namespace attnscope::app {

namespace {
constexpr const char* kStepperProperty = "attnscopeStepper";
}

void markAsStepper(QWidget* w)
{
    w->setProperty(kStepperProperty, true);
}

KeyRouter::KeyRouter(QWidget* window)
    : QObject(window)
    , m_window(window)
{
    qApp->installEventFilter(this);
}

bool KeyRouter::stepsWithFocus(const QWidget* focus)
{
    for (const QWidget* w = focus; w; w = w->parentWidget())
        if (w->property(kStepperProperty).toBool())
            return true;
    if (!focus)
        return true;
    const bool needsArrows = qobject_cast<const QPlainTextEdit*>(focus) || qobject_cast<const QTextEdit*>(focus) ||
                             qobject_cast<const QLineEdit*>(focus) || qobject_cast<const QAbstractItemView*>(focus) ||
                             qobject_cast<const QComboBox*>(focus) || qobject_cast<const QAbstractSlider*>(focus) ||
                             qobject_cast<const QAbstractSpinBox*>(focus);
    return !needsArrows;
}

bool KeyRouter::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() != QEvent::KeyPress || !m_window->isActiveWindow())
        return QObject::eventFilter(watched, event);
    // An open popup (a combo box's list, a menu) or a dialog owns the keys.
    if (QApplication::activePopupWidget() || QApplication::activeModalWidget())
        return QObject::eventFilter(watched, event);
    // Only the focus widget's own event counts (the filter also sees the event travelling to its parents).
    QWidget* focus = QApplication::focusWidget();
    if (watched != focus && !(focus == nullptr && watched == m_window))
        return QObject::eventFilter(watched, event);
    auto* ke = static_cast<QKeyEvent*>(event);
    const Qt::KeyboardModifiers mods = ke->modifiers() & ~Qt::KeypadModifier;
    const bool alt = mods == Qt::AltModifier;
    if (mods != Qt::NoModifier && !alt)
        return QObject::eventFilter(watched, event);
    const bool steps = alt || stepsWithFocus(focus);
    switch (ke->key()) {
    case Qt::Key_Left:
    case Qt::Key_Right:
        if (!steps)
            break;
        emit stepHead(ke->key() == Qt::Key_Left ? -1 : +1);
        return true;
    case Qt::Key_Up:
    case Qt::Key_Down:
        if (!steps)
            break;
        emit stepLayer(ke->key() == Qt::Key_Up ? -1 : +1);
        return true;
    case Qt::Key_A:
        // A is text in a text box; elsewhere (steppers included: they take digits only) it toggles the average.
        if (alt || !stepsWithFocus(focus))
            break;
        emit toggleAverage();
        return true;
    default:
        break;
    }
    return QObject::eventFilter(watched, event);
}

} // namespace attnscope::app
