// visibleSpan, termSoftmax: vectorised with Eigen over the contiguous span.
#include "attention/attention_math.h"

#include <cmath>

#include "util/error.h"

#include <Eigen/Core>
#include <Eigen/StdVector>
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

void softmaxInPlace(float* x, int n, float* entropy)
{
    if (n <= 0) {
        if (entropy)
            *entropy = 0.0f;
        return;
    }
    // In aligned buffers: Eigen's vectorised sum groups the elements by the data's alignment, so the same row at
    // another address would round differently, and a recomputed grid would not equal the forward pass's bit for bit.
    thread_local std::vector<float, Eigen::aligned_allocator<float>> buffer, shifted;
    if (buffer.size() < static_cast<std::size_t>(n))
        buffer.resize(static_cast<std::size_t>(n) * 2);
    Eigen::Map<Eigen::ArrayXf, Eigen::AlignedMax> s(buffer.data(), n);
    s = Eigen::Map<const Eigen::ArrayXf>(x, n);
    if (!entropy) {
        s = (s - s.maxCoeff()).exp();
        s /= s.sum();
    } else {
        if (shifted.size() < static_cast<std::size_t>(n))
            shifted.resize(static_cast<std::size_t>(n) * 2);
        Eigen::Map<Eigen::ArrayXf, Eigen::AlignedMax> t(shifted.data(), n);
        t = s - s.maxCoeff();
        s = t.exp();
        const float z = s.sum(), weighted = (s * t).sum();
        s /= z;
        *entropy = std::max(0.0f, std::log(z) - weighted / z); // -sum p log p, p = e^t / z: log z - sum p t
    }
    Eigen::Map<Eigen::ArrayXf>(x, n) = s;
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
