// The two rules every attention view shares: which keys a query sees (one contiguous span), and the softmax of a
// chosen combination of score terms over that span. The token grid, the thumbnails and the corpus scan use these
// and nothing else, so a grid cell and a scan profile can never disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace attnscope::core {

// Which score the grid shows: full attention, or the softmax over visible keys of the sum of chosen terms.
struct TermSelection {
    bool a = true, b = true, c = true, d = true;
    bool raw = false; // the chosen terms' sum before softmax (scores, not probabilities)
    // With raw: the scores before the model's soft cap (Gemma 2's cap * tanh(s / cap)); no effect without a cap.
    bool uncapped = false;
    // A delta rule's heuristic map (TransformerLens's approximation, without the erasure) in place of its exact map;
    // no effect on other kinds (mixer.h: MixerRow::heuristic).
    bool heuristic = false;
    bool isFull() const { return a && b && c && d; }
    // Every one of the first `count` terms (or bands) is on: the full score, whatever the rest say.
    bool covers(int count) const
    {
        const bool on[4] = {a, b, c, d};
        for (int t = 0; t < count && t < 4; ++t)
            if (!on[t])
                return false;
        return true;
    }
    bool any() const { return a || b || c || d; }
    std::string label() const; // "full", "a+b", "raw a+b+c+d", "none"
    bool operator==(const TermSelection&) const = default;
};

// The keys a query sees form one contiguous range [lo, lo + len) of the key axis (causal masking, and
// same_length / a sliding window cut the far end). len == 0: the query sees nothing.
struct VisibleSpan {
    int lo = 0;
    int len = 0;
};
// Reads the span from one row of a [queries, keys] mask (1 = masked). Throws Error(BadInput) if the visible keys
// are not contiguous (no model family here produces that).
VisibleSpan visibleSpan(const std::uint8_t* maskRow, int keys);

// out[t] = softmax over t in [0, len) of the sum of the selected terms at terms[k][t] (each pointing at the span's
// first key). With selection.raw the sum itself is written. Terms not selected may be null.
// Gemma 2's soft-capping, in place: x = cap tanh(x / cap). Scalar on purpose: every path that caps (the forward,
// a recomputed grid, a band sum) gives the same bits, whatever the data's alignment.
void softCapInPlace(float* x, std::ptrdiff_t n, float cap);

// `softCap` > 0: the sum is soft-capped (cap tanh(sum / cap)) before the softmax, as the model caps its scores.
void termSoftmax(const float* const terms[4], const TermSelection& selection, int len, float* out, float softCap = 0.0f);

// Softmax in place over n scores (max-subtracted). With `entropy`, also the entropy of the result in nats, from the
// scores the softmax already has (log Z - sum p_j (s_j - max)) instead of a logarithm per probability; the
// probabilities are the same bits either way. A finite `sink` (gpt-oss's learned per-head logit) joins the
// denominator with no value of its own: the n probabilities then sum to less than 1, the rest is the sink's share.
void softmaxInPlace(float* x, int n, float* entropy = nullptr, float sink = -std::numeric_limits<float>::infinity());

} // namespace attnscope::core
