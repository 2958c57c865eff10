// Rotary frequencies, tables and rotation (rotary.h).
#include "model/rotary.h"

#include <algorithm>
#include <cmath>

namespace attnscope::core {

namespace {

// theta^(2i/r) in float32 as the reference computes it.
float baseOf(double theta, int i, int rotated)
{
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(rotated);
    return static_cast<float>(std::pow(static_cast<double>(static_cast<float>(theta)), static_cast<double>(exponent)));
}

// YaRN: dimensions whose wavelength fits the original context many times keep their frequency, long ones are divided by
// the factor, and a linear ramp over [low, high] joins them.
float yarn(const RopeConfig& rope, float f, int i, int rotated)
{
    const double d = rotated, theta = rope.theta, L0 = rope.originalMaxPositions;
    auto correction = [&](double beta) { return d * std::log(L0 / (2.0 * M_PI * beta)) / (2.0 * std::log(theta)); };
    double low = correction(rope.betaFast), high = correction(rope.betaSlow);
    if (rope.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, d - 1);
    if (high == low)
        high += 0.001;
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    return static_cast<float>(f / rope.factor * ramp + f * (1.0 - ramp));
}

// llama3: long wavelengths are divided by the factor, short ones kept, the band between interpolated.
float llama3(const RopeConfig& rope, float f)
{
    const double wavelen = 2.0 * M_PI / f;
    const double lowWavelen = rope.originalMaxPositions / rope.lowFreqFactor;
    const double highWavelen = rope.originalMaxPositions / rope.highFreqFactor;
    if (wavelen > lowWavelen)
        return static_cast<float>(f / rope.factor);
    if (wavelen >= highWavelen) {
        const double smooth = (rope.originalMaxPositions / wavelen - rope.lowFreqFactor) /
                              (rope.highFreqFactor - rope.lowFreqFactor);
        return static_cast<float>((1 - smooth) * f / rope.factor + smooth * f);
    }
    return f;
}

} // namespace

std::vector<float> rotaryFrequencies(const LlamaConfig& c, bool longFactors)
{
    const auto& rope = c.rope;
    const int half = c.rotated() / 2;
    std::vector<float> out(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
        const auto at = static_cast<std::size_t>(i);
        const float base = baseOf(rope.theta, i, c.rotated());
        float f = 1.0f / base;
        if (rope.scaling == RopeConfig::Scaling::LongRope) // 1 / (factor theta^(2i/r)), the factor product first
            f = 1.0f / ((longFactors ? rope.longFactors[at] : rope.shortFactors[at]) * base);
        else if (!rope.freqDivisors.empty())
            f /= rope.freqDivisors[at];
        else if (rope.scaling == RopeConfig::Scaling::Linear)
            f = static_cast<float>(f / rope.factor);
        else if (rope.scaling == RopeConfig::Scaling::Yarn)
            f = yarn(rope, f, i, c.rotated());
        else if (rope.scaling == RopeConfig::Scaling::Llama3)
            f = llama3(rope, f);
        out[at] = f;
    }
    return out;
}

std::vector<float> plainRotaryFrequencies(double theta, int rotated)
{
    std::vector<float> out;
    for (int i = 0; i < rotated / 2; ++i)
        out.push_back(1.0f / baseOf(theta, i, rotated));
    return out;
}

RotaryTable rotaryTable(const RopeConfig& rope, int positions, const std::vector<float>& invFreq)
{
    const int half = static_cast<int>(invFreq.size());
    const bool scaled = rope.scaling == RopeConfig::Scaling::LongRope || rope.scaling == RopeConfig::Scaling::Yarn;
    const float mscale = scaled ? static_cast<float>(rope.attentionFactor) : 1.0f;
    RotaryTable t;
    t.pairs = half;
    t.cos.resize(static_cast<std::size_t>(positions) * half);
    t.sin.resize(t.cos.size());
    for (int p = 0; p < positions; ++p)
        for (int i = 0; i < half; ++i) {
            // The angle in float32, as the reference; its cosine and sine rounded from double.
            const float angle = static_cast<float>(p) * invFreq[static_cast<std::size_t>(i)];
            t.cos[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::cos(static_cast<double>(angle))) * mscale;
            t.sin[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::sin(static_cast<double>(angle))) * mscale;
        }
    return t;
}

void rotateRows(const RotaryTable& table, float* x, int rows, std::ptrdiff_t stride, int heads, int headDim,
                int firstPosition)
{
    const int half = table.pairs; // dimensions past 2 half do not turn
    for (int t = 0; t < rows; ++t) {
        const float* c = table.cos.data() + static_cast<std::size_t>(firstPosition + t) * half;
        const float* s = table.sin.data() + static_cast<std::size_t>(firstPosition + t) * half;
        for (int h = 0; h < heads; ++h) {
            float* r = x + t * stride + h * headDim;
            for (int i = 0; i < half; ++i) {
                const float x1 = r[i], x2 = r[i + half];
                r[i] = x1 * c[i] - x2 * s[i];
                r[i + half] = x2 * c[i] + x1 * s[i];
            }
        }
    }
}

} // namespace attnscope::core
