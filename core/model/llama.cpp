// Llama-family decoders: reading the weights by the family's tensor-name table, and the model's self-description. The
// forward is model/llama_blocks.cpp, the mixture of experts model/experts.cpp.
#include "model/llama.h"

#include "model/llama_parts.h"
#include "model/run_limits.h"
#include "model/tensor_names.h"
#include "util/error.h"
#include "util/checked_size.h"
#include "util/message_text.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnscope::core {

WeightView LlamaModel::weight(const TensorName& name, int layer, const Shape& shape) const
{
    const char* pattern = m_config.fromGguf ? name.gguf : name.hf;
    if (!pattern)
        throw Error(ErrorCode::MissingTensor, std::string("this family has no such tensor in ") +
                                                  (m_config.fromGguf ? "GGUF files" : "Hugging Face folders"),
                    m_weights->source());
    const std::string tensor = placedName(m_textPlace, tensorName("", pattern, layer));
    // Matrices stay as stored; vectors (norms, biases) are small and become float32.
    return shape.size() == 1 ? m_weights->getFloat(tensor, shape) : m_weights->get(tensor, shape);
}

WeightView LlamaModel::optionalWeight(const TensorName& name, int layer, const Shape& shape, bool wanted) const
{
    return wanted ? weight(name, layer, shape) : WeightView{};
}

void LlamaModel::splitGateUp(const WeightView& fused, WeightView& gate, WeightView& up)
{
    const auto width = static_cast<std::int32_t>(fused.shape[0] / 2);
    std::vector<std::int32_t> gateRows(static_cast<std::size_t>(width)), upRows(gateRows.size());
    for (std::int32_t r = 0; r < width; ++r) {
        gateRows[static_cast<std::size_t>(r)] = r;
        upRows[static_cast<std::size_t>(r)] = width + r;
    }
    gate = rowsOf(fused, gateRows);
    up = rowsOf(fused, upRows);
}

WeightView LlamaModel::rowsOf(const WeightView& w, const std::vector<std::int32_t>& rows)
{
    if (w.shape.size() == 2) { // a matrix: the view reads the chosen rows in this order, nothing is copied
        auto order = std::make_shared<std::vector<std::int32_t>>(rows.size());
        for (std::size_t r = 0; r < rows.size(); ++r)
            (*order)[r] = w.rowOrder ? (*w.rowOrder)[static_cast<std::size_t>(rows[r])] : rows[r];
        WeightView v = w;
        v.rowOrder = std::move(order);
        v.shape = {static_cast<std::int64_t>(rows.size()), w.shape[1]};
        return v;
    }
    // A bias: a few floats, picked into a copy of our own.
    std::vector<float> out(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r)
        out[r] = w.floats()[rows[r]];
    m_owned.push_back(std::move(out));
    return WeightView::ofFloats(m_owned.back().data(), {static_cast<std::int64_t>(rows.size())});
}

WeightView LlamaModel::withOffset(const WeightView& w, float offset)
{
    if (!w)
        return w;
    std::vector<float> out(w.floats(), w.floats() + w.numel());
    for (auto& v : out)
        v += offset;
    m_owned.push_back(std::move(out));
    return WeightView::ofFloats(m_owned.back().data(), w.shape);
}

WeightView LlamaModel::hfOrder(const WeightView& w, int heads)
{
    // GGUF row n d + 2 i + j holds Hugging Face row n d + j d/2 + i (rotated dimensions only; llama rotates all).
    const int d = m_config.headDim, half = d / 2;
    std::vector<std::int32_t> order(static_cast<std::size_t>(heads) * d);
    for (int n = 0; n < heads; ++n)
        for (int j = 0; j < 2; ++j)
            for (int i = 0; i < half; ++i)
                order[static_cast<std::size_t>(n * d + j * half + i)] = n * d + 2 * i + j;
    return rowsOf(w, order);
}

// q, k and v of a fused [q; k; v] or per-head tensor (weight or bias), as views of its rows.
void LlamaModel::splitQkv(const WeightView& fused, WeightView& q, WeightView& k, WeightView& v)
{
    const auto& c = m_config;
    const int d = c.headDim, H = c.nHead, KV = c.nKvHead;
    std::vector<std::int32_t> rq, rk, rv;
    if (c.qkv == LlamaConfig::Qkv::Blocks) {
        for (int r = 0; r < H * d; ++r)
            rq.push_back(r);
        for (int r = 0; r < KV * d; ++r) {
            rk.push_back(H * d + r);
            rv.push_back(H * d + KV * d + r);
        }
    } else { // per head: [q_n; k_n; v_n] for head n (as many key/value heads as query heads)
        for (int n = 0; n < H; ++n)
            for (int i = 0; i < d; ++i) {
                rq.push_back(n * 3 * d + i);
                rk.push_back(n * 3 * d + d + i);
                rv.push_back(n * 3 * d + 2 * d + i);
            }
    }
    q = rowsOf(fused, rq);
    k = rowsOf(fused, rk);
    v = rowsOf(fused, rv);
}

