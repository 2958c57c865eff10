// MainWindow implementation.
#include "ui/main_window.h"

#include "attention_grid_view.h"
#include "export/figure_export.h"
#include "model/model_loader.h"
#include "ui/grid_builder.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QToolBar>
#include <QVBoxLayout>

namespace attnscope::app {

MainWindow::MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent)
    : QMainWindow(parent)
    , m_compute(compute)
    , m_builtinDirs(std::move(builtinDirs))
{
    setWindowTitle(tr("attnscope"));
    setObjectName(QStringLiteral("MainWindow"));
    m_grid = new widgets::AttentionGridView(this);
    m_grid->setObjectName(QStringLiteral("tokenGrid"));
    setCentralWidget(m_grid);
    buildDocks();
    buildMenus();

    m_status = new QLabel(this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 0);
    m_progress->setMaximumWidth(160);
    m_progress->hide();
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->hide();
    statusBar()->addWidget(m_status, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, m_compute, &ComputeController::cancel);

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(150);
    connect(&m_debounce, &QTimer::timeout, this, &MainWindow::requestRun);

    connect(m_compute, &ComputeController::modelLoaded, this, [this](ModelBundlePtr m) {
        m_status->setText(tr("Loaded %1").arg(m->displayName));
        m_selection = ViewSelection{};
        refreshModelPanel();
        syncSelectorsFromSelection();
        requestRun();
    });
    connect(m_compute, &ComputeController::modelFailed, this, [this](const QString& spec, const QString& msg) {
        m_status->setText(tr("Could not open %1").arg(spec));
        QMessageBox::warning(this, tr("Could not open model"),
                             tr("The model could not be opened:\n\n%1\n\nThe previous model stays loaded.").arg(msg));
    });
    connect(m_compute, &ComputeController::textReady, this, [this](TextCapturePtr c) {
        m_capture = c;
        m_tokenInfo->setText(tr("%n token(s)", "", static_cast<int>(c->tokens.size())) +
                             (c->segments.size() > 1 ? tr(" in %1 segments").arg(c->segments.size()) : QString()));
        m_updatingSelectors = true;
        m_segmentSpin->setRange(1, static_cast<int>(c->segments.size()));
        m_segmentSpin->setValue(m_selection.segment < 0 ? static_cast<int>(c->segments.size()) : m_selection.segment + 1);
        m_updatingSelectors = false;
        refreshGrid();
    });
    connect(m_compute, &ComputeController::textFailed, this, [this](const QString& msg, bool cancelled) {
        m_status->setText(cancelled ? tr("Cancelled") : msg);
        if (!cancelled)
            m_tokenInfo->setText(msg);
    });
    connect(m_compute, &ComputeController::busyChanged, this, [this](bool busy, const QString& what) {
        m_progress->setVisible(busy);
        m_cancel->setVisible(busy);
        if (busy && !what.isEmpty())
            m_status->setText(what);
    });
    connect(m_grid, &widgets::AttentionGridView::cellClicked, this, [this](int row, int, Qt::KeyboardModifiers) {
        m_grid->setLockedRow(m_grid->lockedRow() == row ? -1 : row);
    });

    qApp->installEventFilter(this); // head/layer stepping keys work whichever dock has focus
    resize(1400, 900);
    m_defaultState = saveState();
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

void MainWindow::buildDocks()
{
    // Text dock
    auto* textDock = new QDockWidget(tr("Text"), this);
    textDock->setObjectName(QStringLiteral("textDock"));
    auto* textPanel = new QWidget(textDock);
    auto* tl = new QVBoxLayout(textPanel);
    m_text = new QPlainTextEdit(textPanel);
    m_text->setPlaceholderText(tr("Type or paste text; the attention updates as you type."));
    m_live = new QCheckBox(tr("Live"), textPanel);
    m_live->setChecked(true);
    auto* runButton = new QPushButton(tr("Run"), textPanel);
    m_tokenInfo = new QLabel(textPanel);
    m_tokenInfo->setWordWrap(true);
    auto* row = new QHBoxLayout;
    row->addWidget(m_live);
    row->addWidget(runButton);
    row->addWidget(m_tokenInfo, 1);
    tl->addWidget(m_text, 1);
    tl->addLayout(row);
    textDock->setWidget(textPanel);
    addDockWidget(Qt::BottomDockWidgetArea, textDock);
    connect(m_text, &QPlainTextEdit::textChanged, this, [this] {
        if (m_live->isChecked())
            m_debounce.start();
    });
    connect(runButton, &QPushButton::clicked, this, &MainWindow::requestRun);

    // Head selector dock
    auto* headDock = new QDockWidget(tr("Heads"), this);
    headDock->setObjectName(QStringLiteral("headDock"));
    auto* headPanel = new QWidget(headDock);
    auto* hf = new QFormLayout(headPanel);
    m_layerSpin = new QSpinBox(headPanel);
    m_headSpin = new QSpinBox(headPanel);
    m_segmentSpin = new QSpinBox(headPanel);
    m_average = new QCheckBox(tr("Average all heads (A)"), headPanel);
    for (QSpinBox* sb : {m_layerSpin, m_headSpin, m_segmentSpin})
        sb->setRange(1, 1);
    m_layerSpin->setToolTip(tr("Up / Down: previous / next layer"));
    m_headSpin->setToolTip(tr("Left / Right: previous / next head"));
    hf->addRow(tr("Layer"), m_layerSpin);
    hf->addRow(tr("Head"), m_headSpin);
    hf->addRow(m_average);
    hf->addRow(tr("Segment"), m_segmentSpin);
    headDock->setWidget(headPanel);
    addDockWidget(Qt::LeftDockWidgetArea, headDock);
    auto onSelector = [this] {
        if (m_updatingSelectors)
            return;
        m_selection.layer = m_layerSpin->value() - 1;
        m_selection.heads = m_average->isChecked() ? std::vector<int>{} : std::vector<int>{m_headSpin->value() - 1};
        m_selection.segment = m_segmentSpin->value() - 1;
        refreshGrid();
    };
    connect(m_layerSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_headSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_segmentSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_average, &QCheckBox::toggled, this, onSelector);

    // Display options dock
    auto* viewDock = new QDockWidget(tr("Display"), this);
    viewDock->setObjectName(QStringLiteral("displayDock"));
    auto* viewPanel = new QWidget(viewDock);
    auto* vf = new QFormLayout(viewPanel);
    m_colourMap = new QComboBox(viewPanel);
    m_colourMap->addItems(widgets::colourMapNames());
    m_normalisation = new QComboBox(viewPanel);
    m_normalisation->addItems({tr("0 .. 1"), tr("0 .. grid maximum"), tr("log scale")});
    m_values = new QCheckBox(tr("Values in cells"), viewPanel);
    m_values->setChecked(true);
    m_highlight = new QCheckBox(tr("Highlight top"), viewPanel);
    m_highlight->setChecked(true);
    m_topPercent = new QDoubleSpinBox(viewPanel);
    m_topPercent->setRange(1, 100);
    m_topPercent->setValue(20);
    m_topPercent->setSuffix(tr(" %"));
    auto* resetZoom = new QPushButton(tr("Reset zoom"), viewPanel);
    vf->addRow(tr("Colour map"), m_colourMap);
    vf->addRow(tr("Scale"), m_normalisation);
    vf->addRow(m_values);
    auto* hl = new QHBoxLayout;
    hl->addWidget(m_highlight);
    hl->addWidget(m_topPercent);
    vf->addRow(hl);
    vf->addRow(resetZoom);
    viewDock->setWidget(viewPanel);
    addDockWidget(Qt::LeftDockWidgetArea, viewDock);
    connect(m_colourMap, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { m_grid->setColourMap(widgets::colourMapFromName(n)); });
    connect(m_normalisation, &QComboBox::currentIndexChanged, this,
            [this](int i) { m_grid->setNormalisation(static_cast<widgets::Normalisation>(i)); });
    connect(m_values, &QCheckBox::toggled, m_grid, &widgets::AttentionGridView::setShowValues);
    connect(m_highlight, &QCheckBox::toggled, m_grid, &widgets::AttentionGridView::setShowHighlight);
    connect(m_topPercent, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        m_selection.topFraction = v / 100.0;
        refreshGrid();
    });
    connect(resetZoom, &QPushButton::clicked, m_grid, &widgets::AttentionGridView::resetView);

    // Model dock
    auto* modelDock = new QDockWidget(tr("Model"), this);
    modelDock->setObjectName(QStringLiteral("modelDock"));
    auto* modelPanel = new QWidget(modelDock);
    m_modelForm = new QFormLayout(modelPanel);
    modelDock->setWidget(modelPanel);
    addDockWidget(Qt::LeftDockWidgetArea, modelDock);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model…"), this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Open model folder"));
        if (!path.isEmpty())
            openModel(path);
    });
    open->setShortcut(QKeySequence::Open);
    QMenu* builtins = file->addMenu(tr("&Built-in Models"));
    for (const auto& name : core::listBuiltinModels(m_builtinDirs)) {
        const QString spec = QStringLiteral("builtin:") + QString::fromStdString(name);
        builtins->addAction(QString::fromStdString(name), this, [this, spec] { openModel(spec); });
    }
    if (builtins->isEmpty())
        builtins->addAction(tr("(none installed)"))->setEnabled(false);
    file->addSeparator();
    QAction* exportFig = file->addAction(tr("Export &Figure…"), this, &MainWindow::exportFigureDialog);
    exportFig->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, [this] { restoreState(m_defaultState); });
    QAction* present = view->addAction(tr("&Presentation Mode"));
    present->setCheckable(true);
    present->setShortcut(QKeySequence(Qt::Key_F11));
    connect(present, &QAction::toggled, m_grid, &widgets::AttentionGridView::setPresentation);

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About attnscope"), this, [this] {
        QMessageBox::about(this, tr("About attnscope"),
                           tr("<h3>attnscope</h3><p>Look inside transformer attention: token grids, heads, "
                              "relative-position profiles and Transformer-XL's score terms.</p>"
                              "<p>Built-in models are trained on WikiText-2 (Merity et al., CC BY-SA 3.0).</p>"
                              "<p>Keys: Left/Right head, Up/Down layer, A average of the layer's heads, "
                              "F11 presentation mode.</p>"));
    });
}

