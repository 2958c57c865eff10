// How the main window sits on the screen: dock placement that fits a 1280x800 projector, never growing past the
// screen (every dock's content scrolls instead), View > Reset Layout, and presentation mode (full screen, larger
// fonts, only the grid and the text box with its stepping controls; leaving restores the exact layout).
#pragma once

#include <QByteArray>
#include <QFont>
#include <QObject>
#include <QRect>
#include <functional>

class QDockWidget;
class QMainWindow;
class QWidget;

namespace attnscope::app {

class WindowLayout : public QObject {
    Q_OBJECT
public:
    explicit WindowLayout(QMainWindow* window);

    // Wraps `content` so its minimum size never forces the window to grow (it scrolls instead).
    static QWidget* scrollable(QWidget* content);
    // The widget is shown and, when it lives in a dock tabbed with others, that dock's tab is the current one. (A
    // dock behind another tab of its group can report itself visible, so visibility alone does not say it.)
    static bool inFront(const QWidget* widget);
    // Tabs the secondary docks together, sizes the window to the screen, remembers this as the default layout,
    // then restores the user's saved layout (clamped to the screen).
    void settle();
    // The default layout with the docks `wanted` says the open model uses (the others stay hidden).
    void resetLayout(const std::function<bool(const QDockWidget*)>& wanted);
    // Keeps the window inside the screen's available area (after restoring, after docks change).
    void fitToScreen();
    void setPresentation(bool on, const QList<QDockWidget*>& keepVisible);
    bool presentation() const { return m_presentation; }
    void saveSettings() const;

signals:
    void presentationLaidOut(); // full screen at the larger font: the kept docks can be sized now

private:
    QMainWindow* m_window;
    QByteArray m_defaultState;
    bool m_presentation = false;
    // What presentation mode changed, restored exactly on leaving.
    QByteArray m_savedState, m_savedGeometry;
    QRect m_savedRect;
    Qt::WindowStates m_savedWindowState;
    QFont m_savedFont;
};

} // namespace attnscope::app
