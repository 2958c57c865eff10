// Gives the main window's docks the room their content asks for: the bottom tab in front its height when it comes up
// (a plot 31% of the window, the Text tab its lines), the Heads dock its thumbnails' height once per model, and in
// presentation mode the Predictions beside the grid.
#pragma once

#include "ui/window_parts.h"

#include <QList>
#include <QObject>

class QDockWidget;

namespace attnscope::app {

class DockFitter : public QObject {
    Q_OBJECT
public:
    explicit DockFitter(const WindowParts& parts);

    QDockWidget* dock(const char* objectName) const;
    // Shows and raises a dock; a bottom tab gets the height it asks for. A dock the open model does not use (the
    // Experts tab of a dense model) stays hidden, and the status bar says why.
    void show(const char* objectName);
    // Docks only some models use (Image, Translation, Predictions, Experts): whether the open model uses this one; every other
    // dock is used by every model.
    bool used(const QDockWidget* d) const;
    // A model opened: the docks it does not use hide and give their room back (the right column its default width
    // after a vision model's picture).
    void hideUnusedDocks();
    // The height a bottom tab asks for when it comes up: the Text tab its content (controls and the text's lines),
    // a tab with plots 31% of the window; the grid keeps the rest (at least 40% of a 1280x800 screen's area).
    int wantedHeight(const QDockWidget* d) const;
    // Every bottom tab asks again (only the one in front acts): after a resize or leaving presentation mode.
    void fitBottomTabs();
    // The Heads dock takes what the next thumbnails need (once per model).
    void fitHeadsOnNextThumbnails() { m_fitHeads = true; }
    // The docks presentation mode keeps: the text (or translation) box, and Predictions for a model that predicts.
    QList<QDockWidget*> presentationDocks(bool on) const;
    // Predictions beside the grid while presenting (hidden for a model without them).
    void placePresentationDocks();
    // A dock in a large square window of its own over the grid (a plot a bottom tab would leave a strip), or back
    // where it was docked.
    void showLarge(const char* objectName, bool large);

private:
    void fitBottomDock(QDockWidget* d); // up or down, to wantedHeight
    void fitHeadsDock();

    WindowParts m_parts;
    bool m_fitHeads = false;
};

} // namespace attnscope::app
