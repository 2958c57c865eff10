// The text box of the Text dock: a plain text editor whose line wrapping stays fast for any text. Qt wraps a line at
// word boundaries by scanning to the end of the word for every line it lays out, so one 1 MB word took 24 s to show
// and as long after each typed character; a text holding a word longer than a line wraps anywhere instead (the long
// word breaks where it would anyway; ordinary words may break mid-word while it is there).
#pragma once

#include <QPlainTextEdit>

namespace attnscope::app {

class TextBox : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit TextBox(QWidget* parent = nullptr);

    // Replaces the text, choosing the wrapping before Qt lays it out (setPlainText lays out at once).
    void setText(const QString& text);
    // Words longer than this many characters make the box wrap anywhere.
    static constexpr int kLongWord = 1000;
    static int longestWord(const QString& text);

protected:
    void insertFromMimeData(const QMimeData* source) override; // paste and drop: choose the wrapping first

private:
    void wrapFor(int longestWord);
};

} // namespace attnscope::app
