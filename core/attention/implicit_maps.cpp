// implicitMapRow: one row of a non-softmax mixer's exact map, by kind.
#include "attention/implicit_maps.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnscope::core {

namespace {

// A short convolution's channel c: y_i = C_i sum_k taps[k] (B x)_{i - (width - 1) + k}, so the weight of value x_j is
// C_i taps[width - 1 - (i - j)] B_j for the width - 1 tokens before i and i itself.
void shortConvRow(const ScoreInputs& in, int c, int i, const VisibleSpan& span, float* out)
{
    const int kc = in.keyHead(c);
    const float q = in.queries.row(i)[static_cast<std::ptrdiff_t>(c) * in.headDim];
    const float* taps = in.convTaps + static_cast<std::ptrdiff_t>(c) * in.convWidth;
    for (int j = span.lo; j < span.lo + span.len; ++j) {
        const int back = i + in.mlen - j; // tokens between key j and query i
        const float tap = back >= 0 && back < in.convWidth ? taps[in.convWidth - 1 - back] : 0.0f;
        out[j] = q * tap * in.keys.row(j)[static_cast<std::ptrdiff_t>(kc) * in.headDim];
    }
}

// A delta-rule head h: r starts as q_i and is carried back one key at a time, M[i, j] = beta_j khat_j . r, then
// r <- alpha_j (r - beta_j khat_j (khat_j . r)): the state's decay and erasure between key j and query i, in double.
void deltaRuleRow(const ScoreInputs& in, int h, int i, const VisibleSpan& span, float* out)
{
    const int d = in.headDim, kh = in.keyHead(h);
    const std::ptrdiff_t kOff = static_cast<std::ptrdiff_t>(kh) * d;
    const std::ptrdiff_t betaCol = static_cast<std::ptrdiff_t>(in.kvHeads) * d + h, gCol = betaCol + in.heads;
    thread_local std::vector<double> r;
    r.assign(in.queries.row(i) + kOff, in.queries.row(i) + kOff + d);
    const int last = std::min(span.lo + span.len, i + in.mlen + 1) - 1;
    for (int j = last; j >= span.lo; --j) {
        const float* key = in.keys.row(j);
        const float* k = key + kOff;
        double dot = 0;
        for (int e = 0; e < d; ++e)
            dot += k[e] * r[static_cast<std::size_t>(e)];
        const double beta = key[betaCol];
        out[j] = static_cast<float>(beta * dot);
        const double alpha = std::exp(static_cast<double>(key[gCol]));
        const double erase = in.heuristicMap ? 0.0 : beta * dot;
        for (int e = 0; e < d; ++e)
            r[static_cast<std::size_t>(e)] = alpha * (r[static_cast<std::size_t>(e)] - erase * k[e]);
    }
}

// A state-space head h: walking back from query i, the decay exp(A sum dt) grows by each key's dt after it is used.
void stateSpaceRow(const ScoreInputs& in, int h, int i, const VisibleSpan& span, float* out)
{
    const int n = in.headDim, g = in.keyHead(h);
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(g) * n, dtCol = static_cast<std::ptrdiff_t>(in.kvHeads) * n + h;
    const float* c = in.queries.row(i) + off;
    const double a = in.stateDecay[h];
    double later = 0; // sum of dt over the keys after j, up to i
    const int last = std::min(span.lo + span.len, i + in.mlen + 1) - 1;
    for (int j = last; j >= span.lo; --j) {
        const float* key = in.keys.row(j);
        double dot = 0;
        for (int e = 0; e < n; ++e)
            dot += static_cast<double>(c[e]) * key[off + e];
        const double dt = key[dtCol];
        out[j] = static_cast<float>(dot * std::exp(a * later) * dt);
        later += dt;
    }
}

} // namespace

void implicitMapRow(const ScoreInputs& in, int head, int i, float* out, float masked)
{
    const VisibleSpan span = in.spans ? in.spans[i] : VisibleSpan{0, in.klen};
    std::fill(out, out + span.lo, masked);
    std::fill(out + span.lo + span.len, out + in.klen, masked);
    switch (in.mixer) {
    case Mixer::ShortConv:
        if (!in.convTaps || in.convWidth <= 0)
            throw Error(ErrorCode::Internal, "a short-convolution site without its taps");
        shortConvRow(in, head, i, span, out);
        return;
    case Mixer::DeltaRule:
        deltaRuleRow(in, head, i, span, out);
        return;
    case Mixer::StateSpace:
        if (!in.stateDecay)
            throw Error(ErrorCode::Internal, "a state-space site without its decay rates");
        stateSpaceRow(in, head, i, span, out);
        return;
    case Mixer::None: // each token its own: 1 on the diagonal
        for (int j = span.lo; j < span.lo + span.len; ++j)
            out[j] = j == i + in.mlen ? 1.0f : 0.0f;
        return;
    case Mixer::Softmax:
        break;
    }
    throw Error(ErrorCode::Internal, "implicitMapRow called for a softmax site");
}

} // namespace attnscope::core
