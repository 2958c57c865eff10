// GuideWindow implementation.
#include "ui/guide_window.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QScreen>
#include <QImage>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QVBoxLayout>

namespace attnscope::app {

GuideWindow::GuideWindow(const QString& markdownPath, QWidget* parent)
    : QWidget(parent, Qt::Window)
    , m_browser(new QTextBrowser(this))
{
    setAttribute(Qt::WA_DeleteOnClose);
    setWindowTitle(tr("attnscope user guide"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_browser);
    m_browser->setOpenExternalLinks(false);
    QFile f(markdownPath);
    if (markdownPath.isEmpty() || !f.open(QIODevice::ReadOnly)) {
        m_browser->setPlainText(tr("The user guide is not installed (looked for %1).")
                                    .arg(markdownPath.isEmpty() ? tr("docs/user-guide.md") : markdownPath));
    } else {
        m_browser->setSearchPaths({QFileInfo(markdownPath).absolutePath()});
        m_browser->document()->setMarkdown(QString::fromUtf8(f.readAll()));
    }
    const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
    const int width = std::min(900, avail.width() - 40);
    resize(width, std::min(900, avail.height() - 60));
    fitImages(QFileInfo(markdownPath).absolutePath(), width - 60);
    m_browser->moveCursor(QTextCursor::Start); // a guide opens at its beginning
}

void GuideWindow::fitImages(const QString& folder, int maxWidth)
{
    // Screenshots are as wide as the screen they were taken on: scale the wider ones down to the window's text width.
    QTextDocument* doc = m_browser->document();
    for (QTextBlock block = doc->begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (!fragment.isValid() || !fragment.charFormat().isImageFormat())
                continue;
            QTextImageFormat image = fragment.charFormat().toImageFormat();
            const QImage picture(QDir(folder).filePath(image.name()));
            if (picture.isNull() || picture.width() <= maxWidth)
                continue;
            image.setWidth(maxWidth);
            image.setHeight(static_cast<double>(picture.height()) * maxWidth / picture.width());
            QTextCursor cursor(doc);
            cursor.setPosition(fragment.position());
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
            cursor.setCharFormat(image);
        }
}

} // namespace attnscope::app
