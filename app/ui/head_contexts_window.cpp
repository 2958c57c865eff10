// HeadContextsWindow (head_contexts_window.h).
#include "ui/head_contexts_window.h"

#include "compute/compute_controller.h"
#include "colour_maps.h"
#include "head_scatter_view.h"
#include "ui/file_dialogs.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QImage>
#include <QPainter>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QSpinBox>
#include <QSplitter>
#include <QTextBrowser>
#include <QTextDocument>
#include <QVBoxLayout>

#include <cmath>

namespace attnscope::app {

namespace {
// The scatter's axes are core::headMetricColumns(), in its order.
double metricOf(const core::HeadCorpusMetrics& m, int which)
{
    return m.*core::headMetricColumns()[static_cast<std::size_t>(std::max(0, which))].value;
}
const char* const kStatistics[] = {"max-away", "output-norm", "prev-token", "induction"};

// A context's grid as a small picture: a square per shown token pair (rows the queries), Viridis scaled to the
// context's largest weight, the query's row marked at both edges.
QImage gridImage(const core::HeadContext& ctx)
{
    constexpr int cell = 6;
    const int n = static_cast<int>(ctx.tokens.size());
    float top = 1e-9f;
    for (float a : ctx.grid)
        top = std::max(top, a);
    QImage image((n + 2) * cell, n * cell, QImage::Format_RGB32);
    image.fill(Qt::white);
    QPainter p(&image);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            p.fillRect((j + 1) * cell, i * cell, cell, cell,
                       widgets::colourAt(widgets::ColourMap::Viridis, ctx.grid[static_cast<std::size_t>(i * n + j)] / top));
    const int query = static_cast<int>(ctx.position - ctx.firstToken);
    p.fillRect(0, query * cell, cell - 1, cell, QColor(230, 90, 0));
    p.fillRect((n + 1) * cell + 1, query * cell, cell - 1, cell, QColor(230, 90, 0));
    return image;
}
} // namespace

HeadContextsWindow::HeadContextsWindow(ComputeController* compute, QWidget* parent)
    : QWidget(parent, Qt::Window)
    , m_compute(compute)
    , m_corpusLabel(new QLabel(this))
    , m_statistic(new QComboBox(this))
    , m_x(new QComboBox(this))
    , m_y(new QComboBox(this))
    , m_colour(new QComboBox(this))
    , m_window(new QSpinBox(this))
    , m_ablationTokens(new QSpinBox(this))
    , m_run(new QPushButton(tr("Run"), this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
    , m_export(new QPushButton(tr("Export JSON…"), this))
    , m_status(new QLabel(this))
    , m_scatter(new widgets::HeadScatterView(this))
    , m_contexts(new QTextBrowser(this))
{
    setAttribute(Qt::WA_DeleteOnClose);
    setWindowTitle(tr("Heads over a Corpus — attnscope"));
    m_statistic->addItems({tr("largest weight away from the first token"), tr("output norm"), tr("previous-token weight"),
                           tr("induction weight")});
    for (auto* box : {m_x, m_y, m_colour})
        for (const auto& column : core::headMetricColumns())
            box->addItem(QString::fromUtf8(column.label));
    m_x->setCurrentIndex(1);
    m_y->setCurrentIndex(5);
    m_colour->setCurrentIndex(0);
    m_window->setRange(8, 4096);
    m_window->setValue(64);
    m_window->setSuffix(tr(" tokens"));
    m_window->setToolTip(tr("Each window of the corpus runs alone, from an empty state"));
    m_ablationTokens->setRange(0, 100000);
    m_ablationTokens->setSingleStep(64);
    m_ablationTokens->setValue(0);
    m_ablationTokens->setSpecialValueText(tr("off"));
    m_ablationTokens->setSuffix(tr(" tokens"));
    m_ablationTokens->setToolTip(tr("The ablation effect axis: the change of the next-token loss over the corpus's first "
                                    "tokens when each head's output is zeroed. One run per head: on a large model "
                                    "keep it to a few hundred tokens."));
    m_cancel->setEnabled(false);
    m_export->setEnabled(false);
    m_status->setWordWrap(true);
    m_contexts->setOpenLinks(false);
    setCorpusFile({});

    auto* chooseFile = new QPushButton(tr("Corpus File…"), this);
    auto* useText = new QPushButton(tr("Text on Screen"), this);
    auto* top = new QHBoxLayout;
    top->addWidget(m_corpusLabel, 1);
    top->addWidget(chooseFile);
    top->addWidget(useText);
    auto* second = new QHBoxLayout;
    second->addWidget(new QLabel(tr("Rank contexts by"), this));
    second->addWidget(m_statistic);
    second->addWidget(new QLabel(tr("Window"), this));
    second->addWidget(m_window);
    second->addWidget(new QLabel(tr("Ablation over"), this));
    second->addWidget(m_ablationTokens);
    second->addStretch(1);
    second->addWidget(m_run);
    second->addWidget(m_cancel);
    auto* axes = new QHBoxLayout;
    axes->addWidget(new QLabel(tr("x"), this));
    axes->addWidget(m_x, 1);
    axes->addWidget(new QLabel(tr("y"), this));
    axes->addWidget(m_y, 1);
    axes->addWidget(new QLabel(tr("colour"), this));
    axes->addWidget(m_colour, 1);
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addLayout(axes);
    leftLayout->addWidget(m_scatter, 1);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(m_contexts);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* bottom = new QHBoxLayout;
    bottom->addWidget(m_status, 1);
    bottom->addWidget(m_export);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addLayout(second);
    layout->addWidget(split, 1);
    layout->addLayout(bottom);

    connect(chooseFile, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Corpus file"), {}, tr("Text files (*.txt *.raw *.tokens);;All files (*)"));
        if (!path.isEmpty())
            setCorpusFile(path);
    });
    connect(useText, &QPushButton::clicked, this, [this] { setCorpusFile({}); });
    connect(m_run, &QPushButton::clicked, this, &HeadContextsWindow::run);
    connect(m_cancel, &QPushButton::clicked, compute, [compute] { compute->cancel(JobKind::HeadContexts); });
    for (auto* box : {m_x, m_y, m_colour})
        connect(box, &QComboBox::currentIndexChanged, this, &HeadContextsWindow::redrawScatter);
    connect(m_scatter, &widgets::HeadScatterView::pointClicked, this, &HeadContextsWindow::showHead);
    connect(m_contexts, &QTextBrowser::anchorClicked, this, [this](const QUrl&) {
        if (m_result && m_head >= 0)
            emit headWanted(m_head / m_result->contexts.heads, m_head % m_result->contexts.heads);
    });
    connect(compute, &ComputeController::headContextsReady, this, &HeadContextsWindow::showResult);
    connect(compute, &ComputeController::jobProgress, this, [this](JobKind kind, const QString&, qint64 done, qint64 total) {
        if (kind == JobKind::HeadContexts && m_cancel->isEnabled())
            m_status->setText(tr("Step %1 of %2 (the windows twice, then one run per head for the ablation)…").arg(done).arg(total));
    });
    connect(compute, &ComputeController::jobFailed, this, [this](const JobFailure& f) {
        if (f.kind != JobKind::HeadContexts)
            return;
        m_run->setEnabled(true);
        m_cancel->setEnabled(false);
        m_status->setText(f.cancelled() ? tr("Cancelled.") : f.message);
    });
    connect(m_export, &QPushButton::clicked, this, [this] {
        if (!m_result)
            return;
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the head-context JSON files"));
        if (dir.isEmpty())
            return;
        try {
            const auto files = core::writeHeadContexts(m_result->contexts, m_result->model->displayName.toStdString(), dir.toStdString());
            m_status->setText(tr("Wrote %1 files to %2 (index.json, scatter.json, heads/).").arg(files.size()).arg(dir));
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(e.what()));
        }
    });
    m_contexts->setHtml(tr("<p>Each point of the scatter is a head. Click one to read its contexts: the queries where "
                           "its statistic is highest, and samples from every tenth of its range, each token shaded by "
                           "how much the head's query (underlined) attends to it.</p>"));
    const QRect avail = (parent && parent->screen() ? parent->screen() : QGuiApplication::primaryScreen())->availableGeometry();
    resize(std::min(1200, avail.width() - 40), std::min(760, avail.height() - 60));
}

void HeadContextsWindow::setCorpusFile(const QString& path)
{
    m_corpus = path;
    m_corpusLabel->setText(path.isEmpty() ? tr("Corpus: the text on screen")
                                          : tr("Corpus: %1").arg(QFileInfo(path).fileName()));
}

void HeadContextsWindow::run()
{
    if (!m_compute->model()) {
        m_status->setText(tr("Open a model first."));
        return;
    }
    HeadContextsRequest r;
    r.corpusPath = m_corpus;
    r.text = m_text;
    r.options.statistic = core::contextStatisticNamed(kStatistics[std::max(0, m_statistic->currentIndex())]);
    r.options.window = std::min(m_window->value(), m_compute->model()->info().maxSegmentLen);
    r.options.ablationTokens = m_ablationTokens->value();
    m_run->setEnabled(false);
    m_cancel->setEnabled(true);
    m_status->setText(tr("Reading every head over the corpus…"));
    m_compute->requestHeadContexts(r);
}

void HeadContextsWindow::showResult(const HeadContextsResultPtr& result)
{
    m_result = result;
    m_run->setEnabled(true);
    m_cancel->setEnabled(false);
    m_export->setEnabled(true);
    m_status->setText(tr("%1 tokens in windows of %2: %3 heads%4. Click a point.")
                          .arg(result->contexts.tokens)
                          .arg(result->request.options.window)
                          .arg(result->contexts.layers * result->contexts.heads)
                          .arg(result->contexts.ablationTokens > 0
                                   ? tr(", each ablated over the first %1 tokens").arg(result->contexts.ablationTokens)
                                   : QString()));
    redrawScatter();
    showHead(m_head >= 0 && m_head < result->contexts.layers * result->contexts.heads ? m_head : 0);
}

void HeadContextsWindow::redrawScatter()
{
    if (!m_result)
        return;
    const auto& c = m_result->contexts;
    auto d = std::make_shared<widgets::HeadScatterData>();
    d->xName = m_x->currentText();
    d->yName = m_y->currentText();
    d->colourName = m_colour->currentText();
    d->title = tr("%1 · %2 heads · %3 tokens").arg(m_result->model->displayName).arg(c.layers * c.heads).arg(c.tokens);
    for (int l = 0; l < c.layers; ++l)
        for (int h = 0; h < c.heads; ++h) {
            const auto& m = c.metrics[static_cast<std::size_t>(l) * c.heads + h];
            d->x.push_back(metricOf(m, m_x->currentIndex()));
            d->y.push_back(metricOf(m, m_y->currentIndex()));
            d->colour.push_back(metricOf(m, m_colour->currentIndex()));
            d->labels << tr("L%1 H%2").arg(l + 1).arg(h + 1);
        }
    m_scatter->setData(d);
    m_scatter->setSelected(m_head);
    // An axis on a metric the pass did not measure (the ablation effect without "Ablation over") has no points: say why.
    for (auto* box : {m_x, m_y, m_colour})
        if (c.ablationTokens == 0 && core::headMetricColumns()[static_cast<std::size_t>(std::max(0, box->currentIndex()))].value ==
                                         &core::HeadCorpusMetrics::ablationEffect) {
            m_status->setText(tr("The ablation effect was not measured: set \"Ablation over\" to a number of tokens and run again."));
            break;
        }
}

void HeadContextsWindow::showHead(int index)
{
    if (!m_result || index < 0)
        return;
    const auto& c = m_result->contexts;
    m_head = index;
    m_scatter->setSelected(index);
    const int layer = index / c.heads, head = index % c.heads;
    QString html = tr("<h3>Layer %1 · head %2</h3><p><a href=\"head\">Show this head in the grid</a></p>"
                      "<p style=\"color:#666\">Under each context, the head's grid over its tokens: a row per token as "
                      "query, its keys left to right; the query's row marked in orange.</p>")
                       .arg(layer + 1)
                       .arg(head + 1);
    int shown = 0;
    for (const auto& ctx : c.contexts[static_cast<std::size_t>(index)]) {
        // Where the context comes from (among the highest values, or a decile) and its value, named: "top · 1"
        // read as a rank.
        html += QStringLiteral("<p style=\"margin:4px 0\"><span style=\"color:#666\">%1 · %2 = %3</span><br>")
                    .arg(ctx.decile < 0 ? tr("among the highest") : tr("decile %1 of 10").arg(ctx.decile + 1))
                    .arg(QString::fromLatin1(core::contextStatisticName(c.statistic)))
                    .arg(ctx.value, 0, 'g', 3);
        float top = 1e-9f;
        for (float a : ctx.attention)
            top = std::max(top, a);
        const int query = static_cast<int>(ctx.position - ctx.firstToken);
        for (int t = 0; t < static_cast<int>(ctx.tokens.size()); ++t) {
            const QString word = QString::fromStdString(ctx.tokens[static_cast<std::size_t>(t)]).toHtmlEscaped();
            const double a = t < static_cast<int>(ctx.attention.size()) ? ctx.attention[static_cast<std::size_t>(t)] / top : 0.0;
            QString style = QStringLiteral("background-color: rgba(230, 90, 0, %1);").arg(std::clamp(a, 0.0, 1.0) * 0.85, 0, 'f', 2);
            if (t == query)
                style += QStringLiteral("text-decoration: underline; font-weight: bold;");
            if (t > query)
                style += QStringLiteral("color: #999;");
            html += QStringLiteral("<span style=\"%1\">%2</span> ").arg(style, word);
        }
        html += QStringLiteral("</p>");
        if (!ctx.grid.empty()) {
            const QUrl name(QStringLiteral("grid:%1").arg(shown));
            m_contexts->document()->addResource(QTextDocument::ImageResource, name, gridImage(ctx));
            html += QStringLiteral("<p style=\"margin:2px 0 8px 0\"><img src=\"%1\"></p>").arg(name.toString());
        }
        ++shown;
    }
    m_contexts->setHtml(html);
}

} // namespace attnscope::app
