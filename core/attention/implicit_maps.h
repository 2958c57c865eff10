// The exact token-to-token maps of the mixers that are not softmax attention (attention/mixer.h). Each such layer is
// linear in its values, so per head there is one matrix M with output_i = sum_j M[i, j] value_j exactly; it is
// computed here from the rows a forward pass (or a capture) kept, a row at a time, as grids are: never stored for every
// layer of a long text.
#pragma once

#include "attention/attention_scores.h"

#include <cstddef>

namespace attnscope::core {

// Row i of head `head`'s map over keys [0, in.klen): the visible span's entries, `masked` outside it. in.mixer must not
// be Mixer::Softmax (attention_scores.h computes those).
void implicitMapRow(const ScoreInputs& in, int head, int i, float* out, float masked);

} // namespace attnscope::core
