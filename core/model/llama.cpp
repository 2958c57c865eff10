// Llama-family forward pass. Shapes: q = segment length, m = carried keys, k = m + q, C = hidden size,
// H query heads and KV key/value heads of size d; query head n reads key/value head n / (H / KV).
#include "model/llama.h"

#include "io/mxfp4_pack.h"
#include "model/kv_cache.h"
#include "model/run_limits.h"
#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"
#include "util/checked_size.h"
#include "util/message_text.h"
#include "util/layer_buffer.h"
#include "util/stage_timer.h"

#include <cmath>
#include <cstring>
#include <optional>

namespace attnscope::core {

class LlamaModel::State final : public RunState {
public:
    int memLen = 0;
    std::optional<BandSplit> bands;
    std::optional<RunOptions::HeadRef> ablate;
    KvCache cache; // keys before rotation, and values, [rows, KV*d] per layer
    std::unique_ptr<RunState> clone() const override { return std::make_unique<State>(*this); }
    std::size_t bytes() const override { return cache.bytes(); }
};

namespace {

// out = x / sqrt(mean(x^2) + eps) * w, row by row: the same arithmetic as the grouped norm, on a copy.
void rmsNormRows(const RowMatrix& x, const WeightView& w, float eps, RowMatrix& out)
{
    out = x;
    rmsNormGroupsInPlace(out, 1, w, eps);
}



} // namespace

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
    const std::int64_t C = c.hidden, D = c.headDim, QD = c.nHead * D, KD = c.nKvHead * D;
    const DecoderNames& N = decoderNames(c.family);
    if (!c.fromGguf)
        m_textPlace = textModelPlace(*m_weights, N.embed.hf);
    const bool layerNorm = c.norm == LlamaConfig::Norm::Layer;
    if (c.qkv == LlamaConfig::Qkv::PerHead && c.nKvHead != c.nHead)
        throw Error(ErrorCode::BadConfig, "a per-head fused query_key_value needs as many key/value heads as heads",
                    m_weights->source());
    m_embed = weight(N.embed, -1, {c.vocabSize, C});
    m_norm = weight(N.norm, -1, {C});
    m_normBias = optionalWeight(N.normBias, -1, {C}, layerNorm);
    m_lmHead = c.tieEmbeddings ? m_embed : weight(N.lmHead, -1, {c.vocabSize, C});
    m_layers.reserve(static_cast<std::size_t>(c.nLayer));
    if (c.latentAttention())
        m_latent = LatentAttention(c.mla, c.nHead, c.rmsNormEps);
    const std::int64_t VD = static_cast<std::int64_t>(c.nHead) * c.valueDim(); // the heads' outputs, o_proj's input
    for (int l = 0; l < c.nLayer; ++l) {
        Layer L;
        const bool before = c.preNorms;
        L.attnNorm = optionalWeight(N.attnNorm, l, {C}, before);
        L.attnNormBias = optionalWeight(N.attnNormBias, l, {C}, before && layerNorm);
        if (c.latentAttention()) {
            loadLatentAttention(N, l, L);
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
        L.ffnNorm = optionalWeight(N.ffnNorm, l, {C}, before);
        L.ffnNormBias = optionalWeight(N.ffnNormBias, l, {C}, before && layerNorm);
        L.attnPostNorm = optionalWeight(N.attnPostNorm, l, {C}, c.postNorms);
        L.ffnPostNorm = optionalWeight(N.ffnPostNorm, l, {C}, c.postNorms);
        const bool perHead = c.qkNorm == LlamaConfig::QkNorm::PerHead;
        if (c.qkNorm != LlamaConfig::QkNorm::None) {
            L.qNorm = weight(N.qNorm, l, {perHead ? D : QD});
            L.kNorm = weight(N.kNorm, l, {perHead ? D : KD});
        }
        if (c.attentionSinks)
            L.sinks = weight(N.sinks, l, {c.nHead});
        const bool gated = c.mlp != LlamaConfig::Mlp::Gelu;
        const bool routes = c.routes(l);
        if (routes) {
            loadExperts(N, l, L);
        } else if (c.fusedGateUp) {
            splitGateUp(weight(N.gateUp, l, {2 * c.intermediate, C}), L.gate, L.up);
        } else {
            L.gate = optionalWeight(N.gate, l, {c.intermediate, C}, gated);
            L.up = weight(N.up, l, {c.intermediate, C});
        }
        if (!routes)
            L.down = weight(N.down, l, {C, c.intermediate});
        L.gateBias = optionalWeight(N.gateBias, l, {c.intermediate}, gated && c.mlpBias);
        L.upBias = optionalWeight(N.upBias, l, {c.intermediate}, c.mlpBias);
        L.downBias = optionalWeight(N.downBias, l, {C}, c.mlpBias);
        if (c.ggufInterleavedQK) {
            L.q = hfOrder(L.q, c.nHead);
            L.k = hfOrder(L.k, c.nKvHead);
            if (L.qBias)
                L.qBias = hfOrder(L.qBias, c.nHead);
            if (L.kBias)
                L.kBias = hfOrder(L.kBias, c.nKvHead);
        }
        if (c.normOffset != 0) // Gemma's (1 + w), on every RMSNorm weight
            for (WeightView* w : {&L.attnNorm, &L.ffnNorm, &L.attnPostNorm, &L.ffnPostNorm, &L.qNorm, &L.kNorm})
                *w = withOffset(*w, c.normOffset);
        m_layers.push_back(L);
    }
    if (c.normOffset != 0)
        m_norm = withOffset(m_norm, c.normOffset);

    // Rotation frequencies in float32, as the reference computes them: 1 / theta^(2i/r) over the r rotated
    // dimensions, then the scaling.
    const int half = c.rotated() / 2;
    m_invFreq.resize(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.rotated());
        const float base = static_cast<float>(std::pow(static_cast<double>(static_cast<float>(c.rope.theta)),
                                                       static_cast<double>(exponent)));
        float f = 1.0f / base;
        if (c.rope.scaling == RopeConfig::Scaling::LongRope) {
            // LongRoPE: 1 / (factor theta^(2i/r)) in float32 (factor product first, as the reference).
            const auto at = static_cast<std::size_t>(i);
            m_invFreqLong.push_back(1.0f / (c.rope.longFactors[at] * base));
            f = 1.0f / (c.rope.shortFactors[at] * base);
        } else if (!c.rope.freqDivisors.empty()) {
            f /= c.rope.freqDivisors[static_cast<std::size_t>(i)];
        } else if (c.rope.scaling == RopeConfig::Scaling::Linear) {
            f = static_cast<float>(f / c.rope.factor);
        } else if (c.rope.scaling == RopeConfig::Scaling::Yarn) {
            // Dimensions whose wavelength fits the original context many times keep their frequency, long ones are
            // divided by the factor, and a linear ramp over [low, high] joins them.
            const double d = c.rotated(), theta = c.rope.theta, L0 = c.rope.originalMaxPositions;
            auto correction = [&](double beta) { return d * std::log(L0 / (2.0 * M_PI * beta)) / (2.0 * std::log(theta)); };
            double low = correction(c.rope.betaFast), high = correction(c.rope.betaSlow);
            if (c.rope.truncate) {
                low = std::floor(low);
                high = std::ceil(high);
            }
            low = std::max(low, 0.0);
            high = std::min(high, d - 1);
            if (high == low)
                high += 0.001;
            const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
            f = static_cast<float>(f / c.rope.factor * ramp + f * (1.0 - ramp));
        } else if (c.rope.scaling == RopeConfig::Scaling::Llama3) {
            // Long wavelengths are divided by the factor, short ones kept, the band between interpolated.
            const double wavelen = 2.0 * M_PI / f;
            const double lowWavelen = c.rope.originalMaxPositions / c.rope.lowFreqFactor;
            const double highWavelen = c.rope.originalMaxPositions / c.rope.highFreqFactor;
            if (wavelen > lowWavelen) {
                f = static_cast<float>(f / c.rope.factor);
            } else if (wavelen >= highWavelen) {
                const double smooth = (c.rope.originalMaxPositions / wavelen - c.rope.lowFreqFactor) /
                                      (c.rope.highFreqFactor - c.rope.lowFreqFactor);
                f = static_cast<float>((1 - smooth) * f / c.rope.factor + smooth * f);
            }
        }
        m_invFreq[static_cast<std::size_t>(i)] = f;
    }
    if (c.localRopeTheta > 0) // Gemma 3's sliding layers turn with their own base (no scaling applies to them)
        for (int i = 0; i < half; ++i) {
            const float exponent = static_cast<float>(2 * i) / static_cast<float>(c.rotated());
            m_invFreqLocal.push_back(1.0f / static_cast<float>(std::pow(static_cast<double>(static_cast<float>(c.localRopeTheta)),
                                                                         static_cast<double>(exponent))));
        }