LlamaModel::LlamaModel(LlamaConfig config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden;
    const DecoderNames& N = decoderNames(c.family);
    if (!c.fromGguf)
        m_textPlace = textModelPlace(*m_weights, N.embed.hf);
    if (c.qkv == LlamaConfig::Qkv::PerHead && c.nKvHead != c.nHead)
        throw Error(ErrorCode::BadConfig, "a per-head fused query_key_value needs as many key/value heads as heads",
                    m_weights->source());
    m_embed = weight(N.embed, -1, {c.vocabSize, C});
    m_norm = weight(N.norm, -1, {C});
    if (c.normOffset != 0) // Gemma's (1 + w)
        m_norm = withOffset(m_norm, c.normOffset);
    m_normBias = optionalWeight(N.normBias, -1, {C}, c.norm == LlamaConfig::Norm::Layer);
    m_lmHead = c.tieEmbeddings ? m_embed : weight(N.lmHead, -1, {c.vocabSize, C});
    if (c.latentAttention())
        m_latent = LatentAttention(c.mla, c.nHead, c.rmsNormEps);
    m_layers.reserve(static_cast<std::size_t>(c.nLayer));
    for (int l = 0; l < c.nLayer; ++l)
        loadLayer(N, l);
    // Rotation frequencies in float32, as the reference computes them (model/rotary.h).
    m_invFreq = rotaryFrequencies(c);
    if (c.rope.scaling == RopeConfig::Scaling::LongRope)
        m_invFreqLong = rotaryFrequencies(c, true);
    if (c.localRopeTheta > 0) // Gemma 3's sliding layers turn with their own base (no scaling applies to them)
        m_invFreqLocal = plainRotaryFrequencies(c.localRopeTheta, c.rotated());
    describe(std::move(source));
}

void LlamaModel::loadLayer(const DecoderNames& N, int l)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden;
    const bool layerNorm = c.norm == LlamaConfig::Norm::Layer;
    Layer L;
    // Nemotron-H's blocks have a mixer or an MLP: each with its norm only.
    const bool mixes = c.mixer(l) != Mixer::None, ffn = c.hasFfn(l);
    L.attnNorm = optionalWeight(N.attnNorm, l, {C}, c.preNorms && mixes);
    L.attnNormBias = optionalWeight(N.attnNormBias, l, {C}, c.preNorms && mixes && layerNorm);
    if (c.mixer(l) == Mixer::ShortConv)
        loadShortConv(N, l, L);
    else if (c.mixer(l) == Mixer::DeltaRule)
        loadDeltaNet(N, l, L);
    else if (c.mixer(l) == Mixer::StateSpace)
        loadMamba(N, l, L);
    else if (mixes) // attention (an MLP block has no mixer to read)
        loadAttention(N, l, L);
    L.ffnNorm = optionalWeight(N.ffnNorm, l, {C}, c.preNorms && ffn);
    L.ffnNormBias = optionalWeight(N.ffnNormBias, l, {C}, c.preNorms && ffn && layerNorm);
    L.attnPostNorm = optionalWeight(N.attnPostNorm, l, {C}, c.postNorms);
    L.ffnPostNorm = optionalWeight(N.ffnPostNorm, l, {C}, c.postNorms);
    if (ffn)
        loadFeedForward(N, l, L);
    if (c.normOffset != 0) // Gemma's (1 + w), on every RMSNorm weight
        for (WeightView* w : {&L.attnNorm, &L.ffnNorm, &L.attnPostNorm, &L.ffnPostNorm, &L.qNorm, &L.kNorm})
            *w = withOffset(*w, c.normOffset);
    m_layers.push_back(L);
}

void LlamaModel::loadAttention(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden, D = c.headDim, QD = c.nHead * D, KD = c.nKvHead * D;
    const std::int64_t VD = static_cast<std::int64_t>(c.nHead) * c.valueDim(); // the heads' outputs, o_proj's input
    if (c.latentAttention()) {
        loadLatentAttention(N, l, L);
    } else if (c.qkv == LlamaConfig::Qkv::Separate && c.attnOutputGate) {
        // Qwen3.5: per head the query's d rows, then its gate's d rows.
        const WeightView qg = weight(N.q, l, {2 * QD, C});
        std::vector<std::int32_t> queryRows, gateRows;
        for (std::int64_t r = 0; r < 2 * QD; ++r)
            (r % (2 * D) < D ? queryRows : gateRows).push_back(static_cast<std::int32_t>(r));
        L.q = rowsOf(qg, queryRows);
        L.qGate = rowsOf(qg, gateRows);
        L.k = weight(N.k, l, {KD, C});
        L.v = weight(N.v, l, {KD, C});
    } else if (c.qkv == LlamaConfig::Qkv::Separate) {
        L.q = weight(N.q, l, {QD, C});
        L.k = weight(N.k, l, {KD, C});
        L.v = weight(N.v, l, {KD, C});
        L.qBias = optionalWeight(N.qBias, l, {QD}, c.qkvBias);
        L.kBias = optionalWeight(N.kBias, l, {KD}, c.qkvBias);
        L.vBias = optionalWeight(N.vBias, l, {KD}, c.qkvBias);
    } else {
        splitQkv(weight(N.qkv, l, {QD + 2 * KD, C}), L.q, L.k, L.v);
        if (c.qkvBias)
            splitQkv(weight(N.qkvBias, l, {QD + 2 * KD}), L.qBias, L.kBias, L.vBias);
    }
    L.o = weight(N.o, l, {C, VD});
    L.oBias = optionalWeight(N.oBias, l, {C}, c.oBias);
    const bool perHead = c.qkNorm == LlamaConfig::QkNorm::PerHead;
    if (c.qkNorm != LlamaConfig::QkNorm::None) {
        L.qNorm = weight(N.qNorm, l, {perHead ? D : QD});
        L.kNorm = weight(N.kNorm, l, {perHead ? D : KD});
    }
    if (c.attentionSinks)
        L.sinks = weight(N.sinks, l, {c.nHead});
    if (c.ggufInterleavedQK) { // llama.cpp's converter interleaved the rotary pairs of q and k
        L.q = hfOrder(L.q, c.nHead);
        L.k = hfOrder(L.k, c.nKvHead);
        if (L.qBias)
            L.qBias = hfOrder(L.qBias, c.nHead);
        if (L.kBias)
            L.kBias = hfOrder(L.kBias, c.nKvHead);
    }
}

