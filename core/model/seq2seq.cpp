// The encoder-decoder forward pass. Shapes: S source tokens, T target tokens, C = dModel, H heads of width d (T5's
// d_kv; heads * d need not be C), F the feed-forward width, V the vocabulary.
#include "model/seq2seq.h"

#include "audio/audio_features.h"
#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {

// T5 has no architectural length limit; this bounds what one stream may hold (a run's position-bias tables are
// [heads, 2 klen - 1]).
constexpr int kMaxT5Tokens = 8192;

void siluInPlace(RowMatrix& x)
{
    x = x.array() / (1.0f + (-x.array()).exp());
}

} // namespace

EncoderDecoderModel::EncoderDecoderModel(Seq2SeqConfig config, std::shared_ptr<const Checkpoint> weights,
                                         std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const Seq2SeqNames& n = seq2seqNames(c.family, c.fromGguf);
    // BART's *ForConditionalGeneration files put everything under "model.", its *Model files do not.
    const std::string prefix = w.has(std::string(n.prefix) + n.embed) ? n.prefix : "";
    const std::string embedName = w.has(prefix + n.embed) || !n.embedAlt || !w.has(prefix + n.embedAlt)
                                      ? prefix + n.embed
                                      : prefix + n.embedAlt;
    m_embed = w.get(embedName, {c.vocabSize, c.dModel});
    if (c.tiedHead)
        m_head = m_embed;
    else
        m_head = w.get(n.lmHead, {c.vocabSize, c.dModel});
    if (c.finalLogitsBias && n.logitsBias && w.has(n.logitsBias))
        m_logitsBias = w.getFloat(n.logitsBias, {1, c.vocabSize});
    loadStack(Stack::Encoder, m_enc);
    loadStack(Stack::Decoder, m_dec);
    describe(std::move(source));
}

// The model's self-description: two streams, the encoder's sites then per decoder layer its self and cross site.
void EncoderDecoderModel::describe(std::string source)
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    m_info.family = c.family;
    m_info.source = std::move(source);
    m_info.layers = c.encLayers + c.decLayers;
    m_info.heads = c.heads;
    m_info.kvHeads = c.heads;
    m_info.dModel = c.dModel;
    m_info.dHead = c.dHead;
    m_info.vocabSize = c.vocabSize;
    m_info.defaultSegmentLen = maxStreamTokens();
    m_info.maxSegmentLen = maxStreamTokens();
    // Stored sinusoid tables (Marian's, a speech encoder's) are not parameters.
    const bool sinusoids = c.positions == Seq2SeqConfig::Positions::Sinusoidal;
    const bool audio = c.audioMels > 0;
    m_info.parameterCount = w.countElements([sinusoids, audio](const std::string& name) {
        return !(sinusoids && name.find("embed_positions") != std::string::npos) &&
               !(audio && name.find("encoder.embed_positions") != std::string::npos);
    });
    m_info.weightBytes = w.storedBytes();
    m_info.weightTypes = w.describeStorage();
    switch (c.positions) {
    case Seq2SeqConfig::Positions::RelativeBuckets:
        m_info.positions = "relative (learned bias in " + std::to_string(c.buckets) + " buckets, up to " +
                           std::to_string(c.maxDistance) + " tokens)";
        m_info.positionBiasReach = c.maxDistance;
        break;
    case Seq2SeqConfig::Positions::Learned:
        m_info.positions = audio ? "learned absolute, " + std::to_string(c.maxPositions) +
                                       " target tokens; the audio's sinusoidal, " + std::to_string(c.sourcePositions) +
                                       " frames of 20 ms"
                                 : "learned absolute, " + std::to_string(c.maxPositions) + " tokens per stream";
        break;
    case Seq2SeqConfig::Positions::Sinusoidal:
        m_info.positions = "sinusoidal absolute, " + std::to_string(c.maxPositions) + " tokens per stream";
        break;
    }
    // The target is causal and predicts its next token; both need the run's source.
    m_info.can.causal = true;
    m_info.can.nextTokenLoss = true;
    m_info.can.encoderDecoder = true;
    m_info.can.audio = audio;
    // A speech model's source is its audio frames: read whole, not typed.
    m_info.streams = {TokenStream{audio ? "audio" : "source", StreamRole::Read, -1, -1, !audio},
                      TokenStream{"target", StreamRole::Segments, c.decoderStart, c.eos, true}};
    const bool bias = c.positions == Seq2SeqConfig::Positions::RelativeBuckets;
    const int H = c.heads;
    for (int l = 0; l < c.encLayers; ++l)
        m_info.sites.push_back(AttentionSite{Stack::Encoder, l, SiteKind::Self, 0, 0, false, bias, Mixer::Softmax, H});
    for (int l = 0; l < c.decLayers; ++l) {
        m_info.sites.push_back(AttentionSite{Stack::Decoder, l, SiteKind::Self, 1, 1, true, bias, Mixer::Softmax, H});
        m_info.sites.push_back(AttentionSite{Stack::Decoder, l, SiteKind::Cross, 1, 0, false, false, Mixer::Softmax, H});
    }
    const float scale = c.scaleScores ? 1.0f / std::sqrt(static_cast<float>(c.dHead)) : 1.0f;
    m_info.layerRules.assign(m_info.sites.size(), LayerRule::of(scale, 0.0f, 0, true));
}

