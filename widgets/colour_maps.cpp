// Colour map control points (sampled from the published matplotlib maps) and interpolation.
#include "colour_maps.h"

#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace attnscope::widgets {

namespace {
struct Stop {
    double t;
    int r, g, b;
};
using Stops = std::vector<Stop>;

const Stops& stops(ColourMap map)
{
    static const Stops viridis{{0.0, 68, 1, 84},     {0.125, 71, 44, 122}, {0.25, 59, 81, 139},
                               {0.375, 44, 113, 142}, {0.5, 33, 144, 141}, {0.625, 39, 173, 129},
                               {0.75, 92, 200, 99},   {0.875, 170, 220, 50}, {1.0, 253, 231, 37}};
    static const Stops magma{{0.0, 0, 0, 4},        {0.125, 28, 16, 68},   {0.25, 79, 18, 123},
                             {0.375, 129, 37, 129}, {0.5, 181, 54, 122},   {0.625, 229, 80, 100},
                             {0.75, 251, 135, 97},  {0.875, 254, 194, 135}, {1.0, 252, 253, 191}};
    static const Stops cividis{{0.0, 0, 34, 78},     {0.25, 61, 77, 110},  {0.5, 124, 123, 120},
                               {0.75, 188, 175, 111}, {1.0, 255, 233, 69}};
    static const Stops greys{{0.0, 255, 255, 255}, {1.0, 20, 20, 20}};
    static const Stops redBlue{{0.0, 33, 102, 172},  {0.25, 146, 197, 222}, {0.5, 247, 247, 247},
                               {0.75, 244, 165, 130}, {1.0, 178, 24, 43}};
    switch (map) {
    case ColourMap::Viridis: return viridis;
    case ColourMap::Magma: return magma;
    case ColourMap::Cividis: return cividis;
    case ColourMap::Greys: return greys;
    case ColourMap::RedBlue: return redBlue;
    }
    return viridis;
}
} // namespace

QStringList colourMapNames()
{
    return {"Viridis", "Magma", "Cividis", "Greys", "Red-Blue (diverging)"};
}

ColourMap colourMapFromName(const QString& name)
{
    const int i = static_cast<int>(colourMapNames().indexOf(name));
    return i < 0 ? ColourMap::Viridis : static_cast<ColourMap>(i);
}

QString colourMapName(ColourMap map)
{
    return colourMapNames().at(static_cast<int>(map));
}

bool isDiverging(ColourMap map)
{
    return map == ColourMap::RedBlue;
}

QColor colourAt(ColourMap map, double t)
{
    const auto& s = stops(map);
    t = std::clamp(std::isnan(t) ? 0.0 : t, 0.0, 1.0);
    for (std::size_t i = 1; i < s.size(); ++i) {
        if (t <= s[i].t) {
            const double f = (t - s[i - 1].t) / (s[i].t - s[i - 1].t);
            auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + f * (b - a))); };
            return QColor(mix(s[i - 1].r, s[i].r), mix(s[i - 1].g, s[i].g), mix(s[i - 1].b, s[i].b));
        }
    }
    return QColor(s.back().r, s.back().g, s.back().b);
}

QCPColorGradient makeGradient(ColourMap map)
{
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& s : stops(map))
        g.setColorStopAt(s.t, QColor(s.r, s.g, s.b));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setLevelCount(256);
    g.setNanHandling(QCPColorGradient::nhTransparent);
    return g;
}

} // namespace attnscope::widgets
