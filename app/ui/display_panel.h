// The Display dock: score terms (Transformer-XL) and raw scores, colour map, scale, values in cells, the top-fraction
// highlight (fraction and where: memory only, as the paper's Fig. 6, or all keys), reset zoom. Emits intent.
#pragma once

#include "attention/attention_math.h"
#include "model/attention_model.h"
#include "attention_grid_view.h"
#include "views/view_selection.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;

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

    // A new model: its term boxes are enabled when it has relative score terms (otherwise every box says why), and
    // the terms go back to full attention.
    void setModel(const core::ModelInfo& model);
    void setTerms(const core::TermSelection& terms); // shows without emitting
    core::TermSelection terms() const;
    void setHighlight(double fraction, HighlightScope scope); // shows without emitting
    DisplaySettings settings() const;
    void setSettings(const DisplaySettings& s); // emits settingsChanged
    QComboBox* colourBox() const { return m_colourMap; }
    QCheckBox* termBox(int t) const { return m_termBox[t]; }

signals:
    void termsChanged(const core::TermSelection& terms);
    void highlightChanged(double fraction, HighlightScope scope);
    void settingsChanged(const DisplaySettings& settings);
    void resetZoom();

private:
    void emitTerms();
    void setTermsAvailable(bool available, const QString& why);

    QCheckBox* m_termBox[4];
    QCheckBox* m_raw;
    QComboBox* m_colourMap;
    QComboBox* m_normalisation;
    QCheckBox* m_values;
    QCheckBox* m_highlight;
    QDoubleSpinBox* m_topPercent;
    QComboBox* m_scope;
    widgets::ColourMap m_beforeRaw = widgets::ColourMap::Viridis;
};

} // namespace attnscope::app