void LlamaModel::loadFeedForward(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden;
    const bool gated = c.mlp != LlamaConfig::Mlp::Gelu && c.mlp != LlamaConfig::Mlp::ReluSquared;
    if (c.routes(l)) {
        loadExperts(N, l, L);
        return;
    }
    if (c.fusedGateUp) {
        splitGateUp(weight(N.gateUp, l, {2 * c.intermediate, C}), L.gate, L.up);
    } else {
        L.gate = optionalWeight(N.gate, l, {c.intermediate, C}, gated);
        L.up = weight(N.up, l, {c.intermediate, C});
    }
    L.down = weight(N.down, l, {C, c.intermediate});
    L.gateBias = optionalWeight(N.gateBias, l, {c.intermediate}, gated && c.mlpBias);
    L.upBias = optionalWeight(N.upBias, l, {c.intermediate}, c.mlpBias);
    L.downBias = optionalWeight(N.downBias, l, {C}, c.mlpBias);
}

void LlamaModel::loadShortConv(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden, W = c.convWidth;
    L.convIn = weight(N.convIn, l, {3 * C, C});
    L.convTaps = convolutionTaps(N.convTaps, l, C, W);
    L.convOut = weight(N.convOut, l, {C, C});
}

std::vector<int> LlamaModel::fileValueHeads() const
{
    const auto& d = m_config.deltaNet;
    std::vector<int> fileHead(static_cast<std::size_t>(d.valueHeads));
    const int ratio = d.valueHeads / d.keyHeads;
    for (int h = 0; h < d.valueHeads; ++h) // GGUF head (h % R) Hk + h / R holds Hugging Face head h
        fileHead[static_cast<std::size_t>(h)] = m_config.ggufTiledValueHeads ? (h % ratio) * d.keyHeads + h / ratio : h;
    return fileHead;
}

namespace {
// Where Qwen3-Next's grouped projections keep each row: per key head kh, in_proj_qkvz holds q (dk), k (dk), then
// v and z of its R value heads (R dv each), and in_proj_ba b then a of them (R each); value head kh R + j.
struct GroupedDeltaRows {
    std::vector<std::int32_t> qkv, z, b, a;
};
GroupedDeltaRows groupedDeltaRows(const LlamaConfig::DeltaNet& d)
{
    GroupedDeltaRows out;
    const int R = d.valueHeads / d.keyHeads, block = 2 * d.keyDim + 2 * R * d.valueDim;
    auto at = [&](int kh, int offset) { return static_cast<std::int32_t>(kh * block + offset); };
    for (int part = 0; part < 2; ++part) // q of every key head, then k of every key head
        for (int kh = 0; kh < d.keyHeads; ++kh)
            for (int e = 0; e < d.keyDim; ++e)
                out.qkv.push_back(at(kh, part * d.keyDim + e));
    for (int kh = 0; kh < d.keyHeads; ++kh)
        for (int e = 0; e < R * d.valueDim; ++e) {
            out.qkv.push_back(at(kh, 2 * d.keyDim + e)); // v: the value heads in order kh R + j
        }
    for (int kh = 0; kh < d.keyHeads; ++kh)
        for (int e = 0; e < R * d.valueDim; ++e)
            out.z.push_back(at(kh, 2 * d.keyDim + R * d.valueDim + e));
    for (int kh = 0; kh < d.keyHeads; ++kh)
        for (int j = 0; j < R; ++j) {
            out.b.push_back(static_cast<std::int32_t>(kh * 2 * R + j));
            out.a.push_back(static_cast<std::int32_t>(kh * 2 * R + R + j));
        }
    return out;
}
} // namespace

WeightView LlamaModel::valueHeadRows(const WeightView& w, int width, const std::vector<int>& fileHead)
{
    std::vector<std::int32_t> rows;
    for (int p : fileHead)
        for (int e = 0; e < width; ++e)
            rows.push_back(p * width + e);
    return rowsOf(w, rows);
}

