// Writes what the token grid shows as CSV, NPY (float32, NaN = masked) or JSON (with tokens), by extension.
#pragma once

#include "grid_data.h"

#include <QString>

namespace attnscope::app {

// Returns an empty string on success, else a message naming the file and the problem.
QString exportGridData(const widgets::GridData& grid, const QString& path);

} // namespace attnscope::app