void EncoderDecoderModel::loadStack(Stack stack, StackWeights& out) const
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const Seq2SeqNames& names = seq2seqNames(c.family, c.fromGguf);
    const Seq2SeqStackNames& n = stack == Stack::Encoder ? names.enc : names.dec;
    const std::string p = w.has(tensorName(names.prefix, n.q, 0) + ".weight") ? names.prefix : "";
    const int layers = stack == Stack::Encoder ? c.encLayers : c.decLayers;
    const std::int64_t C = c.dModel, A = static_cast<std::int64_t>(c.heads) * c.dHead;
    const std::int64_t F = stack == Stack::Encoder ? c.encFfn : c.decFfn;
    auto linear = [&](const char* pattern, int l, std::int64_t outDim, std::int64_t inDim, bool bias = true) {
        const std::string base = tensorName(p, pattern, l);
        Linear lin{w.get(base + ".weight", {outDim, inDim}), {}};
        if (c.biases && bias)
            lin.b = w.getFloat(base + ".bias", {outDim});
        return lin;
    };
    auto norm = [&](const char* pattern, int l) {
        const std::string base = tensorName(p, pattern, l);
        Norm nm{w.getFloat(base + ".weight", {C}), {}};
        if (c.norm == Seq2SeqConfig::Norm::Layer)
            nm.b = w.getFloat(base + ".bias", {C});
        return nm;
    };
    for (int l = 0; l < layers; ++l) {
        Layer L;
        L.selfNorm = norm(n.selfNorm, l);
        L.q = linear(n.q, l, A, C);
        L.k = linear(n.k, l, A, C, c.keyBias);
        L.v = linear(n.v, l, A, C);
        L.o = linear(n.o, l, C, A);
        if (stack == Stack::Decoder) {
            L.crossNorm = norm(n.crossNorm, l);
            L.cq = linear(n.cq, l, A, C);
            L.ck = linear(n.ck, l, A, C, c.keyBias);
            L.cv = linear(n.cv, l, A, C);
            L.co = linear(n.co, l, C, A);
        }
        L.ffnNorm = norm(n.ffnNorm, l);
        if (c.gatedFfn) {
            L.ffnGate = linear(n.ffnGate, l, F, C);
            L.ffnIn = linear(n.ffnUp, l, F, C);
        } else {
            L.ffnIn = linear(n.ffnIn, l, F, C);
        }
        L.ffnOut = linear(n.ffnOut, l, C, F);
        out.layers.push_back(std::move(L));
    }
    const bool audio = stack == Stack::Encoder && c.audioMels > 0;
    if (audio) { // kernel 3: each output reads three input rows, the weights [C, in, 3] as one product
        auto conv = [&](const char* name, std::int64_t in) {
            const std::string base = tensorName(p, name, 0);
            Linear lin{w.get(base + ".weight", {C, in, 3}), w.getFloat(base + ".bias", {C})};
            lin.w.shape = {C, in * 3};
            return lin;
        };
        out.conv1 = conv(n.conv1, c.audioMels);
        out.conv2 = conv(n.conv2, C);
        out.posEmb = w.get(p + n.posEmb, {c.sourcePositions, C});
    } else if (c.positions == Seq2SeqConfig::Positions::Learned) {
        out.posEmb = w.get(p + n.posEmb, {c.maxPositions + c.positionOffset, C});
    }
    if (c.positions == Seq2SeqConfig::Positions::RelativeBuckets)
        out.relBias = w.getFloat(tensorName(p, n.relBias, 0) + ".weight", {c.buckets, c.heads});
    if (c.embeddingNorm)
        out.embNorm = norm(n.embNorm, -1);
    if (c.finalNorms)
        out.finalNorm = norm(n.finalNorm, -1);
}

