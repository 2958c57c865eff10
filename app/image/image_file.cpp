// decodeImageFile: QImageReader, then RGB888 rows copied without their padding.
#include "image/image_file.h"

#include "util/error.h"

#include <QFileInfo>
#include <QImage>
#include <QImageReader>

#include <cstring>

namespace attnscope::app {

core::Image8 decodeImageFile(const QString& path)
{
    const std::string file = path.toStdString();
    if (!QFileInfo(path).isFile())
        throw core::Error(core::ErrorCode::Io, "no such image file", file);
    QImageReader reader(path);
    reader.setAutoTransform(false); // the pixels as stored, as Pillow's Image.open gives them
    QImage image = reader.read();
    if (image.isNull())
        throw core::Error(core::ErrorCode::CorruptFile,
                          "cannot be read as an image: " + reader.errorString().toStdString(), file);
    image = image.convertToFormat(QImage::Format_RGB888);
    core::Image8 out{image.height(), image.width(), {}};
    out.rgb.resize(static_cast<std::size_t>(out.height) * out.width * 3);
    for (int y = 0; y < out.height; ++y)
        std::memcpy(out.rgb.data() + static_cast<std::size_t>(y) * out.width * 3, image.constScanLine(y),
                    static_cast<std::size_t>(out.width) * 3);
    return out;
}

} // namespace attnscope::app
