// What the all-heads scatter draws: one point per head at two metrics, coloured by a third (plain data).
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

namespace attnscope::widgets {

struct HeadScatterData {
    QString title;
    QString xName, yName, colourName;
    std::vector<double> x, y, colour; // one per point; NaN: the point is not drawn
    QStringList labels;               // "L2 H3"
};
using HeadScatterPtr = std::shared_ptr<const HeadScatterData>;

} // namespace attnscope::widgets
