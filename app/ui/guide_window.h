// Help > User Guide: the bundled docs/user-guide.md rendered offline (Markdown with its screenshots).
#pragma once

#include <QWidget>

class QTextBrowser;

namespace attnscope::app {

class GuideWindow : public QWidget {
    Q_OBJECT
public:
    // `markdownPath` is the guide's file; its folder resolves the images. An empty or missing path shows why.
    explicit GuideWindow(const QString& markdownPath, QWidget* parent = nullptr);
    QTextBrowser* browser() const { return m_browser; }

private:
    // Scales images wider than `maxWidth` down to it (the guide's screenshots are as wide as their screens).
    void fitImages(const QString& folder, int maxWidth);
    QTextBrowser* m_browser;
};

} // namespace attnscope::app
