// HeadScores and the drivers built on it. Products run on strided Eigen maps of the caller's buffers; a block of
// rows only multiplies the keys its rows can see (causal blocks stop at their last row's key).
#include "attention/attention_scores.h"

#include "attention/implicit_maps.h"

#include "util/error.h"
#include "util/stage_timer.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attnscope::core {

namespace {
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Strided = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
using Out = Eigen::Map<Matrix>;

// Rows [row0, row0 + rows) of a source, columns [col0, col0 + cols); the rows must be contiguous.
Strided block(const RowSource& src, int row0, int rows, int col0, int cols)
{
    return Strided(src.row(row0) + col0, rows, cols, Eigen::OuterStride<>(src.stride));
}

// out[j] = scale * (K_j . w) for j in [0, n): K's rows in their contiguous runs.
void rowsDot(const RowSource& K, int n, int col0, int d, const float* w, float scale, float* out)
{
    const Eigen::Map<const Eigen::VectorXf> wv(w, d);
    for (int j = 0; j < n;) {
        const int run = K.contiguousFrom(j, n - j);
        Eigen::Map<Eigen::VectorXf>(out + j, run).noalias() = (block(K, j, run, col0, d) * wv) * scale;
        j += run;
    }
}

// Zeroes row[0, lo) and row[lo + len, width): most rows have nothing before their span and a few future keys after
// it, and a call to memset per row, empty ones included, was 1.5% of a corpus scan.
inline void zeroOutside(float* row, int lo, int len, int width)
{
    if (lo > 0)
        std::fill(row, row + lo, 0.0f);
    if (lo + len < width)
        std::fill(row + lo + len, row + width, 0.0f);
}

// Where the entropies of head n's rows [r0, r0 + rows) go: into the kept [heads, qlen] buffer, else (a row sink wants
// them) into the thread's scratch, else nowhere (null).
float* blockEntropy(const AttentionCapture& keep, int n, int qlen, int r0, int rows)
{
    if (keep.entropy)
        return keep.entropy + static_cast<std::size_t>(n) * qlen + r0;
    if (!keep.rows)
        return nullptr;
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<std::size_t>(rows));
    return scratch.data();
}

// S[:, j] = Q K_j^T for keys j in [0, cols), K's rows in their contiguous runs.
template <typename Q>
void timesKeys(const Q& q, const RowSource& K, int cols, int col0, int d, Out& S)
{
    for (int j = 0; j < cols;) {
        const int run = K.contiguousFrom(j, cols - j);
        S.middleCols(j, run).noalias() = q * block(K, j, run, col0, d).transpose();
        j += run;
    }
}
} // namespace

ScoreInputs ScoreInputs::ofShape(int qlen, int klen, int mlen, int heads, int kvHeads, int headDim)
{
    ScoreInputs in;
    in.qlen = qlen;
    in.klen = klen;
    in.mlen = mlen;
    in.heads = heads;
    in.kvHeads = kvHeads;
    in.headDim = headDim;
    in.scale = 1.0f / std::sqrt(static_cast<float>(headDim));
    return in;
}

HeadScores::HeadScores(const ScoreInputs& in, int head, bool withTerms)
    : m_in(in)
    , m_head(head)
    , m_withTerms(withTerms && in.bands && !in.relativeTerms())
    , m_relativeTerms(withTerms && in.relativeTerms())
{
    if (m_relativeTerms) {
        // (c) and (d) do not depend on the query: once per head, over every key / distance.
        const int d = in.headDim;
        m_c.resize(static_cast<std::size_t>(in.klen));
        m_d.resize(static_cast<std::size_t>(in.klen));
        rowsDot(in.keys, in.klen, head * d, d, in.u + head * d, in.scale, m_c.data());
        rowsDot(in.relative, in.klen, head * d, d, in.v + head * d, in.scale, m_d.data());
    }
}