// A run's place in the target: its source, the encoder's output once read, and every earlier target token's keys and
// values in the decoder's self-attention.
class EncoderDecoderModel::State final : public RunState {
public:
    std::shared_ptr<const std::vector<std::int32_t>> source;
    std::shared_ptr<const AudioFeatures> audio; // a speech model's source instead
    std::shared_ptr<const Encoded> encoded; // null until the first segment
    KvCache cache;
    std::unique_ptr<RunState> clone() const override { return std::make_unique<State>(*this); }
    std::size_t bytes() const override { return cache.bytes() + (encoded ? encoded->bytes() : 0); }
};

std::size_t EncoderDecoderModel::Encoded::bytes() const
{
    std::size_t b = static_cast<std::size_t>(hidden.size());
    for (std::size_t l = 0; l < crossK.size(); ++l)
        b += static_cast<std::size_t>(crossK[l].size() + crossV[l].size());
    return b * sizeof(float);
}

std::unique_ptr<RunState> EncoderDecoderModel::newState(const RunOptions& options) const
{
    refuseIntervention(options, m_info);
    if (m_config.audioMels > 0) {
        checkAudio(options);
        auto st = std::make_unique<State>();
        st->audio = options.audio;
        st->cache = KvCache(m_config.decLayers, m_config.heads * m_config.dHead);
        st->stop = options.stop;
        return st;
    }
    if (!options.source || options.source->empty())
        throw Error(ErrorCode::BadInput,
                    std::string(familyName(m_config.family)) +
                        " is an encoder-decoder model: it reads a source and writes a target. Give the source (the "
                        "Source box, --source, input_ids) and the target as the text.",
                    m_info.source);
    checkStream(*options.source, 0, "source");
    auto st = std::make_unique<State>();
    st->source = options.source;
    st->cache = KvCache(m_config.decLayers, m_config.heads * m_config.dHead);
    st->stop = options.stop;
    return st;
}

std::unique_ptr<RunState> EncoderDecoderModel::resumeWithin(const RunState& segmentEnd, int keep) const
{
    const auto& end = dynamic_cast<const State&>(segmentEnd);
    auto st = std::make_unique<State>();
    st->source = end.source;
    st->audio = end.audio;
    st->encoded = end.encoded;
    st->cache = end.cache.resumedAt(keep);
    st->stop = end.stop;
    st->tokensSeen = end.tokensSeen - end.cache.segmentTokens() + keep;
    st->segmentsDone = end.segmentsDone - 1;
    return st;
}

