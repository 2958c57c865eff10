// Small multiples for comparing models on the same text: one row per model, one small grid per head, one shared
// colour scale (the teaching figure of one-layer transformers trained with 1..8 heads). Draws only.
#pragma once

#include "comparison_data.h"

#include <QWidget>

class QCustomPlot;

namespace attnscope::widgets {

class ComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonView(QWidget* parent = nullptr);
    void setData(ComparisonPtr data);
    const ComparisonPtr& data() const { return m_data; }
    QCustomPlot* plot() const { return m_plot; }
    int panelCount() const { return m_panels; }

private:
    QCustomPlot* m_plot;
    ComparisonPtr m_data;
    int m_panels = 0;
};

} // namespace attnscope::widgets