void HeadScores::compute(int r0, int r1)
{
    const int rows = r1 - r0, d = m_in.headDim;
    int cols = 0;
    for (int i = r0; i < r1; ++i) {
        const auto& s = m_in.spans[i];
        cols = std::max(cols, s.len > 0 ? s.lo + s.len : 0);
    }
    cols = std::max(cols, 1);
    m_r0 = r0;
    m_cols = cols;
    const auto Q = block(m_in.queries, r0, rows, m_head * d, d); // blocks never cross a page
    const int g = m_in.relativeTerms() ? m_head : m_in.keyHead(m_head);
    m_dot.resize(static_cast<std::size_t>(rows) * cols);
    Out S(m_dot.data(), rows, cols);
    if (!m_in.relativeTerms()) {
        timesKeys(Q, m_in.keys, cols, g * d, d, S);
        S *= m_in.scale;
        if (m_in.positionBias)
            for (int r = 0; r < rows; ++r)
                m_in.positionBias->addToRow(m_head, r0 + r, m_in.mlen, m_in.spans[r0 + r].lo, m_in.spans[r0 + r].len,
                                            S.row(r).data());
        if (m_in.softCap > 0)
            for (int r = 0; r < rows; ++r) // only the keys each row sees: the rest is never read
                softCapInPlace(S.row(r).data() + m_in.spans[r0 + r].lo, m_in.spans[r0 + r].len, m_in.softCap);
        if (!m_withTerms)
            return;
        // Each band's share: pairs [p0, p1) are dimensions [p0, p1) and [half + p0, half + p1), half = the pairs a
        // head rotates. Dimensions a partial-rotary head does not turn ([2 half, d)) never change with distance: they
        // join the last, lowest-frequency band, so the bands still sum to the score.
        const int half = m_in.bands->pairs;
        const int count = m_in.bands->count();
        for (int b = 0; b < count; ++b) {
            const int p0 = m_in.bands->begin(b), n = m_in.bands->end(b) - p0;
            m_band[b].resize(m_dot.size());
            Out Sb(m_band[b].data(), rows, cols);
            const auto Q1 = block(m_in.queries, r0, rows, m_head * d + p0, n);
            const auto Q2 = block(m_in.queries, r0, rows, m_head * d + half + p0, n);
            timesKeys(Q1, m_in.keys, cols, g * d + p0, n, Sb);
            thread_local std::vector<float> second;
            second.resize(m_dot.size());
            Out S2(second.data(), rows, cols);
            timesKeys(Q2, m_in.keys, cols, g * d + half + p0, n, S2);
            Sb += S2;
            if (b == count - 1 && 2 * half < d) {
                const auto Q3 = block(m_in.queries, r0, rows, m_head * d + 2 * half, d - 2 * half);
                timesKeys(Q3, m_in.keys, cols, g * d + 2 * half, d - 2 * half, S2);
                Sb += S2;
            }
            Sb *= m_in.scale;
        }
        return;
    }
    m_rel.resize(m_dot.size());
    Out B(m_rel.data(), rows, cols);
    if (m_relativeTerms) {
        // The four terms apart, for the figures that show them: (a) and (b) here, (c) and (d) once per head; the
        // score is their sum.
        const Matrix Qs = Q * m_in.scale;
        timesKeys(Qs, m_in.keys, cols, g * d, d, S);
        timesKeys(Qs, m_in.relative, cols, m_head * d, d, B);
        return;
    }
    // The score as the Transformer-XL reference computes it, (q + u).k + (q + v).R, each bias folded into the query
    // (times the scale) before its product: two products, nothing per key. It equals the sum of the terms to float
    // rounding.
    const auto u = Eigen::Map<const Eigen::RowVectorXf>(m_in.u + m_head * d, d);
    const auto v = Eigen::Map<const Eigen::RowVectorXf>(m_in.v + m_head * d, d);
    const Matrix Qu = (Q.rowwise() + u) * m_in.scale;
    const Matrix Qv = (Q.rowwise() + v) * m_in.scale;
    timesKeys(Qu, m_in.keys, cols, g * d, d, S);
    timesKeys(Qv, m_in.relative, cols, m_head * d, d, B);
}