void EncoderDecoderModel::forwardSegment(RunState& state, std::span<const std::int32_t> ids,
                                         AttentionObserver& observer) const
{
    auto& st = dynamic_cast<State&>(state);
    const int T = static_cast<int>(ids.size());
    checkStream(ids, static_cast<int>(st.tokensSeen), "target");
    SegmentDriver drive(st, observer, *m_weights);
    const int P = st.cache.begin(std::numeric_limits<int>::max()); // the target so far: positions are absolute
    RowMatrix y;
    embed(Stack::Decoder, ids, P, y);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(T) * (P + T), 0);
    std::vector<VisibleSpan> selfSpans(static_cast<std::size_t>(T));
    for (int i = 0; i < T; ++i) {
        selfSpans[static_cast<std::size_t>(i)] = VisibleSpan{0, P + i + 1};
        for (int j = P + i + 1; j < P + T; ++j)
            mask[static_cast<std::size_t>(i) * (P + T) + j] = 1;
    }
    SegmentView view;
    view.embedding = y.data();
    view.mask = mask.data();
    drive.begin({T, P, m_config.dModel}, view);
    if (!st.encoded)
        st.encoded = encode(st, drive, observer);
    std::optional<BiasTable> bias;
    if (m_dec.relBias)
        bias = biasTable(Stack::Decoder, P + T);
    for (int l = 0; l < m_config.decLayers; ++l) {
        drive.checkStop();
        decoderLayer(l, st, y, P, selfSpans, bias ? &*bias : nullptr, drive);
    }
    finalNorm(y);
    std::vector<float> lnF, logits; // what the segment's end view points at
    drive.end([&](SegmentEndView& e) {
        const int first = e.firstLogitRow;
        lnF.assign(y.data() + static_cast<std::size_t>(first) * m_config.dModel, y.data() + y.size());
        logitsOf(y.bottomRows(T - first), logits);
        e.lnF = lnF.data();
        e.logits = logits.data();
        e.vocab = m_config.vocabSize;
        e.dModel = m_config.dModel;
    });
    st.cache.finish();
}

int EncoderDecoderModel::maxStreamTokens() const
{
    return m_config.positions == Seq2SeqConfig::Positions::RelativeBuckets ? kMaxT5Tokens : m_config.maxPositions;
}

int EncoderDecoderModel::siteOf(Stack stack, int layer, SiteKind kind) const
{
    if (stack == Stack::Encoder)
        return layer;
    return m_config.encLayers + 2 * layer + (kind == SiteKind::Cross ? 1 : 0);
}

void EncoderDecoderModel::checkStream(std::span<const std::int32_t> ids, int first, const char* what) const
{
    if (ids.empty())
        throw Error(ErrorCode::BadInput, std::string("the ") + what + " is empty: nothing to attend to");
    SegmentDriver::checkIds(ids, m_config.vocabSize);
    const int total = first + static_cast<int>(ids.size());
    if (total > maxStreamTokens())
        throw Error(ErrorCode::BadInput,
                    std::string("the ") + what + " has " + std::to_string(total) + " tokens; the model's positions hold " +
                        std::to_string(maxStreamTokens()) +
                        (m_config.positions == Seq2SeqConfig::Positions::RelativeBuckets ? " (a bound of attnscope's)"
                                                                                          : " (max_position_embeddings)"));
}

void EncoderDecoderModel::embed(Stack stack, std::span<const std::int32_t> ids, int firstPosition, RowMatrix& x) const
{
    const auto& c = m_config;
    const int n = static_cast<int>(ids.size());
    const StackWeights& sw = stack == Stack::Encoder ? m_enc : m_dec;
    x.resize(n, c.dModel);
    RowVector row(c.dModel);
    const float scale = c.scaleEmbedding ? std::sqrt(static_cast<float>(c.dModel)) : 1.0f;
    for (int t = 0; t < n; ++t) {
        weightRow(m_embed, ids[static_cast<std::size_t>(t)], x.row(t).data());
        if (c.scaleEmbedding)
            x.row(t) *= scale;
        const int p = firstPosition + t;
        if (sw.posEmb) {
            weightRow(*sw.posEmb, p + c.positionOffset, row.data());
            x.row(t) += row;
        } else if (c.positions == Seq2SeqConfig::Positions::Sinusoidal) {
            // Marian: sine in the first half of the columns, cosine in the second, computed in double and rounded to
            // float as the reference builds its table; per position used, so no table a config could size.
            const int half = c.dModel / 2;
            for (int i = 0; i < half; ++i) {
                const double angle = p / std::pow(10000.0, 2.0 * i / c.dModel);
                x(t, i) += static_cast<float>(std::sin(angle));
                x(t, half + i) += static_cast<float>(std::cos(angle));
            }
        }
    }
    if (sw.embNorm)
        norm(x, *sw.embNorm, x);
}

