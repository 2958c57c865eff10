// The relative-position dock's content: source choice (current text or corpus scan), row order, log scale,
// the heatmap (Fig. 5, or the term panels of Fig. 7) and a table of head summaries. Emits the head the user picks.
#pragma once

#include "analysis/attention_grid.h"
#include "compute/model_bundle.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QTableWidget;

namespace attnscope::widgets {
class RelposHeatmapView;
}

namespace attnscope::app {

class RelposPanel : public QWidget {
    Q_OBJECT
public:
    explicit RelposPanel(QWidget* parent = nullptr);

    void setModelName(const QString& name) { m_modelName = name; }
    void setTextCapture(TextCapturePtr capture); // profiles of the current text
    void setScan(ScanResultPtr scan, bool running); // a corpus scan (partial while running)
    // Profiles shown as panels: {"full"} (Fig. 5) or e.g. {"term_a", "term_b", "term_d"} (Fig. 7).
    void setProfiles(const std::vector<std::string>& profiles);
    void showCorpus(); // switch the source to the corpus scan
    // The term toggles: full attention, or the softmax of a combination of terms.
    void setTerms(const core::TermSelection& terms);
    const ScanResultPtr& currentResult() const { return m_current; }
    const ScanResultPtr& scan() const { return m_scan; }
    widgets::RelposHeatmapView* heatmap() const { return m_view; }
    QTableWidget* summaryTable() const { return m_table; }

signals:
    void headSelected(int layer, int head);

private:
    void refresh();

    widgets::RelposHeatmapView* m_view;
    QComboBox* m_source;
    QComboBox* m_order;
    QCheckBox* m_log;
    QLabel* m_info;
    QTableWidget* m_table;
    TextCapturePtr m_capture;
    ScanResultPtr m_scan;
    ScanResultPtr m_textProfile; // computed lazily from m_capture
    ScanResultPtr m_current;
    std::vector<std::string> m_profiles{"full"};
    QString m_modelName;
    std::string m_extraTerm; // a combination like "a+b" also profiled for the current text
    bool m_running = false;
};

} // namespace attnscope::app
