// File choosers: the extension follows the selected filter when the typed name has none.
#include "ui/file_dialogs.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QRegularExpression>

namespace attnscope::app {

namespace {
// "PNG image (*.png)" -> "png"
QString extensionOfFilter(const QString& filter)
{
    const auto m = QRegularExpression(QStringLiteral("\\*\\.(\\w+)")).match(filter);
    return m.hasMatch() ? m.captured(1) : QString();
}

QString askWithFilters(QWidget* parent, const QString& title, const QString& baseName, const QStringList& filters)
{
    QFileDialog dlg(parent, title);
    dlg.setAcceptMode(QFileDialog::AcceptSave);
    dlg.setNameFilters(filters);
    dlg.selectFile(baseName + QLatin1Char('.') + extensionOfFilter(filters.front()));
    // Keep the proposed name's extension in step with the chosen type.
    QObject::connect(&dlg, &QFileDialog::filterSelected, &dlg, [&dlg](const QString& f) {
        dlg.setDefaultSuffix(extensionOfFilter(f));
    });
    dlg.setDefaultSuffix(extensionOfFilter(filters.front()));
    if (dlg.exec() != QDialog::Accepted || dlg.selectedFiles().isEmpty())
        return {};
    QString path = dlg.selectedFiles().front();
    if (QFileInfo(path).suffix().isEmpty())
        path += QLatin1Char('.') + extensionOfFilter(dlg.selectedNameFilter());
    return path;
}
} // namespace

namespace {
// A folder a model opens from as it is (the loader finds its weights): Enter on it opens it, as Open does for a file.
bool isModelFolder(const QString& path)
{
    const QDir dir(path);
    return QFileInfo(path).isDir() &&
           (dir.exists(QStringLiteral("config.json")) || !dir.entryList({QStringLiteral("*.gguf")}, QDir::Files).isEmpty());
}

// QFileDialog in AnyFile mode enters a typed folder on Enter and leaves Open disabled inside it.
class ModelDialog : public QFileDialog {
public:
    using QFileDialog::QFileDialog;
    QString chosen;

protected:
    void accept() override
    {
        const QStringList files = selectedFiles();
        if (!files.isEmpty() && isModelFolder(files.front())) {
            chosen = files.front();
            QDialog::accept();
            return;
        }
        QFileDialog::accept();
        if (result() == QDialog::Accepted && !selectedFiles().isEmpty())
            chosen = selectedFiles().front();
    }
};
} // namespace

QString askModelPath(QWidget* parent, const QString& title)
{
    ModelDialog dlg(parent, title);
    dlg.setObjectName(QStringLiteral("modelDialog"));
    // Entering a folder with nothing to open says so (a dialog that only navigates leaves the user guessing).
    QObject::connect(&dlg, &QFileDialog::directoryEntered, &dlg, [&dlg, title](const QString& folder) {
        const QDir dir(folder);
        const bool models = isModelFolder(folder) ||
                            !dir.entryList({QStringLiteral("*.gguf"), QStringLiteral("*.bin"), QStringLiteral("*.pt"),
                                            QStringLiteral("*.pth"), QStringLiteral("config.json")}, QDir::Files).isEmpty();
        const bool folders = !dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty();
        dlg.setWindowTitle(models || folders ? title
                                             : QObject::tr("%1 — no model in %2 (a model is a folder with config.json, "
                                                           "or a .gguf, .bin, .pt or .pth file)")
                                                   .arg(title, QDir::toNativeSeparators(folder)));
    });
    dlg.setFileMode(QFileDialog::AnyFile);
    dlg.setNameFilter(QObject::tr("Models (config.json *.gguf *.bin *.pt *.pth);;All files (*)"));
    if (dlg.exec() != QDialog::Accepted || dlg.chosen.isEmpty())
        return {};
    if (QFileInfo(dlg.chosen).fileName() == QLatin1String("config.json"))
        return QFileInfo(dlg.chosen).absolutePath();
    return dlg.chosen;
}

QString askFigurePath(QWidget* parent, const QString& title, const QString& baseName)
{
    return askWithFilters(parent, title, baseName,
                          {QObject::tr("PDF (*.pdf)"), QObject::tr("SVG vector image (*.svg)"), QObject::tr("PNG image (*.png)")});
}

QString askTextFile(QWidget* parent, const QString& title)
{
    return QFileDialog::getOpenFileName(parent, title, QString(), QObject::tr("Text files (*.txt *.md *.text);;All files (*)"));
}

QString askDataPath(QWidget* parent, const QString& title, const QString& baseName, const QStringList& types)
{
    QStringList filters;
    for (const QString& f : {QObject::tr("CSV table (*.csv)"), QObject::tr("NumPy array (*.npy)"), QObject::tr("JSON (*.json)")})
        if (types.isEmpty() || types.contains(extensionOfFilter(f)))
            filters << f;
    return askWithFilters(parent, title, baseName, filters);
}

QString askSavePath(QWidget* parent, const QString& title, const QString& proposed, const QString& filter,
                    const QString& extension)
{
    QFileDialog dlg(parent, title);
    dlg.setAcceptMode(QFileDialog::AcceptSave);
    dlg.setNameFilter(filter);
    dlg.setDefaultSuffix(extension);
    dlg.selectFile(proposed);
    if (dlg.exec() != QDialog::Accepted || dlg.selectedFiles().isEmpty())
        return {};
    QString path = dlg.selectedFiles().front();
    if (QFileInfo(path).suffix().isEmpty())
        path += QLatin1Char('.') + extension;
    return path;
}

} // namespace attnscope::app
