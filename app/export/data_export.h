// Writes what the token grid shows as CSV, NPY (float32, NaN = masked) or JSON (with tokens), by extension.
#pragma once

#include "grid_data.h"

#include <QByteArray>
#include <QString>

namespace attnscope::app {

// Returns an empty string on success, else a message naming the file and the problem.
QString exportGridData(const widgets::GridData& grid, const QString& path);
// Writes `bytes` to `path` whole or not at all (a temporary file renamed over the target); empty on success.
QString saveFileAtomically(const QString& path, const QByteArray& bytes);

} // namespace attnscope::app
