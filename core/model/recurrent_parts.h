// The steps the recurrent layers of hybrid models share (model/llama_delta.cpp, model/llama_mamba.cpp): the causal
// depthwise convolution over rows that continue the cached ones, SiLU and softplus, and an RMSNorm over runs of
// channels. Internal to model/llama*.cpp.
#pragma once

#include "model/nn_ops.h"

#include <cmath>

namespace attnscope::core {

inline float silu(float v) { return v / (1.0f + std::exp(-v)); }
inline float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

// out[i, c] = silu(bias[c] + sum_k taps[c, k] x[m + i - (width - 1) + k, c]) for the segment's rows i: rows before m
// are the cache's (`cached`, `cachedStride` floats apart, channels from its first column), later ones the segment's
// own (`fresh`, channels from column `freshColumn`); rows before the text's start count as 0. `bias` may be null.
struct CausalConvolution {
    const float* taps = nullptr; // [channels, width], oldest first
    const float* bias = nullptr;
    int width = 0, channels = 0;
};
inline void convolveWithSilu(const CausalConvolution& conv, const float* cached, std::ptrdiff_t cachedStride, int m,
                             const RowMatrix& fresh, int freshColumn, RowMatrix& out)
{
    const int q = static_cast<int>(fresh.rows()), K = conv.width;
    out.resize(q, conv.channels);
    for (int i = 0; i < q; ++i)
        for (int ch = 0; ch < conv.channels; ++ch) {
            float sum = conv.bias ? conv.bias[ch] : 0.0f;
            for (int k = 0; k < K; ++k) {
                const int row = m + i - (K - 1) + k; // in the whole run's rows
                if (row < 0)
                    continue;
                const float x = row < m ? cached[static_cast<std::ptrdiff_t>(row) * cachedStride + ch]
                                        : fresh(row - m, freshColumn + ch);
                sum += conv.taps[static_cast<std::ptrdiff_t>(ch) * K + k] * x;
            }
            out(i, ch) = silu(sum);
        }
}

// Each of `groups` equal runs of a row's channels divided by its RMS (plus eps), then times w (one weight per run's
// channel, or per channel of the row when wPerRow).
inline void rmsNormRuns(RowMatrix& rows, int groups, const float* w, bool wPerRow, float eps)
{
    const int width = static_cast<int>(rows.cols()) / groups;
    for (Eigen::Index i = 0; i < rows.rows(); ++i)
        for (int g = 0; g < groups; ++g) {
            auto run = rows.row(i).segment(static_cast<Eigen::Index>(g) * width, width);
            run *= 1.0f / std::sqrt(run.squaredNorm() / static_cast<float>(width) + eps);
            run.array() *= Eigen::Map<const Eigen::ArrayXf>(wPerRow ? w + g * width : w, width).transpose();
        }
}

} // namespace attnscope::core