void HeadScores::rowScore(int i, float* out) const
{
    if (!m_in.relativeTerms()) {
        const auto [lo, len] = m_in.spans[i];
        std::copy_n(m_dot.data() + static_cast<std::size_t>(i - m_r0) * m_cols + lo, len, out);
        return;
    }
    // Key j = lo + k lies at distance hi - lo - k, so what is by distance is read backwards (Transformer-XL's
    // relative shift).
    const auto [lo, len] = m_in.spans[i];
    const int back = i + m_in.mlen - lo;
    const float* byKey = m_dot.data() + static_cast<std::size_t>(i - m_r0) * m_cols + lo;
    const float* byDistance = m_rel.data() + static_cast<std::size_t>(i - m_r0) * m_cols + back;
    if (!m_relativeTerms) { // (q + u).k + (q + v).R
        for (int k = 0; k < len; ++k)
            out[k] = byKey[k] + byDistance[-k];
        return;
    }
    // ((a + b) + c) + d, the order rowSum adds terms in ((0 + a) is a).
    const float* c = m_c.data() + lo;
    const float* d = m_d.data() + back;
    for (int k = 0; k < len; ++k)
        out[k] = ((byKey[k] + byDistance[-k]) + c[k]) + d[-k];
}

void HeadScores::rowTerm(int i, int t, float* out) const
{
    const auto [lo, len] = m_in.spans[i];
    const std::size_t r = static_cast<std::size_t>(i - m_r0) * m_cols;
    const int hi = i + m_in.mlen; // distance of key j is hi - j
    if (!m_in.relativeTerms()) {
        if (m_withTerms)
            std::copy_n(m_band[t].data() + r + lo, len, out);
        else
            std::copy_n(m_dot.data() + r + lo, len, out);
        return;
    }
    if (!m_relativeTerms)
        throw std::logic_error("HeadScores: Transformer-XL's terms were not asked for (withTerms)");
    switch (t) {
    case 0: std::copy_n(m_dot.data() + r + lo, len, out); break;
    case 1:
        for (int k = 0; k < len; ++k)
            out[k] = m_rel[r + static_cast<std::size_t>(hi - lo - k)];
        break;
    case 2: std::copy_n(m_c.data() + lo, len, out); break;
    default:
        for (int k = 0; k < len; ++k)
            out[k] = m_d[static_cast<std::size_t>(hi - lo - k)];
        break;
    }
}

void HeadScores::rowSum(int i, const TermSelection& sel, float* out) const
{
    const int len = m_in.spans[i].len;
    // Every term selected is the score itself (for Transformer-XL with its terms apart, their sum in this order).
    if (sel.covers(m_in.termCount()) || (!m_in.relativeTerms() && !m_withTerms)) {
        rowScore(i, out);
        return;
    }
    // Same order of additions everywhere: 0 + first selected term + next ...
    std::fill(out, out + len, 0.0f);
    thread_local std::vector<float> term;
    term.resize(static_cast<std::size_t>(len));
    const bool on[4] = {sel.a, sel.b, sel.c, sel.d};
    for (int t = 0; t < m_in.termCount(); ++t)
        if (on[t]) {
            rowTerm(i, t, term.data());
            for (int k = 0; k < len; ++k)
                out[k] += term[static_cast<std::size_t>(k)];
        }
    if (m_in.softCap > 0 && !m_in.relativeTerms())
        softCapInPlace(out, len, m_in.softCap);
}

namespace {
// One finished row: selected terms' softmax (or sum) on the span, `masked` elsewhere.
void writeRow(const HeadScores& hs, const ScoreInputs& in, int i, const TermSelection& sel, float* row, float masked)
{
    const auto [lo, len] = in.spans[i];
    std::fill(row, row + lo, masked);
    std::fill(row + lo + len, row + in.klen, masked);
    hs.rowSum(i, sel, row + lo);
    if (!sel.raw) // the sink joins the full score's softmax; a term's alone is shown without it
        softmaxInPlace(row + lo, len, nullptr, sel.covers(in.termCount()) ? in.sinkOf(hs.head()) : -std::numeric_limits<float>::infinity());
}

// The map a selection asks for: the exact one, or where the kind has one and the selection says so its heuristic.
ScoreInputs withMap(const ScoreInputs& in, const TermSelection& sel)
{
    ScoreInputs map = in;
    map.heuristicMap = in.heuristicMap || (sel.heuristic && mixerRow(in.mixer).heuristic);
    return map;
}

void checkHead(const ScoreInputs& in, int head)
{
    if (head < 0 || head >= in.heads)
        throw Error(ErrorCode::BadInput, "head " + std::to_string(head + 1) + " does not exist");
}
} // namespace

