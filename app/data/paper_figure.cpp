// PaperFigure's file name.
#include "data/paper_figure.h"

namespace attnscope::app {

QString PaperFigure::fileStem() const
{
    if (name.isEmpty())
        return QStringLiteral("fig%1").arg(number);
    return name.toLower().replace(QLatin1Char(' '), QLatin1Char('-'));
}

} // namespace attnscope::app
