// The one place attention scores and probabilities are computed from a layer's queries and keys. The forward passes
// of every family call it, and so do the grids a captured text recomputes on demand: a grid computed later is the
// same arithmetic, in the same row blocks, as what the model computed while it ran (the forward pass of a model
// without score terms stacks the query heads that share a key/value head into one product, which can round the
// last bit differently: the tests hold the two to 1e-6).
#pragma once

#include "attention/attention_math.h"
#include "attention/mixer.h"
#include "attention/rotary_bands.h"
#include "attention/row_pages.h"
#include "util/float_scratch.h"

#include <cstddef>
#include <span>
#include <vector>

namespace attnscope::core {

// A learned bias added to every score by head and signed offset (T5's relative-position buckets): score(n, i, j) +=
// table[n * width + center + j - (mlen + i)], where mlen + i is query i's position among the keys. The table covers
// every offset the layer's rows can have (the model builds it for the layer's shape).
struct PositionBias {
    const float* table = nullptr; // [heads, width]
    int width = 0;
    int center = 0;
    const std::int32_t* buckets = nullptr; // [width]: each offset's bucket (T5), for the reference's names; may be null
    float at(int head, int offset) const { return table[static_cast<std::ptrdiff_t>(head) * width + center + offset]; }
    // Adds head n's bias to query row i's scores over keys [lo, lo + len).
    void addToRow(int head, int i, int mlen, int lo, int len, float* row) const
    {
        const float* t = table + static_cast<std::ptrdiff_t>(head) * width + center - (mlen + i);
        for (int j = lo; j < lo + len; ++j)
            row[j] += t[j];
    }
};

// Where one layer's queries and keys are, as the forward pass used them (strided buffers) or a capture kept them
// (pages).
// Score of query i and key j in head n (key/value head g = n / (heads / kvHeads)):
//   dot-product models:  scale * q_i . k_j (+ a position bias)                    (rotary q and k already rotated)
//   Transformer-XL:      (a) s q_i.k_j + (b) s q_i.R_{dist} + (c) s u.k_j + (d) s v.R_{dist}, s = scale, dist = i + mlen - j
struct ScoreInputs {
    int qlen = 0, klen = 0, mlen = 0;
    int heads = 0, kvHeads = 0, headDim = 0;
    // Width of a head's value vectors when it is not headDim (DeepSeek's MLA: 128-wide values, 192-wide keys); 0: headDim.
    int valueDim = 0;
    int vDim() const { return valueDim > 0 ? valueDim : headDim; }
    float scale = 1.0f;
    // Gemma 2: scores soft-capped after scaling, cap * tanh(score / cap) (0 = none). Bands stay raw shares; a sum of
    // selected bands is capped like the full score.
    float softCap = 0.0f;
    RowSource queries; // [qlen, heads * headDim], not scaled
    RowSource keys;    // [klen, kvHeads * headDim]: memory / cached keys first
    // Transformer-XL only: projected relative encodings, row r = distance r (at least klen rows), and the learned
    // biases u (r_w_bias) and v (r_r_bias), [heads * headDim].
    RowSource relative;
    const float* u = nullptr;
    const float* v = nullptr;
    const VisibleSpan* spans = nullptr; // [qlen]: the keys each query sees
    // Rotary models: the frequency bands that stand in for terms (term t = band t), or null.
    const BandSplit* bands = nullptr;
    // T5: a learned bias by head and offset, added after scaling (null: none). It is part of the score (one term).
    const PositionBias* positionBias = nullptr;
    // gpt-oss: a learned logit per head [heads] in every softmax's denominator, with no value (null: none).
    const float* sinks = nullptr;
    float sinkOf(int head) const { return sinks ? sinks[head] : -std::numeric_limits<float>::infinity(); }
    // What mixes the tokens: softmax attention, or a kind whose grid is an implicit map (attention/implicit_maps.h),
    // computed from the same rows: queries and keys hold the map's two sides.
    Mixer mixer = Mixer::Softmax;
    // A short convolution: queries are C [qlen, channels], keys are B [klen, channels] (headDim 1, a channel per
    // head), and each channel's taps [heads, convWidth], oldest first: M[i, j] = C_i taps[width - 1 - (i - j)] B_j.
    const float* convTaps = nullptr;
    int convWidth = 0;
    // A gated delta rule: queries are qhat / sqrt(dk) per key head [qlen, kvHeads * headDim]; keys are khat per key
    // head, then each value head's write strength beta, then its log decay g (alpha = exp g): [klen, kvHeads * headDim
    // + 2 heads]. M[i, j] = beta_j khat_j . (prod_{t = j+1..i} alpha_t (I - beta_t khat_t khat_t^T)) q_i.
    // A Mamba-2 scan: queries are C per group [qlen, kvHeads * headDim] (a group per key head, the state's size as
    // headDim); keys are B per group, then each head's dt: [klen, kvHeads * headDim + heads]; stateDecay is A per head
    // (negative). M[i, j] = C_i . B_j exp(A sum_{t = j+1..i} dt_t) dt_j.
    const float* stateDecay = nullptr;
    // With `heuristicMap` the delta rule's map without its key removal (I - beta khat khat^T): the approximation
    // TransformerLens documents, shown beside the exact map, never instead of it.
    bool heuristicMap = false;
    // Row widths where they are not heads * headDim and kvHeads * headDim (0: those): an implicit map's own rows.
    int queryCols = 0, keyCols = 0;
    int queryWidth() const { return queryCols > 0 ? queryCols : heads * headDim; }
    int keyWidth() const { return keyCols > 0 ? keyCols : kvHeads * headDim; }

