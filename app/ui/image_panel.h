// The Image dock: a vision model's picture with one token's attention over its patches. Click a patch, or a special
// token's button (CLS, DIST, registers), to see where it looks; choose one head, the layer's mean or rollout; the
// slider blends the picture and the heat map. It wires itself to the compute controller (attach): it draws the shown
// picture's head for the selected layer and asks for rollout when that is chosen; Save writes the figure in the
// picture's own shape.
#pragma once

#include "data/results.h"
#include "image_overlay_view.h"
#include "views/view_selection.h"

#include <QWidget>
#include <functional>

class QComboBox;
class QHBoxLayout;
class QSlider;

namespace attnscope::app {

class ComputeController;

class ImagePanel : public QWidget {
    Q_OBJECT
public:
    explicit ImagePanel(QWidget* parent = nullptr);
    // From now on the panel follows `compute`'s text and `selection()` for the layer and head.
    void attach(ComputeController* compute, std::function<ViewSelection()> selection);
    // The selection or the picture changed: draw it (nothing while the panel is not on screen).
    void refresh();
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
    void saved(const QString& message); // "Saved PATH" or what went wrong

protected:
    void showEvent(QShowEvent* event) override;

private:
    void save();
    // A vision-language model's picture: the attention of the newest token (the stepped-to one while playing, or a
    // clicked cell) over the picture's cells.
    void showPromptPicture(const TextResult& text);
    ComputeController* m_compute = nullptr;
    std::function<ViewSelection()> m_selection;
    int m_query = 0;             // the token whose attention is shown (0: CLS)
    ImageRolloutPtr m_rollout;   // the shown picture's rollout, once the compute thread has it
    const void* m_model = nullptr; // the model the query belongs to (a new model starts on its CLS)
    widgets::ImageOverlayView* m_view;
    QComboBox* m_source;
    QSlider* m_opacity;
    QHBoxLayout* m_specialRow;
    int m_specialCount = 0;
    int m_cols = 0;
    int m_patchOffset = 0;       // the token of the first patch (a vision model: after its special tokens)
    int m_clickedCell = -1;      // a prompt's picture: the clicked cell's token, or -1 (follow the words)
    std::shared_ptr<const core::TextCapture> m_promptCapture; // the prompt the clicked cell belongs to
};

} // namespace attnscope::app
