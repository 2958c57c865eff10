// WindowLayout implementation.
#include "ui/window_layout.h"

#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDockWidget>
#include <QLayout>
#include <QMainWindow>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QTabBar>
#include <QTimer>

namespace attnscope::app {

namespace {
QDockWidget* dockNamed(QMainWindow* w, const char* name)
{
    return w->findChild<QDockWidget*>(QLatin1String(name));
}
QRect availableArea(const QWidget* w)
{
    const QScreen* s = w->screen() ? w->screen() : QGuiApplication::primaryScreen();
    return s ? s->availableGeometry() : QRect(0, 0, 1280, 800);
}
// A wheel over an unfocused value control of a scrolling panel scrolls the panel instead of changing the value (a
// user scrolling the Display dock changed its colour scale on the way). Clicked, the control takes the wheel as usual.
class WheelGuard final : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* event) override
    {
        auto* w = qobject_cast<QWidget*>(watched);
        if (event->type() == QEvent::Wheel && w && !w->hasFocus()) {
            event->ignore(); // unaccepted, the wheel goes on to the parents: the scroll area
            return true;
        }
        return false;
    }
};
} // namespace

WindowLayout::WindowLayout(QMainWindow* window)
    : QObject(window)
    , m_window(window)
{
}

bool WindowLayout::inFront(const QWidget* widget)
{
    if (!widget->isVisible())
        return false;
    const QDockWidget* dock = nullptr;
    for (const QWidget* w = widget; w && !dock; w = w->parentWidget())
        dock = qobject_cast<const QDockWidget*>(w);
    const auto* window = dock ? qobject_cast<const QMainWindow*>(dock->parentWidget()) : nullptr;
    if (!window || dock->isFloating() || window->tabifiedDockWidgets(const_cast<QDockWidget*>(dock)).isEmpty())
        return true;
    // Tabbed: the group's tab bar (a child of the main window) names the dock in front.
    for (const QTabBar* bar : window->findChildren<QTabBar*>()) {
        for (int i = 0; bar->isVisible() && i < bar->count(); ++i)
            if (bar->tabText(i) == dock->windowTitle())
                return bar->currentIndex() == i;
    }
    return true;
}

QWidget* WindowLayout::scrollable(QWidget* content)
{
    auto* scroll = new QScrollArea;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(content);
    auto* guard = new WheelGuard(scroll);
    const auto controls = content->findChildren<QWidget*>();
    for (QWidget* c : controls)
        if (qobject_cast<QComboBox*>(c) || qobject_cast<QAbstractSpinBox*>(c) || qobject_cast<QAbstractSlider*>(c)) {
            c->setFocusPolicy(Qt::StrongFocus); // focus by click or Tab, not by the wheel passing over
            c->installEventFilter(guard);
        }
    return scroll;
}

void WindowLayout::settle()
{
    QMainWindow* w = m_window;
    // Docks consulted less often share a place as tabs, so the grid keeps most of a 1280x800 screen.
    w->tabifyDockWidget(dockNamed(w, "displayDock"), dockNamed(w, "modelDock"));
    w->tabifyDockWidget(dockNamed(w, "textDock"), dockNamed(w, "relposDock"));
    w->tabifyDockWidget(dockNamed(w, "relposDock"), dockNamed(w, "compareDock"));
    w->tabifyDockWidget(dockNamed(w, "compareDock"), dockNamed(w, "atlasDock"));
    w->tabifyDockWidget(dockNamed(w, "atlasDock"), dockNamed(w, "predictionDock"));
    w->tabifyDockWidget(dockNamed(w, "predictionDock"), dockNamed(w, "qkDock"));
    w->tabifyDockWidget(dockNamed(w, "qkDock"), dockNamed(w, "expertsDock"));
    // An encoder-decoder model's source and target take the Text tab's place (shown when such a model is open).
    w->tabifyDockWidget(dockNamed(w, "textDock"), dockNamed(w, "translationDock"));
    dockNamed(w, "translationDock")->hide();
    // A vision model's picture shares the right side with the text view (shown when such a model is open).
    w->tabifyDockWidget(dockNamed(w, "textViewDock"), dockNamed(w, "imageDock"));
    dockNamed(w, "imageDock")->hide();
    dockNamed(w, "textDock")->raise();
    dockNamed(w, "displayDock")->raise();
    // The bottom docks were side by side until now: let the layout drop their summed minimum width before the
    // window is sized, or a resize to the screen is clamped to it (six docks in a row are wider than 1280).
    w->layout()->activate();
    const QRect avail = availableArea(w);
    // Leave room for a frame the window manager adds later; small screens (a projector) get the whole screen.
    w->resize(std::min(1400, avail.width() - 16), std::min(900, avail.height() - 48));
    if (avail.width() <= 1440 || avail.height() <= 900)
        w->setWindowState(w->windowState() | Qt::WindowMaximized);
    w->resizeDocks({dockNamed(w, "textDock")}, {w->height() / 5}, Qt::Vertical);
    // Narrow side columns: the grid keeps at least 45% of a 1280x800 screen with the text, 40% with a plot tab up.
    w->resizeDocks({dockNamed(w, "textViewDock"), dockNamed(w, "headDock")}, {w->width() / 7, w->width() / 5}, Qt::Horizontal);
    w->resizeDocks({dockNamed(w, "headDock")}, {w->height() / 2}, Qt::Vertical);
    m_defaultState = w->saveState();
    QSettings settings;
    if (settings.contains(QStringLiteral("window/geometry")))
        w->restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    w->restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    fitToScreen();
}