    m_info.family = c.family;
    m_info.source = std::move(source);
    m_info.layers = c.nLayer;
    m_info.heads = c.nHead;
    m_info.kvHeads = c.nKvHead;
    m_info.dModel = c.hidden;
    m_info.dHead = c.headDim;
    m_info.dValue = c.valueDim();
    m_info.vocabSize = c.vocabSize;
    m_info.defaultMemLen = c.slidingWindow > 0 ? c.slidingWindow - 1 : 0;
    m_info.defaultSegmentLen = std::min(c.maxPositions, 4096);
    m_info.maxSegmentLen = std::max(1, c.maxPositions);
    m_info.hasRelativeTerms = false;
    // MXFP4 blocks hold two values a byte; their scales are no parameters of their own.
    auto endsWith = [](const std::string& n, const char* tail) {
        const std::size_t k = std::strlen(tail);
        return n.size() >= k && n.compare(n.size() - k, k, tail) == 0;
    };
    m_info.parameterCount = sumOrMax(m_weights->countElements([&](const std::string& n) {
        return n.find("rope_freqs") == std::string::npos && !endsWith(n, "_scales");
    }), m_weights->countElements([&](const std::string& n) { return endsWith(n, "_blocks"); }));
    m_info.weightBytes = m_weights->storedBytes();
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
    if (c.latentAttention())
        pos += ", latent attention (latent " + std::to_string(c.mla.kvRank) +
               (c.mla.qRank > 0 ? ", query latent " + std::to_string(c.mla.qRank) : std::string()) + "; keys " +
               std::to_string(c.mla.nopeDim) + " content + " + std::to_string(c.mla.ropeDim) + " rotary, values " +
               std::to_string(c.mla.valueDim) + ")";
    if (c.experts > 0)
        pos += ", " + std::to_string(c.expertsUsed) + " of " + std::to_string(c.experts) + " experts per token" +
               (c.normTopK ? " (weights renormalised)" : "") +
               (c.sharedFfn > 0 ? " plus a shared expert" : "") +
               (c.denseLayers > 0 ? " after " + std::to_string(c.denseLayers) + " dense layer" + (c.denseLayers > 1 ? "s" : "") : "");
    if (c.attnSoftCap > 0)
        pos += ", scores soft-capped at " + formatNumber(c.attnSoftCap);
    if (c.attentionScale > 0 || c.residualScale != 1.0f || c.logitScale != 1.0f) // Granite's multipliers
        pos += ", embeddings x" + formatNumber(c.embeddingScale) + ", scores x" + formatNumber(c.scoreScale()) +
               ", block outputs x" + formatNumber(c.residualScale) + ", logits / " + formatNumber(c.logitScale);
    if (c.finalSoftCap > 0)
        pos += ", logits soft-capped at " + formatNumber(c.finalSoftCap);
    m_info.positions = pos + (c.modelType != "llama" ? " · " + c.modelType : "");
    m_info.weightTypes = m_weights->describeStorage();
    m_info.rotaryFrequencies = m_invFreq;
    m_info.can.causal = true;
    m_info.can.canCarryKeys = true;
    m_info.can.nextTokenLoss = true;
    m_info.can.interventions = true;
    m_info.can.decomposition = ScoreDecomposition::RotaryBands;
    if (c.latentAttention()) // its score is a rotary term plus a content term, shown as two fixed bands
        m_info.fixedTerms = BandSplit::rotaryAndContent(c.rotated() / 2);
    m_info.logitSoftCap = c.finalSoftCap;
    // Gemma scales by query_pre_attn_scalar^-1/2 and soft-caps; sliding layers carry their window.
    // DeepSeek's YaRN multiplies it by its mscale squared (RopeConfig::scoreFactor, 1 elsewhere).
    const float scale = c.scoreScale();
    for (int l = 0; l < c.nLayer; ++l) {
        LayerRule rule{scale, c.attnSoftCap, c.slides(l) ? c.slidingWindow : 0, c.rotates(l), {}};
        if (const WeightView& sk = m_layers[static_cast<std::size_t>(l)].sinks)
            rule.sinks.assign(sk.floats(), sk.floats() + sk.numel());
        m_info.layerRules.push_back(std::move(rule));
    }
    if (!c.slidingLayers.empty()) // global layers see everything: a sliding scan cannot carry just a window for them
        m_info.defaultMemLen = 0;
    m_info.can.experts = c.experts;
    describeSingleStream(m_info.layers, m_info.can.causal, m_info.heads, m_info.streams, m_info.sites);
}

