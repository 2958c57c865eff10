// TextBox: the wrap mode follows the longest word, decided before any text is laid out.
#include "ui/text_box.h"

#include <QMimeData>
#include <QTextDocument>
#include <algorithm>

namespace attnscope::app {

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
    setPlainText(text);
}

void TextBox::insertFromMimeData(const QMimeData* source)
{
    if (source && source->hasText())
        wrapFor(std::max(longestWord(toPlainText()), longestWord(source->text())));
    QPlainTextEdit::insertFromMimeData(source);
}

} // namespace attnscope::app