void LlamaModel::loadDeltaNet(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const auto& d = c.deltaNet;
    const std::int64_t C = c.hidden, KW = d.keyWidth(), VW = d.valueWidth(), Hv = d.valueHeads, K = d.convWidth;
    const std::int64_t CD = d.convChannels();
    const std::vector<int> fileHead = fileValueHeads();
    // q | k rows as stored, the v rows (and every per-value-head tensor) in Hugging Face's head order.
    std::vector<std::int32_t> qkvRows;
    for (std::int64_t r = 0; r < 2 * KW; ++r)
        qkvRows.push_back(static_cast<std::int32_t>(r));
    for (int p : fileHead)
        for (int e = 0; e < d.valueDim; ++e)
            qkvRows.push_back(static_cast<std::int32_t>(2 * KW + p * d.valueDim + e));
    if (c.groupedQkvz) { // Qwen3-Next's in_proj_qkvz: the rows of each key head together
        const GroupedDeltaRows rows = groupedDeltaRows(d);
        const WeightView qkvz = weight(N.deltaQkv, l, {CD + VW, C});
        L.dQkv = rowsOf(qkvz, rows.qkv);
        L.dZ = rowsOf(qkvz, rows.z);
    } else {
        L.dQkv = rowsOf(weight(N.deltaQkv, l, {CD, C}), qkvRows);
        L.dZ = valueHeadRows(weight(N.deltaZ, l, {VW, C}), d.valueDim, fileHead);
    }
    if (c.groupedBa) { // in_proj_ba / ssm_ba: b then a of each key head's value heads
        const GroupedDeltaRows rows = groupedDeltaRows(d);
        const WeightView ba = weight(N.deltaB, l, {2 * Hv, C});
        L.dB = rowsOf(ba, rows.b);
        L.dA = rowsOf(ba, rows.a);
    } else {
        L.dB = valueHeadRows(weight(N.deltaB, l, {Hv, C}), 1, fileHead);
        L.dA = valueHeadRows(weight(N.deltaA, l, {Hv, C}), 1, fileHead);
    }
    const WeightView conv = convolutionTaps(N.deltaConv, l, CD, K);
    std::vector<float> ordered(static_cast<std::size_t>(CD * K));
    for (std::int64_t r = 0; r < CD; ++r) // the taps of channel r, read from its row in the file
        std::copy_n(conv.floats() + static_cast<std::int64_t>(qkvRows[static_cast<std::size_t>(r)]) * K, K,
                    ordered.begin() + r * K);
    m_owned.push_back(std::move(ordered));
    L.dConvTaps = WeightView::ofFloats(m_owned.back().data(), {CD, K});
    L.dDtBias = valueHeadRows(weight(N.deltaDtBias, l, {Hv}), 1, fileHead);
    // The decay rate -exp(A_log): Hugging Face stores A_log, llama.cpp's converter the rate itself.
    L.dDecay = decayRates(valueHeadRows(weight(N.deltaDecay, l, {Hv}), 1, fileHead));
    L.dNorm = weight(N.deltaNorm, l, {d.valueDim});
    L.dOut = weight(N.deltaOut, l, {C, VW});
}

WeightView LlamaModel::decayRates(const WeightView& stored)
{
    std::vector<float> rate(stored.floats(), stored.floats() + stored.numel());
    if (!m_config.fromGguf) // Hugging Face stores A_log; llama.cpp's converter -exp(A_log) itself
        for (float& v : rate)
            v = -std::exp(v);
    m_owned.push_back(std::move(rate));
    return WeightView::ofFloats(m_owned.back().data(), {stored.numel()});
}

WeightView LlamaModel::convolutionTaps(const TensorName& name, int l, std::int64_t channels, std::int64_t width) const
{
    const char* pattern = m_config.fromGguf ? name.gguf : name.hf;
    const std::string tensor = placedName(m_textPlace, tensorName("", pattern, l));
    WeightView taps = m_config.fromGguf ? m_weights->getFloat(tensor, {channels, width})
                                        : m_weights->getFloat(tensor, {channels, 1, width});
    taps.shape = {channels, width};
    return taps;
}

void LlamaModel::loadMamba(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const auto& m = c.mamba;
    const std::int64_t C = c.hidden, H = m.heads, I = m.inner(), CD = m.convChannels();
    L.mIn = weight(N.mambaIn, l, {I + CD + H, C});
    L.mConvTaps = convolutionTaps(N.mambaConv, l, CD, m.convWidth);
    L.mConvBias = optionalWeight(N.mambaConvBias, l, {CD}, m.convBias);
    L.mDtBias = weight(N.mambaDtBias, l, {H});
    // A = -exp(A_log): Hugging Face stores A_log, llama.cpp's converter A itself ({1, heads}).
    // GGUF keeps A and D as {1, heads}: [heads, 1] row-major.
    const WeightView decay = c.fromGguf ? m_weights->getFloat(placedName(m_textPlace, tensorName("", N.mambaDecay.gguf, l)), {H, 1})
                                        : weight(N.mambaDecay, l, {H});
    L.mDecay = decayRates(decay);
    L.mSkip = c.fromGguf ? m_weights->getFloat(placedName(m_textPlace, tensorName("", N.mambaSkip.gguf, l)), {H, 1})
                         : weight(N.mambaSkip, l, {H});
    // The norm's weight: [inner] in Hugging Face files, {inner / groups, groups} in llama.cpp's (the same numbers).
    L.mNorm = c.fromGguf ? m_weights->getFloat(placedName(m_textPlace, tensorName("", N.mambaNorm.gguf, l)),
                                               {m.groups, I / m.groups})
                         : weight(N.mambaNorm, l, {I});
    L.mOut = weight(N.mambaOut, l, {C, I});
}

