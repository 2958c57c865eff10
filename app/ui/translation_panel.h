// The Translation dock of an encoder-decoder model: the source, the target (typed for teacher forcing, or written by
// the model with Translate), which attention site and head the grid shows, the word alignment and the alignment heads
// ranked (the Heads dock shows every site's heads). It shows what it is given and emits what the user asks for.
#pragma once

#include "data/results.h"
#include "grid_data.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTimer;

namespace attnscope::app {

class ComputeController;

class TranslationPanel : public QWidget {
    Q_OBJECT
public:
    explicit TranslationPanel(QWidget* parent = nullptr);
    // Wires the panel to `compute`: Translate and Stop ask it directly, and a failed or stopped translation is said
    // in the panel (the window keeps the grid, the heads and the session's part).
    void attach(ComputeController* compute);

    // A new model: its sites in the selector (the last decoder layer's cross-attention chosen), the source it opens
    // with (its sample, or the one typed before), the target cleared.
    void setModel(const ModelBundlePtr& model);
    // A run of the target (typed, or a step of the model writing it): what was written, the state, the ranking.
    void showResult(const TextResultPtr& result);
    // The grid on screen, read as a word alignment when it is a cross-attention site's: each written token and the
    // source token it reads most.
    void showAlignment(const widgets::GridData* grid);
    void showFailure(const QString& message);
    void setRunning(bool running);
    QString source() const;
    QString target() const;
    void setSource(const QString& text);
    void setTarget(const QString& text);
    int site() const;
    bool siteAverage() const; // the mean of every decoder layer's cross-attention is chosen (site() is the last one)
    int head() const;         // -1: the mean of the site's heads
    void select(int site, int head);
    // The same chosen elsewhere (the Heads dock, the keys): shown, not emitted again.
    void showSelection(int site, int head);
    // Presentation mode: the sentences, the selectors and the alignment only, so the grid gets the room.
    void setPresentation(bool on);

signals:
    void translateRequested(const QString& source, const QString& target, bool generate);
    void stopRequested();
    void selectionChanged(int site, int head, bool average);

private:
    void fillHeads(int heads);
    void showRanking();

    ModelBundlePtr m_model;
    TextResultPtr m_result;
    QLineEdit* m_source;
    QLineEdit* m_target;
    QPushButton* m_translate;
    QComboBox* m_site;
    QComboBox* m_head;
    QLabel* m_alignment;
    QLabel* m_state;
    QTableWidget* m_ranking;
    QWidget* m_details; // the ranking (hidden in presentation mode)
    QTimer* m_sourceEdited;
    QTimer* m_targetEdited;
    QString m_sample; // the sample sentence the last model opened with
    bool m_running = false;
    bool m_updating = false;
};

} // namespace attnscope::app
