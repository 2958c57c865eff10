// DeepSeek-V2's multi-head latent attention (MLA): what differs from ordinary attention is how queries, the rows a
// cache keeps and each head's keys and values are formed. Rotation, scores and softmax stay the shared ones
// (model/llama.cpp, attention/attention_scores.h), so the grids, the term toggles and the profiles work unchanged.
//
// Layout: a head's query and key are [rotary part (ropeDim, rotate_half order) ; content part (nopeDim)], so the
// rotary pairs come first as in any partial-rotary head, and the score's two terms are the two halves of one dot
// product (BandSplit::rotaryAndContent). The checkpoints store the rotary rows in interleaved pairs (2i, 2i + 1);
// the weights' row orders put them into rotate_half order at load, which leaves every dot product as it was.
#pragma once

#include "io/checkpoint.h"
#include "model/config.h"
#include "model/nn_ops.h"

#include <vector>

namespace attnscope::core {

// One layer's latent-attention weights, as views of the stored tensors (row orders, no copies).
struct LatentWeights {
    WeightView q;                     // [heads * headDim, hidden] (no query latent), rows in the head layout above
    WeightView qA, qANorm, qB;        // with a query latent: [qRank, hidden], [qRank], [heads * headDim, qRank]
    WeightView latent, ropeKey;       // rows of kv_a_proj_with_mqa: [kvRank, hidden], [ropeDim, hidden]
    WeightView latentNorm;            // [kvRank]
    WeightView keyContent;            // [heads * nopeDim, kvRank]: kv_b_proj's key rows (empty with keyContentByHead)
    std::vector<WeightView> keyContentByHead; // llama.cpp's split attn_k_b: per head [kvRank, nopeDim], read as x W
    WeightView value;                 // [heads * valueDim, kvRank]: kv_b_proj's value rows, or attn_v_b
};

class LatentAttention {
public:
    LatentAttention() = default;
    LatentAttention(const LlamaConfig::LatentAttention& shape, int heads, float eps);

    // Queries [rows, heads * (ropeDim + nopeDim)] of the normed hidden rows `x`, before rotation.
    void queries(const RowMatrix& x, const LatentWeights& w, RowMatrix& q) const;
    // What a cache keeps per position: [normed latent (kvRank) ; rotary key before rotation (ropeDim)].
    void compress(const RowMatrix& x, const LatentWeights& w, RowMatrix& rows) const;
    int cacheWidth() const { return m_shape.kvRank + m_shape.ropeDim; }
    // Keys [k, heads * headDim] (every head: the shared rotary key, not yet rotated, then its content key) and values
    // [k, heads * valueDim] of `k` cached rows.
    void expand(const float* cached, int k, const LatentWeights& w, RowMatrix& keys, RowMatrix& values) const;

    // Row orders that put a checkpoint's rows into the layout above: q / q_b (per head [content ; rotary pairs
    // interleaved]), and the latent and rotary-key rows of kv_a_proj_with_mqa.
    std::vector<std::int32_t> queryRows() const;
    std::vector<std::int32_t> latentRows() const;
    std::vector<std::int32_t> ropeKeyRows() const;
    // kv_b_proj's rows ([heads * (nopeDim + valueDim), kvRank], per head key rows then value rows): keys or values.
    std::vector<std::int32_t> kvBRows(bool values) const;

private:
    LlamaConfig::LatentAttention m_shape;
    int m_heads = 0;
    float m_eps = 1e-6f;
};

} // namespace attnscope::core