std::unique_ptr<RunState> LlamaModel::newState(const RunOptions& options) const
{
    auto st = std::make_unique<State>();
    st->memLen = options.memLen.value_or(m_info.defaultMemLen);
    st->stop = options.stop;
    st->bands = options.bands;
    st->ablate = options.ablate;
    st->intervene = options.intervene;
    if (st->ablate && (st->ablate->layer < 0 || st->ablate->layer >= m_config.nLayer || st->ablate->head < 0 ||
                       st->ablate->head >= m_config.nHead))
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(st->ablate->head + 1) + " in layer " +
                                             std::to_string(st->ablate->layer + 1) + " to ablate");
    checkedMemoryLength(st->memLen, "", "");
    if (st->memLen < 0)
        throw Error(ErrorCode::BadInput, "the number of carried keys must be 0 or more, got " + std::to_string(st->memLen));
    if (st->bands && st->bands->pairs != m_config.rotated() / 2)
        throw Error(ErrorCode::BadInput, "frequency bands of " + std::to_string(st->bands->pairs) +
                                             " pairs do not fit heads of " + std::to_string(m_config.rotated() / 2) + " pairs");
    // Latent attention caches one compressed row per token and expands keys and values from it.
    st->cache = m_config.latentAttention() ? KvCache(m_config.nLayer, m_latent.cacheWidth(), 0)
                                           : KvCache(m_config.nLayer, m_config.nKvHead * m_config.headDim);
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
    return st;
}

