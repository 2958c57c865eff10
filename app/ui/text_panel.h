// The Text dock: the text box (token boundaries shaded, the hovered token lit), a second box for sentence B of a pair
// (encoders), Live / Run, the token count, and the stepping controls that reveal a segment one token at a time in
// class. Emits intent; owns no model state.
#pragma once

#include "run/text_capture.h"
#include "ui/text_box.h"

#include <QTimer>
#include <QWidget>
#include <memory>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QToolButton;

namespace attnscope::app {

class TextPanel : public QWidget {
    Q_OBJECT
public:
    explicit TextPanel(QWidget* parent = nullptr);

    QPlainTextEdit* editor() const { return m_text; }
    QString text() const;
    // Text B of a sentence pair (encoders): empty when the box is hidden or blank.
    QString secondText() const;
    // Shows the second box for models that read sentence pairs (encoders); hides and ignores it otherwise.
    void setPairAvailable(bool available);
    // Double-clicking a word replaces it by this token ("[MASK]"); empty: double-click selects as usual.
    void setMaskToken(const QString& token) { m_maskToken = token; }
    // Generation: appends text (without a run of its own) and shades what was generated from here on in another
    // colour; -1 clears the mark. Typing in the box clears it too.
    void appendGenerated(const QString& text);
    void clearGenerated();
    // Regeneration: removes the text after UTF-8 byte `byteOffset` as one undoable edit (Ctrl+Z brings it back),
    // without a run of its own; what is generated next is shaded from there.
    void cutAfter(std::size_t byteOffset);
    // Replaces the text without starting a run (the caller decides when to run).
    void setTextSilently(const QString& text);
    // The same as one undoable edit: Ctrl+Z in the box brings the replaced text back.
    void replaceTextUndoably(const QString& text);
    void setTokenInfo(const QString& info);
    // Presentation mode: the token line says the count only (the memory figures stay in its tooltip), one line tall.
    void setPresentation(bool on);
    void setPlaceholder(const QString& text);
    // Shades token boundaries of `capture` when it was computed from the text now in the box; `hovered` (absolute
    // token position, -1 = none) is lit.
    void shadeTokens(const std::shared_ptr<const core::TextCapture>& capture, int hovered);
    // Stepping: how many query rows the shown segment has, and how many are revealed (-1 = all). Shows the state
    // next to the buttons; does not emit.
    void setStepping(int segmentRows, int revealed);
    bool playing() const { return m_play.isActive(); }
    // The panel's height that shows its controls and the text's lines (wrapped), at least two and at most
    // `maxLines` (the box scrolls beyond): the Text tab shrinks to its content instead of taking the grid's room.
    int contentHeight(int maxLines) const;
    void stopPlaying();

signals:
    void edited();                 // the user changed the text (not appendGenerated / setTextSilently)
    void runRequested();           // Run pressed, or the text changed with Live on (debounced)
    void revealRequested(int rows); // the stepping buttons (and Play's ticks): show the first `rows` queries, -1 = all
    void contentLinesChanged();     // the text now fills another number of lines (typing may want a taller box)

protected:
    void changeEvent(QEvent* event) override;

private:
    void reserveStepLabel();
    void showPairRow();
    void recountLines(); // emits contentLinesChanged when the text's wrapped line count changed
    void setPlayingLook(bool playing);
    void step(int delta); // one token forward or back from what is shown

    TextBox* m_text;
    QWidget* m_pairRow;
    bool m_pairAvailable = false; // the model reads sentence pairs (the row may still be hidden while presenting)
    QLineEdit* m_second;
    QCheckBox* m_live;
    QLabel* m_tokenInfo;
    QLabel* m_stepLabel;
    QToolButton* m_playButton;
    QTimer m_debounce;
    QTimer m_play;
    bool eventFilter(QObject* watched, QEvent* event) override;
    QString m_maskToken;
    std::size_t m_generatedFrom = std::string::npos; // UTF-8 byte offset where generated text starts
    int m_segmentRows = 0;
    int m_revealed = -1;
    int m_lines = 0; // wrapped lines the text filled at the last edit (up to kMaxCountedLines)
    QString m_fullTokenInfo;
    bool m_presentation = false;
};

} // namespace attnscope::app