    // The shape of a layer's scores, scale 1/sqrt(headDim) as every family computes it (sources left empty).
    static ScoreInputs ofShape(int qlen, int klen, int mlen, int heads, int kvHeads, int headDim);
    bool relativeTerms() const { return static_cast<bool>(relative); }
    int keyHead(int head) const { return head / (heads / kvHeads); }
    // The score terms a selection can pick: Transformer-XL's four, a rotary model's bands, else one (the score).
    int termCount() const { return relativeTerms() ? 4 : bands ? bands->count() : 1; }
};

// One head's score terms for a block of query rows. Rows are computed in blocks of kBlockRows everywhere (aligned
// with the pages of a capture), so a row comes out of the same arithmetic wherever it is recomputed; keys are
// multiplied in their contiguous runs.
class HeadScores {
public:
    static constexpr int kBlockRows = RowPages::kPageRows;

    // `withTerms`: also the separate terms (a rotary model's bands, Transformer-XL's (a)-(d)), for rowTerm and
    // rowSum of a selection that is not every term. Transformer-XL's score is then the sum of its terms, else its
    // reference's two products (q + u).k + (q + v).R: the two agree to float rounding.
    HeadScores(const ScoreInputs& in, int head, bool withTerms = false);
    // Computes query rows [r0, r1).
    void compute(int r0, int r1);
    int head() const { return m_head; }
    // Row i's (r0 <= i < r1) full score over its visible span, into out[0, len).
    void rowScore(int i, float* out) const;
    // Row i's term t (0 .. termCount - 1) over its visible span: Transformer-XL's (a)..(d), a band's share of a
    // rotary score, or (a model without terms) the score.
    void rowTerm(int i, int t, float* out) const;
    // The score for a full selection; otherwise the sum of the selected terms, 0 + t1 + t2 ... in term order.
    void rowSum(int i, const TermSelection& selection, float* out) const;

private:
    const ScoreInputs& m_in;
    int m_head = 0;
    bool m_withTerms = false;     // a rotary model's bands
    bool m_relativeTerms = false; // Transformer-XL's four terms apart
    int m_r0 = 0, m_cols = 0;
    // Written whole by the products before they are read: scratch that is not zero-filled as it grows.
    FloatScratch m_dot; // [rows, cols]: the score; Transformer-XL by key: (a) + (c), or (a) with its terms apart
    FloatScratch m_rel; // [rows, cols]: Transformer-XL by distance: (b) + (d), or (b) with its terms apart
    FloatScratch m_c, m_d; // [klen]: Transformer-XL's (c) by key, (d) by distance, with its terms apart
    FloatScratch m_band[kMaxBands]; // [rows, cols]: each band's share of the score (rotary, with terms)
};

// Every row of one head: the softmax over each row's visible keys of the selected terms (their sum with
// selection.raw), in out[i * ld + j]; entries outside a row's span are set to `masked`.
void headAttention(const ScoreInputs& in, int head, const TermSelection& selection, float* out, std::ptrdiff_t ld,
                   float masked);
// The same for some rows only (ascending, distinct), out[k * ld + j] for rows[k]: thumbnails sample rows of long
// texts. Only the wanted rows are multiplied, so values may differ from headAttention's in the last bit.
void headAttentionRows(const ScoreInputs& in, int head, const TermSelection& selection, std::span<const int> rows,
                       float* out, std::ptrdiff_t ld, float masked);

// Takes each head's probabilities a block of query rows at a time, while attendAllHeads computes them (still in the
// cache): what an observer that only sums over rows needs, instead of a [heads, q, k] buffer per layer. Blocks start
// at multiples of HeadScores::kBlockRows and each comes once per layer; blocks of different heads, and of one head,
// may arrive at the same time on different threads.
class AttentionRowSink {
public:
    virtual ~AttentionRowSink() = default;
    // Rows [r0, r1) of head n: row i's probabilities at p + (i - r0) * stride, keys [0, in.klen) or fewer, the row's
    // visible span in.spans[i] (keys outside it are 0); entropy[i - r0] is its entropy (nats).
    virtual void onRows(const ScoreInputs& in, int head, int r0, int r1, const float* p, std::ptrdiff_t stride,
                        const float* entropy) = 0;
};

// What a forward pass may keep besides the output, each [heads, qlen, klen] with masked entries 0 (null: not wanted).
struct AttentionCapture {
    float* probabilities = nullptr;
    float* scores = nullptr;                                 // before softmax
    float* terms[4] = {nullptr, nullptr, nullptr, nullptr}; // term t (ScoreInputs::termCount)
    float* entropy = nullptr;                                // [heads, qlen]: each row's entropy (nats)
    AttentionRowSink* rows = nullptr;                        // gets the probabilities block by block
};

// The attention of every head: out[i, n*dv ..] = sum_j P_n[i][j] v_{g(n)}[j], where `values` holds the value rows
// [klen, kvHeads * dv] (Transformer-XL: heads * dv), dv = ScoreInputs::vDim(). Heads run in parallel; no [heads, q, k] buffer
// is needed unless `keep` asks for one.
void attendAllHeads(const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride, float* out,
                    std::ptrdiff_t outStride, const AttentionCapture& keep = {});

// Visible spans of a [qlen, klen] mask (1 = masked).
std::vector<VisibleSpan> spansOfMask(const std::uint8_t* mask, int qlen, int klen);

} // namespace attnscope::core
