// Every head over a corpus (Analysis > Heads over a Corpus…): a scatter of all heads with its axes and colour bound to
// any of their metrics, and the contexts of the head clicked there (its top ones and samples from every tenth of the
// statistic), each token shaded by the head's attention from the query. Exports the documented JSON folder.
#pragma once

#include "data/results.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTextBrowser;

namespace attnscope::widgets {
class HeadScatterView;
}

namespace attnscope::app {

class ComputeController;

class HeadContextsWindow : public QWidget {
    Q_OBJECT
public:
    explicit HeadContextsWindow(ComputeController* compute, QWidget* parent = nullptr);
    // The text on screen, read when no corpus file is chosen.
    void setCurrentText(const QString& text) { m_text = text; }
    void setCorpusFile(const QString& path);
    const HeadContextsResultPtr& result() const { return m_result; }
    widgets::HeadScatterView* scatter() const { return m_scatter; }

public slots:
    void run();
    void showHead(int index); // layer * heads + head

signals:
    void headWanted(int layer, int head); // 0-based

private:
    void showResult(const HeadContextsResultPtr& result);
    void redrawScatter();

    ComputeController* m_compute;
    QString m_text, m_corpus;
    QLabel* m_corpusLabel;
    QComboBox *m_statistic, *m_x, *m_y, *m_colour;
    QSpinBox* m_window;
    QSpinBox* m_ablationTokens;
    QPushButton *m_run, *m_cancel, *m_export;
    QLabel* m_status;
    widgets::HeadScatterView* m_scatter;
    QTextBrowser* m_contexts;
    HeadContextsResultPtr m_result;
    int m_head = -1;
};

} // namespace attnscope::app