void MainWindow::openModel(const QString& spec)
{
    m_compute->loadModel(spec);
}

void MainWindow::setText(const QString& text)
{
    m_text->setPlainText(text);
    requestRun();
}

void MainWindow::requestRun()
{
    m_debounce.stop();
    if (!m_compute->model())
        return;
    if (m_text->toPlainText().trimmed().isEmpty()) {
        m_tokenInfo->setText(tr("Type some text to see its attention."));
        return;
    }
    m_compute->runText(m_text->toPlainText());
}

void MainWindow::refreshModelPanel()
{
    while (m_modelForm->rowCount() > 0)
        m_modelForm->removeRow(0);
    const auto& m = m_compute->model();
    if (!m)
        return;
    const auto& i = m->info();
    auto add = [this](const QString& k, const QString& v) {
        // Long paths are elided in the middle; the full text is in the tooltip.
        auto* l = new QLabel(QFontMetrics(font()).elidedText(v, Qt::ElideMiddle, 220));
        l->setToolTip(v);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
        l->setWordWrap(true);
        m_modelForm->addRow(k, l);
    };
    add(tr("Name"), m->displayName);
    add(tr("Family"), QString::fromUtf8(core::familyName(i.family)));
    add(tr("Layers"), QString::number(i.layers));
    add(tr("Heads"), QString::number(i.heads));
    add(tr("Model width"), QString::number(i.dModel));
    add(tr("Memory length"), i.defaultMemLen > 0 ? QString::number(i.defaultMemLen) : tr("none"));
    add(tr("Parameters"), QLocale().toString(static_cast<qlonglong>(i.parameterCount)));
    add(tr("Tokenizer"), QString::fromStdString(m->tokenizer->kind()));
    add(tr("File"), QString::fromStdString(m->loaded.folder));
    setWindowTitle(tr("%1 — attnscope").arg(m->displayName));
}

