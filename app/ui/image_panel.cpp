// ImagePanel.
#include "ui/image_panel.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

namespace attnscope::app {

ImagePanel::ImagePanel(QWidget* parent)
    : QWidget(parent)
    , m_view(new widgets::ImageOverlayView)
    , m_source(new QComboBox)
    , m_opacity(new QSlider(Qt::Horizontal))
    , m_specialRow(new QHBoxLayout)
{
    setObjectName(QStringLiteral("imagePanel"));
    m_view->setObjectName(QStringLiteral("imageOverlay"));
    m_source->addItems({tr("This head"), tr("Layer mean"), tr("Rollout"), tr("Special tokens side by side")});
    m_source->setToolTip(tr("Whose attention: the selected head, the mean of the layer's heads, attention rollout "
                            "through every layer, or every special token's map (CLS, registers) at once"));
    m_opacity->setRange(0, 100);
    m_opacity->setValue(60);
    m_opacity->setToolTip(tr("Blend the picture (left) and the heat map (right)"));
    m_view->setOpacity(0.6);
    auto* save = new QPushButton(tr("Save…"));
    save->setToolTip(tr("Save the picture with its heat map (PNG, SVG, PDF)"));
    // Three short rows, so a narrow dock keeps its picture wide.
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Show")));
    controls->addWidget(m_source, 1);
    controls->addWidget(save);
    auto* blend = new QHBoxLayout;
    blend->addWidget(new QLabel(tr("Picture")));
    blend->addWidget(m_opacity, 1);
    blend->addWidget(new QLabel(tr("Heat map")));
    m_specialRow->setSpacing(2);
    m_specialRow->addWidget(new QLabel(tr("From")));
    m_specialRow->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addLayout(blend);
    layout->addLayout(m_specialRow);
    layout->addWidget(m_view, 1);
    connect(m_source, &QComboBox::currentIndexChanged, this, &ImagePanel::sourceChanged);
    connect(m_opacity, &QSlider::valueChanged, this, [this](int v) { m_view->setOpacity(v / 100.0); });
    connect(save, &QPushButton::clicked, this, &ImagePanel::saveRequested);
    connect(m_view, &widgets::ImageOverlayView::patchClicked, this, [this](int row, int col) {
        if (m_cols > 0)
            emit queryChosen(m_specialCount + row * m_cols + col);
    });
    setMessage(tr("A vision model's picture shows here: click a patch to see where it looks"));
}

void ImagePanel::setData(widgets::ImageOverlayDataPtr overlay)
{
    m_cols = overlay ? overlay->cols : 0;
    m_view->setData(std::move(overlay));
}

void ImagePanel::setMessage(const QString& text) { m_view->setPlaceholder(text); }

void ImagePanel::setSpecialTokens(const QStringList& names)
{
    while (m_specialRow->count() > 2) { // keep the label and the stretch
        QLayoutItem* item = m_specialRow->takeAt(1);
        delete item->widget();
        delete item;
    }
    m_specialCount = static_cast<int>(names.size());
    for (int i = 0; i < names.size(); ++i) {
        auto* b = new QPushButton(names[i]);
        b->setStyleSheet(QStringLiteral("padding: 2px 6px"));
        b->setMinimumWidth(0);
        b->setToolTip(tr("The attention of the %1 token over the patches").arg(names[i]));
        connect(b, &QPushButton::clicked, this, [this, i] { emit queryChosen(i); });
        m_specialRow->insertWidget(1 + i, b);
    }
}

int ImagePanel::source() const { return m_source->currentIndex(); }

} // namespace attnscope::app
