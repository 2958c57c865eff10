// ImagePanel.
#include "ui/image_panel.h"

#include "compute/compute_controller.h"
#include "ui/window_layout.h"
#include "export/figure_export.h"
#include "ui/file_dialogs.h"
#include "views/image_views.h"

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
            emit queryChosen(m_patchOffset + row * m_cols + col);
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
    // No buttons (a picture in a prompt, SigLIP): the row would be an empty "From"; the title names the query.
    if (auto* label = m_specialRow->itemAt(0)->widget())
        label->setVisible(!names.isEmpty());
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

void ImagePanel::attach(ComputeController* compute, std::function<ViewSelection()> selection)
{
    m_compute = compute;
    m_selection = std::move(selection);
    connect(this, &ImagePanel::queryChosen, this, [this](int token) {
        m_query = token;
        m_clickedCell = token; // a picture in a prompt: the clicked cell's own attention until the text changes
        refresh();
    });
    connect(this, &ImagePanel::sourceChanged, this, &ImagePanel::refresh);
    connect(this, &ImagePanel::saveRequested, this, &ImagePanel::save);
    connect(compute, &ComputeController::imageRolloutReady, this, [this](ImageRolloutPtr r) {
        if (r->text != m_compute->textResult())
            return; // a picture no longer shown
        m_rollout = std::move(r);
        refresh();
    });
}

void ImagePanel::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    refresh();
}

void ImagePanel::refresh()
{
    const auto text = m_compute ? m_compute->textResult() : nullptr;
    if (!WindowLayout::inFront(this) || !text || !text->image)
        return;
    if (text->model.get() != m_model) { // another model: its CLS first
        m_model = text->model.get();
        m_query = 0;
    }
    const auto& cap = *text->capture;
    QStringList special;
    for (int t = 0; t < text->image->specialTokens; ++t)
        special << QString::fromStdString(cap.tokens[static_cast<std::size_t>(t)].text);
    setSpecialTokens(special);
    m_patchOffset = text->image->patchOffset();
    if (m_query >= static_cast<int>(cap.tokens.size()))
        m_query = 0;
    if (text->image->inPrompt()) // a picture in a prompt: where the newest word (or the one stepped to) looks
        return showPromptPicture(*text);
    const auto chosen = static_cast<ImageSource>(source());
    if (chosen == ImageSource::Rollout && (!m_rollout || m_rollout->text != text)) {
        setMessage(tr("Computing the attention rollout…")); // on the compute thread: a big picture takes a second
        m_compute->requestImageRollout();
        return;
    }
    const ViewSelection selection = m_selection();
    const bool oneHead = selection.heads.size() == 1;
    const int head = oneHead ? selection.heads.front() : chosen == ImageSource::SpecialTokens ? -1 : 0;
    const auto shown = oneHead || chosen != ImageSource::Head ? chosen : ImageSource::LayerMean;
    setData(imageOverlay(*text, selection.site, head, shown, m_query, m_rollout ? &m_rollout->rollout : nullptr,
                         text->model->displayName));
}

void ImagePanel::showPromptPicture(const TextResult& text)
{
    if (text.capture != m_promptCapture) { // a new prompt or answer: follow its words again
        m_promptCapture = text.capture;
        m_clickedCell = -1;
    }
    const ViewSelection selection = m_selection();
    const int tokens = static_cast<int>(text.capture->tokens.size());
    const int stepped = selection.revealRows > 0 ? std::min(selection.revealRows, tokens) : tokens;
    const int query = m_clickedCell >= 0 ? m_clickedCell : stepped - 1;
    const bool oneHead = selection.heads.size() == 1;
    auto chosen = static_cast<ImageSource>(source());
    if (chosen == ImageSource::SpecialTokens)
        chosen = ImageSource::LayerMean; // a prompt has no special tokens' maps
    if (chosen == ImageSource::Rollout && (!m_rollout || m_rollout->text.get() != &text)) {
        setMessage(tr("Computing the attention rollout…"));
        m_compute->requestImageRollout();
        return;
    }
    const auto shown = oneHead || chosen != ImageSource::Head ? chosen : ImageSource::LayerMean;
    setData(imageOverlay(text, selection.site, oneHead ? selection.heads.front() : 0, shown, query,
                         m_rollout ? &m_rollout->rollout : nullptr, text.model->displayName));
}

void ImagePanel::save()
{
    if (!m_view->data())
        return;
    const QString path = askSavePath(this, tr("Save picture"), QStringLiteral("attention.png"),
                                     tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"), QStringLiteral("png"));
    if (path.isEmpty())
        return;
    const QSize natural = m_view->figureSize(); // the picture's shape, not the dock's
    const QString error = exportWidget(m_view, path, FigureSize{natural.width(), natural.height()});
    emit saved(error.isEmpty() ? tr("Saved %1").arg(path) : error);
}

} // namespace attnscope::app