void headAttention(const ScoreInputs& in, int head, const TermSelection& sel, float* out, std::ptrdiff_t ld, float masked)
{
    checkHead(in, head);
    if (in.mixer != Mixer::Softmax) { // an implicit map: no softmax, no terms, raw and full alike
        const ScoreInputs map = withMap(in, sel);
#pragma omp parallel for schedule(static) if (static_cast<double>(in.qlen) * in.klen > 1e6)
        for (int i = 0; i < in.qlen; ++i)
            implicitMapRow(map, head, i, out + static_cast<std::ptrdiff_t>(i) * ld, masked);
        return;
    }
    const int blocks = (in.qlen + HeadScores::kBlockRows - 1) / HeadScores::kBlockRows;
    // Blocks are independent: long texts split them across threads.
#pragma omp parallel if (blocks > 1 && static_cast<double>(in.qlen) * in.klen * in.headDim > 2e6)
    {
        HeadScores hs(in, head, !sel.covers(in.termCount()));
#pragma omp for schedule(dynamic)
        for (int b = 0; b < blocks; ++b) {
            const int r0 = b * HeadScores::kBlockRows, r1 = std::min(in.qlen, r0 + HeadScores::kBlockRows);
            hs.compute(r0, r1);
            for (int i = r0; i < r1; ++i)
                writeRow(hs, in, i, sel, out + i * ld, masked);
        }
    }
}

void headAttentionRows(const ScoreInputs& in, int head, const TermSelection& sel, std::span<const int> rows,
                       float* out, std::ptrdiff_t ld, float masked)
{
    checkHead(in, head);
    if (in.mixer != Mixer::Softmax) {
        const ScoreInputs map = withMap(in, sel);
        for (std::size_t k = 0; k < rows.size(); ++k)
            implicitMapRow(map, head, rows[k], out + static_cast<std::ptrdiff_t>(k) * ld, masked);
        return;
    }
    HeadScores hs(in, head, !sel.covers(in.termCount()));
    // Runs of consecutive wanted rows are computed together; nothing else is.
    for (std::size_t k = 0; k < rows.size();) {
        std::size_t e = k + 1;
        while (e < rows.size() && rows[e] == rows[e - 1] + 1 && rows[e] % HeadScores::kBlockRows != 0)
            ++e;
        hs.compute(rows[k], rows[e - 1] + 1);
        for (; k < e; ++k)
            writeRow(hs, in, rows[k], sel, out + static_cast<std::ptrdiff_t>(k) * ld, masked);
    }
}

