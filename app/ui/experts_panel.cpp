// ExpertsPanel.
#include "ui/experts_panel.h"

#include "attention_grid_view.h"

#include <QVBoxLayout>

namespace attnscope::app {

ExpertsPanel::ExpertsPanel(QWidget* parent)
    : QWidget(parent)
    , m_view(new widgets::AttentionGridView)
{
    setObjectName(QStringLiteral("expertsPanel"));
    m_view->setObjectName(QStringLiteral("routerGrid"));
    m_view->setShowHighlight(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_view);
    setMessage(tr("A mixture-of-experts model's router shows here: which experts each token is sent to"));
}

void ExpertsPanel::setGrid(widgets::GridDataPtr grid) { m_view->setData(std::move(grid)); }

void ExpertsPanel::setMessage(const QString& text)
{
    m_view->setData(nullptr);
    m_view->setPlaceholder(text);
}

} // namespace attnscope::app
