// The strip under a grid's cells that pictures its keys (a recording's spectrogram under the cross-attention's
// frames): its own axis rect in the grid's plot, sharing the key axis's range and tick labels, padding faded.
#pragma once

#include "grid_data.h"

#include <QSharedPointer>

class QCustomPlot;
class QCPAxis;
class QCPAxisRect;
class QCPAxisTickerText;
class QCPColorMap;
class QCPItemRect;
class QCPItemText;
class QCPMarginGroup;

namespace attnscope::widgets {

class KeyStripPanel {
public:
    // `keys`: the grid's key axis, whose range the strip follows and whose labels it takes over while shown.
    KeyStripPanel(QCustomPlot* plot, QCPAxis* keys, QCPMarginGroup* sides);
    // Shows `strip` under the grid (null: removes it and gives the labels back to the key axis).
    void show(const KeyStrip* strip, const QSharedPointer<QCPAxisTickerText>& ticker, const QString& keyLabel);
    bool shown() const { return m_rect != nullptr; }

private:
    void create();
    void remove();

    QCustomPlot* m_plot;
    QCPAxis* m_keys;
    QCPMarginGroup* m_sides;
    QCPAxisRect* m_rect = nullptr;
    QCPColorMap* m_map = nullptr;
    QCPItemRect* m_padding = nullptr;
    QCPItemText* m_paddingText = nullptr;
};

} // namespace attnscope::widgets