void LlamaModel::loadLatentAttention(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const auto& m = c.mla;
    const std::int64_t C = c.hidden, H = c.nHead, D = c.headDim;
    LatentWeights& w = L.mla;
    if (m.qRank > 0) {
        w.qA = weight(N.qA, l, {m.qRank, C});
        w.qANorm = weight(N.qANorm, l, {m.qRank});
        w.qB = rowsOf(weight(N.qB, l, {H * D, m.qRank}), m_latent.queryRows());
    } else {
        w.q = rowsOf(weight(N.q, l, {H * D, C}), m_latent.queryRows());
    }
    const WeightView kvA = weight(N.kvA, l, {m.kvRank + m.ropeDim, C});
    w.latent = rowsOf(kvA, m_latent.latentRows());
    w.ropeKey = rowsOf(kvA, m_latent.ropeKeyRows());
    w.latentNorm = weight(N.kvANorm, l, {m.kvRank});
    const char* kvB = c.fromGguf ? N.kvB.gguf : N.kvB.hf;
    if (!c.fromGguf || m_weights->has(tensorName("", kvB, l))) {
        const WeightView up = weight(N.kvB, l, {H * (m.nopeDim + m.valueDim), m.kvRank});
        w.keyContent = rowsOf(up, m_latent.kvBRows(false));
        w.value = rowsOf(up, m_latent.kvBRows(true));
        return;
    }
    // llama.cpp's split: attn_k_b [heads, kvRank, nopeDim] (each head's key rows transposed) and attn_v_b
    // [heads, valueDim, kvRank], read in place.
    const WeightView kb = weight(N.kB, l, {H, m.kvRank, m.nopeDim});
    for (std::int64_t h = 0; h < H; ++h) {
        WeightView one = kb;
        one.shape = {m.kvRank, m.nopeDim};
        one.bytes = kb.bytes + static_cast<std::size_t>(h) * static_cast<std::size_t>(m.kvRank) * one.rowBytes();
        w.keyContentByHead.push_back(one);
    }
    L.expertStacks.push_back(kb); // its values are checked whole, once, as a stack of experts is
    WeightView vb = weight(N.vB, l, {H, m.valueDim, m.kvRank});
    vb.shape = {H * m.valueDim, m.kvRank};
    w.value = vb;
}

