// The mechanism view: one step of how a head computes, drawn large enough for a projector. Vectors are colour strips
// (blue negative, red positive, their numbers printed where a cell has room and shown on hover); numbers are bars.
// It only draws the data handed to it; which step is shown is the caller's (Next / Previous / Space).
#pragma once

#include "mechanism_data.h"

#include <QWidget>

namespace attnscope::widgets {

class MechanismView : public QWidget {
    Q_OBJECT
public:
    explicit MechanismView(QWidget* parent = nullptr);
    void setData(MechanismDataPtr data); // keeps the step number where the new data has it
    const MechanismDataPtr& data() const { return m_data; }
    void setStep(int step);
    int step() const { return m_step; }
    int stepCount() const { return m_data ? static_cast<int>(m_data->steps.size()) : 0; }
    void setPlaceholder(const QString& text);
    // The header's "Space: next" (on screen; an exported step is a slide and leaves it out).
    void setKeyHint(bool shown)
    {
        m_keyHint = shown;
        update();
    }
    QSize sizeHint() const override { return {900, 600}; }

signals:
    void stepChanged(int step);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;

private:
    struct Cell {
        QRectF rect;
        QString text;
    };
    MechanismDataPtr m_data;
    int m_step = 0;
    bool m_keyHint = true;
    QString m_placeholder;
    std::vector<Cell> m_cells; // what the pointer can hover, from the last paint
};

} // namespace attnscope::widgets