LlamaModel::RotaryTable LlamaModel::rotaryTable(int positions, const std::vector<float>& frequencies) const
{
    const int half = m_config.rotated() / 2;
    // LongRoPE switches to its long factors once the sequence outgrows the original context, and scales cos and sin.
    const auto& rope = m_config.rope;
    const bool longRope = rope.scaling == RopeConfig::Scaling::LongRope;
    const auto& invFreq = longRope && positions > rope.originalMaxPositions ? m_invFreqLong : frequencies;
    const bool yarn = rope.scaling == RopeConfig::Scaling::Yarn;
    const float mscale = longRope || yarn ? static_cast<float>(rope.attentionFactor) : 1.0f;
    RotaryTable t;
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

// Rotates, in place, `rows` rows of `heads` head vectors (row t at x + t * stride, head n at + n * d) to positions
// firstPosition + t (Hugging Face rotate_half: dimension i pairs with i + d/2).
void LlamaModel::rotate(const RotaryTable& table, float* x, int rows, std::ptrdiff_t stride, int heads, int firstPosition) const
{
    const int d = m_config.headDim, half = m_config.rotated() / 2; // dimensions past 2 half do not turn
    for (int t = 0; t < rows; ++t) {
        const float* c = table.cos.data() + static_cast<std::size_t>(firstPosition + t) * half;
        const float* s = table.sin.data() + static_cast<std::size_t>(firstPosition + t) * half;
        for (int h = 0; h < heads; ++h) {
            float* r = x + t * stride + h * d;
            for (int i = 0; i < half; ++i) {
                const float x1 = r[i], x2 = r[i + half];
                r[i] = x1 * c[i] - x2 * s[i];
                r[i + half] = x2 * c[i] + x1 * s[i];
            }
        }
    }
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

bool LlamaModel::loadMxfp4Experts(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::string gateUp = placedName(m_textPlace, tensorName("", N.expertGateUp.hf, l));
    const std::string down = placedName(m_textPlace, tensorName("", N.expertDown.hf, l));
    if (m_weights->has(gateUp) || !m_weights->has(gateUp + "_blocks"))
        return false;
    const std::int64_t C = c.hidden, F = c.expertFfn, E = c.experts;
    if (C % 32 != 0 || F % 32 != 0)
        throw Error(ErrorCode::BadConfig, "MXFP4 experts need widths that are multiples of 32", m_weights->source());
    // A stack [experts, out, in] of ggml MXFP4 rows, each expert one slice.
    auto stack = [&](const std::string& name, std::int64_t out, std::int64_t in) {
        const auto blocks = m_weights->bytesU8(name + "_blocks", {E, out, in / 32, 16});
        const auto scales = m_weights->bytesU8(name + "_scales", {E, out, in / 32});
        m_packed.push_back(packMxfp4(blocks, scales));
        m_packedSources.push_back(std::make_unique<WeightSource>(name + "_blocks", m_weights->fileOf(name + "_blocks")));
        WeightView whole;
        whole.bytes = m_packed.back().data();
        whole.type = GgmlType::MXFP4;
        whole.shape = {E, out, in};
        whole.source = m_packedSources.back().get();
        L.expertStacks.push_back(whole);
        std::vector<WeightView> slices;
        for (std::int64_t e = 0; e < E; ++e) {
            WeightView v = whole;
            v.shape = {out, in};
            v.bytes = whole.bytes + static_cast<std::size_t>(e) * static_cast<std::size_t>(out) * v.rowBytes();
            slices.push_back(v);
        }
        return slices;
    };
    // gate_up's rows are the interleaved output columns of the dense [in, 2 out] tensor: gate even, up odd.
    std::vector<std::int32_t> even(static_cast<std::size_t>(F)), odd(even.size());
    for (std::int64_t j = 0; j < F; ++j) {
        even[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * j);
        odd[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(2 * j + 1);
    }
    for (const WeightView& slice : stack(gateUp, 2 * F, C)) {
        L.expertGate.push_back(rowsOf(slice, even));
        L.expertUp.push_back(rowsOf(slice, odd));
    }
    L.expertDown = stack(down, C, F);
    // The interleaved bias [experts, 2 out] split the same way.
    const WeightView bias = m_weights->getFloat(placedName(m_textPlace, tensorName("", N.expertGateUpBias.hf, l)), {E, 2 * F});
    std::vector<float> gateBias(static_cast<std::size_t>(E * F)), upBias(gateBias.size());
    for (std::int64_t i = 0; i < E * F; ++i) {
        gateBias[static_cast<std::size_t>(i)] = bias.floats()[2 * i];
        upBias[static_cast<std::size_t>(i)] = bias.floats()[2 * i + 1];
    }
    m_owned.push_back(std::move(gateBias));
    L.expertGateBias = WeightView::ofFloats(m_owned.back().data(), {E, F});
    m_owned.push_back(std::move(upBias));
    L.expertUpBias = WeightView::ofFloats(m_owned.back().data(), {E, F});
    L.expertDownBias = m_weights->getFloat(placedName(m_textPlace, tensorName("", N.expertDownBias.hf, l)), {E, C});
    return true;
}

void LlamaModel::loadExperts(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden, F = c.expertFfn, E = c.experts;
    L.router = weight(N.router, l, {E, C});
    if (c.routerBias)
        L.routerBias = weight(N.routerBias, l, {E});
    // A stack [experts, rows, cols] as one view per expert, read in place (its values checked whole, once).
    auto slices = [&](const WeightView& stack, const Shape& one, std::vector<WeightView>& out) {
        L.expertStacks.push_back(stack);
        for (std::int64_t e = 0; e < E; ++e) {
            WeightView v = stack;
            v.shape = one;
            v.bytes = stack.bytes + static_cast<std::size_t>(e) * static_cast<std::size_t>(one[0]) * v.rowBytes();
            out.push_back(v);
        }
    };
    auto expertBias = [&](const TensorName& name, std::int64_t width) { // [experts, width] as float32
        return m_weights->getFloat(placedName(m_textPlace, tensorName("", c.fromGguf ? name.gguf : name.hf, l)), {E, width});
    };
    const bool interleaved = !c.fromGguf && N.expertGateUp.hf && !c.fusedGateUp; // gpt-oss's Hugging Face layout
    if (interleaved && loadMxfp4Experts(N, l, L))
        return;
    if (interleaved) {
        // gpt-oss's Hugging Face layout: [experts, in, out] (no transpose), gate and up columns interleaved.
        slices(weight(N.expertGateUp, l, {E, C, 2 * F}), {C, 2 * F}, L.expertGateUp);
        slices(weight(N.expertDown, l, {E, F, C}), {F, C}, L.expertDown);
        L.expertGateUpBias = expertBias(N.expertGateUpBias, 2 * F);
        L.expertDownBias = expertBias(N.expertDownBias, C);
        return;
    }
    if (c.sharedFfn > 0) {
        if (c.fusedGateUp) {
            splitGateUp(weight(N.sharedGateUp, l, {2 * c.sharedFfn, C}), L.sharedGate, L.sharedUp);
        } else {
            L.sharedGate = weight(N.sharedGate, l, {c.sharedFfn, C});
            L.sharedUp = weight(N.sharedUp, l, {c.sharedFfn, C});
        }
        L.sharedDown = weight(N.sharedDown, l, {C, c.sharedFfn});
    }
    int firstRole = 0;
    if (c.fusedGateUp) { // Granite-MoE (Hugging Face): [experts, 2 F, C], each expert's gate rows, then its up rows
        std::vector<WeightView> fused;
        slices(weight(N.expertGateUp, l, {E, 2 * F, C}), {2 * F, C}, fused);
        for (const WeightView& one : fused) {
            L.expertGate.emplace_back();
            L.expertUp.emplace_back();
            splitGateUp(one, L.expertGate.back(), L.expertUp.back());
        }
        firstRole = 2;
    }
    const TensorName* roles[3] = {&N.expertGate, &N.expertUp, &N.expertDown};
    std::vector<WeightView>* lists[3] = {&L.expertGate, &L.expertUp, &L.expertDown};
    for (int r = firstRole; r < 3; ++r) {
        const bool down = r == 2;
        const Shape one = down ? Shape{C, F} : Shape{F, C};
        if (c.fromGguf || std::string(roles[r]->hf).find("{e}") == std::string::npos) { // a stack [experts, out, in]
            slices(weight(*roles[r], l, {E, one[0], one[1]}), one, *lists[r]);
        } else {
            for (std::int64_t e = 0; e < E; ++e) {
                std::string name = placedName(m_textPlace, tensorName("", roles[r]->hf, l));
                name.replace(name.find("{e}"), 3, std::to_string(e));
                lists[r]->push_back(m_weights->get(name, one));
            }
        }
    }
    if (c.expertBiases) {
        L.expertGateBias = expertBias(N.expertGateBias, F);
        L.expertUpBias = expertBias(N.expertUpBias, F);
        L.expertDownBias = expertBias(N.expertDownBias, C);
    }
}

void LlamaModel::mixtureOfExperts(const RowMatrix& in, const Layer& L, RowMatrix& out, Routing& route) const
{
    const auto& c = m_config;
    const int T = static_cast<int>(in.rows()), E = c.experts, K = c.expertsUsed;
    for (const auto& stack : L.expertStacks) // a GGUF stack's values are checked whole, once
        stack.checkFinite();
    RowMatrix logits;
    multiplyTransposed(in, L.router, logits);
    if (L.routerBias)
        logits.rowwise() += asVector(L.routerBias);
    route.logits.assign(logits.data(), logits.data() + logits.size());
    route.probs.resize(static_cast<std::size_t>(T) * E);
    route.ids.resize(static_cast<std::size_t>(T) * K);
    route.weights.resize(static_cast<std::size_t>(T) * K);
    std::vector<std::vector<int>> tokensOf(static_cast<std::size_t>(E));
    std::vector<int> order(static_cast<std::size_t>(E));
    std::vector<float> groupScores;
    // The probabilities with the experts outside the groupsUsed best groups (a group's score: its best expert) at 0.
    auto limitedToGroups = [&](const float* p, int experts, std::vector<float>& kept) -> const float* {
        const int G = c.expertGroups, per = experts / G;
        std::vector<std::pair<float, int>> groups(static_cast<std::size_t>(G));
        for (int g = 0; g < G; ++g)
            groups[static_cast<std::size_t>(g)] = {*std::max_element(p + g * per, p + (g + 1) * per), g};
        std::partial_sort(groups.begin(), groups.begin() + c.groupsUsed, groups.end(),
                          [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        kept.assign(static_cast<std::size_t>(experts), 0.0f);
        for (int i = 0; i < c.groupsUsed; ++i) {
            const int g = groups[static_cast<std::size_t>(i)].second;
            std::copy(p + g * per, p + (g + 1) * per, kept.begin() + g * per);
        }
        return kept.data();
    };
    for (int t = 0; t < T; ++t) {
        float* p = route.probs.data() + static_cast<std::size_t>(t) * E;
        const float* z = logits.row(t).data();
        std::copy_n(z, E, p);
        if (!c.softmaxOverChosen)
            softmaxInPlace(p, E, nullptr);
        // The K highest experts (probabilities, or gpt-oss's logits), highest first (ties: the lower index); with
        // expert groups (DeepSeek-V2), only among the groups whose best expert is highest.
        const float* choose = c.expertGroups > 1 ? limitedToGroups(p, E, groupScores) : p;
        for (int e = 0; e < E; ++e)
            order[static_cast<std::size_t>(e)] = e;
        std::partial_sort(order.begin(), order.begin() + K, order.end(),
                          [&](int a, int b) { return choose[a] > choose[b] || (choose[a] == choose[b] && a < b); });
        if (c.softmaxOverChosen) { // weights: a softmax over the chosen logits, shown scattered (0 elsewhere)
            std::vector<float> chosen(static_cast<std::size_t>(K));
            for (int k = 0; k < K; ++k)
                chosen[static_cast<std::size_t>(k)] = z[order[static_cast<std::size_t>(k)]];
            softmaxInPlace(chosen.data(), K, nullptr);
            std::fill(p, p + E, 0.0f);
            for (int k = 0; k < K; ++k)
                p[order[static_cast<std::size_t>(k)]] = chosen[static_cast<std::size_t>(k)];
        }
        double sum = 0;
        for (int k = 0; k < K; ++k)
            sum += p[order[static_cast<std::size_t>(k)]];
        for (int k = 0; k < K; ++k) {
            const int e = order[static_cast<std::size_t>(k)];
            route.ids[static_cast<std::size_t>(t) * K + k] = e;
            route.weights[static_cast<std::size_t>(t) * K + k] =
                (c.normTopK ? static_cast<float>(p[e] / sum) : p[e]) * c.routedScale;
            tokensOf[static_cast<std::size_t>(e)].push_back(t);
        }
    }
    // Only the chosen experts run, each on the rows routed to it.
    out = RowMatrix::Zero(T, c.hidden);
    RowMatrix rows, gate, up, down;
    for (int e = 0; e < E; ++e) {
        const auto& tokens = tokensOf[static_cast<std::size_t>(e)];
        if (tokens.empty())
            continue;
        rows.resize(static_cast<Eigen::Index>(tokens.size()), c.hidden);
        for (std::size_t i = 0; i < tokens.size(); ++i)
            rows.row(static_cast<Eigen::Index>(i)) = in.row(tokens[i]);
        const auto ue = static_cast<std::size_t>(e);
        if (!L.expertGateUp.empty()) { // gpt-oss (Hugging Face): one [in, 2 out] product, gate even, up odd columns
            RowMatrix gu;
            multiply(rows, L.expertGateUp[ue], gu);
            gu.rowwise() += ConstVectorMap(L.expertGateUpBias.floats() + ue * static_cast<std::size_t>(gu.cols()), gu.cols());
            gate.resize(gu.rows(), gu.cols() / 2);
            up.resize(gu.rows(), gu.cols() / 2);
            for (Eigen::Index j = 0; j < gate.cols(); ++j) {
                gate.col(j) = gu.col(2 * j);
                up.col(j) = gu.col(2 * j + 1);
            }
        } else {
            multiplyTransposed(rows, L.expertGate[ue], gate);
            multiplyTransposed(rows, L.expertUp[ue], up);
            if (L.expertGateBias) {
                gate.rowwise() += ConstVectorMap(L.expertGateBias.floats() + ue * c.expertFfn, c.expertFfn);
                up.rowwise() += ConstVectorMap(L.expertUpBias.floats() + ue * c.expertFfn, c.expertFfn);
            }
        }
        if (c.swigluLimit > 0) { // gpt-oss: clamped, (up + 1) * gate * sigmoid(alpha gate)
            const float lim = c.swigluLimit, alpha = c.swigluAlpha;
            gate = gate.cwiseMin(lim);
            up = up.cwiseMax(-lim).cwiseMin(lim);
            gate.array() = (up.array() + 1.0f) * gate.array() / (1.0f + (-alpha * gate.array()).exp());
        } else {
            gate.array() = gate.array() / (1.0f + (-gate.array()).exp()) * up.array();
        }
        if (!L.expertGateUp.empty())
            multiply(gate, L.expertDown[ue], down);
        else
            multiplyTransposed(gate, L.expertDown[ue], down);
        if (L.expertDownBias)
            down.rowwise() += ConstVectorMap(L.expertDownBias.floats() + ue * c.hidden, c.hidden);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const int t = tokens[i];
            float w = 0;
            for (int k = 0; k < K; ++k)
                if (route.ids[static_cast<std::size_t>(t) * K + k] == e)
                    w = route.weights[static_cast<std::size_t>(t) * K + k];
            out.row(t) += w * down.row(static_cast<Eigen::Index>(i));
        }
    }
    if (L.sharedGate) { // DeepSeek: the shared expert runs on every token, unweighted
        multiplyTransposed(in, L.sharedGate, gate);
        multiplyTransposed(in, L.sharedUp, up);
        gate.array() = gate.array() / (1.0f + (-gate.array()).exp()) * up.array();
        multiplyTransposed(gate, L.sharedDown, out, true);
    }
}

void LlamaModel::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<State&>(baseState);
    const auto& c = m_config;
    const int q = static_cast<int>(ids.size());
    SegmentDriver::checkIds(ids, c.vocabSize);
    SegmentDriver::checkLength(q, m_info.maxSegmentLen,
                               "the model's context of " + std::to_string(m_info.maxSegmentLen) + " positions");
    SegmentDriver run(st, observer, *m_weights);
    const int C = c.hidden, H = c.nHead, KV = c.nKvHead, d = c.headDim, dv = c.valueDim();
    auto normRows = [this](const RowMatrix& in, const WeightView& w, const WeightView& b, RowMatrix& out) {
        familyNorm(in, w, b, out);
    };
    std::optional<StageScope> embedding(std::in_place, Stage::Embedding);
    RowMatrix x(q, C);
    for (int t = 0; t < q; ++t)
        weightRow(m_embed, ids[static_cast<std::size_t>(t)], x.row(t).data());
    if (c.embeddingScale != 1.0f) // Gemma's sqrt(hidden) (rounded to float32 first, as the reference), Granite's multiplier
        x *= c.embeddingScale;
    const int m = st.cache.begin(st.memLen);
    const int k = m + q;
    // Query i (position m + i) sees key j when j <= m + i and, on a sliding layer, m + i - j < window. Every layer
    // slides alike (Mistral) or none does: one mask; Gemma mixes them: the segment's mask is the global layers' and
    // each layer gets its own.
    struct Visible {
        std::vector<std::uint8_t> mask;
        std::vector<VisibleSpan> spans;
    };
    auto visible = [&](int window) {
        Visible v{std::vector<std::uint8_t>(static_cast<std::size_t>(q) * k, 0), std::vector<VisibleSpan>(static_cast<std::size_t>(q))};
        for (int i = 0; i < q; ++i) {
            const int lo = window > 0 ? std::max(0, m + i - window + 1) : 0;
            v.spans[static_cast<std::size_t>(i)] = {lo, m + i - lo + 1};
            for (int j = 0; j < k; ++j)
                v.mask[static_cast<std::size_t>(i) * k + j] = (j < lo || j > m + i) ? 1 : 0;
        }
        return v;
    };
    const bool mixed = !c.slidingLayers.empty() && c.slidingWindow > 0;
    const Visible global = visible(mixed ? 0 : c.slidingWindow);
    const Visible local = mixed ? visible(c.slidingWindow) : Visible{};
    const auto& mask = global.mask;
    SegmentView sv;
    sv.embedding = x.data();
    sv.mask = mask.data();
    run.begin({q, m, C}, sv);

    const RotaryTable table = rotaryTable(k, m_invFreq);
    const RotaryTable localTable = m_invFreqLocal.empty() ? RotaryTable{} : rotaryTable(k, m_invFreqLocal);
    const int bandCount = run.wantTerms() && st.bands ? st.bands->count() : 0;
    const std::size_t perLayer = static_cast<std::size_t>(H) * q * k;
    AttentionCapture keep = run.kept(H);
    LayerBuffer bandTerms(static_cast<std::size_t>(bandCount) * perLayer);
    RowMatrix a, Q(q, H * d), Knew(q, KV * d), Vnew(q, KV * d), K(k, KV * d), V, heads(q, H * dv), attnOut(q, C);
    RowMatrix hGate, hUp, ff;
    embedding.reset();
    Intervention* hooks = st.intervene;
    auto hook = [&](Activation what, int l, RowMatrix& rows, int groups, int width, int firstPosition) {
        hooks->onActivation(what, l, {rows.data(), static_cast<int>(rows.rows()), rows.cols(), groups, width, firstPosition});
    };
    for (int l = hooks ? hooks->firstLayer() : 0; l < c.nLayer; ++l) {
        run.checkStop();
        if (hooks)
            hook(Activation::Residual, l, x, 1, C, m);
        const auto& L = m_layers[static_cast<std::size_t>(l)];
        const bool slides = mixed && c.slides(l);
        const Visible& seen = slides ? local : global;
        const RotaryTable& layerTable = slides && !m_invFreqLocal.empty() ? localTable : table;
        const LayerRule& rule = m_info.layerRules[static_cast<std::size_t>(l)];
        if (L.attnNorm) {
            StageScope timed(Stage::Norms);
            normRows(x, L.attnNorm, L.attnNormBias, a);
        }
        const RowMatrix& attnIn = L.attnNorm ? a : x;
        if (c.latentAttention()) {
            // The cache keeps the latent rows; this layer's keys and values are expanded from all of them.
            StageScope timed(Stage::Projections);
            m_latent.queries(attnIn, L.mla, Q);
            m_latent.compress(attnIn, L.mla, Knew);
            st.cache.append(l, Knew.data(), nullptr, q);
            m_latent.expand(st.cache.keys(l), k, L.mla, K, V);
        } else {
            StageScope timed(Stage::Projections);
            linear(attnIn, L.q, L.qBias, Q);
            linear(attnIn, L.k, L.kBias, Knew);
            linear(attnIn, L.v, L.vBias, Vnew);
        }
        if (L.qNorm) { // before rotation, and before the keys enter the cache
            StageScope timed(Stage::Norms);
            const int qGroups = c.qkNorm == LlamaConfig::QkNorm::PerHead ? H : 1;
            const int kGroups = c.qkNorm == LlamaConfig::QkNorm::PerHead ? KV : 1;
            rmsNormGroupsInPlace(Q, qGroups, L.qNorm, c.rmsNormEps);
            rmsNormGroupsInPlace(Knew, kGroups, L.kNorm, c.rmsNormEps);
        }
        if (hooks) { // latent attention: keys and values as expanded from every cached row (positions 0..)
            hook(Activation::Queries, l, Q, H, d, m);
            hook(Activation::Keys, l, c.latentAttention() ? K : Knew, KV, d, c.latentAttention() ? 0 : m);
            hook(Activation::Values, l, c.latentAttention() ? V : Vnew, KV, dv, c.latentAttention() ? 0 : m);
        }
        if (!c.latentAttention()) {
            StageScope timed(Stage::Copies);
            st.cache.append(l, Knew.data(), Vnew.data(), q);
            K = Eigen::Map<const RowMatrix>(st.cache.keys(l), k, KV * d);
        }
        {
            // Queries at positions m.., every key (cached ones too) at 0..: angles stay small, scores depend on i - j only.
            StageScope timed(Stage::Rotary);
            if (c.rotates(l)) { // a NoPE layer (SmolLM3) uses q and k as projected
                rotate(layerTable, Q.data(), q, H * d, H, m);
                rotate(layerTable, K.data(), k, KV * d, KV, 0);
            }
        }

        ScoreInputs in = ScoreInputs::ofShape(q, k, m, H, KV, d);
        in.queries = RowSource::strided(Q.data(), H * d);
        in.keys = RowSource::strided(K.data(), KV * d);
        if (st.bands)
            in.bands = &*st.bands;
        in.spans = seen.spans.data();
        in.scale = rule.scale;
        in.softCap = rule.softCap;
        in.valueDim = dv;
        if (L.sinks)
            in.sinks = L.sinks.floats();
        for (int b = 0; b < bandCount; ++b)
            keep.terms[b] = bandTerms.data() + static_cast<std::size_t>(b) * perLayer;
        const float* values = c.latentAttention() ? V.data() : st.cache.values(l);
        attendAllHeads(in, values, KV * dv, heads.data(), H * dv, keep);
        if (hooks) {
            hooks->onAttention(l, in, values, KV * dv, {heads.data(), q, H * dv, H, dv, m});
            hook(Activation::HeadOutputs, l, heads, H, dv, m);
        }
        if (st.ablate && st.ablate->layer == l)
            heads.middleCols(static_cast<Eigen::Index>(st.ablate->head) * dv, dv).setZero();
        {
            StageScope timed(Stage::Projections);
            linear(heads, L.o, L.oBias, attnOut);
        }
        if (L.attnPostNorm) {
            StageScope timed(Stage::Norms);
            rmsNormGroupsInPlace(attnOut, 1, L.attnPostNorm, c.rmsNormEps);
        }
        if (c.residualScale != 1.0f) // Granite: what each block adds to the stream is scaled
            attnOut *= c.residualScale;
        // Sequential residual: the MLP reads the attention's sum; parallel (GPT-NeoX): both read the layer input.
        RowMatrix h = x + attnOut;
        const RowMatrix& mlpSource = c.parallelResidual ? x : h;
        if (L.ffnNorm) {
            StageScope timed(Stage::Norms);
            normRows(mlpSource, L.ffnNorm, L.ffnNormBias, a);
        }
        const RowMatrix& ffnIn = L.ffnNorm ? a : mlpSource;
        Routing route;
        const bool routes = c.routes(l);
        if (routes) {
            StageScope timed(Stage::FeedForward);
            mixtureOfExperts(ffnIn, L, ff, route);
        } else {
            StageScope timed(Stage::FeedForward);
            if (c.mlp == LlamaConfig::Mlp::GatedSilu) {
                linear(ffnIn, L.gate, L.gateBias, hGate);
                linear(ffnIn, L.up, L.upBias, hUp);
                // silu(gate) * up, in Eigen's vectorised exp (a scalar std::exp per element cost a sixth of the block)
                hGate.array() = hGate.array() / (1.0f + (-hGate.array()).exp()) * hUp.array();
            } else if (c.mlp == LlamaConfig::Mlp::GatedGeluTanh) { // Gemma's GeGLU: gelu_tanh(gate) * up
                linear(ffnIn, L.gate, L.gateBias, hGate);
                linear(ffnIn, L.up, L.upBias, hUp);
                geluNewInPlace(hGate);
                hGate.array() *= hUp.array();
            } else {
                linear(ffnIn, L.up, L.upBias, hGate);
                geluErfInPlace(hGate);
            }
            linear(hGate, L.down, L.downBias, ff);
        }
        if (L.ffnPostNorm) {
            StageScope timed(Stage::Norms);
            rmsNormGroupsInPlace(ff, 1, L.ffnPostNorm, c.rmsNormEps);
        }
        if (c.residualScale != 1.0f)
            ff *= c.residualScale;
        x = h + ff;

        LayerView lv;
        lv.heads = H;
        lv.inputs = in;
        for (int b = 0; b < bandCount; ++b)
            lv.terms[b] = keep.terms[b];
        lv.mask = seen.mask.data();
        lv.kvHeads = KV;
        lv.headDim = d;
        lv.attnOutput = attnOut.data();
        lv.headMix = heads.data();
        lv.hidden = x.data();
        if (routes) {
            lv.experts = c.experts;
            lv.expertsUsed = c.expertsUsed;
            lv.routerLogits = route.logits.data();
            lv.routerProbs = route.probs.data();
            lv.expertIds = route.ids.data();
            lv.expertWeights = route.weights.data();
        }
        run.layerDone(l, lv);
    }
    st.cache.finish();
    if (hooks)
        hook(Activation::Residual, c.nLayer, x, 1, C, m);

    RowMatrix normed, logits;
    run.end([&](SegmentEndView& ev) {
        RowMatrix tail;
        readOutRows(rowsFrom(x, ev.firstLogitRow, tail), normed, logits);
        ev.lnF = normed.data();
        ev.logits = logits.data();
        ev.vocab = c.vocabSize;
    });
}

void LlamaModel::familyNorm(const RowMatrix& in, const WeightView& w, const WeightView& b, RowMatrix& out) const
{
    if (m_config.norm == LlamaConfig::Norm::Layer)
        layerNormRows(in, w, b, m_config.rmsNormEps, out);
    else
        rmsNormRows(in, w, m_config.rmsNormEps, out);
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
    const int H = c.nHead, d = c.valueDim();
    RowMatrix parts;
    multiplyTransposed(headSlices(headMixRow, H, d), L.o, parts); // [H, hidden]: o_proj of each head alone
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