void EncoderDecoderModel::norm(const RowMatrix& x, const Norm& n, RowMatrix& out) const
{
    if (m_config.norm == Seq2SeqConfig::Norm::Layer) {
        layerNormRows(x, n.w, n.b, m_config.eps, out);
        return;
    }
    // T5's RMS norm: no mean subtraction, no bias; the mean square in float32 as the reference computes it.
    out.resize(x.rows(), x.cols());
    const auto w = asVector(n.w);
    for (Eigen::Index r = 0; r < x.rows(); ++r) {
        const float ms = x.row(r).squaredNorm() / static_cast<float>(x.cols());
        out.row(r) = (x.row(r) * (1.0f / std::sqrt(ms + m_config.eps))).cwiseProduct(w);
    }
}

void EncoderDecoderModel::project(const RowMatrix& x, const Linear& l, RowMatrix& out) const
{
    multiplyTransposed(x, l.w, out);
    if (l.b)
        out.rowwise() += asVector(l.b);
}

const RowMatrix& EncoderDecoderModel::sublayerInput(const RowMatrix& x, const Norm& n, RowMatrix& normed) const
{
    if (!m_config.preNorm)
        return x;
    norm(x, n, normed);
    return normed;
}

ScoreInputs EncoderDecoderModel::siteInputs(int site, int qlen, int klen, int mlen, const float* queries,
                                            const float* keys, const VisibleSpan* spans) const
{
    const int H = m_config.heads, A = H * m_config.dHead;
    ScoreInputs in = ScoreInputs::ofShape(qlen, klen, mlen, H, H, m_config.dHead);
    in.scale = m_info.layerRules[static_cast<std::size_t>(site)].scale;
    in.queries = RowSource::strided(queries, A);
    in.keys = RowSource::strided(keys, A);
    in.spans = spans;
    return in;
}

void EncoderDecoderModel::addResidual(RowMatrix& x, const RowMatrix& sublayer, const Norm& n) const
{
    x += sublayer;
    if (!m_config.preNorm) // post-norm (BART, Marian): the sum is normalised; pre-norm normalised the input
        norm(x, n, x);
}

void EncoderDecoderModel::feedForwardBlock(RowMatrix& x, const Layer& L, RowMatrix& normed, RowMatrix& out) const
{
    if (m_config.preNorm) {
        norm(x, L.ffnNorm, normed);
        feedForward(normed, L, out);
        x += out;
    } else {
        feedForward(x, L, out);
        addResidual(x, out, L.ffnNorm);
    }
}

void EncoderDecoderModel::feedForward(const RowMatrix& x, const Layer& L, RowMatrix& out) const
{
    RowMatrix inner, gate;
    project(x, L.ffnIn, inner);
    RowMatrix& act = m_config.gatedFfn ? gate : inner;
    if (m_config.gatedFfn)
        project(x, L.ffnGate, gate);
    switch (m_config.activation) {
    case Seq2SeqConfig::Activation::Relu: act = act.cwiseMax(0.0f); break;
    case Seq2SeqConfig::Activation::Gelu: geluErfInPlace(act); break;
    case Seq2SeqConfig::Activation::GeluNew: geluNewInPlace(act); break;
    case Seq2SeqConfig::Activation::Silu: siluInPlace(act); break;
    }
    if (m_config.gatedFfn)
        inner = inner.cwiseProduct(gate);
    project(inner, L.ffnOut, out);
}

