// GuideWindow implementation.
#include "ui/guide_window.h"

#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QScreen>
#include <QTextBrowser>
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
    resize(std::min(900, avail.width() - 40), std::min(900, avail.height() - 60));
}

} // namespace attnscope::app