namespace {
// attendAllHeads for dot-product scores without terms (GPT-2, Llama-family models): the query heads that share a
// key/value head are stacked, so each row block is one product with the keys and one with the values for the whole
// group (three times the rows of a head for SmolLM2, more for Llama 3), and the threads share out (group, block)
// tasks, largest first, instead of whole heads (9 heads on 2 threads would leave one idle a ninth of the time).
void attendGroups(const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride, float* out,
                  std::ptrdiff_t outStride, const AttentionCapture& keep)
{
    const int H = in.heads, KV = in.kvHeads, G = H / KV, q = in.qlen, k = in.klen, d = in.headDim;
    const std::size_t perHead = static_cast<std::size_t>(q) * k;
    const int blocks = (q + HeadScores::kBlockRows - 1) / HeadScores::kBlockRows;
    const RowSource V = RowSource::strided(values, valueStride);
    StageScope region(Stage::Attention);
#pragma omp parallel for schedule(dynamic) if (static_cast<double>(H) * q * k * d > 2e5)
    for (int task = 0; task < KV * blocks; ++task) {
        const int b = blocks - 1 - task / KV, g = task % KV; // the last blocks see the most keys: first
        const int r0 = b * HeadScores::kBlockRows, r1 = std::min(q, r0 + HeadScores::kBlockRows), rows = r1 - r0;
        int cols = 1;
        for (int i = r0; i < r1; ++i)
            cols = std::max(cols, in.spans[i].lo + in.spans[i].len);
        thread_local Matrix Qs, S, O;
        {
            StageScope timed(Stage::Scores);
            Qs.resize(G * rows, d);
            for (int h = 0; h < G; ++h)
                Qs.middleRows(h * rows, rows) = block(in.queries, r0, rows, (g * G + h) * d, d);
            S.resize(G * rows, cols);
            Out Sm(S.data(), G * rows, cols);
            timesKeys(Qs, in.keys, cols, g * d, d, Sm);
            S *= in.scale;
            if (in.positionBias)
                for (int h = 0; h < G; ++h)
                    for (int i = r0; i < r1; ++i)
                        in.positionBias->addToRow(g * G + h, i, in.mlen, in.spans[i].lo, in.spans[i].len,
                                                  S.row(h * rows + i - r0).data());
            if (in.softCap > 0)
                for (int h = 0; h < G; ++h)
                    for (int i = r0; i < r1; ++i)
                        softCapInPlace(S.row(h * rows + i - r0).data() + in.spans[i].lo, in.spans[i].len, in.softCap);
        }
        for (int h = 0; h < G; ++h) {
            const int n = g * G + h;
            float* entropy = blockEntropy(keep, n, in.qlen, r0, rows);
            for (int i = r0; i < r1; ++i) {
                const auto [lo, len] = in.spans[i];
                float* row = S.row(h * rows + i - r0).data();
                const std::size_t at = static_cast<std::size_t>(n) * perHead + static_cast<std::size_t>(i) * k;
                if (keep.scores) {
                    StageScope timed(Stage::CaptureCopies);
                    float* dst = keep.scores + at;
                    std::fill(dst, dst + k, 0.0f);
                    std::copy_n(row + lo, len, dst + lo);
                }
                {
                    StageScope timed(Stage::Softmax);
                    softmaxInPlace(row + lo, len, entropy ? entropy + (i - r0) : nullptr, in.sinkOf(n));
                    zeroOutside(row, lo, len, cols); // keys it does not see weigh nothing in P V
                }
                if (keep.probabilities) {
                    StageScope timed(Stage::CaptureCopies);
                    float* dst = keep.probabilities + at;
                    std::copy_n(row, cols, dst);
                    std::fill(dst + cols, dst + k, 0.0f);
                }
            }
            if (keep.rows) {
                StageScope timed(Stage::RowSink);
                keep.rows->onRows(in, n, r0, r1, S.row(h * rows).data(), S.cols(), entropy);
            }
        }
        StageScope timed(Stage::Values);
        const int dv = in.vDim();
        O.resize(G * rows, dv);
        O.noalias() = S * block(V, 0, cols, g * dv, dv);
        for (int h = 0; h < G; ++h)
            for (int i = 0; i < rows; ++i)
                std::copy_n(O.row(h * rows + i).data(), dv, out + (r0 + i) * outStride + (g * G + h) * dv);
    }
}
} // namespace

