// The data of the model comparison: several models' heads on the same text, one row of small grids per model.
#pragma once

#include "grid_data.h"

#include <QStringList>
#include <memory>
#include <vector>

namespace attnscope::widgets {

struct ComparisonData {
    QString title;
    QStringList rowTitles;                        // one per model
    std::vector<std::vector<GridDataPtr>> grids;  // [model][head]
};
using ComparisonPtr = std::shared_ptr<const ComparisonData>;

} // namespace attnscope::widgets
