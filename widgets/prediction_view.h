// Horizontal bars of a model's top predictions at one position (masked-token fillers, next tokens): most probable at
// the top, probabilities as percentages at the bar ends. Draws only.
#pragma once

#include "prediction_data.h"

#include <QWidget>

class QCustomPlot;

class QCPAxis;

namespace attnscope::widgets {

class PredictionView : public QWidget {
    Q_OBJECT
public:
    explicit PredictionView(QWidget* parent = nullptr);
    void setData(PredictionPtr data); // null: empty with the placeholder
    const PredictionPtr& data() const { return m_data; }
    void setPlaceholder(const QString& text);
    QCustomPlot* plot() const { return m_plot; }

protected:
    void changeEvent(QEvent* event) override; // a new font (presentation mode): drawn again in it
    void resizeEvent(QResizeEvent* event) override;

private:
    void redraw();
    static QString fittedTitle(const QString& title, const QFont& font, int width);
    static void setProbabilityTicks(QCPAxis* prob, int axisW);
    QCustomPlot* m_plot;
    PredictionPtr m_data;
    QString m_placeholder;
};

} // namespace attnscope::widgets
