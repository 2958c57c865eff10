// The Image dock: a vision model's picture with one token's attention over its patches. Click a patch, or a special
// token's button (CLS, DIST, registers), to see where it looks; choose one head, the layer's mean or rollout; the
// slider blends the picture and the heat map.
#pragma once

#include "image_overlay_view.h"

#include <QWidget>

class QComboBox;
class QHBoxLayout;
class QSlider;

namespace attnscope::app {

class ImagePanel : public QWidget {
    Q_OBJECT
public:
    explicit ImagePanel(QWidget* parent = nullptr);
    void setData(widgets::ImageOverlayDataPtr overlay);
    void setMessage(const QString& text);
    // The special tokens' names, one button each (they precede the patches among the tokens).
    void setSpecialTokens(const QStringList& names);
    int source() const; // ImageSource
    widgets::ImageOverlayView* view() const { return m_view; }

signals:
    void queryChosen(int token); // a token of the capture: a special token, or specialTokens + patch
    void sourceChanged();
    void saveRequested();

private:
    widgets::ImageOverlayView* m_view;
    QComboBox* m_source;
    QSlider* m_opacity;
    QHBoxLayout* m_specialRow;
    int m_specialCount = 0;
    int m_cols = 0;
};

} // namespace attnscope::app
