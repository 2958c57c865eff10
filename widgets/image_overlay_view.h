// The image view: a picture with a heat map over its patches (one attention row), at an adjustable opacity, the
// query patch outlined, a colour bar; a click on a patch reports it. It draws only what it is handed.
#pragma once

#include "colour_maps.h"
#include "image_overlay_data.h"

#include <QWidget>

namespace attnscope::widgets {

class ImageOverlayView : public QWidget {
    Q_OBJECT
public:
    explicit ImageOverlayView(QWidget* parent = nullptr);
    void setData(ImageOverlayDataPtr data);
    const ImageOverlayDataPtr& data() const { return m_data; }
    void setOpacity(double opacity); // 0: the picture alone, 1: the heat map alone
    void setColourMap(ColourMap map);
    void setPlaceholder(const QString& text);
    // The view as a picture of `size` (export), drawn as on screen.
    QImage render(const QSize& size) const;
    // The size an exported figure takes: 900 wide and as tall as the picture's own shape asks (the maps of several
    // heads: three to a row), whatever shape the dock has on screen.
    QSize figureSize() const;

signals:
    void patchClicked(int row, int col);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    void draw(QPainter& p, const QRect& area) const;
    void drawMaps(QPainter& p, const QRect& area) const; // ImageOverlayData::maps side by side
    void drawColourBar(QPainter& p, const QRect& bar, float top) const;
    QRect imageRect(const QRect& area) const; // where the picture goes: square pixels, as large as fits

    ImageOverlayDataPtr m_data;
    double m_opacity = 0.6;
    ColourMap m_map = ColourMap::Viridis;
    QString m_placeholder;
};

} // namespace attnscope::widgets