namespace {

// The position scheme and the family's other mechanics in words, for the Model dock and `info`.
std::string positionsText(const LlamaConfig& c)
{
    // Granite 4.0-H, Nemotron-H: no layer rotates; order comes from the causal mask and the recurrent layers.
    const bool noRotation = !c.noRopeLayers.empty() &&
                            std::all_of(c.noRopeLayers.begin(), c.noRopeLayers.end(), [](bool nope) { return nope; });
    if (noRotation)
        return std::string("no positions (NoPE): order from the causal mask") +
               (c.layerMixers.empty() ? "" : " and the recurrent layers") + ", context " + std::to_string(c.maxPositions);
    std::string pos = "rotary (theta " + std::to_string(static_cast<long long>(c.rope.theta)) + ")";
    if (c.rope.scaling == RopeConfig::Scaling::Llama3 || !c.rope.freqDivisors.empty())
        pos += ", llama3 frequency scaling";
    else if (c.rope.scaling == RopeConfig::Scaling::LongRope)
        pos += ", LongRoPE (short factors up to " + std::to_string(static_cast<long long>(c.rope.originalMaxPositions)) +
               " tokens)";
    if (c.rotated() < c.headDim)
        pos += ", " + std::to_string(c.rotated()) + " of " + std::to_string(c.headDim) + " dimensions rotate";
    else if (c.rope.scaling == RopeConfig::Scaling::Linear)
        pos += ", linear scaling x" + formatNumber(c.rope.factor);
    pos += ", context " + std::to_string(c.maxPositions);
    if (c.slidingWindow > 0)
        pos += ", sliding window " + std::to_string(c.slidingWindow);
    if (!c.slidingLayers.empty() && c.slidingWindow > 0) { // which layers slide, numbered from 1 as people read them
        int local = 0;
        for (int l = 0; l < c.nLayer; ++l)
            local += c.slides(l) ? 1 : 0;
        pos += " on " + std::to_string(local) + " of " + std::to_string(c.nLayer) + " layers (the others global)";
    }
    if (c.localRopeTheta > 0)
        pos += ", local layers' rotary base " + std::to_string(static_cast<long long>(c.localRopeTheta));
    if (!c.noRopeLayers.empty()) { // NoPE layers (SmolLM3), numbered from 1
        std::string nope;
        for (int l = 0; l < c.nLayer; ++l)
            if (!c.rotates(l))
                nope += (nope.empty() ? "" : ", ") + std::to_string(l + 1);
        if (!nope.empty())
            pos += ", no positions (NoPE) in layers " + nope;
    }
    return pos;
}

// A hybrid's layers of one kind, numbered from 1 as people read them ("1, 2, 4"); empty: none.
std::string layersWith(const LlamaConfig& c, Mixer kind)
{
    std::string out;
    for (int l = 0; l < c.nLayer; ++l)
        if (c.mixer(l) == kind)
            out += (out.empty() ? "" : ", ") + std::to_string(l + 1);
    return out;
}

// Latent attention, experts, soft caps and Granite's multipliers in words.
std::string mechanicsText(const LlamaConfig& c)
{
    std::string s;
    if (c.latentAttention())
        s += ", latent attention (latent " + std::to_string(c.mla.kvRank) +
             (c.mla.qRank > 0 ? ", query latent " + std::to_string(c.mla.qRank) : std::string()) + "; keys " +
             std::to_string(c.mla.nopeDim) + " content + " + std::to_string(c.mla.ropeDim) + " rotary, values " +
             std::to_string(c.mla.valueDim) + ")";
    if (c.experts > 0)
        s += ", " + std::to_string(c.expertsUsed) + " of " + std::to_string(c.experts) + " experts per token" +
             (c.normTopK ? " (weights renormalised)" : "") + (c.sharedFfn > 0 ? " plus a shared expert" : "") +
             (c.denseLayers > 0 ? " after " + std::to_string(c.denseLayers) + " dense layer" + (c.denseLayers > 1 ? "s" : "")
                                : "");
    if (c.attnSoftCap > 0)
        s += ", scores soft-capped at " + formatNumber(c.attnSoftCap);
    if (c.attentionScale > 0 || c.residualScale != 1.0f || c.logitScale != 1.0f) // Granite's multipliers
        s += ", embeddings x" + formatNumber(c.embeddingScale) + ", scores x" + formatNumber(c.scoreScale()) +
             ", block outputs x" + formatNumber(c.residualScale) + ", logits / " + formatNumber(c.logitScale);
    if (c.finalSoftCap > 0)
        s += ", logits soft-capped at " + formatNumber(c.finalSoftCap);
    const std::string conv = layersWith(c, Mixer::ShortConv);
    if (!conv.empty())
        s += ", short convolutions of width " + std::to_string(c.convWidth) + " in layers " + conv;
    const std::string delta = layersWith(c, Mixer::DeltaRule);
    if (!delta.empty())
        s += ", gated delta rule (" + std::to_string(c.deltaNet.valueHeads) + " value heads over " +
             std::to_string(c.deltaNet.keyHeads) + " key heads) in layers " + delta;
    if (c.attnOutputGate)
        s += ", attention output gates";
    const std::string mlps = layersWith(c, Mixer::None);
    if (!mlps.empty())
        s += ", MLP blocks without token mixing in layers " + mlps;
    const std::string scans = layersWith(c, Mixer::StateSpace);
    if (!scans.empty())
        s += ", Mamba-2 scans (" + std::to_string(c.mamba.heads) + " heads, " + std::to_string(c.mamba.groups) +
             (c.mamba.groups == 1 ? " group" : " groups") + ", state " + std::to_string(c.mamba.state) + ") in layers " + scans;
    return s;
}

bool endsWith(const std::string& n, const char* tail)
{
    const std::size_t k = std::strlen(tail);
    return n.size() >= k && n.compare(n.size() - k, k, tail) == 0;
}

} // namespace

