// MainWindow implementation.
#include "ui/main_window.h"

#include "attention_grid_view.h"
#include "comparison_view.h"
#include "export/data_export.h"
#include "export/figure_export.h"
#include "head_overview_view.h"
#include "model/model_loader.h"
#include "text_attention_view.h"
#include "ui/grid_builder.h"
#include "ui/relpos_panel.h"
#include "ui/thumbnails.h"

#include <QAction>
#include <qcustomplot.h>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QRadioButton>
#include <QScreen>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTextBlock>
#include <QVBoxLayout>

namespace attnscope::app {

namespace {
constexpr int kMaxRecent = 8;

// Character index in a QString for each byte offset of its UTF-8 form (token spans are UTF-8 bytes).
std::vector<int> utf8ToQStringIndex(const QString& s)
{
    std::vector<int> map;
    map.reserve(static_cast<std::size_t>(s.size()) * 2 + 1);
    for (int i = 0; i < s.size(); ++i) {
        const char32_t u = s.at(i).unicode();
        int bytes = u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
        if (s.at(i).isHighSurrogate() && i + 1 < s.size()) {
            bytes = 4;
            for (int b = 0; b < bytes; ++b)
                map.push_back(i);
            ++i;
            continue;
        }
        for (int b = 0; b < bytes; ++b)
            map.push_back(i);
    }
    map.push_back(static_cast<int>(s.size()));
    return map;
}
} // namespace

MainWindow::MainWindow(ComputeController* compute, std::vector<std::string> builtinDirs, QWidget* parent)
    : QMainWindow(parent)
    , m_compute(compute)
    , m_builtinDirs(std::move(builtinDirs))
{
    setWindowTitle(tr("attnscope"));
    setObjectName(QStringLiteral("MainWindow"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
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
    m_debounce.setInterval(120);
    connect(&m_debounce, &QTimer::timeout, this, &MainWindow::requestRun);

    connect(m_compute, &ComputeController::modelLoaded, this, [this](ModelBundlePtr m) {
        m_status->setText(tr("Loaded %1").arg(m->displayName));
        rememberRecent(m->spec);
        m_selection = ViewSelection{};
        m_result.reset();
        refreshModelPanel();
        syncSelectorsFromSelection();
        m_relpos->setModelName(m->displayName);
        const bool relative = m->info().hasRelativeTerms;
        m_termPanel->setEnabled(relative);
        m_rawScores->setEnabled(relative);
        const QString why = relative ? QString() : tr("%1 models have no relative score terms: their attention is one "
                                                      "softmax of q·k (term toggles need Transformer-XL)")
                                                       .arg(QString::fromUtf8(core::familyName(m->info().family)));
        m_termPanel->setToolTip(why);
        m_rawScores->setToolTip(why);
        setTerms(core::TermSelection{}); // a new model starts on full attention
        m_relpos->setScan(nullptr, false);
        m_text->setPlaceholderText(m->tokenizer->kind().rfind("token ids", 0) == 0
                                       ? tr("This model has no tokenizer files: type token ids, e.g. 3 14 15 9")
                                       : tr("Type or paste text; the attention updates as you type."));
        requestRun();
    });
    connect(m_compute, &ComputeController::modelFailed, this, [this](const QString& spec, const QString& msg) {
        m_status->setText(tr("Could not open %1").arg(spec));
        QMessageBox::warning(this, tr("Could not open model"),
                             tr("The model could not be opened:\n\n%1\n\n%2")
                                 .arg(msg, m_compute->model() ? tr("The previous model stays loaded.")
                                                              : tr("Open another model from the File menu.")));
    });
    connect(m_compute, &ComputeController::textReady, this, [this](TextResultPtr r) {
        m_result = r;
        const auto& c = *r->capture;
        m_tokenInfo->setText(tr("%n token(s)", "", static_cast<int>(c.tokens.size())) +
                             (c.segments.size() > 1 ? tr(" in %1 segments of %2").arg(c.segments.size()).arg(c.segmentLen)
                                                    : QString()));
        m_updatingSelectors = true;
        m_segmentSpin->setRange(1, static_cast<int>(c.segments.size()));
        if (m_selection.segment >= static_cast<int>(c.segments.size()))
            m_selection.segment = -1;
        m_segmentSpin->setValue((m_selection.segment < 0 ? autoSegment(c) : m_selection.segment) + 1);
        m_updatingSelectors = false;
        m_overview->setThumbnails(m_selection.segment < 0 ? r->thumbnails : makeThumbnails(c, m_selection.segment));
        if (!m_pendingSession.isEmpty()) {
            // Restore the saved view now that the session's model and text are computed.
            const QJsonObject sel = m_pendingSession.value(QStringLiteral("selection")).toObject();
            const QJsonObject view = m_pendingSession.value(QStringLiteral("view")).toObject();
            m_pendingSession = {};
            m_colourMap->setCurrentText(view.value(QStringLiteral("colourMap")).toString(m_colourMap->currentText()));
            m_normalisation->setCurrentIndex(view.value(QStringLiteral("normalisation")).toInt(0));
            m_values->setChecked(view.value(QStringLiteral("values")).toBool(true));
            m_highlight->setChecked(view.value(QStringLiteral("highlight")).toBool(true));
            m_topPercent->setValue(100.0 * sel.value(QStringLiteral("topFraction")).toDouble(0.2));
            m_selection.layer = sel.value(QStringLiteral("layer")).toInt(0);
            m_selection.heads.clear();
            for (const auto& h : sel.value(QStringLiteral("heads")).toArray())
                m_selection.heads.push_back(h.toInt());
            m_selection.segment = sel.value(QStringLiteral("segment")).toInt(-1);
            m_selection.revealRows = sel.value(QStringLiteral("revealRows")).toInt(-1);
            const QJsonObject t = sel.value(QStringLiteral("terms")).toObject();
            syncSelectorsFromSelection();
            setTerms({t.value(QStringLiteral("a")).toBool(true), t.value(QStringLiteral("b")).toBool(true),
                      t.value(QStringLiteral("c")).toBool(true), t.value(QStringLiteral("d")).toBool(true),
                      t.value(QStringLiteral("raw")).toBool(false)});
        }
        refreshGrid();
        highlightTokens(-1);
        m_relpos->setTextCapture(r->capture);
    });
    connect(m_compute, &ComputeController::scanProgress, this, [this](qint64 done, qint64 total) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(total > 0 ? static_cast<int>(1000 * done / std::max<qint64>(1, total)) : 0);
        const double secs = m_scanClock.elapsed() / 1000.0;
        const double left = done > 0 ? secs * static_cast<double>(total - done) / static_cast<double>(done) : 0;
        m_status->setText(tr("Scanning: %1 of about %2 tokens, %3 tokens/s, about %4 s left")
                              .arg(done)
                              .arg(total)
                              .arg(secs > 0 ? static_cast<int>(static_cast<double>(done) / secs) : 0)
                              .arg(static_cast<int>(left)));
    });
    connect(m_compute, &ComputeController::scanPartial, this, [this](ScanResultPtr r) { m_relpos->setScan(r, true); });
    connect(m_compute, &ComputeController::scanFinished, this, [this](ScanResultPtr r) {
        m_progress->setRange(0, 0);
        m_relpos->setScan(r, false);
        m_status->setText(r->partial ? tr("Scan cancelled after %1 tokens (partial result kept)").arg(r->tokens)
                                     : tr("Scan finished: %1 tokens in %2 s").arg(r->tokens).arg(m_scanClock.elapsed() / 1000.0, 0, 'f', 1));
    });
    connect(m_compute, &ComputeController::scanFailed, this, [this](const QString& msg) {
        m_progress->setRange(0, 0);
        m_status->setText(tr("Scan failed"));
        QMessageBox::warning(this, tr("Scan failed"), msg);
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
    connect(m_grid, &widgets::AttentionGridView::cellHovered, this, [this](int row, int col) {
        if (!m_gridData || row < 0) {
            highlightTokens(-1);
            return;
        }
        highlightTokens(m_gridData->colPosition(col));
    });
    connect(m_textView, &widgets::TextAttentionView::tokenHovered, this, &MainWindow::highlightTokens);
    connect(m_overview, &widgets::HeadOverviewView::headClicked, this, [this](int layer, int head, bool additive) {
        std::vector<int> heads{head};
        if (additive && layer == m_selection.layer) {
            heads = m_selection.heads;
            if (heads.empty())
                heads = {head};
            else if (const auto it = std::find(heads.begin(), heads.end(), head); it != heads.end()) {
                if (heads.size() > 1)
                    heads.erase(it);
            } else
                heads.push_back(head);
            std::sort(heads.begin(), heads.end());
        }
        setSelection(layer, heads);
    });

    qApp->installEventFilter(this); // head/layer stepping keys work whichever dock has focus
    // Docks that are consulted less often share a place as tabs, so the grid keeps most of a 1280x800 screen.
    tabifyDockWidget(dockNamed("displayDock"), dockNamed("modelDock"));
    tabifyDockWidget(dockNamed("textDock"), dockNamed("relposDock"));
    tabifyDockWidget(dockNamed("relposDock"), dockNamed("compareDock"));
    dockNamed("textDock")->raise();
    dockNamed("displayDock")->raise();
    const QRect avail = screen() ? screen()->availableGeometry() : QRect(0, 0, 1400, 900);
    resize(std::min(1400, avail.width()), std::min(900, avail.height()));
    resizeDocks({dockNamed("textDock")}, {height() / 5}, Qt::Vertical);
    resizeDocks({dockNamed("textViewDock"), dockNamed("headDock")}, {width() / 6, width() / 4}, Qt::Horizontal);
    resizeDocks({dockNamed("headDock")}, {height() / 2}, Qt::Vertical);
    m_defaultState = saveState();
    QSettings settings;
    restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
}

QDockWidget* MainWindow::dockNamed(const char* objectName) const
{
    for (QDockWidget* d : findChildren<QDockWidget*>())
        if (d->objectName() == QLatin1String(objectName))
            return d;
    return nullptr;
}

void MainWindow::showDock(const char* objectName)
{
    if (QDockWidget* d = dockNamed(objectName)) {
        d->show();
        d->raise();
    }
}

QDockWidget* MainWindow::addDock(const QString& title, const QString& objectName, QWidget* content, Qt::DockWidgetArea area)
{
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(content);
    addDockWidget(area, dock);
    return dock;
}

void MainWindow::buildDocks()
{
    // Text
    auto* textPanel = new QWidget(this);
    auto* tl = new QVBoxLayout(textPanel);
    tl->setContentsMargins(4, 4, 4, 4);
    m_text = new QPlainTextEdit(textPanel);
    m_text->setObjectName(QStringLiteral("textEdit"));
    m_live = new QCheckBox(tr("Live"), textPanel);
    m_live->setChecked(true);
    m_live->setToolTip(tr("Recompute the attention while you type"));
    auto* runButton = new QPushButton(tr("Run"), textPanel);
    m_tokenInfo = new QLabel(textPanel);
    m_tokenInfo->setWordWrap(true);
    auto* row = new QHBoxLayout;
    row->addWidget(m_live);
    row->addWidget(runButton);
    row->addWidget(m_tokenInfo, 1);
    // Token-by-token stepping for class: the grid grows one query row at a time.
    auto* first = new QPushButton(tr("|◀"), textPanel);
    auto* back = new QPushButton(tr("◀"), textPanel);
    auto* play = new QPushButton(tr("▶ Play"), textPanel);
    auto* fwd = new QPushButton(tr("▶|"), textPanel);
    auto* all = new QPushButton(tr("All"), textPanel);
    first->setToolTip(tr("Start stepping: show the first token only"));
    back->setToolTip(tr("One token back"));
    fwd->setToolTip(tr("One token forward"));
    play->setToolTip(tr("Reveal the segment one token at a time"));
    all->setToolTip(tr("Show every token"));
    m_stepLabel = new QLabel(textPanel);
    for (QPushButton* b : {first, back, play, fwd, all}) {
        b->setMaximumWidth(70);
        row->addWidget(b);
    }
    row->addWidget(m_stepLabel);
    auto rows = [this] { return m_gridData ? m_gridData->rows : 0; };
    auto fullRows = [this] {
        if (!m_result)
            return 0;
        const auto& c = *m_result->capture;
        const int seg = m_selection.segment < 0 ? autoSegment(c) : m_selection.segment;
        return c.segments[static_cast<std::size_t>(seg)].qlen;
    };
    connect(first, &QPushButton::clicked, this, [this] { setRevealRows(1); });
    connect(back, &QPushButton::clicked, this, [this, rows] { setRevealRows(std::max(1, rows() - 1)); });
    connect(fwd, &QPushButton::clicked, this, [this, rows, fullRows] {
        setRevealRows(m_selection.revealRows < 0 ? 1 : std::min(fullRows(), rows() + 1));
    });
    connect(all, &QPushButton::clicked, this, [this] {
        m_playTimer.stop();
        setRevealRows(-1);
    });
    connect(play, &QPushButton::clicked, this, [this, play] {
        if (m_playTimer.isActive()) {
            m_playTimer.stop();
            play->setText(tr("▶ Play"));
            return;
        }
        if (m_selection.revealRows < 0)
            setRevealRows(1);
        play->setText(tr("⏸ Pause"));
        m_playTimer.start();
    });
    m_playTimer.setInterval(700);
    connect(&m_playTimer, &QTimer::timeout, this, [this, play, fullRows] {
        const int next = m_selection.revealRows + 1;
        if (next > fullRows()) {
            m_playTimer.stop();
            play->setText(tr("▶ Play"));
            return;
        }
        setRevealRows(next);
    });
    tl->addWidget(m_text, 1);
    tl->addLayout(row);
    m_secondaryDocks << addDock(tr("Text"), QStringLiteral("textDock"), textPanel, Qt::BottomDockWidgetArea);
    connect(m_text, &QPlainTextEdit::textChanged, this, [this] {
        if (m_live->isChecked())
            m_debounce.start();
    });
    connect(runButton, &QPushButton::clicked, this, &MainWindow::requestRun);

    // Heads: selectors and the overview of all heads
    auto* headPanel = new QWidget(this);
    auto* hv = new QVBoxLayout(headPanel);
    hv->setContentsMargins(4, 4, 4, 4);
    auto* hf = new QFormLayout;
    m_layerSpin = new QSpinBox(headPanel);
    m_headSpin = new QSpinBox(headPanel);
    m_segmentSpin = new QSpinBox(headPanel);
    for (QSpinBox* sb : {m_layerSpin, m_headSpin, m_segmentSpin})
        sb->setRange(1, 1);
    m_average = new QCheckBox(tr("Average of the layer's heads (A)"), headPanel);
    m_layerSpin->setToolTip(tr("Up / Down: previous / next layer"));
    m_headSpin->setToolTip(tr("Left / Right: previous / next head"));
    m_segmentSpin->setToolTip(tr("Texts longer than a segment run in several segments with memory"));
    auto* lh = new QHBoxLayout;
    lh->addWidget(new QLabel(tr("Layer"), headPanel));
    lh->addWidget(m_layerSpin);
    lh->addWidget(new QLabel(tr("Head"), headPanel));
    lh->addWidget(m_headSpin);
    hf->addRow(lh);
    hf->addRow(m_average);
    hf->addRow(tr("Segment"), m_segmentSpin);
    hv->addLayout(hf);
    m_overview = new widgets::HeadOverviewView(headPanel);
    m_overview->setObjectName(QStringLiteral("headOverview"));
    hv->addWidget(m_overview, 1);
    addDock(tr("Heads"), QStringLiteral("headDock"), headPanel, Qt::LeftDockWidgetArea);
    auto onSelector = [this] {
        if (m_updatingSelectors)
            return;
        const int oldSegment = m_selection.segment;
        m_selection.layer = m_layerSpin->value() - 1;
        m_selection.heads = m_average->isChecked() ? std::vector<int>{} : std::vector<int>{m_headSpin->value() - 1};
        m_selection.segment = m_result && m_segmentSpin->value() - 1 == autoSegment(*m_result->capture)
                                  ? -1
                                  : m_segmentSpin->value() - 1;
        if (m_result && oldSegment != m_selection.segment)
            m_overview->setThumbnails(makeThumbnails(*m_result->capture, m_selection.segment));
        m_overview->setSelection(m_selection.layer, m_selection.heads);
        refreshGrid();
    };
    connect(m_layerSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_headSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_segmentSpin, &QSpinBox::valueChanged, this, onSelector);
    connect(m_average, &QCheckBox::toggled, this, onSelector);

    // Text view (words tinted by attention, strongest pairs)
    m_textView = new widgets::TextAttentionView(this);
    m_textView->setObjectName(QStringLiteral("textView"));
    m_secondaryDocks << addDock(tr("Text View"), QStringLiteral("textViewDock"), m_textView, Qt::RightDockWidgetArea);

    // Relative-position heatmap (Figs. 5 and 7) with head summaries
    m_relpos = new RelposPanel(this);
    m_relpos->setObjectName(QStringLiteral("relposPanel"));
    auto* relDock = addDock(tr("Relative Position"), QStringLiteral("relposDock"), m_relpos, Qt::BottomDockWidgetArea);
    m_secondaryDocks << relDock;
    connect(m_relpos, &RelposPanel::headSelected, this, [this](int layer, int head) { setSelection(layer, {head}); });

    // Model comparison: small multiples of several models on the same text
    auto* comparePanel = new QWidget(this);
    auto* cl = new QHBoxLayout(comparePanel);
    auto* side = new QVBoxLayout;
    m_compareList = new QListWidget(comparePanel);
    m_compareList->setMaximumWidth(180);
    for (const auto& name : core::listBuiltinModels(m_builtinDirs)) {
        auto* item = new QListWidgetItem(QString::fromStdString(name), m_compareList);
        item->setData(Qt::UserRole, QStringLiteral("builtin:") + QString::fromStdString(name));
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(QString::fromStdString(name).startsWith(QLatin1String("heads-")) ? Qt::Checked : Qt::Unchecked);
    }
    auto* addFolder = new QPushButton(tr("Add folder…"), comparePanel);
    auto* compare = new QPushButton(tr("Compare"), comparePanel);
    side->addWidget(new QLabel(tr("Models"), comparePanel));
    side->addWidget(m_compareList, 1);
    side->addWidget(addFolder);
    side->addWidget(compare);
    m_comparison = new widgets::ComparisonView(comparePanel);
    m_comparison->setObjectName(QStringLiteral("comparison"));
    cl->addLayout(side);
    cl->addWidget(m_comparison, 1);
    auto* compareDock = addDock(tr("Compare Models"), QStringLiteral("compareDock"), comparePanel, Qt::BottomDockWidgetArea);
    m_secondaryDocks << compareDock;
    connect(addFolder, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder to compare"));
        if (dir.isEmpty())
            return;
        auto* item = new QListWidgetItem(QFileInfo(dir).fileName(), m_compareList);
        item->setData(Qt::UserRole, dir);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    });
    connect(compare, &QPushButton::clicked, this, [this] {
        QStringList specs;
        for (int i = 0; i < m_compareList->count(); ++i)
            if (m_compareList->item(i)->checkState() == Qt::Checked)
                specs << m_compareList->item(i)->data(Qt::UserRole).toString();
        compareModels(specs);
    });
    connect(m_compute, &ComputeController::comparisonReady, m_comparison, &widgets::ComparisonView::setData);
    connect(m_compute, &ComputeController::comparisonFailed, this, [this](const QString& msg) {
        m_comparison->setData(nullptr);
        m_status->setText(tr("Comparison failed: %1").arg(msg)); // not modal: the other views stay usable
    });

    // Display options
    auto* viewPanel = new QWidget(this);
    auto* vf = new QFormLayout(viewPanel);
    m_colourMap = new QComboBox(viewPanel);
    m_colourMap->addItems(widgets::colourMapNames().mid(0, 4)); // the diverging map is for raw scores
    m_normalisation = new QComboBox(viewPanel);
    m_normalisation->addItems({tr("0 .. 1"), tr("0 .. grid maximum"), tr("log scale")});
    m_values = new QCheckBox(tr("Values in cells"), viewPanel);
    m_values->setChecked(true);
    m_highlight = new QCheckBox(tr("Highlight top"), viewPanel);
    m_highlight->setChecked(true);
    m_highlight->setToolTip(tr("Outline, in each row, the keys with the top share of attention (the paper's Fig. 6)"));
    m_topPercent = new QDoubleSpinBox(viewPanel);
    m_topPercent->setRange(1, 100);
    m_topPercent->setDecimals(0);
    m_topPercent->setValue(20);
    m_topPercent->setSuffix(tr(" %"));
    auto* resetZoom = new QPushButton(tr("Reset zoom"), viewPanel);
    m_termPanel = new QWidget(viewPanel);
    auto* termRow = new QHBoxLayout(m_termPanel);
    termRow->setContentsMargins(0, 0, 0, 0);
    const char* termNames[4] = {"(a) q·k", "(b) q·R", "(c) u·k", "(d) v·R"};
    const char* termTips[4] = {"content: query against key", "content-dependent position: query against relative position",
                               "global content bias u against key", "global position bias v against relative position"};
    for (int t = 0; t < 4; ++t) {
        m_termBox[t] = new QCheckBox(QString::fromUtf8(termNames[t]), m_termPanel);
        m_termBox[t]->setChecked(true);
        m_termBox[t]->setToolTip(tr("Term %1 of Transformer-XL's score (paper Sec. 3.3)").arg(QString::fromUtf8(termTips[t])));
        termRow->addWidget(m_termBox[t]);
        connect(m_termBox[t], &QCheckBox::toggled, this, [this] {
            setTerms({m_termBox[0]->isChecked(), m_termBox[1]->isChecked(), m_termBox[2]->isChecked(),
                      m_termBox[3]->isChecked(), m_rawScores->isChecked()});
        });
    }
    m_rawScores = new QCheckBox(tr("Raw scores (before softmax)"), viewPanel);
    connect(m_rawScores, &QCheckBox::toggled, this, [this](bool raw) {
        setTerms({m_termBox[0]->isChecked(), m_termBox[1]->isChecked(), m_termBox[2]->isChecked(),
                  m_termBox[3]->isChecked(), raw});
    });
    vf->addRow(tr("Terms"), m_termPanel);
    vf->addRow(m_rawScores);
    vf->addRow(tr("Colours"), m_colourMap);
    vf->addRow(tr("Scale"), m_normalisation);
    vf->addRow(m_values);
    auto* hl = new QHBoxLayout;
    hl->addWidget(m_highlight);
    hl->addWidget(m_topPercent);
    vf->addRow(hl);
    vf->addRow(resetZoom);
    m_secondaryDocks << addDock(tr("Display"), QStringLiteral("displayDock"), viewPanel, Qt::LeftDockWidgetArea);
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

    // Model
    auto* modelPanel = new QWidget(this);
    m_modelForm = new QFormLayout(modelPanel);
    m_secondaryDocks << addDock(tr("Model"), QStringLiteral("modelDock"), modelPanel, Qt::RightDockWidgetArea);
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model…"), this, [this] {
        const QString path = QFileDialog::getExistingDirectory(this, tr("Open model folder (config.json + model.safetensors)"));
        if (!path.isEmpty())
            openModel(path);
    });
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    rebuildRecentMenu();
    QMenu* builtins = file->addMenu(tr("&Built-in Models"));
    for (const auto& name : core::listBuiltinModels(m_builtinDirs)) {
        const QString spec = QStringLiteral("builtin:") + QString::fromStdString(name);
        builtins->addAction(QString::fromStdString(name), this, [this, spec] { openModel(spec); });
    }
    if (builtins->isEmpty())
        builtins->addAction(tr("(none installed)"))->setEnabled(false);
    file->addSeparator();
    file->addAction(tr("Open &Session…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), QString(), tr("attnscope sessions (*.attnscope)"));
        if (path.isEmpty())
            return;
        const QString err = openSession(path);
        if (!err.isEmpty())
            QMessageBox::warning(this, tr("Could not open session"), err);
    });
    file->addAction(tr("Save Sessio&n…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save session"), QStringLiteral("session.attnscope"),
                                                          tr("attnscope sessions (*.attnscope)"));
        if (path.isEmpty())
            return;
        const QString err = saveSession(path);
        reportSave(this, err, tr("Could not save session"), tr("Saved session %1").arg(path));
    });
    file->addSeparator();
    QAction* exportFig = file->addAction(tr("Export &Figure…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export figure"), QStringLiteral("attention.png"),
                                                          tr("PNG image (*.png);;SVG vector image (*.svg);;PDF (*.pdf)"));
        if (path.isEmpty())
            return;
        double scale = 1.0;
        if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) == 0) {
            bool ok = false;
            const QStringList choices{tr("1x (screen, 96 dpi)"), tr("2x (print, 192 dpi)"), tr("3x (poster, 288 dpi)")};
            const QString c = QInputDialog::getItem(this, tr("PNG resolution"), tr("Resolution"), choices, 1, false, &ok);
            if (!ok)
                return;
            scale = choices.indexOf(c) + 1;
        }
        const QString err = exportFigureTo(path, scale);
        reportSave(this, err, tr("Export failed"), tr("Saved %1").arg(path));
    });
    exportFig->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
    file->addAction(tr("Export &Data…"), this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export data"), QStringLiteral("attention.csv"),
                                                          tr("CSV table (*.csv);;NumPy array (*.npy);;JSON with tokens (*.json)"));
        if (path.isEmpty())
            return;
        const QString err = exportDataTo(path);
        reportSave(this, err, tr("Export failed"), tr("Saved %1").arg(path));
    });
    file->addAction(tr("Export &All Heads…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for one figure per head"));
        if (dir.isEmpty())
            return;
        const QString err = exportAllHeadsTo(dir);
        reportSave(this, err, tr("Export failed"), tr("Saved every head of layer %1 to %2").arg(m_selection.layer + 1).arg(dir));
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (QDockWidget* d : findChildren<QDockWidget*>())
        view->addAction(d->toggleViewAction());
    view->addSeparator();
    view->addAction(tr("&Reset Layout"), this, [this] {
        restoreState(m_defaultState);
        for (QDockWidget* d : findChildren<QDockWidget*>())
            d->show();
    });
    QAction* present = view->addAction(tr("&Presentation Mode"));
    present->setCheckable(true);
    present->setShortcut(QKeySequence(Qt::Key_F11));
    connect(present, &QAction::toggled, this, &MainWindow::setPresentation);

    QMenu* analysis = menuBar()->addMenu(tr("&Analysis"));
    analysis->addAction(tr("&Scan Corpus…"), this, &MainWindow::scanDialog)->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
    analysis->addAction(tr("&Open Scan Result…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open scan result"), QString(),
                                                          tr("Scan results (*.safetensors)"));
        if (path.isEmpty())
            return;
        try {
            auto r = std::make_shared<core::ScanResult>(core::ScanResult::load(path.toStdString()));
            m_relpos->setScan(r, false);
            m_relpos->showCorpus();
            m_status->setText(tr("Opened scan %1 (%2 tokens)").arg(path).arg(r->tokens));
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Could not open scan"), QString::fromStdString(e.what()));
        }
    });
    analysis->addAction(tr("Sa&ve Scan Result…"), this, [this] {
        if (!m_relpos->scan()) {
            QMessageBox::information(this, tr("Save scan"), tr("There is no corpus scan to save yet."));
            return;
        }
        const QString path = QFileDialog::getSaveFileName(this, tr("Save scan result"), QStringLiteral("scan.safetensors"),
                                                          tr("Scan results (*.safetensors)"));
        if (path.isEmpty())
            return;
        try {
            m_relpos->scan()->save(path.toStdString());
            m_status->setText(tr("Saved %1").arg(path));
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Could not save scan"), QString::fromStdString(e.what()));
        }
    });
    QMenu* paper = menuBar()->addMenu(tr("&Paper Figures"));
    paper->addAction(tr("Fig. &5: every head by relative distance"), this, [this] { showPaperFigure(5); });
    paper->addAction(tr("Fig. &6: the widest head's memory attention"), this, [this] { showPaperFigure(6); });
    paper->addAction(tr("Fig. &7: terms (a), (b), (d) alone"), this, [this] { showPaperFigure(7); });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
        QMessageBox::information(this, tr("Keyboard shortcuts"),
                                 tr("Left / Right: previous / next head\nUp / Down: previous / next layer\n"
                                    "A: average of the layer's heads\n(in the text box use Alt+arrows)\n\n"
                                    "Click a cell: lock its row\nCtrl-click a head thumbnail: average several heads\n"
                                    "Mouse wheel / drag: zoom / pan the grid\n\nF11: presentation mode\n"
                                    "Ctrl+Shift+E: export figure\nCtrl+O: open model"));
    });
    help->addAction(tr("&About attnscope"), this, [this] {
        QMessageBox::about(this, tr("About attnscope"),
                           tr("<h3>attnscope %1</h3><p>Look inside transformer attention: token grids, every head "
                              "at a glance, and the Transformer-XL paper's attention figures.</p>"
                              "<p>The built-in models are trained on WikiText-2 (Merity et al. 2016, "
                              "CC BY-SA 3.0); the sample text is an excerpt of its validation set.</p>")
                               .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::setTerms(const core::TermSelection& terms)
{
    if (!terms.any()) {
        m_status->setText(tr("Select at least one term"));
        return;
    }
    m_selection.terms = terms;
    const bool boxes[4] = {terms.a, terms.b, terms.c, terms.d};
    for (int t = 0; t < 4; ++t) {
        const QSignalBlocker block(m_termBox[t]);
        m_termBox[t]->setChecked(boxes[t]);
    }
    {
        const QSignalBlocker block(m_rawScores);
        m_rawScores->setChecked(terms.raw);
    }
    refreshGrid();
    m_relpos->setTerms(terms);
}

QString MainWindow::saveSession(const QString& path)
{
    if (!m_compute->model())
        return tr("Open a model before saving a session.");
    QJsonObject o;
    o[QStringLiteral("format")] = QStringLiteral("attnscope-session/1");
    o[QStringLiteral("model")] = m_compute->model()->spec;
    o[QStringLiteral("text")] = m_text->toPlainText();
    QJsonObject sel;
    sel[QStringLiteral("layer")] = m_selection.layer;
    QJsonArray heads;
    for (int h : m_selection.heads)
        heads.append(h);
    sel[QStringLiteral("heads")] = heads;
    sel[QStringLiteral("segment")] = m_selection.segment;
    sel[QStringLiteral("topFraction")] = m_selection.topFraction;
    sel[QStringLiteral("revealRows")] = m_selection.revealRows;
    sel[QStringLiteral("terms")] = QJsonObject{{"a", m_selection.terms.a}, {"b", m_selection.terms.b},
                                               {"c", m_selection.terms.c}, {"d", m_selection.terms.d},
                                               {"raw", m_selection.terms.raw}};
    o[QStringLiteral("selection")] = sel;
    o[QStringLiteral("view")] = QJsonObject{{"colourMap", m_colourMap->currentText()},
                                            {"normalisation", m_normalisation->currentIndex()},
                                            {"values", m_values->isChecked()},
                                            {"highlight", m_highlight->isChecked()}};
    if (m_relpos->scan()) {
        // The scan travels as a scan-result file next to the session.
        const QString scanPath = path + QStringLiteral(".scan.safetensors");
        try {
            m_relpos->scan()->save(scanPath.toStdString());
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
        o[QStringLiteral("scan")] = QFileInfo(scanPath).fileName();
    }
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return tr("%1: cannot write (%2)").arg(path, f.errorString());
    f.write(QJsonDocument(o).toJson());
    return {};
}

QString MainWindow::openSession(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return tr("%1: cannot read (%2)").arg(path, f.errorString());
    QJsonParseError err{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    if (doc.isNull() || !doc.isObject())
        return tr("%1: not a session file (%2)").arg(path, err.errorString());
    const QJsonObject o = doc.object();
    if (o.value(QStringLiteral("format")).toString() != QLatin1String("attnscope-session/1"))
        return tr("%1: not an attnscope session (format is not attnscope-session/1)").arg(path);
    if (o.contains(QStringLiteral("scan"))) {
        const QString scanPath = QFileInfo(path).dir().filePath(o.value(QStringLiteral("scan")).toString());
        try {
            m_relpos->setScan(std::make_shared<core::ScanResult>(core::ScanResult::load(scanPath.toStdString())), false);
        } catch (const std::exception& e) {
            return QString::fromStdString(e.what());
        }
    }
    m_pendingSession = o;
    {
        const QSignalBlocker block(m_text); // the run starts when the model is loaded
        m_text->setPlainText(o.value(QStringLiteral("text")).toString());
    }
    openModel(o.value(QStringLiteral("model")).toString());
    return {};
}

void MainWindow::compareModels(const QStringList& specs)
{
    if (specs.isEmpty()) {
        m_status->setText(tr("Tick the models to compare"));
        return;
    }
    showDock("compareDock");
    m_compute->compareModels(specs, m_text->toPlainText(), m_selection.layer);
}

void MainWindow::setRevealRows(int rows)
{
    m_selection.revealRows = rows;
    m_stepLabel->setText(rows < 0 ? QString() : tr("token %1").arg(rows));
    refreshGrid();
}

void MainWindow::scanDialog()
{
    const auto& m = m_compute->model();
    if (!m) {
        QMessageBox::information(this, tr("Scan corpus"), tr("Open a model first."));
        return;
    }
    QDialog dlg(this);
    dlg.setWindowTitle(tr("Scan corpus"));
    auto* form = new QFormLayout(&dlg);
    auto* sample = new QRadioButton(tr("Built-in sample text"), &dlg);
    auto* fromFile = new QRadioButton(tr("Text file:"), &dlg);
    auto* path = new QLineEdit(&dlg);
    auto* browse = new QPushButton(tr("Browse…"), &dlg);
    sample->setChecked(true);
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(fromFile);
    fileRow->addWidget(path, 1);
    fileRow->addWidget(browse);
    connect(browse, &QPushButton::clicked, &dlg, [&] {
        const QString f = QFileDialog::getOpenFileName(&dlg, tr("Text to scan"));
        if (!f.isEmpty()) {
            path->setText(f);
            fromFile->setChecked(true);
        }
    });
    const bool relative = m->info().hasRelativeTerms;
    auto* mem = new QSpinBox(&dlg);
    mem->setRange(relative ? 1 : 0, 100000);
    mem->setValue(std::max(relative ? 1 : 0, m->info().defaultMemLen));
    mem->setEnabled(relative);
    auto* seg = new QSpinBox(&dlg);
    seg->setRange(1, m->info().maxSegmentLen);
    seg->setValue(std::min(m->info().defaultSegmentLen, m->info().maxSegmentLen));
    auto* maxTok = new QSpinBox(&dlg);
    maxTok->setRange(0, 2000000000);
    maxTok->setSpecialValueText(tr("all"));
    auto* terms = new QCheckBox(tr("Also the profiles of terms (a), (b), (c), (d) alone"), &dlg);
    terms->setChecked(relative);
    terms->setEnabled(relative);
    if (!relative)
        terms->setToolTip(tr("Only relative-attention models (Transformer-XL) have score terms"));
    form->addRow(sample);
    form->addRow(fileRow);
    form->addRow(tr("Memory length"), mem);
    form->addRow(tr("Segment length"), seg);
    form->addRow(tr("At most tokens"), maxTok);
    form->addRow(terms);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Scan"));
    connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    form->addRow(buttons);
    if (dlg.exec() != QDialog::Accepted)
        return;
    startScan(fromFile->isChecked() ? path->text() : QString(), mem->value(), seg->value(),
              maxTok->value() > 0 ? maxTok->value() : -1, terms->isChecked());
}

void MainWindow::startScan(const QString& textFile, int memLen, int segmentLen, qint64 maxTokens, bool terms)
{
    QString text;
    if (textFile.isEmpty()) {
        for (const auto& d : m_builtinDirs) {
            QFile f(QDir(QString::fromStdString(d)).filePath(QStringLiteral("sample.txt")));
            if (f.open(QIODevice::ReadOnly)) {
                text = QString::fromUtf8(f.readAll());
                break;
            }
        }
        if (text.isEmpty())
            text = m_text->toPlainText();
    }
    m_scanClock.start();
    m_relpos->setScan(nullptr, true);
    m_relpos->showCorpus();
    showDock("relposDock");
    m_compute->scanCorpus(textFile, text, memLen, segmentLen, maxTokens, terms ? QStringLiteral("a,b,c,d") : QString());
}

void MainWindow::showPaperFigure(int figure)
{
    showDock("relposDock");
    if (figure == 5) {
        m_relpos->setProfiles({"full"});
    } else if (figure == 7) {
        if (!m_compute->model() || !m_compute->model()->info().hasRelativeTerms) {
            QMessageBox::information(this, tr("Fig. 7"), tr("Fig. 7 needs a model with relative score terms (Transformer-XL)."));
            return;
        }
        m_relpos->setProfiles({"term_a", "term_b", "term_d"});
    } else if (figure == 6) {
        // The three widest heads (by the current profile's ranking), each as the memory grid of the shown
        // segment with the top 20% of every row outlined: one window, one figure to export.
        const auto& r = m_relpos->currentResult();
        if (!r || !m_result) {
            m_status->setText(tr("Fig. 6 needs a text and a relative-position profile"));
            return;
        }
        const auto s = core::summariseHeads(*r, "full");
        const auto order = core::rankByWidth(s);
        auto* dlg = new QDialog(this);
        dlg->setAttribute(Qt::WA_DeleteOnClose);
        dlg->setWindowTitle(tr("Fig. 6: the three widest heads"));
        auto* layout = new QVBoxLayout(dlg);
        auto* row = new QHBoxLayout;
        auto plots = std::make_shared<std::vector<QCustomPlot*>>();
        for (std::size_t i = 0; i < std::min<std::size_t>(3, order.size()); ++i) {
            ViewSelection sel = m_selection;
            sel.layer = s[order[i]].layer;
            sel.heads = {s[order[i]].head};
            sel.terms = core::TermSelection{};
            sel.topFraction = 0.2;
            auto grid = std::make_shared<widgets::GridData>(*buildGrid(*m_result->capture, m_compute->model()->displayName, sel));
            grid->title = tr("L%1 H%2 · widest #%3").arg(sel.layer + 1).arg(sel.heads[0] + 1).arg(i + 1);
            auto* v = new widgets::AttentionGridView(dlg);
            v->setShowValues(false);
            v->setData(grid);
            row->addWidget(v);
            plots->push_back(v->plot());
        }
        layout->addLayout(row, 1);
        auto* exportButton = new QPushButton(tr("Export Figure…"), dlg);
        layout->addWidget(exportButton, 0, Qt::AlignRight);
        connect(exportButton, &QPushButton::clicked, dlg, [this, dlg, plots] {
            const QString path = QFileDialog::getSaveFileName(dlg, tr("Export Fig. 6"), QStringLiteral("fig6.pdf"),
                                                              tr("PDF (*.pdf);;SVG vector image (*.svg);;PNG image (*.png)"));
            if (path.isEmpty())
                return;
            const QString err = exportComposite(*plots, path, {plots->front()->width() * static_cast<int>(plots->size()),
                                                               plots->front()->height(), 2.0});
            reportSave(dlg, err, tr("Export failed"), tr("Saved %1").arg(path));
        });
        dlg->resize(1400, 650);
        dlg->show();
    }
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentModels")).toStringList();
    for (const QString& spec : recent)
        m_recentMenu->addAction(spec, this, [this, spec] { openModel(spec); });
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("(empty)"))->setEnabled(false);
}

void MainWindow::rememberRecent(const QString& spec)
{
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentModels")).toStringList();
    recent.removeAll(spec);
    recent.prepend(spec);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings.setValue(QStringLiteral("recentModels"), recent);
    rebuildRecentMenu();
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
        m_modelForm->addRow(k, l);
    };
    add(tr("Name"), m->displayName);
    add(tr("Family"), QString::fromUtf8(core::familyName(i.family)));
    add(tr("Layers × heads"), tr("%1 × %2").arg(i.layers).arg(i.heads));
    add(tr("Model width"), tr("%1 (head size %2)").arg(i.dModel).arg(i.dHead));
    add(tr("Memory length"), i.defaultMemLen > 0 ? QString::number(i.defaultMemLen) : tr("none"));
    add(tr("Segment length"), QString::number(i.defaultSegmentLen));
    add(tr("Parameters"), QLocale().toString(static_cast<qlonglong>(i.parameterCount)));
    add(tr("Tokenizer"), QString::fromStdString(m->tokenizer->kind()));
    add(tr("Folder"), QString::fromStdString(m->loaded.folder));
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
    m_headSpin->setEnabled(m_selection.heads.size() <= 1);
    m_overview->setSelection(m_selection.layer, m_selection.heads);
    m_updatingSelectors = false;
}

void MainWindow::refreshGrid()
{
    if (!m_result || !m_compute->model())
        return;
    try {
        m_gridData = buildGrid(*m_result->capture, m_compute->model()->displayName, m_selection);
        m_grid->setData(m_gridData);
        m_textView->setData(m_gridData);
        m_status->setText(m_gridData->title);
    } catch (const std::exception& e) {
        m_status->setText(QString::fromStdString(e.what()));
    }
}

void MainWindow::highlightTokens(int hoveredPosition)
{
    // Token boundaries as alternating shades; the hovered token (from any view) in yellow.
    QList<QTextEdit::ExtraSelection> sels;
    if (m_result && m_result->capture->text == m_text->toPlainText().toStdString()) {
        const auto& c = *m_result->capture;
        const auto map = utf8ToQStringIndex(m_text->toPlainText());
        const int limit = 5000; // shading a huge text would cost more than it shows
        for (int t = 0; t < static_cast<int>(c.tokens.size()) && t < limit; ++t) {
            const auto& tok = c.tokens[static_cast<std::size_t>(t)];
            if (tok.end >= map.size())
                break;
            QTextEdit::ExtraSelection s;
            s.cursor = QTextCursor(m_text->document());
            s.cursor.setPosition(map[tok.begin]);
            s.cursor.setPosition(map[tok.end], QTextCursor::KeepAnchor);
            s.format.setBackground(t == hoveredPosition ? QColor(255, 214, 0) : (t % 2 ? QColor(226, 236, 250) : QColor(250, 236, 220)));
            sels << s;
        }
    }
    m_text->setExtraSelections(sels);
}

void MainWindow::setSelection(int layer, const std::vector<int>& heads)
{
    m_selection.layer = layer;
    m_selection.heads = heads;
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
    setSelection(m_selection.layer, {((cur + delta) % H + H) % H});
}

void MainWindow::nextLayer(int delta)
{
    const auto& m = m_compute->model();
    if (!m)
        return;
    const int L = m->info().layers;
    setSelection(((m_selection.layer + delta) % L + L) % L, m_selection.heads);
}

void MainWindow::toggleAverage()
{
    setSelection(m_selection.layer, m_selection.heads.empty() ? std::vector<int>{0} : std::vector<int>{});
}

QString MainWindow::exportFigureTo(const QString& path, double scale)
{
    if (!m_gridData)
        return tr("There is no figure to export yet.");
    return exportFigure(m_grid->plot(), path, FigureSize{0, 0, scale});
}

void MainWindow::reportSave(QWidget* parent, const QString& err, const QString& failTitle, const QString& done)
{
    if (!err.isEmpty())
        QMessageBox::warning(parent, failTitle, err);
    else
        m_status->setText(done);
}

QString MainWindow::exportDataTo(const QString& path)
{
    if (!m_gridData)
        return tr("There is no data to export yet.");
    return exportGridData(*m_gridData, path);
}

QString MainWindow::exportAllHeadsTo(const QString& folder, const QString& extension)
{
    if (!m_result || !m_compute->model())
        return tr("There is nothing to export yet.");
    widgets::AttentionGridView view; // off screen, same settings as the visible grid
    view.setColourMap(m_grid->colourMap());
    view.setNormalisation(m_grid->normalisation());
    view.setShowValues(m_grid->showValues());
    view.setShowHighlight(m_grid->showHighlight());
    view.resize(m_grid->size());
    ViewSelection sel = m_selection;
    for (int h = 0; h < m_compute->model()->info().heads; ++h) {
        sel.heads = {h};
        view.setData(buildGrid(*m_result->capture, m_compute->model()->displayName, sel));
        const QString path = QDir(folder).filePath(
            QStringLiteral("%1_layer%2_head%3.%4").arg(m_compute->model()->displayName).arg(sel.layer + 1).arg(h + 1).arg(extension));
        const QString err = exportFigure(view.plot(), path, FigureSize{m_grid->width(), m_grid->height(), 1.0});
        if (!err.isEmpty())
            return err;
    }
    return {};
}

void MainWindow::setPresentation(bool on)
{
    if (on == m_presentation)
        return;
    m_presentation = on;
    if (on) {
        m_statePresentation = saveState();
        for (QDockWidget* d : m_secondaryDocks)
            d->hide();
        QFont f = QApplication::font();
        f.setPointSizeF(f.pointSizeF() * 1.5);
        QApplication::setFont(f);
    } else {
        QFont f = QApplication::font();
        f.setPointSizeF(f.pointSizeF() / 1.5);
        QApplication::setFont(f);
        restoreState(m_statePresentation);
    }
    m_grid->setPresentation(on);
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

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const auto urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.front().isLocalFile())
        openModel(urls.front().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_presentation)
        setPresentation(false);
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    QMainWindow::closeEvent(event);
}

} // namespace attnscope::app