void MainWindow::syncSelectorsFromSelection()
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    m_updatingSelectors = true;
    m_layerSpin->setRange(1, m->info().layers);
    m_headSpin->setRange(1, m->info().heads);
    m_layerSpin->setValue(m_selection.layer + 1);
    if (!m_selection.heads.empty())
        m_headSpin->setValue(m_selection.heads.front() + 1);
    m_average->setChecked(m_selection.heads.empty());
    m_headSpin->setEnabled(!m_selection.heads.empty());
    m_updatingSelectors = false;
}

void MainWindow::refreshGrid()
{
    if (!m_capture || !m_compute->model())
        return;
    m_headSpin->setEnabled(!m_selection.heads.empty());
    try {
        m_grid->setData(buildGrid(*m_capture, m_compute->model()->displayName, m_selection));
        m_status->setText(m_grid->data()->title);
    } catch (const std::exception& e) {
        m_status->setText(QString::fromStdString(e.what()));
    }
}

void MainWindow::setSelection(int layer, int head)
{
    m_selection.layer = layer;
    m_selection.heads = {head};
    syncSelectorsFromSelection();
    refreshGrid();
}

void MainWindow::nextHead(int delta)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    const int H = m->info().heads;
    const int cur = m_selection.heads.empty() ? (delta > 0 ? -1 : H) : m_selection.heads.front();
    m_selection.heads = {((cur + delta) % H + H) % H};
    syncSelectorsFromSelection();
    refreshGrid();
}