void LlamaModel::describe(std::string source)
{
    const auto& c = m_config;
    m_info.family = c.family;
    m_info.source = std::move(source);
    m_info.layers = c.nLayer;
    m_info.heads = c.nHead;
    m_info.kvHeads = c.nKvHead;
    m_info.dModel = c.hidden;
    m_info.dHead = c.headDim;
    m_info.dValue = c.valueDim();
    m_info.vocabSize = c.vocabSize;
    // Global layers see everything: a sliding scan cannot carry just a window for them.
    m_info.defaultMemLen = c.slidingWindow > 0 && c.slidingLayers.empty() ? c.slidingWindow - 1 : 0;
    m_info.defaultSegmentLen = std::min(c.maxPositions, 4096);
    m_info.maxSegmentLen = std::max(1, c.maxPositions);
    // MXFP4 blocks hold two values a byte; their scales are no parameters of their own.
    m_info.parameterCount = sumOrMax(m_weights->countElements([&](const std::string& n) {
        return n.find("rope_freqs") == std::string::npos && !endsWith(n, "_scales");
    }), m_weights->countElements([&](const std::string& n) { return endsWith(n, "_blocks"); }));
    m_info.weightBytes = m_weights->storedBytes();
    m_info.positions = positionsText(c) + mechanicsText(c) + (c.modelType != "llama" ? " · " + c.modelType : "");
    m_info.weightTypes = m_weights->describeStorage();
    m_info.rotaryFrequencies = m_invFreq;
    m_info.can.causal = true;
    m_info.can.canCarryKeys = true;
    m_info.can.nextTokenLoss = true;
    // Patching recomputes attention heads from their probabilities; a gated head's gate, a convolution's or a delta
    // rule's state it does not: those models are not patched rather than patched wrongly.
    m_info.can.interventions = c.layerMixers.empty() && !c.attnOutputGate;
    m_info.can.decomposition = ScoreDecomposition::RotaryBands;
    m_info.can.experts = c.experts;
    if (c.latentAttention()) // its score is a rotary term plus a content term, shown as two fixed bands
        m_info.fixedTerms = BandSplit::rotaryAndContent(c.rotated() / 2);
    m_info.logitSoftCap = c.finalSoftCap;
    // Gemma scales by query_pre_attn_scalar^-1/2 and soft-caps; sliding layers carry their window. DeepSeek's YaRN
    // multiplies it by its mscale squared (RopeConfig::scoreFactor, 1 elsewhere).
    for (int l = 0; l < c.nLayer; ++l) {
        const Layer& L = m_layers[static_cast<std::size_t>(l)];
        LayerRule rule = LayerRule::of(c.scoreScale(), c.attnSoftCap, c.slides(l) ? c.slidingWindow : 0, c.rotates(l));
        if (L.sinks)
            rule.sinks.assign(L.sinks.floats(), L.sinks.floats() + L.sinks.numel());
        if (L.convTaps) { // a convolution's map reaches its width; its taps make the map with B and C
            rule = LayerRule::of(1.0f, 0.0f, c.convWidth, false);
            rule.convTaps.assign(L.convTaps.floats(), L.convTaps.floats() + L.convTaps.numel());
        }
        if (c.mixer(l) == Mixer::DeltaRule) // no rotary positions: order comes from the decays
            rule = LayerRule::of(1.0f / std::sqrt(static_cast<float>(c.deltaNet.keyDim)), 0.0f, 0, false);
        if (L.mDecay) { // a scan's map decays by each head's A
            rule = LayerRule::of(1.0f, 0.0f, 0, false);
            rule.stateDecay.assign(L.mDecay.floats(), L.mDecay.floats() + L.mDecay.numel());
        }
        m_info.layerRules.push_back(std::move(rule));
    }
    describeSingleStream(m_info.layers, m_info.can.causal, m_info.heads, m_info.streams, m_info.sites);
    // A convolution layer's site: its channels are its heads, each one number wide (C and B per channel). A delta-rule
    // layer's: its value heads, reading key heads of the key size.
    for (auto& site : m_info.sites) {
        site.mixer = c.mixer(site.layer);
        if (site.mixer == Mixer::ShortConv) {
            site.heads = site.kvHeads = c.hidden;
            site.headDim = 1;
        } else if (site.mixer == Mixer::DeltaRule) {
            site.heads = c.deltaNet.valueHeads;
            site.kvHeads = c.deltaNet.keyHeads;
            site.headDim = c.deltaNet.keyDim;
        } else if (site.mixer == Mixer::None) { // an MLP block: one identity grid
            site.heads = site.kvHeads = site.headDim = 1;
        } else if (site.mixer == Mixer::StateSpace) { // heads reading groups of B and C
            site.heads = c.mamba.heads;
            site.kvHeads = c.mamba.groups;
            site.headDim = c.mamba.state;
        }
    }
}

KvCache LlamaModel::newCache() const
{
    const auto& c = m_config;
    // Latent attention caches one compressed row per token and expands keys and values from it.
    if (c.latentAttention())
        return KvCache(c.nLayer, m_latent.cacheWidth(), 0);
    // A convolution layer keeps B (its map's keys) and B * x (what it convolves) of every row.
    std::vector<int> widths(static_cast<std::size_t>(c.nLayer), c.nKvHead * c.headDim);
    std::vector<int> valueWidths = widths;
    const auto& d = c.deltaNet;
    for (int l = 0; l < c.nLayer; ++l) {
        const auto at = static_cast<std::size_t>(l);
        if (c.mixer(l) == Mixer::ShortConv)
            widths[at] = valueWidths[at] = c.hidden;
        // A delta-rule layer: khat, beta and g of every row (its map's keys), and the rows before the convolution
        // with the convolved v (what the next rows convolve, and the values the rule writes).
        if (c.mixer(l) == Mixer::DeltaRule) {
            widths[at] = d.keyWidth() + 2 * d.valueHeads;
            valueWidths[at] = d.convChannels() + d.valueWidth();
        }
        // A scan: B and dt of every row (its map's keys), and xBC before the convolution with x after it.
        if (c.mixer(l) == Mixer::StateSpace) {
            widths[at] = c.mamba.groups * c.mamba.state + c.mamba.heads;
            valueWidths[at] = c.mamba.convChannels() + c.mamba.inner();
        }
        if (c.mixer(l) == Mixer::None) // an MLP block: one placeholder key per row, for its identity grid's shape
            widths[at] = 1, valueWidths[at] = 0;
    }
    return KvCache(widths, valueWidths);
}