int EncoderDecoderModel::positionBucket(Stack stack, int offset) const
{
    const auto& c = m_config;
    if (c.positions != Seq2SeqConfig::Positions::RelativeBuckets)
        return -1;
    // Exact buckets near, log-spaced up to maxDistance far; the logarithm in float32 as the reference evaluates it.
    auto spaced = [&](int n, int buckets) {
        const int exact = buckets / 2;
        if (n < exact)
            return n;
        const float far = std::log(static_cast<float>(n) / static_cast<float>(exact)) /
                          static_cast<float>(std::log(static_cast<double>(c.maxDistance) / exact)) *
                          static_cast<float>(buckets - exact);
        // The config check keeps far finite and at least 0; the bound keeps the table's index in range regardless.
        const float bounded = far > 0 ? std::min(far, static_cast<float>(buckets)) : 0.0f; // NaN too
        return std::clamp(exact + static_cast<int>(bounded), 0, buckets - 1);
    };
    if (stack == Stack::Encoder) { // bidirectional: half the buckets for keys after the query
        const int half = c.buckets / 2;
        return (offset > 0 ? half : 0) + spaced(std::abs(offset), half);
    }
    return spaced(std::max(-offset, 0), c.buckets);
}

float EncoderDecoderModel::positionBiasAt(Stack stack, int head, int offset) const
{
    const StackWeights& sw = stack == Stack::Encoder ? m_enc : m_dec;
    if (!sw.relBias)
        return 0.0f;
    return sw.relBias->floats()[static_cast<std::size_t>(positionBucket(stack, offset)) * m_config.heads + head];
}

EncoderDecoderModel::BiasTable EncoderDecoderModel::biasTable(Stack stack, int klen) const
{
    const int H = m_config.heads, width = 2 * klen - 1, center = klen - 1;
    const float* weights = (stack == Stack::Encoder ? m_enc : m_dec).relBias->floats(); // [buckets, heads]
    BiasTable t;
    t.values.assign(static_cast<std::size_t>(H) * width, 0.0f);
    t.buckets.assign(static_cast<std::size_t>(width), 0);
    for (int o = -(klen - 1); o <= klen - 1; ++o) {
        const int bucket = positionBucket(stack, o); // once per offset, not per head
        t.buckets[static_cast<std::size_t>(center + o)] = bucket;
        for (int h = 0; h < H; ++h)
            t.values[static_cast<std::size_t>(h) * width + center + o] = weights[static_cast<std::size_t>(bucket) * H + h];
    }
    t.bias = PositionBias{t.values.data(), width, center, t.buckets.data()};
    return t;
}

float EncoderDecoderModel::positionBiasAt(int site, int head, int offset) const
{
    const AttentionSite& s = m_info.site(site);
    return s.positionBias ? positionBiasAt(s.stack, head, offset) : 0.0f;
}

void EncoderDecoderModel::attend(ScoreInputs& in, const float* values, SegmentDriver& drive, LayerView& view,
                                 RowMatrix& heads) const
{
    const int A = m_config.heads * m_config.dHead;
    const AttentionCapture keep = drive.keptFor(m_config.heads, in.qlen, in.klen);
    heads.resize(in.qlen, A);
    attendAllHeads(in, values, A, heads.data(), A, keep);
    view.inputs = in;
    view.heads = m_config.heads;
    view.kvHeads = m_config.heads;
    view.headDim = m_config.dHead;
    view.qlen = in.qlen;
    view.klen = in.klen;
    view.mlen = in.mlen;
}

void EncoderDecoderModel::checkAudio(const RunOptions& options) const
{
    const auto& c = m_config;
    if (!options.audio)
        throw Error(ErrorCode::BadInput,
                    std::string(familyName(c.family)) +
                        " listens: it reads a recording and writes what it hears. Give the audio (File > Open Audio, "
                        "--audio, Python's audio=) or its log-mel features.",
                    m_info.source);
    const AudioFeatures& a = *options.audio;
    if (a.mels != c.audioMels || a.frames != 2 * c.sourcePositions ||
        a.values.size() != static_cast<std::size_t>(a.mels) * static_cast<std::size_t>(a.frames))
        throw Error(ErrorCode::BadInput,
                    "the audio features are " + std::to_string(a.mels) + " x " + std::to_string(a.frames) +
                        "; the model reads " + std::to_string(c.audioMels) + " mel bins x " +
                        std::to_string(2 * c.sourcePositions) + " frames",
                    m_info.source);
}