void MainWindow::nextLayer(int delta)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    const int L = m->info().layers;
    m_selection.layer = ((m_selection.layer + delta) % L + L) % L;
    syncSelectorsFromSelection();
    refreshGrid();
}

void MainWindow::toggleAverage()
{
    m_selection.heads = m_selection.heads.empty() ? std::vector<int>{0} : std::vector<int>{};
    syncSelectorsFromSelection();
    refreshGrid();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::KeyPress && isActiveWindow()) {
        auto* ke = static_cast<QKeyEvent*>(event);
        QWidget* focus = QApplication::focusWidget();
        // Text entry keeps its arrow keys; Alt+arrows step heads from anywhere.
        const bool editing = qobject_cast<QPlainTextEdit*>(focus) || qobject_cast<QLineEdit*>(focus) ||
                             qobject_cast<QAbstractSpinBox*>(focus) || qobject_cast<QComboBox*>(focus);
        const bool alt = ke->modifiers() & Qt::AltModifier;
        if ((!editing || alt) && (ke->modifiers() & ~(Qt::AltModifier | Qt::KeypadModifier)) == 0) {
            switch (ke->key()) {
            case Qt::Key_Left: nextHead(-1); return true;
            case Qt::Key_Right: nextHead(+1); return true;
            case Qt::Key_Up: nextLayer(-1); return true;
            case Qt::Key_Down: nextLayer(+1); return true;
            case Qt::Key_A:
                if (!editing) {
                    toggleAverage();
                    return true;
                }
                break;
            default: break;
            }
        }
    }
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::exportFigureDialog()
{
    const QString path = QFileDialog::getSaveFileName(this, tr("Export figure"), QStringLiteral("attention.png"),
                                                      tr("PNG image (*.png);;SVG vector (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty())
        return;
    const QString err = exportFigure(m_grid->plot(), path, FigureSize{0, 0, 2.0});
    if (!err.isEmpty())
        QMessageBox::warning(this, tr("Export failed"), err);
    else
        m_status->setText(tr("Saved %1").arg(path));
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

} // namespace attnscope::app
