// FileActions implementation.
#include "ui/file_actions.h"

#include "attention_grid_view.h"
#include "export/data_export.h"
#include "export/attention_page.h"
#include "ui/analysis_launcher.h"
#include "ui/display_panel.h"
#include "ui/relpos_panel.h"
#include "ui/selection_controller.h"
#include "ui/session.h"
#include "ui/status_area.h"
#include "ui/stream_controller.h"
#include "ui/text_panel.h"
#include "ui/translation_panel.h"
#include "util/text_file.h"

#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>

namespace attnscope::app {

FileActions::FileActions(const WindowParts& parts, SelectionController* selection, StreamController* streams,
                         AnalysisLauncher* analyses)
    : QObject(parts.window)
    , m_parts(parts)
    , m_selection(selection)
    , m_streams(streams)
    , m_analyses(analyses)
{
}

QString FileActions::openTextFile(const QString& path)
{
    try {
        m_streams->setText(QString::fromStdString(core::readTextFile(path.toStdString())));
        m_parts.status->show(tr("Opened text %1").arg(path));
        return {};
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

void FileActions::openImage(const QString& path)
{
    const auto& m = m_parts.compute->model();
    if (m && m->info().pictureToken >= 0) { // a vision-language model: the picture beside the typed prompt
        if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) != 0) {
            QMessageBox::information(m_parts.window, tr("A PNG picture, please"),
                                     tr("%1 reads PNG pictures beside its prompt; %2 is not one.")
                                         .arg(m->displayName, QFileInfo(path).fileName()));
            return;
        }
        m_parts.compute->setPictures({QFileInfo(path).absoluteFilePath()});
        m_parts.status->show(tr("Picture %1 beside the prompt: its tokens are ▣r1c1 … in the grid")
                                 .arg(QFileInfo(path).fileName()));
        m_streams->requestRun();
        showImageDock();
        return;
    }
    if (!m || !m->info().can.image) {
        QMessageBox::information(m_parts.window, tr("Open a vision model first"),
                                 tr("%1 reads text. Pictures are for vision models (ViT, DeiT, DINOv2, CLIP's vision "
                                    "tower, the built-in shapes-vit) and vision-language models (LLaVA, Gemma 3): open "
                                    "one, then the picture.")
                                     .arg(m ? m->displayName : tr("This model")));
        return;
    }
    m_streams->setText(QFileInfo(path).absoluteFilePath()); // the text box names the picture; the run follows
    showImageDock();
}

void FileActions::openAudio(const QString& path)
{
    const auto& m = m_parts.compute->model();
    if (!m || !m->info().can.audio) {
        QMessageBox::information(m_parts.window, tr("Open a speech model first"),
                                 tr("%1 reads text. Recordings are for speech models (Whisper): open one, then the "
                                    "recording.")
                                     .arg(m ? m->displayName : tr("This model")));
        return;
    }
    if (const QString error = m_parts.compute->setAudio(QFileInfo(path).absoluteFilePath()); !error.isEmpty()) {
        QMessageBox::warning(m_parts.window, tr("Could not open the recording"), error); // the last one stays
        return;
    }
    m_parts.status->show(tr("Listening to %1: Generate transcribes it, a typed transcript is read; the cross-attention "
                            "grid's columns are its 20-ms frames")
                             .arg(QFileInfo(path).fileName()));
    m_streams->requestRun();
}

void FileActions::showImageDock()
{
    if (auto* dock = m_parts.window->findChild<QDockWidget*>(QStringLiteral("imageDock"))) {
        dock->show();
        dock->raise();
        // The picture is what the run is about now: a good share of the width, as a vision model opens with.
        if (dock->width() < m_parts.window->width() / 3)
            m_parts.window->resizeDocks({dock}, {std::max(360, m_parts.window->width() * 2 / 5)}, Qt::Horizontal);
    }
}

QString FileActions::openDropped(const QString& path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    static const QStringList texts{QStringLiteral("txt"), QStringLiteral("text"), QStringLiteral("md")};
    static const QStringList images{QStringLiteral("png"), QStringLiteral("jpg"), QStringLiteral("jpeg"),
                                    QStringLiteral("bmp"), QStringLiteral("webp")};
    if (QFileInfo(path).isFile() && texts.contains(suffix))
        return openTextFile(path);
    static const QStringList sounds{QStringLiteral("wav"), QStringLiteral("flac"), QStringLiteral("ogg"),
                                    QStringLiteral("oga"), QStringLiteral("aiff"), QStringLiteral("aif")};
    if (QFileInfo(path).isFile() && images.contains(suffix))
        openImage(path);
    else if (QFileInfo(path).isFile() && sounds.contains(suffix))
        openAudio(path);
    else if (suffix == QLatin1String("attnscope"))
        return openSession(path);
    else
        m_parts.compute->loadModel(path);
    return {};
}

QString FileActions::saveSession(const QString& pathIn)
{
    const auto& model = m_parts.compute->model();
    if (!model)
        return tr("Open a model before saving a session.");
    const QString path = withSessionExtension(pathIn);
    SessionState s;
    s.model = model->spec;
    s.text = m_parts.text->text();
    s.selection = m_selection->selection();
    s.display = m_parts.display->settings();
    s.bandSplit = m_parts.display->bandSplitText();
    if (model->info().typedReadStream() >= 0) {
        const TranslationPanel* t = m_parts.translation;
        s.source = t->source();
        // A written target comes back by translating again; a typed one is kept as typed.
        const auto r = m_parts.compute->textResult();
        const bool typed = r && r->written == 0 && r->capture->tokens.size() > 1;
        s.target = typed ? t->target() : QString();
    }
    s.relposOrder = m_parts.relpos->rowOrder();
    s.relposLog = m_parts.relpos->logScale();
    s.patching = m_analyses->patchingRequest();
    if (m_parts.relpos->scan()) {
        // The scan travels as a scan-result file next to the session.
        const QString scanPath = path + QStringLiteral(".scan.safetensors");
        try {
            m_parts.relpos->scan()->save(scanPath.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        s.scanFile = QFileInfo(scanPath).fileName();
    }
    return writeSessionFile(path, s);
}

QString FileActions::openSession(const QString& path)
{
    SessionState s;
    if (const QString err = readSessionFile(path, s); !err.isEmpty())
        return err;
    std::shared_ptr<const core::ScanResult> scan;
    if (!s.scanFile.isEmpty()) {
        const QString scanPath = QFileInfo(path).dir().filePath(s.scanFile);
        try {
            scan = std::make_shared<core::ScanResult>(core::ScanResult::load(scanPath.toStdString()));
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    }
    m_analyses->restorePatching(s.patching);
    m_streams->openSession(s, std::move(scan));
    return {};
}

QString FileActions::exportFigureTo(const QString& path, const FigureSize& size)
{
    if (!m_selection->gridData())
        return tr("There is no figure to export yet.");
    return exportGrid(m_selection->gridData(), *m_parts.grid, path, size);
}

QString FileActions::exportDataTo(const QString& path)
{
    if (!m_selection->gridData())
        return tr("There is no data to export yet.");
    return exportGridData(*m_selection->gridData(), path);
}

QString FileActions::exportAllHeadsTo(const QString& folder, const QString& extension)
{
    const auto r = m_parts.compute->textResult();
    if (!r)
        return tr("There is nothing to export yet.");
    return exportAllHeads(*r->capture, r->model->displayName, m_selection->selection(), *m_parts.grid, folder, extension);
}

bool FileActions::canExportPage() const
{
    const auto& m = m_parts.compute->model();
    return m && m_parts.compute->textResult() != nullptr;
}

QString FileActions::exportPageTo(const QString& path)
{
    if (!canExportPage())
        return tr("Type or open a text first.");
    // The shown layer with all its heads, its head buttons switching the grid (an encoder-decoder model: that layer
    // of every stack, with the cross-attention's alignment; a picture: drawn with its token's attention over the
    // patches).
    core::PageOptions o;
    const auto r = m_parts.compute->textResult();
    o.layers = {r->model->info().site(m_selection->selection().site).layer};
    o.segment = m_selection->shownSegment();
    try {
        if (r->image)
            o.picture = r->image->seen;
        const std::string html = core::attentionPageHtml(*r->capture, r->model->displayName.toStdString(), o);
        return saveFileAtomically(path, QByteArray::fromStdString(html));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
}

} // namespace attnscope::app
