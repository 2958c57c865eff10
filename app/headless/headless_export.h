// `attnscope --export FILE`: draws a figure without a window (the token grid of one head, or a paper figure over a
// scanned text) and writes it. Returns the process exit code; errors are printed once, naming the file and problem.
#pragma once

#include <QCommandLineParser>
#include <string>
#include <vector>

namespace attnscope::app {

// Options understood: model, text, text-file, layer, head, segment-length, paper-figure, mem-len, max-tokens,
// export, width, height, scale.
int runHeadlessExport(const QCommandLineParser& options, const std::vector<std::string>& builtinDirs);

// The built-in sample paragraph (or a short fallback sentence).
QString builtinSampleText(const std::vector<std::string>& builtinDirs);

} // namespace attnscope::app
