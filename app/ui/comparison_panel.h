// The Compare Models dock: a list of models to tick (built-ins and added folders or files) and the small multiples
// of their heads on the current text. The view sits in a scroll area, so eight models never grow the window.
#pragma once

#include "comparison_data.h"

#include <QWidget>

class QListWidget;
class QLabel;
class QScrollArea;

namespace attnscope::widgets {
class ComparisonView;
}

namespace attnscope::app {

class ComputeController;

class ComparisonPanel : public QWidget {
    Q_OBJECT
public:
    ComparisonPanel(const std::vector<std::string>& builtinNames, QWidget* parent = nullptr);
    // Wires the panel to `compute`: comparisons and their failures (said in the panel, not in a dialog).
    void attach(ComputeController* compute);
    void setData(widgets::ComparisonPtr comparison);
    void setMessage(const QString& message);
    widgets::ComparisonView* view() const { return m_view; }
    QStringList checkedSpecs() const;

signals:
    void compareRequested(const QStringList& specs);

private:
    void addModel(const QString& name, const QString& spec, bool checked);

    QListWidget* m_list;
    QScrollArea* m_scroll;
    QLabel* m_message;
    widgets::ComparisonView* m_view;
};

} // namespace attnscope::app
