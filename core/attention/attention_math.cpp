// visibleSpan, termSoftmax: vectorised with Eigen over the contiguous span.
#include "attention/attention_math.h"

#include <cmath>

#include "util/error.h"

#include <Eigen/Core>
#include <Eigen/StdVector>
#include <algorithm>
#include <limits>
#include <vector>

namespace attnscope::core {

std::string TermSelection::label() const
{
    if (isFull() && !raw)
        return "full";
    std::string s;
    for (auto [on, ch] : {std::pair{a, 'a'}, {b, 'b'}, {c, 'c'}, {d, 'd'}})
        if (on) {
            if (!s.empty())
                s += '+';
            s += ch;
        }
    if (s.empty())
        return "none";
    return raw ? (uncapped ? "raw uncapped " : "raw ") + s : s;
}

VisibleSpan visibleSpan(const std::uint8_t* maskRow, int keys)
{
    int lo = 0, hi = keys - 1;
    while (lo < keys && maskRow[lo])
        ++lo;
    while (hi >= lo && maskRow[hi])
        --hi;
    for (int j = lo; j <= hi; ++j)
        if (maskRow[j])
            throw Error(ErrorCode::BadInput, "attention views need contiguous visible keys per query");
    return {lo, hi >= lo ? hi - lo + 1 : 0};
}

void softmaxInPlace(float* x, int n, float* entropy, float sink)
{
    if (n <= 0) {
        if (entropy)
            *entropy = 0.0f;
        return;
    }
    // Three passes of whole packets from the row's first element, the tail in a padded packet: the same row gives the
    // same bits at any address (a recomputed grid equals the forward pass's), and no copy to an aligned buffer.
    using Packet = Eigen::internal::packet_traits<float>::type;
    namespace ei = Eigen::internal;
    constexpr int W = static_cast<int>(sizeof(Packet) / sizeof(float));
    const int full = n / W * W, tail = n - full;
    constexpr float kNone = -std::numeric_limits<float>::infinity(); // padding that exp turns into 0
    alignas(64) float pad[W];
    auto loadTail = [&] {
        std::fill(pad, pad + W, kNone);
        std::copy_n(x + full, tail, pad);
        return ei::pload<Packet>(pad);
    };
    Packet mx = ei::pset1<Packet>(kNone);
    for (int i = 0; i < full; i += W)
        mx = ei::pmax(mx, ei::ploadu<Packet>(x + i));
    if (tail)
        mx = ei::pmax(mx, loadTail());
    const bool sunk = sink > -std::numeric_limits<float>::infinity();
    const float rowMax = sunk ? std::max(ei::predux_max(mx), sink) : ei::predux_max(mx);
    const Packet m = ei::pset1<Packet>(rowMax);
    // e = exp(s - max) in place; z = sum e; weighted = sum e (s - max), for the entropy.
    Packet z = ei::pzero(m), weighted = ei::pzero(m);
    auto step = [&](Packet s) {
        const Packet t = ei::psub(s, m), e = ei::pexp(t);
        z = ei::padd(z, e);
        if (entropy)
            weighted = ei::pmadd(e, t, weighted);
        return e;
    };
    for (int i = 0; i < full; i += W)
        ei::pstoreu(x + i, step(ei::ploadu<Packet>(x + i)));
    if (tail) { // padding of -inf: exp gives 0, and 0 * (-inf) must not reach the weighted sum
        const Packet t = ei::psub(loadTail(), m), e = ei::pexp(t);
        z = ei::padd(z, e);
        ei::pstore(pad, e);
        std::copy_n(pad, tail, x + full);
        if (entropy) {
            alignas(64) float tt[W];
            ei::pstore(tt, t);
            for (int j = tail; j < W; ++j)
                tt[j] = 0.0f;
            weighted = ei::pmadd(e, ei::pload<Packet>(tt), weighted);
        }
    }
    // Times the reciprocal, not a division per element (a packet division takes several times a multiplication's
    // throughput; the two differ by at most an ulp).
    float total = ei::predux(z);
    float sinkWeighted = 0.0f;
    if (sunk) { // the sink's term of the denominator (and of the entropy), no probability of its own in x
        const float t = sink - rowMax, e = std::exp(t);
        total += e;
        sinkWeighted = e * t;
    }
    const float inverse = 1.0f / total;
    const Packet ip = ei::pset1<Packet>(inverse);
    for (int i = 0; i < full; i += W)
        ei::pstoreu(x + i, ei::pmul(ei::ploadu<Packet>(x + i), ip));
    for (int i = full; i < n; ++i)
        x[i] *= inverse;
    if (entropy) // -sum p log p, p = e^t / z: log z - sum p t
        *entropy = std::max(0.0f, std::log(total) - (ei::predux(weighted) + sinkWeighted) / total);
}

void softCapInPlace(float* x, std::ptrdiff_t n, float cap)
{
    for (std::ptrdiff_t i = 0; i < n; ++i)
        x[i] = cap * std::tanh(x[i] / cap);
}

void termSoftmax(const float* const terms[4], const TermSelection& selection, int len, float* out, float softCap)
{
    if (len <= 0)
        return;
    Eigen::Map<Eigen::ArrayXf> s(out, len);
    s.setZero();
    const bool sel[4] = {selection.a, selection.b, selection.c, selection.d};
    for (int t = 0; t < 4; ++t)
        if (sel[t])
            s += Eigen::Map<const Eigen::ArrayXf>(terms[t], len);
    if (softCap > 0)
        softCapInPlace(out, len, softCap);
    if (!selection.raw)
        softmaxInPlace(out, len);
}

} // namespace attnscope::core
