// TextBox: soft breaks in long lines, and the wrap mode following the longest word, both decided before any text is
// laid out.
#include "ui/text_box.h"

#include <QKeyEvent>
#include <QMimeData>
#include <QTextBlock>
#include <QTextDocument>
#include <algorithm>

namespace attnscope::app {

namespace {
// A block with this property continues the line of the block before it (no line break between them in text()).
constexpr int kSoftBreak = QTextFormat::UserProperty + 1;

bool isSoft(const QTextBlock& b)
{
    return b.isValid() && b.blockFormat().boolProperty(kSoftBreak);
}

// Where the piece of `line` that starts at `start` ends: after the last space in its second half (words stay whole,
// so a double-click selects a word and a token's shading never spans a break), else at kPiece characters.
int pieceEnd(const QString& line, int start)
{
    const int end = start + TextBox::kPiece;
    for (int i = end - 1; i >= start + TextBox::kPiece / 2; --i)
        if (line[i].isSpace())
            return i + 1;
    return line[end - 1].isHighSurrogate() ? end - 1 : end;
}

bool hasLongLine(const QString& text)
{
    qsizetype lineStart = 0;
    for (qsizetype i = 0; i <= text.size(); ++i)
        if (i == text.size() || text[i] == QLatin1Char('\n')) {
            if (i - lineStart > TextBox::kLongLine)
                return true;
            lineStart = i + 1;
        }
    return false;
}
} // namespace

TextBox::TextBox(QWidget* parent)
    : QPlainTextEdit(parent)
{
    // Typing or deleting may make or remove a long word: re-decide (a linear scan, about 1 ms per MB).
    connect(document(), &QTextDocument::contentsChanged, this, [this] { wrapFor(longestWord(toPlainText())); });
}

int TextBox::longestWord(const QString& text)
{
    int best = 0, run = 0;
    for (const QChar c : text) {
        run = c.isSpace() ? 0 : run + 1;
        best = std::max(best, run);
    }
    return best;
}

void TextBox::wrapFor(int longest)
{
    const auto mode = longest > kLongWord ? QTextOption::WrapAnywhere : QTextOption::WrapAtWordBoundaryOrAnywhere;
    if (wordWrapMode() != mode)
        setWordWrapMode(mode);
}

void TextBox::setText(const QString& text)
{
    wrapFor(longestWord(text));
    if (!hasLongLine(text)) {
        setPlainText(text);
        return;
    }
    // A new text starts a new undo history, as setPlainText does.
    document()->setUndoRedoEnabled(false);
    setPlainText(QString());
    QTextCursor cursor(document());
    cursor.beginEditBlock();
    insertWithSoftBreaks(cursor, text);
    cursor.endEditBlock();
    document()->setUndoRedoEnabled(true);
    moveCursor(QTextCursor::Start);
}

void TextBox::replaceText(const QString& text)
{
    wrapFor(longestWord(text));
    QTextCursor cursor(document());
    cursor.beginEditBlock();
    cursor.select(QTextCursor::Document);
    cursor.removeSelectedText();
    insertWithSoftBreaks(cursor, text);
    cursor.endEditBlock();
    moveCursor(QTextCursor::End);
}

void TextBox::insertWithSoftBreaks(QTextCursor& cursor, const QString& textIn)
{
    QString text = textIn;
    text.replace(QStringLiteral("\r\n"), QStringLiteral("\n")).replace(QLatin1Char('\r'), QLatin1Char('\n'));
    QTextBlockFormat hard = cursor.blockFormat();
    hard.clearProperty(kSoftBreak); // (insertBlock would otherwise copy a soft block's format into a real line)
    QTextBlockFormat soft = hard;
    soft.setProperty(kSoftBreak, true);
    const QStringList lines = text.split(QLatin1Char('\n'));
    for (qsizetype l = 0; l < lines.size(); ++l) {
        const QString& line = lines[l];
        if (l > 0)
            cursor.insertBlock(hard);
        int start = 0;
        if (line.size() > kLongLine)
            while (line.size() - start > kPiece) {
                const int end = pieceEnd(line, start);
                cursor.insertText(line.mid(start, end - start));
                cursor.insertBlock(soft);
                start = end;
            }
        cursor.insertText(line.mid(start));
    }
}

QString TextBox::text() const
{
    QString out;
    out.reserve(document()->characterCount());
    for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
        if (b != document()->begin() && !isSoft(b))
            out += QLatin1Char('\n');
        out += b.text();
    }
    return out;
}