void attendAllHeads(const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride, float* out,
                    std::ptrdiff_t outStride, const AttentionCapture& keep)
{
    if (!in.relativeTerms() && std::none_of(std::begin(keep.terms), std::end(keep.terms),
                                         [](float* t) { return t != nullptr; })) {
        attendGroups(in, values, valueStride, out, outStride, keep);
        return;
    }
    const int H = in.heads, q = in.qlen, k = in.klen, d = in.headDim;
    const std::size_t perHead = static_cast<std::size_t>(q) * k;
    const int termCount = in.termCount();
    const bool wantTerms = std::any_of(std::begin(keep.terms), std::end(keep.terms), [](float* t) { return t != nullptr; });
    StageScope region(Stage::Attention);
#pragma omp parallel for schedule(dynamic) if (static_cast<double>(H) * q * k * d > 2e5)
    for (int n = 0; n < H; ++n) {
        HeadScores hs = [&] {
            StageScope timed(Stage::Scores); // Transformer-XL's per-key terms (c) and (d)
            return HeadScores(in, n, wantTerms);
        }();
        const int g = in.relativeTerms() ? n : in.keyHead(n);
        // One probability block per thread, reused: a fresh multi-megabyte buffer per block costs page faults.
        thread_local std::vector<float> pBuffer;
        for (int r0 = 0; r0 < q; r0 += HeadScores::kBlockRows) {
            const int r1 = std::min(q, r0 + HeadScores::kBlockRows), rows = r1 - r0;
            {
                StageScope timed(Stage::Scores);
                hs.compute(r0, r1);
            }
            int cols = 1;
            for (int i = r0; i < r1; ++i)
                cols = std::max(cols, in.spans[i].lo + in.spans[i].len);
            auto at = [&](int i) { return static_cast<std::size_t>(n) * perHead + static_cast<std::size_t>(i) * k; };
            // Probabilities the observer keeps are computed where it keeps them (no copy), else in the thread's block.
            float* pBase = keep.probabilities ? keep.probabilities + at(r0) : nullptr;
            const int pStride = keep.probabilities ? k : cols;
            if (!pBase) {
                pBuffer.resize(static_cast<std::size_t>(rows) * cols);
                pBase = pBuffer.data();
            }
            Eigen::Map<Matrix, 0, Eigen::OuterStride<>> P(pBase, rows, cols, Eigen::OuterStride<>(pStride));
            {
                StageScope timed(Stage::RelativeShift);
                for (int i = r0; i < r1; ++i) {
                    // The row's keys get their scores; the keys it does not see weigh nothing in P V.
                    const auto [lo, len] = in.spans[i];
                    float* row = P.row(i - r0).data();
                    zeroOutside(row, lo, len, pStride);
                    hs.rowScore(i, row + lo);
                }
            }
            if (keep.scores) {
                StageScope timed(Stage::CaptureCopies);
                for (int i = r0; i < r1; ++i) {
                    const auto [lo, len] = in.spans[i];
                    float* dst = keep.scores + at(i);
                    std::fill(dst, dst + k, 0.0f);
                    std::copy_n(P.row(i - r0).data() + lo, len, dst + lo);
                }
            }
            float* entropy = blockEntropy(keep, n, q, r0, rows);
            {
                StageScope timed(Stage::Softmax);
                for (int i = r0; i < r1; ++i)
                    softmaxInPlace(P.row(i - r0).data() + in.spans[i].lo, in.spans[i].len,
                                   entropy ? entropy + (i - r0) : nullptr, in.sinkOf(n));
            }
            if (keep.rows) {
                StageScope timed(Stage::RowSink);
                keep.rows->onRows(in, n, r0, r1, P.data(), pStride, entropy);
            }
            if (wantTerms) {
                StageScope timed(Stage::CaptureCopies);
                for (int i = r0; i < r1; ++i) {
                    const auto [lo, len] = in.spans[i];
                    for (int t = 0; t < termCount; ++t)
                        if (keep.terms[t]) {
                            float* dst = keep.terms[t] + at(i);
                            std::fill(dst, dst + k, 0.0f);
                            hs.rowTerm(i, t, dst + lo);
                        }
                }
            }
            StageScope timed(Stage::Values);
            const int dv = in.vDim();
            const auto V = block(RowSource::strided(values, valueStride), 0, cols, g * dv, dv);
            Eigen::Map<Matrix, 0, Eigen::OuterStride<>> O(out + r0 * outStride + n * dv, rows, dv, Eigen::OuterStride<>(outStride));
            O.noalias() = P * V;
        }
    }
}

std::vector<VisibleSpan> spansOfMask(const std::uint8_t* mask, int qlen, int klen)
{
    std::vector<VisibleSpan> spans(static_cast<std::size_t>(qlen));
    for (int i = 0; i < qlen; ++i)
        spans[static_cast<std::size_t>(i)] = visibleSpan(mask + static_cast<std::size_t>(i) * klen, klen);
    return spans;
}

} // namespace attnscope::core
