// TextPanel: text box with token shading; stepping buttons use the style's media icons (font glyphs like ⏸ are
// missing from common fonts and showed as boxes).
#include "ui/text_panel.h"
#include "ui/text_box.h"

#include <QCheckBox>
#include <algorithm>
#include <cmath>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStyle>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QToolButton>
#include <QVBoxLayout>

namespace attnscope::app {

namespace {
// Character index in a QString for each byte offset of its UTF-8 form (token spans are UTF-8 bytes).
std::vector<int> utf8ToQStringIndex(const QString& s)
{
    std::vector<int> map;
    map.reserve(static_cast<std::size_t>(s.size()) * 2 + 1);
    for (int i = 0; i < s.size(); ++i) {
        const char32_t u = s.at(i).unicode();
        int bytes = u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
        if (s.at(i).isHighSurrogate() && i + 1 < s.size()) {
            for (int b = 0; b < 4; ++b)
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

// Lines are counted up to here: the count only sizes the box, and a 1 MB text must not be walked on each key.
constexpr int kMaxCountedLines = 12;

// Wrapped lines of `edit`'s text, up to `cap`, laid out at the box's width in its wrap mode (the document's own layout
// is lazy and lags behind while the dock is hidden or being resized); only the first `cap` lines' worth of each block
// is laid out, so a 1 MB text costs what a short one does.
int textLines(const QPlainTextEdit* edit, int cap)
{
    const QFontMetrics fm(edit->font());
    const double width = std::max(50.0, edit->viewport()->width() - 2 * edit->document()->documentMargin());
    const int charsPerLine = static_cast<int>(width / std::max(1, fm.averageCharWidth())) + 1;
    QTextOption option;
    option.setWrapMode(edit->wordWrapMode());
    int lines = 0;
    for (QTextBlock b = edit->document()->begin(); b.isValid() && lines < cap; b = b.next()) {
        QTextLayout layout(b.text().left(charsPerLine * 2 * cap), edit->font());
        layout.setTextOption(option);
        layout.beginLayout();
        int blockLines = 0;
        for (QTextLine line = layout.createLine(); line.isValid() && lines + blockLines < cap; line = layout.createLine()) {
            line.setLineWidth(width);
            ++blockLines;
        }
        layout.endLayout();
        lines += std::max(1, blockLines);
    }
    return std::min(lines, cap);
}
} // namespace

void TextPanel::reserveStepLabel()
{
    // Room for the stepping state from the start: the buttons must not move under the mouse when it appears.
    m_stepLabel->setMinimumWidth(m_stepLabel->fontMetrics().horizontalAdvance(tr("token %1 of %2").arg(9999).arg(9999)));
}

void TextPanel::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::FontChange) // presentation mode's larger font
        reserveStepLabel();
    QWidget::changeEvent(event);
}

int TextPanel::contentHeight(int maxLines) const
{
    const int lines = std::clamp(textLines(m_text, std::min(maxLines, kMaxCountedLines)), 2, maxLines);
    const int box = lines * m_text->fontMetrics().lineSpacing() +
                    2 * (m_text->frameWidth() + static_cast<int>(std::ceil(m_text->document()->documentMargin()))) + 2;
    const QMargins m = layout()->contentsMargins();
    const int spacing = layout()->spacing();
    // The controls' row at the panel's width (its word-wrapped token line is taller in its narrow size hint).
    QLayoutItem* row = layout()->itemAt(0);
    const int rowWidth = std::max(200, width() - m.left() - m.right());
    const int rowHeight = row->hasHeightForWidth() ? row->heightForWidth(rowWidth) : row->sizeHint().height();
    int h = m.top() + m.bottom() + rowHeight + spacing + box;
    if (!m_pairRow->isHidden())
        h += spacing + m_pairRow->sizeHint().height();
    return h;
}

TextPanel::TextPanel(QWidget* parent)
    : QWidget(parent)
    , m_text(new TextBox(this))
    , m_pairRow(new QWidget(this))
    , m_second(new QLineEdit(this))
    , m_live(new QCheckBox(tr("Live"), this))
    , m_tokenInfo(new QLabel(this))
    , m_stepLabel(new QLabel(this))
    , m_playButton(new QToolButton(this))
{
    m_text->setObjectName(QStringLiteral("textEdit"));
    m_live->setChecked(true);
    m_live->setToolTip(tr("Recompute the attention while you type"));
    auto* run = new QPushButton(tr("Run"), this);
    run->setToolTip(tr("Compute the attention of the text now"));
    m_tokenInfo->setObjectName(QStringLiteral("tokenInfo"));
    m_playButton->setObjectName(QStringLiteral("playButton"));
    m_tokenInfo->setWordWrap(true);
    m_tokenInfo->setMinimumWidth(60);

    auto* row = new QHBoxLayout;
    row->addWidget(m_live);
    row->addWidget(run);
    row->addWidget(m_tokenInfo, 1);
    // Token-by-token stepping for class: the grid grows one query row at a time.
    auto button = [this, row](QStyle::StandardPixmap icon, const QString& tip) {
        auto* b = new QToolButton(this);
        b->setIcon(style()->standardIcon(icon));
        b->setToolTip(tip);
        b->setAutoRaise(false);
        row->addWidget(b);
        return b;
    };
    auto* first = button(QStyle::SP_MediaSkipBackward, tr("Start stepping: show the first token only"));
    auto* back = button(QStyle::SP_MediaSeekBackward, tr("One token back"));
    row->addWidget(m_playButton);
    auto* fwd = button(QStyle::SP_MediaSeekForward, tr("One token forward"));
    auto* all = button(QStyle::SP_MediaSkipForward, tr("Show every token"));
    m_playButton->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    setPlayingLook(false);
    row->addWidget(m_stepLabel);
    reserveStepLabel();

    // The controls first: in a short dock (presentation mode) they stay in view and the text box scrolls.
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(row);
    layout->addWidget(m_text, 1);
    // Sentence B of a pair: [CLS] A [SEP] B [SEP]; hidden for models that read one text.
    auto* pair = new QHBoxLayout(m_pairRow);
    pair->setContentsMargins(0, 0, 0, 0);
    auto* pairLabel = new QLabel(tr("Sentence B:"), m_pairRow);
    pairLabel->setToolTip(tr("A second text read with the first as a pair: [CLS] A [SEP] B [SEP]"));
    m_second->setObjectName(QStringLiteral("secondText"));
    m_second->setPlaceholderText(tr("optional: a second sentence, read with the text above as a pair"));
    m_second->setClearButtonEnabled(true);
    pair->addWidget(pairLabel);
    pair->addWidget(m_second, 1);
    layout->addWidget(m_pairRow);
    m_pairRow->hide();
    connect(m_second, &QLineEdit::textChanged, this, [this] {
        if (m_live->isChecked())
            m_debounce.start();
    });
    connect(m_second, &QLineEdit::returnPressed, this, [this] {
        m_debounce.stop();
        emit runRequested();
    });
    m_text->setMinimumHeight(m_text->fontMetrics().lineSpacing() * 2 + 12);

    m_text->viewport()->installEventFilter(this); // double-click masks a word (encoders)

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(120);
    connect(&m_debounce, &QTimer::timeout, this, &TextPanel::runRequested);
    // After the box has laid out the edit, so wrapped lines are counted as shown.
    connect(m_text->document(), &QTextDocument::contentsChanged, this, [this] {
        QTimer::singleShot(0, this, &TextPanel::recountLines);
    });
    connect(m_text, &QPlainTextEdit::textChanged, this, [this] {
        m_generatedFrom = std::string::npos; // the user's text now
        emit edited();
        if (m_live->isChecked())
            m_debounce.start();
    });
    connect(run, &QPushButton::clicked, this, [this] {
        m_debounce.stop();
        emit runRequested();
    });
    connect(first, &QToolButton::clicked, this, [this] { emit revealRequested(1); });
    connect(back, &QToolButton::clicked, this, [this] { step(-1); });
    connect(fwd, &QToolButton::clicked, this, [this] { step(+1); });
    connect(all, &QToolButton::clicked, this, [this] {
        stopPlaying();
        emit revealRequested(-1);
    });
    m_play.setInterval(700);
    connect(&m_play, &QTimer::timeout, this, [this] { step(+1); });
    connect(m_playButton, &QToolButton::clicked, this, [this] {
        if (m_play.isActive()) {
            stopPlaying();
            return;
        }
        if (m_revealed < 0)
            emit revealRequested(1); // playing starts from the first token
        m_play.start();
        setPlayingLook(true);
    });
}

void TextPanel::setPlayingLook(bool playing)
{
    m_playButton->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    m_playButton->setText(playing ? tr("Pause") : tr("Play"));
    m_playButton->setToolTip(playing ? tr("Pause the stepping") : tr("Reveal the segment one token at a time"));
}

void TextPanel::stopPlaying()
{
    m_play.stop();
    setPlayingLook(false);
}

QString TextPanel::text() const
{
    return m_text->text();
}

void TextPanel::recountLines()
{
    const int lines = textLines(m_text, kMaxCountedLines);
    if (lines != m_lines) {
        m_lines = lines;
        emit contentLinesChanged();
    }
}

bool TextPanel::eventFilter(QObject* watched, QEvent* event)
{
    // A narrower box wraps into more lines (the window fitted to the screen, a dock dragged): recount.
    if (watched == m_text->viewport() && event->type() == QEvent::Resize)
        QTimer::singleShot(0, this, &TextPanel::recountLines);
    if (watched == m_text->viewport() && event->type() == QEvent::MouseButtonDblClick && !m_maskToken.isEmpty()) {
        QTextCursor cursor = m_text->cursorForPosition(static_cast<QMouseEvent*>(event)->position().toPoint());
        cursor.select(QTextCursor::WordUnderCursor);
        if (!cursor.selectedText().trimmed().isEmpty()) {
            cursor.insertText(m_maskToken); // one undo step: Ctrl+Z brings the word back
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void TextPanel::appendGenerated(const QString& text)
{
    if (m_generatedFrom == std::string::npos)
        m_generatedFrom = m_text->text().toStdString().size();
    // An edit at the end, not a new text: the box keeps its undo history (a cut for regeneration can be undone).
    const QSignalBlocker block(m_text);
    QTextCursor cursor(m_text->document());
    cursor.movePosition(QTextCursor::End);
    // A step of its own in the undo history: one Ctrl+Z takes back the last generated token, never the typed prompt
    // the document would otherwise merge it with.
    cursor.beginEditBlock();
    cursor.insertText(text);
    cursor.endEditBlock();
    m_text->moveCursor(QTextCursor::End);
}

void TextPanel::cutAfter(std::size_t byteOffset)
{
    const QByteArray utf8 = m_text->text().toUtf8();
    const qsizetype chars = QString::fromUtf8(utf8.left(static_cast<qsizetype>(std::min<std::size_t>(byteOffset, utf8.size())))).size();
    if (m_generatedFrom == std::string::npos || m_generatedFrom > byteOffset)
        m_generatedFrom = std::string::npos; // the next generated token marks the start again
    const QSignalBlocker block(m_text);
    QTextCursor cursor(m_text->document());
    cursor.setPosition(m_text->documentPosition(static_cast<int>(chars)));
    cursor.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    cursor.removeSelectedText();
    m_text->moveCursor(QTextCursor::End);
}

void TextPanel::clearGenerated()
{
    m_generatedFrom = std::string::npos;
}

QString TextPanel::secondText() const
{
    return m_pairAvailable ? m_second->text() : QString();
}

void TextPanel::setPairAvailable(bool available)
{
    m_pairAvailable = available;
    showPairRow();
}

void TextPanel::showPairRow()
{
    // Presenting, an empty Sentence B box gives its row to the grid (a pair typed before stays in view).
    m_pairRow->setVisible(m_pairAvailable && (!m_presentation || !m_second->text().isEmpty()));
}

void TextPanel::setTextSilently(const QString& text)
{
    const QSignalBlocker block(m_text);
    m_text->setText(text);
}

void TextPanel::replaceTextUndoably(const QString& text)
{
    const QSignalBlocker block(m_text);
    m_text->replaceText(text);
}

void TextPanel::setTokenInfo(const QString& info)
{
    m_fullTokenInfo = info;
    m_tokenInfo->setToolTip(info);
    m_tokenInfo->setText(m_presentation ? info.section(QStringLiteral(" · "), 0, 0) : info);
}

void TextPanel::setPresentation(bool on)
{
    m_presentation = on;
    setTokenInfo(m_fullTokenInfo);
    showPairRow();
}

void TextPanel::setPlaceholder(const QString& text)
{
    m_text->setPlaceholderText(text);
}

void TextPanel::setStepping(int segmentRows, int revealed)
{
    m_segmentRows = segmentRows;
    m_revealed = revealed;
    m_stepLabel->setText(revealed < 0 ? QString() : tr("token %1 of %2").arg(revealed).arg(segmentRows));
}

void TextPanel::step(int delta)
{
    const int current = m_revealed < 0 ? (delta > 0 ? 0 : m_segmentRows) : m_revealed;
    const int next = current + delta;
    if (next > m_segmentRows) { // the end: playing stops there
        stopPlaying();
        return;
    }
    emit revealRequested(std::max(1, next));
}

void TextPanel::shadeTokens(const std::shared_ptr<const core::TextCapture>& capture, int hovered)
{
    // Token boundaries as alternating shades; the hovered token (from any view) in yellow.
    QList<QTextEdit::ExtraSelection> sels;
    const QString text = m_text->text();
    // A pair's capture holds A, a line break and B: the box shows A.
    const std::string shown = text.toStdString();
    const bool matches = capture && (capture->text == shown ||
                                     (capture->secondText >= 0 && capture->text.compare(0, shown.size() + 1, shown + "\n") == 0));
    if (matches) {
        const auto map = utf8ToQStringIndex(text);
        const int limit = 5000; // shading a huge text would cost more than it shows
        for (int t = 0; t < static_cast<int>(capture->tokens.size()) && t < limit; ++t) {
            const auto& tok = capture->tokens[static_cast<std::size_t>(t)];
            if (tok.end >= map.size())
                break; // past the box's text (a pair's B)
            QTextEdit::ExtraSelection s;
            s.cursor = QTextCursor(m_text->document());
            s.cursor.setPosition(m_text->documentPosition(map[tok.begin]));
            s.cursor.setPosition(m_text->documentPosition(map[tok.end]), QTextCursor::KeepAnchor);
            const bool generated = m_generatedFrom != std::string::npos && tok.begin >= m_generatedFrom;
            s.format.setBackground(t == hovered ? QColor(255, 214, 0)
                                   : generated  ? (t % 2 ? QColor(200, 240, 200) : QColor(170, 225, 170))
                                                : (t % 2 ? QColor(226, 236, 250) : QColor(250, 236, 220)));
            sels << s;
        }
    }
    m_text->setExtraSelections(sels);
}

} // namespace attnscope::app
