// Converts a text capture + selection into the token grid's drawing data (labels, title, values). Pure functions
// of their inputs: they run on the compute threads.
#pragma once

#include "grid_data.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "views/view_selection.h"

#include <QString>
#include <functional>

namespace attnscope::app {

// The segment shown when the user has not chosen one: the last, or the one before a short last tail. From the
// tokens and the segment length, so a partial capture (CaptureOptions::layerDone) names the same segment.
int autoSegment(const core::TextCapture& capture);
// Human title: "txl-wikitext2 · layer 1 · head 8" (1-based numbers, as people say them).
QString selectionTitle(const QString& modelName, const ViewSelection& s, const core::ModelInfo& info);
// Which attention a person is looking at: "layer 3" for a model of one stream; "decoder layer 2 cross-attention"
// where there are several (with `streams`, and its streams: "(target × source)"); with `average`, the mean of every
// site of its kind.
QString siteTitle(const core::ModelInfo& info, int site, bool average = false, bool streams = true);
// "terms a+b", "frequency bands high+low", or empty for the full score.
QString componentsLabel(const core::ModelInfo& info, const ViewSelection& s, bool withRaw);
// Throws core::Error for an out-of-range selection.
// `stop` and `headsDone` as for core::attentionGrid (an average over many heads of a long text takes a while).
// `writer` spells what the last row of a stream the model writes (a decoder's target) would write next.
widgets::GridDataPtr buildGrid(const core::TextCapture& capture, const QString& modelName, const ViewSelection& s,
                               const core::StopToken* stop = nullptr,
                               const std::function<void(int, int)>& headsDone = {},
                               const core::Tokenizer* writer = nullptr);
// Display text of a token for axis labels (newlines and tabs made visible).
QString tokenLabel(const core::Token& t);

} // namespace attnscope::app