void TextBox::indexBlocks() const
{
    if (m_indexedRevision == document()->revision() && !m_blockStarts.empty())
        return;
    m_blockStarts.clear();
    int index = 0;
    for (QTextBlock b = document()->begin(); b.isValid(); b = b.next()) {
        if (b != document()->begin() && !isSoft(b))
            ++index; // the line break
        m_blockStarts.emplace_back(index, b.position());
        index += b.length() - 1;
    }
    m_indexedRevision = document()->revision();
}

int TextBox::documentPosition(int index) const
{
    indexBlocks();
    auto it = std::upper_bound(m_blockStarts.begin(), m_blockStarts.end(), index,
                               [](int i, const std::pair<int, int>& start) { return i < start.first; });
    if (it == m_blockStarts.begin())
        return index;
    --it;
    return it->second + (index - it->first);
}

QString TextBox::textBetween(int from, int to) const
{
    QString out;
    for (QTextBlock b = document()->findBlock(from); b.isValid() && b.position() < to; b = b.next()) {
        const int begin = std::max(from, b.position());
        const int end = std::min(to, b.position() + b.length() - 1); // (the block's separator excluded)
        out += b.text().mid(begin - b.position(), std::max(0, end - begin));
        const int separator = b.position() + b.length() - 1;
        if (separator >= from && separator < to && b.next().isValid() && !isSoft(b.next()))
            out += QLatin1Char('\n');
    }
    return out;
}

QMimeData* TextBox::createMimeDataFromSelection() const
{
    auto* mime = new QMimeData;
    const QTextCursor c = textCursor();
    mime->setText(textBetween(c.selectionStart(), c.selectionEnd()));
    return mime;
}

void TextBox::insertFromMimeData(const QMimeData* source)
{
    if (!source || !source->hasText() || isReadOnly())
        return;
    const QString text = source->text();
    wrapFor(std::max(longestWord(toPlainText()), longestWord(text)));
    QTextCursor cursor = textCursor();
    cursor.beginEditBlock();
    cursor.removeSelectedText();
    insertWithSoftBreaks(cursor, text);
    cursor.endEditBlock();
    setTextCursor(cursor);
    ensureCursorVisible();
}

void TextBox::keyPressEvent(QKeyEvent* event)
{
    QTextCursor c = textCursor();
    const bool plain = (event->modifiers() & ~(Qt::ShiftModifier | Qt::KeypadModifier)) == Qt::NoModifier;
    if (isReadOnly() || !plain) {
        QPlainTextEdit::keyPressEvent(event);
        return;
    }
    if ((event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) && !(event->modifiers() & Qt::ShiftModifier)) {
        c.beginEditBlock();
        c.removeSelectedText();
        QTextBlockFormat line = c.blockFormat();
        line.clearProperty(kSoftBreak); // a real line break, even inside a soft-broken line
        c.insertBlock(line);
        c.endEditBlock();
    } else if (event->key() == Qt::Key_Backspace && !c.hasSelection() && c.atBlockStart() && isSoft(c.block())) {
        // The character before the soft break goes, not the break (past any piece edits have emptied).
        while (c.atBlockStart() && isSoft(c.block()))
            c.movePosition(QTextCursor::PreviousCharacter);
        c.deletePreviousChar();
    } else if (event->key() == Qt::Key_Delete && !c.hasSelection() && c.atBlockEnd() && isSoft(c.block().next())) {
        while (c.atBlockEnd() && isSoft(c.block().next()))
            c.movePosition(QTextCursor::NextCharacter);
        c.deleteChar();
    } else {
        QPlainTextEdit::keyPressEvent(event);
        return;
    }
    setTextCursor(c);
    ensureCursorVisible();
}

} // namespace attnscope::app
