// The Predictions dock: an encoder's top fillers of each [MASK] in the text (a choice when there are several), or a
// causal model's next tokens after the selected position with a temperature (recomputed here from the logits; the
// token that actually follows marked). Draws what it is handed; owns no model state.
#pragma once

#include "data/results.h"

#include <QWidget>

#include <vector>

class QCheckBox;
class QBoxLayout;
class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QSpinBox;
class QLabel;

namespace attnscope::widgets {
class PredictionView;
}

namespace attnscope::app {

class ComputeController;

class PredictionPanel : public QWidget {
    Q_OBJECT
public:
    explicit PredictionPanel(QWidget* parent = nullptr);
    // Wires the panel to `compute`: an encoder's fillers of [MASK] and what failed for them or for the next token.
    void attach(ComputeController* compute);
    // Whether the model fills masks at all (encoders with their MLM head); says what to do either way.
    void setModel(const core::ModelInfo& info, const QString& maskToken);
    void setFills(MaskedFillResultPtr fills); // null: none yet
    void setNextToken(NextTokenResultPtr next); // null: none yet
    void setMessage(const QString& message);
    widgets::PredictionView* view() const { return m_view; }
    // Generation settings (causal models): greedy or sampled with the temperature, top-k and top-p shown, and the seed.
    core::Sampling sampling() const;
    // Generation may write control tokens (<unk>, <eos>, ...): the box under the sampling settings, off by default.
    bool allowsControlTokens() const;
    quint64 seed() const;
    void setGenerating(bool generating); // Stop enabled, Generate disabled while tokens are being added
    // Presentation mode: the bars and Generate / Regenerate only (the explanation and the sampling settings hidden),
    // so a narrow side panel shows the bars a room reads.
    void setPresentation(bool on);

signals:
    void generateRequested(int tokens); // Generate 1 / Generate 10
    void regenerateRequested(int position); // cut the text after the shown position and generate again
    void stopRequested();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void show(int index);
    void showNext(); // the next-token bars at the current temperature
    // The generation controls in as many rows as the panel's width needs, each at its natural width: never a
    // horizontal scroll bar or a clipped control.
    void placeControls();
    QLabel* m_info;
    QComboBox* m_which;
    widgets::PredictionView* m_view;
    QDoubleSpinBox* m_temperature;
    QWidget* m_generateRow;
    QBoxLayout* m_body = nullptr; // the controls and the bars: side by side in a wide short tab, else one above the other
    QPushButton* m_generateOne;
    QPushButton* m_generateTen;
    QPushButton* m_stop;
    QPushButton* m_regenerate;
    bool m_generating = false;
    void updateRegenerate(); // enabled for a position before the text's end, while nothing is being generated
    QComboBox* m_mode;
    QSpinBox* m_topK;
    QDoubleSpinBox* m_topP;
    QSpinBox* m_seed;
    QCheckBox* m_special;
    NextTokenResultPtr m_next;
    bool m_predictsNext = false;
    std::vector<int> m_rowOf; // the row of each generation control as placed last
    MaskedFillResultPtr m_fills;
    QString m_maskToken;
    bool m_fillsMasks = false;
    bool m_presentation = false;
};

} // namespace attnscope::app