void EncoderDecoderModel::embedSource(const State& st, RowMatrix& x) const
{
    if (st.audio)
        embedAudio(*st.audio, x);
    else
        embed(Stack::Encoder, *st.source, 0, x);
}

// Two convolutions of kernel 3 with padding 1 (the second of stride 2), each followed by GELU, then the positions.
// Each output row's three input rows side by side, times the weights flattened the same way.
void EncoderDecoderModel::embedAudio(const AudioFeatures& audio, RowMatrix& x) const
{
    const int M = audio.mels, F = audio.frames, C = m_config.dModel, S = m_config.sourcePositions;
    RowMatrix rows = RowMatrix::Zero(F, static_cast<Eigen::Index>(M) * 3), hidden;
    for (int m = 0; m < M; ++m)
        for (int t = 0; t < F; ++t)
            for (int k = 0; k < 3; ++k)
                if (const int src = t + k - 1; src >= 0 && src < F)
                    rows(t, m * 3 + k) = audio.at(m, src);
    project(rows, *m_enc.conv1, hidden);
    geluErfInPlace(hidden);
    rows = RowMatrix::Zero(S, static_cast<Eigen::Index>(C) * 3);
    for (int j = 0; j < S; ++j)
        for (int k = 0; k < 3; ++k)
            if (const int src = 2 * j + k - 1; src >= 0 && src < F)
                for (int ch = 0; ch < C; ++ch)
                    rows(j, ch * 3 + k) = hidden(src, ch);
    project(rows, *m_enc.conv2, x);
    geluErfInPlace(x);
    RowVector row(C);
    for (int j = 0; j < S; ++j) {
        weightRow(*m_enc.posEmb, j, row.data());
        x.row(j) += row;
    }
}

std::shared_ptr<const EncoderDecoderModel::Encoded>
EncoderDecoderModel::encode(const State& st, SegmentDriver& drive, AttentionObserver& observer) const
{
    RowMatrix x;
    embedSource(st, x);
    const int S = static_cast<int>(x.rows());
    const RowMatrix embedding = x;
    std::vector<VisibleSpan> spans(static_cast<std::size_t>(S), VisibleSpan{0, S});
    std::optional<BiasTable> bias;
    if (m_enc.relBias)
        bias = biasTable(Stack::Encoder, S);
    for (int l = 0; l < m_config.encLayers; ++l) {
        drive.checkStop();
        encoderLayer(l, x, spans, bias ? &*bias : nullptr, drive);
    }
    if (m_enc.finalNorm)
        norm(x, *m_enc.finalNorm, x);
    StreamView stream{0, S, m_config.dModel, embedding.data(), x.data()};
    observer.onStream(stream);
    auto out = std::make_shared<Encoded>();
    out->hidden = std::move(x);
    for (const Layer& L : m_dec.layers) { // every decoder layer's cross-attention reads the same keys and values
        out->crossK.emplace_back();
        out->crossV.emplace_back();
        project(out->hidden, L.ck, out->crossK.back());
        project(out->hidden, L.cv, out->crossV.back());
    }
    m_weights->throwIfDamaged();
    return out;
}

