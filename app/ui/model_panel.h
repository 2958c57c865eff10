// The Model dock: what the loaded model is (family, shape, position scheme, weights, tokenizer, where it came from).
#pragma once

#include "data/model_bundle.h"

#include <QWidget>

class QFormLayout;

namespace attnscope::app {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    void setModel(const ModelBundlePtr& model); // null: "no model"
    // The rows shown, label -> value (for tests and the session summary).
    QList<QPair<QString, QString>> rows() const;

private:
    QFormLayout* m_form;
};

} // namespace attnscope::app
