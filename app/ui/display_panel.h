// The Display dock: score terms (Transformer-XL) or rotary frequency bands (Llama family) and raw scores, the band
// split, colour map, scale, values in cells, the top-fraction highlight (fraction and where: memory only, as the
// paper's Fig. 6, or all keys), reset zoom. Emits intent.
#pragma once

#include "attention/attention_math.h"
#include "model/attention_model.h"
#include "attention_grid_view.h"
#include "views/view_selection.h"

#include <QWidget>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;

namespace attnscope::app {

// How the grid is drawn (not what is computed): kept in sessions.
struct DisplaySettings {
    widgets::ColourMap colourMap = widgets::ColourMap::Viridis;
    widgets::Normalisation normalisation = widgets::Normalisation::Unit;
    bool values = true;
    bool highlight = true;
};

class DisplayPanel : public QWidget {
    Q_OBJECT
public:
    explicit DisplayPanel(QWidget* parent = nullptr);

    // A new model: Transformer-XL gets its term boxes, a rotary model band boxes (three equal bands), any other model
    // disabled boxes that say why; the selection goes back to full attention.
    void setModel(const core::ModelInfo& model);
    // Rotary models: the bands the boxes select (nullopt for other models), and the wavelengths typed for them.
    const std::optional<core::BandSplit>& bands() const { return m_bands; }
    QString bandSplitText() const;
    void setBandSplitText(const QString& text); // applies it (emits bandsChanged when the split changes)
    void setTerms(const core::TermSelection& terms); // shows without emitting
    core::TermSelection terms() const;
    void setHighlight(double fraction, HighlightScope scope); // shows without emitting
    DisplaySettings settings() const;
    void setSettings(const DisplaySettings& s); // emits settingsChanged
    QComboBox* colourBox() const { return m_colourMap; }
    QCheckBox* termBox(int t) const { return m_termBox[t]; }
    void setRegroup(bool wholeWords, bool hideSpecial); // shows without emitting

signals:
    void termsChanged(const core::TermSelection& terms);
    void bandsChanged(const std::optional<core::BandSplit>& bands); // a new split (the selection is full again)
    void highlightChanged(double fraction, HighlightScope scope);
    void settingsChanged(const DisplaySettings& settings);
    void resetZoom();
    // Rows and columns as whole words; special tokens left out (rows renormalised).
    void regroupChanged(bool wholeWords, bool hideSpecial);
    void surprisalToggled(bool on); // tint the Text View by each token's surprisal

private:
    QCheckBox* m_words = nullptr;
    QCheckBox* m_noSpecial = nullptr;
    QCheckBox* m_surprisal = nullptr;
    void emitTerms();
    void setTermsAvailable(bool available, const QString& why);
    void showBands(); // labels and tooltips of the band boxes for m_bands
    void applyBandSplit();

    QCheckBox* m_termBox[4];
    QLabel* m_termsLabel;
    QLineEdit* m_split;      // wavelength thresholds (rotary models)
    QLabel* m_splitLabel;
    std::optional<core::BandSplit> m_bands;
    std::vector<float> m_frequencies;
    QCheckBox* m_raw;
    QCheckBox* m_uncapped;
    QCheckBox* m_heuristic; // a delta rule's heuristic map instead of its exact one // raw scores before the soft cap (shown for models that cap them)
    QComboBox* m_colourMap;
    QComboBox* m_normalisation;
    QCheckBox* m_values;
    QCheckBox* m_highlight;
    QDoubleSpinBox* m_topPercent;
    QComboBox* m_scope;
    widgets::ColourMap m_beforeRaw = widgets::ColourMap::Viridis;
};

} // namespace attnscope::app
