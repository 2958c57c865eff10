// The Relative Position dock: source (current text or corpus scan), row order, log scale, the heatmap (Fig. 5, or
// the term panels of Fig. 7) in a scroll area so every head row stays readable, and the table of head summaries.
// Emits the head the user picks, and asks for the current text's profile when it needs it (computed off the GUI
// thread by the caller). Errors are shown in the dock, never dropped.
#pragma once

#include "attention/attention_math.h"
#include "attention/rotary_bands.h"
#include "model/attention_model.h"
#include "data/results.h"

#include <QElapsedTimer>
#include <QWidget>
#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QTableWidget;

namespace attnscope::widgets {
class RelposHeatmapView;
}

namespace attnscope::app {

class ComputeController;

class RelposPanel : public QWidget {
    Q_OBJECT
public:
    explicit RelposPanel(QWidget* parent = nullptr);
    // Wires the panel to `compute`: the text's profile (asked for when shown), a scan's progress, parts and end, and
    // their failures.
    void attach(ComputeController* compute);

    // A new model: which extra profiles it has (Transformer-XL's terms, a rotary model's bands).
    void setModel(const core::ModelInfo& info, const QString& name);
    void setBands(const std::optional<core::BandSplit>& bands); // the band split of the Display dock
    // A new text was computed: its profile is stale until textProfileReady() delivers the new one.
    void textChanged();
    void setTextProfile(ScanResultPtr profile);
    void setTextProfileError(const QString& message);
    void setScan(ScanResultPtr scan, bool running); // a corpus scan (partial while running)
    void scanProgress(qint64 done, qint64 total);   // shown with the rate and the time left
    void clear();                                   // a new model: nothing of the old one stays
    // Profile keys shown as panels: {"full"} (Fig. 5) or e.g. {"term_a", "term_b", "term_d"} (Fig. 7).
    void setProfiles(const std::vector<std::string>& profiles);
    void showCorpus(); // switch the source to the corpus scan
    bool showsCorpus() const;
    // The term (or band) toggles: full attention, or the softmax of a combination of terms or bands.
    void setTerms(const core::TermSelection& terms);
    const ScanResultPtr& currentResult() const { return m_current; }
    const ScanResultPtr& scan() const { return m_scan; }
    widgets::RelposHeatmapView* heatmap() const { return m_view; }
    QTableWidget* summaryTable() const { return m_table; }
    QString infoText() const;
    // Row order (0 by layer, 1 widest first, 2 farthest-looking first) and log scale, as sessions keep them.
    int rowOrder() const;
    bool logScale() const;
    void setRowOrder(int order, bool logScale);
    // The dock came to the front: the text's profile is computed now if it is shown and missing.
    void broughtToFront();

signals:
    void headSelected(int layer, int head);
    // The current text's profile is needed: full attention and `profiles` ("a,b,c,d", "1,2,3,1+2", "" ...), bands
    // split as `bands`.
    void textProfileWanted(const std::string& profiles, const std::optional<core::BandSplit>& bands);

protected:
    void showEvent(QShowEvent* event) override; // a profile is only computed while the dock is seen

private:
    void refresh();

    widgets::RelposHeatmapView* m_view;
    QComboBox* m_source;
    QComboBox* m_order;
    QCheckBox* m_log;
    QLabel* m_info;
    QTableWidget* m_table;
    ScanResultPtr m_scan;
    ScanResultPtr m_textProfile;
    ScanResultPtr m_current;
    std::vector<std::string> m_profiles{"full"};
    QString m_modelName;
    std::string m_extraTerm; // a combination like "a+b" or "1+2" also profiled for the current text
    bool m_relative = false;
    std::optional<core::BandSplit> m_bands; // rotary models
    bool m_textProfileAsked = false;
    QElapsedTimer m_scanClock;
    bool m_running = false;
};

} // namespace attnscope::app
