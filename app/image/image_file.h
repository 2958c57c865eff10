// Image files (PNG, JPEG, what Qt's image plugins read) decoded to the 8-bit RGB the core's preprocessing takes.
// Alpha is dropped and palettes expanded, as Pillow's convert("RGB") does for an image processor's input.
#pragma once

#include "image/preprocess.h"

#include <QString>

namespace attnscope::app {

// Throws core::Error(Io / CorruptFile) naming the file when it cannot be read or decoded.
core::Image8 decodeImageFile(const QString& path);

} // namespace attnscope::app