void EncoderDecoderModel::encoderLayer(int l, RowMatrix& x, std::span<const VisibleSpan> spans, const BiasTable* bias,
                                       SegmentDriver& drive) const
{
    const Layer& L = m_enc.layers[static_cast<std::size_t>(l)];
    const int S = static_cast<int>(x.rows());
    RowMatrix h, q, k, v, heads, a, f;
    const RowMatrix& in = sublayerInput(x, L.selfNorm, h);
    project(in, L.q, q);
    project(in, L.k, k);
    project(in, L.v, v);
    LayerView view;
    view.site = siteOf(Stack::Encoder, l, SiteKind::Self);
    view.layer = l;
    ScoreInputs si = siteInputs(view.site, S, S, 0, q.data(), k.data(), spans.data());
    si.positionBias = bias ? &bias->bias : nullptr;
    attend(si, v.data(), drive, view, heads);
    project(heads, L.o, a);
    addResidual(x, a, L.selfNorm);
    feedForwardBlock(x, L, h, f);
    view.attnOutput = a.data();
    view.headMix = heads.data();
    view.hidden = x.data();
    drive.siteDone(view);
}

void EncoderDecoderModel::decoderLayer(int l, State& st, RowMatrix& y, int P, std::span<const VisibleSpan> selfSpans,
                                       const BiasTable* bias, SegmentDriver& drive) const
{
    const Layer& L = m_dec.layers[static_cast<std::size_t>(l)];
    const int T = static_cast<int>(y.rows()), K = P + T;
    const int S = static_cast<int>(st.encoded->hidden.rows());
    RowMatrix h, q, k, v, heads, a, f;
    // Self-attention over the cached target tokens and this segment's.
    const RowMatrix& in = sublayerInput(y, L.selfNorm, h);
    project(in, L.q, q);
    project(in, L.k, k);
    project(in, L.v, v);
    st.cache.append(l, k.data(), v.data(), T);
    LayerView self;
    self.site = siteOf(Stack::Decoder, l, SiteKind::Self);
    self.layer = l;
    ScoreInputs si = siteInputs(self.site, T, K, P, q.data(), st.cache.keys(l), selfSpans.data());
    si.positionBias = bias ? &bias->bias : nullptr;
    attend(si, st.cache.values(l), drive, self, heads);
    project(heads, L.o, a);
    self.attnOutput = a.data();
    self.headMix = heads.data();
    drive.siteDone(self);
    addResidual(y, a, L.selfNorm);
    // Cross-attention: target rows over the encoder's output, every source token visible, no position bias.
    project(sublayerInput(y, L.crossNorm, h), L.cq, q);
    const std::vector<VisibleSpan> crossSpans(static_cast<std::size_t>(T), VisibleSpan{0, S});
    LayerView cross;
    cross.site = siteOf(Stack::Decoder, l, SiteKind::Cross);
    cross.layer = l;
    ScoreInputs ci = siteInputs(cross.site, T, S, 0, q.data(), st.encoded->crossK[static_cast<std::size_t>(l)].data(),
                                crossSpans.data());
    attend(ci, st.encoded->crossV[static_cast<std::size_t>(l)].data(), drive, cross, heads);
    project(heads, L.co, a);
    addResidual(y, a, L.crossNorm);
    feedForwardBlock(y, L, h, f);
    cross.attnOutput = a.data();
    cross.headMix = heads.data();
    cross.hidden = y.data();
    drive.siteDone(cross);
}

void EncoderDecoderModel::finalNorm(RowMatrix& y) const
{
    if (m_dec.finalNorm)
        norm(y, *m_dec.finalNorm, y);
}

void EncoderDecoderModel::logitsOf(RowMatrix y, std::vector<float>& logits) const
{
    RowMatrix z;
    if (m_config.scaleTiedHead)
        y *= 1.0f / std::sqrt(static_cast<float>(m_config.dModel));
    multiplyTransposed(y, m_head, z);
    if (m_logitsBias)
        z.rowwise() += asVector(*m_logitsBias);
    logits.assign(z.data(), z.data() + z.size());
}

bool EncoderDecoderModel::readOut(const float* hidden, int rows, std::vector<float>& logits) const
{
    RowMatrix y = ConstMatrixMap(hidden, rows, m_config.dModel);
    finalNorm(y);
    logitsOf(std::move(y), logits);
    return true;
}

} // namespace attnscope::core
