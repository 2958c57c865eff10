// Named perceptual colour maps (value -> colour), independent of any plot. Also builds QCustomPlot gradients.
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>

class QCPColorGradient;

namespace attnscope::widgets {

enum class ColourMap { Viridis, Magma, Cividis, Greys, RedBlue };

QStringList colourMapNames();                  // display names, in enum order
ColourMap colourMapFromName(const QString& name); // unknown names give Viridis
QString colourMapName(ColourMap map);
bool isDiverging(ColourMap map);

// Colour at t in [0, 1].
QColor colourAt(ColourMap map, double t);
// Gradient for QCPColorMap with NaN drawn transparent (masked cells stay blank).
QCPColorGradient makeGradient(ColourMap map);

} // namespace attnscope::widgets