std::unique_ptr<RunState> LlamaModel::newState(const RunOptions& options) const
{
    auto st = std::make_unique<State>();
    st->memLen = options.memLen.value_or(m_info.defaultMemLen);
    st->stop = options.stop;
    st->bands = options.bands;
    st->ablate = options.ablate;
    st->intervene = options.intervene;
    st->placed = options.placed;
    if (st->placed && st->placed->cols != m_config.hidden)
        throw Error(ErrorCode::BadInput, "placed rows of width " + std::to_string(st->placed->cols) +
                                             " do not fit the decoder's hidden size " + std::to_string(m_config.hidden));
    if (st->ablate && (st->ablate->layer < 0 || st->ablate->layer >= m_config.nLayer || st->ablate->head < 0 ||
                       st->ablate->head >= m_info.site(st->ablate->layer).heads))
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(st->ablate->head + 1) + " in layer " +
                                             std::to_string(st->ablate->layer + 1) + " to ablate");
    checkedMemoryLength(st->memLen, "", "");
    if (st->memLen < 0)
        throw Error(ErrorCode::BadInput, "the number of carried keys must be 0 or more, got " + std::to_string(st->memLen));
    if (st->bands && st->bands->pairs != m_config.rotated() / 2)
        throw Error(ErrorCode::BadInput, "frequency bands of " + std::to_string(st->bands->pairs) +
                                             " pairs do not fit heads of " + std::to_string(m_config.rotated() / 2) + " pairs");
    st->cache = newCache();
    return st;
}

std::unique_ptr<RunState> LlamaModel::resumeWithin(const RunState& segmentEnd, int keep) const
{
    const auto& end = dynamic_cast<const State&>(segmentEnd);
    auto st = std::make_unique<State>();
    st->memLen = end.memLen;
    st->bands = end.bands;
    st->ablate = end.ablate;
    st->intervene = end.intervene;
    st->stop = end.stop;
    st->cache = end.cache.resumedAt(keep);
    st->tokensSeen = end.tokensSeen - end.cache.segmentTokens() + keep;
    st->segmentsDone = end.segmentsDone - 1;
    st->placed = end.placed;
    for (const auto p : end.placedAt) // rows placed before the cut stay taken
        if (p < st->tokensSeen)
            st->placedAt.push_back(p);
    return st;
}

void LlamaModel::readOutRows(const RowMatrix& x, RowMatrix& normed, RowMatrix& logits) const
{
    familyNorm(x, m_norm, m_normBias, normed);
    multiplyTransposed(normed, m_lmHead, logits);
    if (m_config.logitScale != 1.0f) // Granite: logits divided by logits_scaling
        logits /= m_config.logitScale;
    if (m_config.finalSoftCap > 0) // Gemma 2: logits soft-capped
        logits = m_config.finalSoftCap * (logits / m_config.finalSoftCap).array().tanh().matrix();
}

bool LlamaModel::readOut(const float* hidden, int rows, std::vector<float>& out) const
{
    const RowMatrix x = ConstMatrixMap(hidden, rows, m_config.hidden);
    RowMatrix normed, logits;
    readOutRows(x, normed, logits);
    out.assign(logits.data(), logits.data() + logits.size());
    return true;
}

bool LlamaModel::headParts(int layer, const float* headMixRow, std::vector<float>& out) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(layer)];
    if (c.mixer(layer) != Mixer::Softmax && c.mixer(layer) != Mixer::ShortConv) // a gated norm, or no heads at all
        return false;
    // A convolution layer's heads are its channels, one number each, through out_proj.
    const bool conv = c.mixer(layer) == Mixer::ShortConv;
    const int H = conv ? c.hidden : c.nHead, d = conv ? 1 : c.valueDim();
    RowMatrix parts;
    multiplyTransposed(headSlices(headMixRow, H, d), conv ? L.convOut : L.o, parts); // [H, hidden]: each head alone
    if (L.attnPostNorm) {
        // The post-attention norm's factor at this position: 1 / rms of the whole projected output (with its bias).
        RowVector whole = parts.colwise().sum();
        if (L.oBias)
            whole += asVector(L.oBias);
        const double mean = whole.cast<double>().array().square().mean();
        const float inv = static_cast<float>(1.0 / std::sqrt(mean + c.rmsNormEps));
        for (Eigen::Index h = 0; h < parts.rows(); ++h)
            parts.row(h).array() *= inv * asVector(L.attnPostNorm).array();
    }
    if (c.residualScale != 1.0f) // Granite: each head's part joins the stream scaled, as the whole output does
        parts *= c.residualScale;
    out.assign(parts.data(), parts.data() + parts.size());
    return true;
}

bool LlamaModel::logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                                double& constant) const
{
    if (!unembeddingDirection(m_lmHead, token, residual, m_norm, m_normBias, m_config.rmsNormEps,
                              m_config.norm == LlamaConfig::Norm::Layer, m_config.hidden, direction, constant))
        return false;
    if (m_config.logitScale != 1.0f) { // Granite's logits are divided by logits_scaling
        for (float& v : direction)
            v /= m_config.logitScale;
        constant /= m_config.logitScale;
    }
    return true;
}

} // namespace attnscope::core
