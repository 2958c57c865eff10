// The text box of the Text dock: a plain text editor that stays fast for any text. Qt lays a paragraph out whole
// after every edit of it, so one 1 MB line (a text without line breaks) cost a quarter of a second per typed key
// here, and more at larger fonts. The box therefore shows a long line as paragraphs of about two thousand characters,
// split after a space: the breaks between them are soft (a block format property, kept by undo), and text() is the
// text without them. Enter makes a real line break, Backspace and Delete at a soft break delete the character beyond
// it, and copy and paste carry the text as typed.
// Qt also wraps a line at word boundaries by scanning to the end of the word for every line it lays out, so one
// 1 MB word took 24 s to show; a text holding a word longer than a line wraps anywhere instead.
#pragma once

#include <QPlainTextEdit>
#include <vector>

namespace attnscope::app {

class TextBox : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit TextBox(QWidget* parent = nullptr);

    // Replaces the text, choosing the wrapping and the soft breaks before Qt lays it out.
    void setText(const QString& text);
    // The same as one undoable edit (Ctrl+Z brings the old text back).
    void replaceText(const QString& text);
    // The text as typed: the paragraphs with the soft breaks left out.
    QString text() const;
    // Where character `index` of text() is in the document (soft breaks before it counted).
    int documentPosition(int index) const;

    // Words longer than this many characters make the box wrap anywhere.
    static constexpr int kLongWord = 1000;
    static int longestWord(const QString& text);
    // Lines longer than kLongLine are shown as paragraphs of at most kPiece characters.
    static constexpr int kLongLine = 4000;
    static constexpr int kPiece = 2000;

protected:
    void insertFromMimeData(const QMimeData* source) override; // paste and drop: soft breaks, and the wrapping first
    QMimeData* createMimeDataFromSelection() const override;   // copy: without the soft breaks
    void keyPressEvent(QKeyEvent* event) override;

private:
    void wrapFor(int longestWord);
    // Inserts `text` at `cursor` with its long lines split by soft breaks.
    static void insertWithSoftBreaks(QTextCursor& cursor, const QString& text);
    // text() of the document range [from, to).
    QString textBetween(int from, int to) const;
    void indexBlocks() const;

    // Per block: its first character's index in text() and its position in the document (rebuilt after edits).
    mutable std::vector<std::pair<int, int>> m_blockStarts;
    mutable int m_indexedRevision = -1;
};

} // namespace attnscope::app
