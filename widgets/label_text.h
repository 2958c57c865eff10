// Token labels as views show them: cut to a number of characters before anything measures or draws them, so a 1 MB
// token costs what a short one does.
#pragma once

#include <QString>

namespace attnscope::widgets {

// `label` cut to at most `maxChars` characters, the last one an ellipsis when cut.
inline QString cutLabel(const QString& label, int maxChars)
{
    return label.size() > maxChars ? label.left(maxChars - 1) + QStringLiteral("…") : label;
}

} // namespace attnscope::widgets
