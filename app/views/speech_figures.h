// A speech model's word timings as a figure: OpenAI's alignment matrix over the recording's frames with the DTW path
// outlined and the words with their times in the title, and every decoder head ranked by how well it aligns.
#pragma once

#include "analysis/word_timing.h"
#include "data/paper_figure.h"
#include "tokenize/tokenizer.h"

#include <vector>

namespace attnscope::app {

// Grid 0: rows = <|notimestamps|> and the text tokens, columns = the recording's encoder positions (times), values =
// the standardised, filtered mean of the alignment heads (signed), the path's cells outlined. Grid 1: rows = every
// decoder head best first ("D2 H3", a star for the chosen alignment heads), columns = its frame error against the
// chosen heads' path, path score, monotonicity and sharpness; each column coloured by its rank among the heads.
PaperFigure wordTimingFigure(const core::SpeechAlignment& timing, const std::vector<core::HeadAlignmentScore>& ranking,
                             const std::vector<core::DecoderHead>& chosen, const core::TranscriptRun& run,
                             const core::Tokenizer& tokenizer, const QString& modelName);

} // namespace attnscope::app