void WindowLayout::resetLayout(const std::function<bool(const QDockWidget*)>& wanted)
{
    m_window->restoreState(m_defaultState);
    for (QDockWidget* d : m_window->findChildren<QDockWidget*>())
        d->setVisible(wanted(d));
    fitToScreen();
}

void WindowLayout::fitToScreen()
{
    if (m_presentation || m_window->isFullScreen() || m_window->isMaximized())
        return;
    // The frame (title bar, borders) must fit too: work on the frame rectangle, then set the client part.
    const QRect avail = availableArea(m_window);
    const QRect frame = m_window->frameGeometry(), client = m_window->geometry();
    const QMargins border(client.left() - frame.left(), client.top() - frame.top(), frame.right() - client.right(),
                          frame.bottom() - client.bottom());
    QRect f = frame;
    f.setSize(f.size().boundedTo(avail.size()));
    if (f.right() > avail.right())
        f.moveRight(avail.right());
    if (f.bottom() > avail.bottom())
        f.moveBottom(avail.bottom());
    f.moveLeft(std::max(f.left(), avail.left()));
    f.moveTop(std::max(f.top(), avail.top()));
    if (f != frame)
        m_window->setGeometry(f.marginsRemoved(border));
}

void WindowLayout::setPresentation(bool on, const QList<QDockWidget*>& keepVisible)
{
    if (on == m_presentation)
        return;
    m_presentation = on;
    if (on) {
        m_savedState = m_window->saveState();
        m_savedGeometry = m_window->saveGeometry();
        m_savedRect = m_window->geometry();
        m_savedWindowState = m_window->windowState();
        m_savedFont = QApplication::font();
        for (QDockWidget* d : m_window->findChildren<QDockWidget*>())
            if (!keepVisible.contains(d))
                d->hide();
        for (QDockWidget* d : keepVisible) {
            d->show();
            d->raise();
        }
        QFont f = m_savedFont;
        f.setPointSizeF(f.pointSizeF() * 1.5);
        QApplication::setFont(f);
        m_window->showFullScreen();
        // The kept docks are sized by the window (the Text tab to its content) once the larger font is in.
        QTimer::singleShot(0, this, [this] { emit presentationLaidOut(); });
    } else {
        QApplication::setFont(m_savedFont);
        // Docks first, then the window: restoring the docks may widen the window for their saved sizes.
        m_window->restoreState(m_savedState);
        if (m_savedWindowState & Qt::WindowMaximized) {
            m_window->showMaximized();
        } else {
            m_window->showNormal();
            m_window->setGeometry(m_savedRect);
        }
        fitToScreen();
    }
}

void WindowLayout::saveSettings() const
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), m_presentation ? m_savedGeometry : m_window->saveGeometry());
    settings.setValue(QStringLiteral("window/state"), m_presentation ? m_savedState : m_window->saveState());
}

} // namespace attnscope::app
