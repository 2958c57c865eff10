// captureImage.
#include "image/image_capture.h"

#include "image/image_file.h"
#include "image/preprocess.h"
#include "model/vision.h"
#include "run/image_capture.h"
#include "util/error.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>

namespace attnscope::app {

QString modelPicture(const QString& modelFolder)
{
    const QDir folder(modelFolder);
    for (const QString& pattern : {QStringLiteral("image.png"), QStringLiteral("sample*.png"), QStringLiteral("*.png"),
                                   QStringLiteral("*.jpg"), QStringLiteral("*.jpeg")}) {
        const QStringList found = folder.entryList({pattern}, QDir::Files, QDir::Name);
        if (!found.isEmpty())
            return found.front();
    }
    return {};
}

ImageCapture captureImage(const core::AttentionModel& model, const QString& modelFolder, const QString& path,
                          core::CaptureOptions options)
{
    const core::VisionModel& vision = core::asVision(model);
    const QString name = path.trimmed();
    const QString file = QFileInfo(name).isAbsolute() ? name : QDir(modelFolder).filePath(name);
    if (name.isEmpty() || !QFileInfo(file).isFile())
        throw core::Error(core::ErrorCode::BadInput,
                          "a vision model reads an image: type the path of a PNG or JPEG file in the text box "
                          "(absolute, or relative to the model's folder, e.g. image.png)",
                          name.left(80).toStdString());
    const auto pre = core::readPreprocessor(modelFolder.toStdString());
    ImageCapture out;
    out.seen = std::make_shared<const core::Image8>(core::preparedImage(decodeImageFile(file), pre));
    auto pixels = std::make_shared<const core::PixelValues>(core::pixelValuesOf(*out.seen, pre));
    const auto grid = vision.gridOf(pixels->height, pixels->width);
    out.rows = grid.rows;
    out.cols = grid.cols;
    out.specialTokens = vision.config().specialTokens();
    if (vision.hasClassifier()) { // one more forward pass, only for models that name what they see
        const auto p = vision.classify(*pixels);
        const auto best = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
        const auto& labels = vision.config().labels;
        const QString label = best < labels.size() && !labels[best].empty() ? QString::fromStdString(labels[best])
                                                                            : QStringLiteral("class %1").arg(best);
        out.prediction = QStringLiteral("%1 (%2%)").arg(label).arg(p[best] * 100.0, 0, 'f', 0);
    }
    out.capture = core::capturePicture(vision, std::move(pixels), std::move(options));
    return out;
}

} // namespace attnscope::app
