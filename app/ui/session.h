// Session files (*.attnscope, JSON): the model, the text, what is selected, how it is drawn, and the corpus scan
// (a scan-result file next to the session). One table of keys serves writing and reading, and every value read is
// type-checked here; values that depend on the model (layer, heads, segment) are checked when they are applied.
#pragma once

#include "data/results.h"
#include "ui/display_panel.h"
#include "views/view_selection.h"

#include <QString>
#include <QStringList>

namespace attnscope::app {

struct SessionState {
    QString model; // spec as opened: folder, .gguf or builtin:NAME
    QString text;
    ViewSelection selection;
    DisplaySettings display;
    QString scanFile; // file name of the scan result next to the session ("" = none)
    QString bandSplit; // rotary models: the wavelengths typed in the Display dock ("" = three equal bands)
    // Encoder-decoder models: the source, and a typed target ("" = the model writes it).
    QString source;
    QString target;
    // The Relative Position dock's row order (0 by layer, 1 widest first, 2 farthest-looking first) and log scale.
    int relposOrder = 0;
    bool relposLog = false;
    // The activation-patching window's prompts and settings (clean empty: no patching window).
    PatchingRequest patching;
};

// The extension sessions carry; added by saveSessionFile when the path has none.
QString sessionExtension(); // ".attnscope"
QString withSessionExtension(const QString& path);

// The session's selection made valid for the model it opened with: out-of-range site, heads or segment fall back to
// the defaults and each correction is described in `problems` (for the status bar).
ViewSelection validatedSelection(const SessionState& state, int sites, int heads, int segments, bool hasTerms,
                                 QStringList& problems);

// Writes atomically (temporary file, then rename). Returns "" or a message naming the file.
QString writeSessionFile(const QString& path, const SessionState& state);
// Reads and type-checks every key; returns "" (and fills `state`) or a message naming the file and the key.
QString readSessionFile(const QString& path, SessionState& state);

} // namespace attnscope::app
