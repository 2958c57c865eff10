// The encoder forward pass. Shapes: T tokens, C = hidden, H heads of size d = C / H.
#include "model/encoder.h"

#include "model/segment_driver.h"
#include "model/tensor_names.h"
#include "util/error.h"

#include <cmath>

namespace attnscope::core {

class EncoderModel::EncoderState final : public RunState {
public:
    std::vector<std::int32_t> tokenTypes;
    std::vector<std::uint8_t> padding;
    std::unique_ptr<RunState> clone() const override { return std::make_unique<EncoderState>(*this); }
    std::size_t bytes() const override { return tokenTypes.size() * sizeof(std::int32_t) + padding.size(); }
};

namespace {

// A norm's weight or bias under its name or the legacy LayerNorm.gamma / .beta of Google-converted BERT checkpoints.
std::string normPart(const Checkpoint& w, const std::string& base, bool weight)
{
    const std::string modern = base + (weight ? ".weight" : ".bias");
    const std::string legacy = base + (weight ? ".gamma" : ".beta");
    return !w.has(modern) && w.has(legacy) ? legacy : modern; // neither: the modern name goes into the message
}

} // namespace

EncoderModel::EncoderModel(EncoderConfig config, std::shared_ptr<const Checkpoint> weights, std::string source)
    : m_config(std::move(config))
    , m_weights(std::move(weights))
{
    const auto& c = m_config;
    const Checkpoint& w = *m_weights;
    const EncoderNames& n = encoderNames(c.family);
    const std::string prefix = detectPrefix(w, n.prefix, n.wordEmb);
    const std::int64_t C = c.hidden, I = c.intermediate;
    auto linear = [&](const char* pattern, int l, std::int64_t out, std::int64_t in, bool absolute = false) {
        const std::string base = tensorName(absolute ? "" : prefix, pattern, l);
        return Linear{w.get(base + ".weight", {out, in}), w.getFloat(base + ".bias", {out})};
    };
    auto norm = [&](const char* pattern, int l, bool absolute = false) {
        const std::string base = tensorName(absolute ? "" : prefix, pattern, l);
        return Norm{w.getFloat(normPart(w, base, true), {C}), w.getFloat(normPart(w, base, false), {C})};
    };
    m_wordEmb = w.get(prefix + n.wordEmb, {c.vocabSize, C});
    m_posEmb = w.get(prefix + n.posEmb, {c.maxPositions, C});
    if (c.typeVocabSize > 0)
        m_typeEmb = w.get(prefix + n.typeEmb, {c.typeVocabSize, C});
    m_embNorm = norm(n.embNorm, -1);
    for (int l = 0; l < c.nLayer; ++l) {
        Layer L;
        L.q = linear(n.q, l, C, C);
        L.k = linear(n.k, l, C, C);
        L.v = linear(n.v, l, C, C);
        L.o = linear(n.o, l, C, C);
        L.attnNorm = norm(n.attnNorm, l);
        L.ffnIn = linear(n.ffnIn, l, I, C);
        L.ffnOut = linear(n.ffnOut, l, C, I);
        L.ffnNorm = norm(n.ffnNorm, l);
        m_layers.push_back(std::move(L));
    }
    // The masked-language-model head when the file has one (BertForMaskedLM, RobertaForMaskedLM, ...): its decoder is
    // tied to the word embeddings when not stored, its bias stored once under either of its two names.
    if (w.has(std::string(n.headDense) + ".weight")) {
        Head h;
        h.dense = linear(n.headDense, -1, C, C, true);
        h.norm = norm(n.headNorm, -1, true);
        const std::string decoder = std::string(n.headDecoder) + ".weight";
        h.decoder = w.has(decoder) ? w.get(decoder, {c.vocabSize, C}) : m_wordEmb;
        const std::string bias = w.has(n.headBias) ? n.headBias : std::string(n.headDecoder) + ".bias";
        h.bias = w.getFloat(bias, {c.vocabSize});
        m_head = std::move(h);
    }

    m_info.family = c.family;
    m_info.source = std::move(source);
    m_info.layers = c.nLayer;
    m_info.heads = c.nHead;
    m_info.kvHeads = c.nHead;
    m_info.dModel = C;
    m_info.dHead = static_cast<int>(C / c.nHead);
    m_info.vocabSize = c.vocabSize;
    m_info.defaultMemLen = 0;
    m_info.defaultSegmentLen = c.maxTokens();
    m_info.maxSegmentLen = c.maxTokens();
    m_info.parameterCount = w.countElements([](const std::string& name) {
        return name.find("position_ids") == std::string::npos && name.find("seq_relationship") == std::string::npos;
    });
    m_info.weightBytes = w.storedBytes();
    m_info.weightTypes = w.describeStorage();
    m_info.positions = "learned absolute, " + std::to_string(c.maxTokens()) + " tokens, bidirectional" +
                       (c.typeVocabSize >= 2 ? ", sentence pairs (token types)" : "");
    m_info.can.causal = false;
    m_info.can.nextTokenLoss = false;
    m_info.can.maskedTokens = m_head.has_value();
    m_info.can.tokenTypes = c.typeVocabSize;
    m_info.layerRules.assign(static_cast<std::size_t>(c.nLayer),
                             LayerRule::of(1.0f / std::sqrt(static_cast<float>(m_info.dHead)), 0.0f, 0, true));
    describeSingleStream(m_info.layers, m_info.can.causal, m_info.heads, m_info.streams, m_info.sites);
}

std::unique_ptr<RunState> EncoderModel::newState(const RunOptions& options) const
{
    refuseIntervention(options, m_info);
    if (options.memLen.value_or(0) > 0)
        throw Error(ErrorCode::BadInput,
                    "an encoder cannot carry earlier tokens into a segment (memory " + std::to_string(*options.memLen) +
                        "): every segment is a text of its own, of at most " + std::to_string(m_config.maxTokens()) +
                        " tokens. Use a memory of 0 (chunks).");
    if (options.ablate)
        throw Error(ErrorCode::BadInput, "head ablation measures next-token loss, which an encoder does not predict");
    auto st = std::make_unique<EncoderState>();
    st->stop = options.stop;
    st->tokenTypes = options.tokenTypes;
    st->padding = options.padding;
    return st;
}

std::vector<int> EncoderModel::positionIds(std::span<const std::int32_t> ids) const
{
    std::vector<int> pos(ids.size());
    int real = 0;
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (!m_config.positionsAfterPadding)
            pos[t] = static_cast<int>(t);
        else if (ids[t] == m_config.padTokenId)
            pos[t] = m_config.padTokenId;
        else
            pos[t] = m_config.padTokenId + ++real;
    }
    return pos;
}

void EncoderModel::activate(RowMatrix& x) const
{
    switch (m_config.activation) {
    case EncoderConfig::Activation::Gelu: geluErfInPlace(x); break;
    case EncoderConfig::Activation::GeluNew: geluNewInPlace(x); break;
    case EncoderConfig::Activation::Relu: x = x.cwiseMax(0.0f); break;
    }
}

std::pair<int, int> EncoderModel::realTokens(const EncoderState& st, int T) const
{
    const auto first = static_cast<std::size_t>(st.tokensSeen);
    auto perToken = [&](const auto& v, const char* what) {
        if (!v.empty() && v.size() < first + static_cast<std::size_t>(T))
            throw Error(ErrorCode::BadInput, std::string("the run has ") + std::to_string(first + T) + " tokens but " +
                                                 std::to_string(v.size()) + " " + what);
    };
    perToken(st.tokenTypes, "token types");
    perToken(st.padding, "padding marks");
    int lo = 0, hi = T;
    if (st.padding.empty())
        return {lo, hi};
    const std::uint8_t* pad = st.padding.data() + first;
    while (lo < T && pad[lo])
        ++lo;
    while (hi > lo && pad[hi - 1])
        --hi;
    for (int t = lo; t < hi; ++t)
        if (pad[t])
            throw Error(ErrorCode::BadInput, "padding at position " + std::to_string(t + 1) +
                                                 " lies between real tokens: the real tokens of a text must be one "
                                                 "run (padding at the start or the end)");
    if (lo == hi)
        throw Error(ErrorCode::BadInput, "every token of the segment is padding: no key to attend to");
    return {lo, hi};
}

void EncoderModel::embed(const EncoderState& st, std::span<const std::int32_t> ids, RowMatrix& x) const
{
    const int T = static_cast<int>(ids.size());
    const auto first = static_cast<std::size_t>(st.tokensSeen);
    x.resize(T, m_config.hidden);
    RowVector row(m_config.hidden);
    const auto pos = positionIds(ids);
    for (int t = 0; t < T; ++t) {
        const int id = ids[static_cast<std::size_t>(t)];
        if (pos[static_cast<std::size_t>(t)] >= m_config.maxPositions)
            throw Error(ErrorCode::BadInput, "position " + std::to_string(pos[static_cast<std::size_t>(t)]) +
                                                 " is beyond the model's " + std::to_string(m_config.maxPositions) +
                                                 " positions (max_position_embeddings)");
        weightRow(m_wordEmb, id, x.row(t).data());
        weightRow(m_posEmb, pos[static_cast<std::size_t>(t)], row.data());
        x.row(t) += row;
        if (m_typeEmb) {
            const int type = st.tokenTypes.empty() ? 0 : st.tokenTypes[first + static_cast<std::size_t>(t)];
            if (type < 0 || type >= m_config.typeVocabSize)
                throw Error(ErrorCode::BadInput, "token type " + std::to_string(type) + " at position " +
                                                     std::to_string(t) + " is outside the model's " +
                                                     std::to_string(m_config.typeVocabSize) + " types");
            weightRow(m_typeEmb, type, row.data());
            x.row(t) += row;
        }
    }
    layerNormRows(x, m_embNorm.w, m_embNorm.b, m_config.layerNormEps, x);
}

void EncoderModel::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<EncoderState&>(baseState);
    const int T = static_cast<int>(ids.size()), C = m_config.hidden;
    SegmentDriver::checkIds(ids, m_config.vocabSize);
    SegmentDriver::checkLength(T, m_config.maxTokens(), "the model's " + std::to_string(m_config.maxTokens()) +
                                                            " positions (max_position_embeddings)");
    SegmentDriver run(st, observer, *m_weights);
    // The real tokens: one run [lo, hi); every query sees exactly those keys.
    const auto [lo, hi] = realTokens(st, T);
    RowMatrix x;
    embed(st, ids, x);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(T) * T, 0);
    const std::vector<VisibleSpan> spans(static_cast<std::size_t>(T), VisibleSpan{lo, hi - lo});
    for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
            mask[static_cast<std::size_t>(i) * T + j] = j < lo || j >= hi;
    SegmentView sv;
    sv.embedding = x.data();
    sv.mask = mask.data();
    run.begin({T, 0, C}, sv);
    const AttentionCapture keep = run.kept(m_config.nHead);
    LayerRows rows;
    for (int l = 0; l < m_config.nLayer; ++l) {
        run.checkStop();
        LayerView lv;
        layerBlock(l, spans, keep, x, rows, lv);
        lv.mask = mask.data();
        run.layerDone(l, lv);
    }
    RowMatrix transformed, logits;
    run.end([&](SegmentEndView& ev) {
        if (!m_head)
            return;
        RowMatrix tail;
        headRows(rowsFrom(x, ev.firstLogitRow, tail), transformed, logits);
        ev.lnF = transformed.data();
        ev.logits = logits.data();
        ev.vocab = m_config.vocabSize;
    });
}

void EncoderModel::layerBlock(int l, const std::vector<VisibleSpan>& spans, const AttentionCapture& keep, RowMatrix& x,
                              LayerRows& rows, LayerView& lv) const
{
    const int T = static_cast<int>(x.rows()), C = m_config.hidden, H = m_config.nHead, d = C / H;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    auto project = [](const RowMatrix& in, const Linear& p, RowMatrix& out) {
        multiplyTransposed(in, p.w, out);
        out.rowwise() += asVector(p.b);
    };
    RowMatrix &q = rows.q, &k = rows.k, &v = rows.v, &attnOut = rows.attnOut, inner, ffn;
    RowMatrix& heads = rows.heads;
    heads.resize(T, C);
    project(x, L.q, q);
    project(x, L.k, k);
    project(x, L.v, v);
    ScoreInputs in = ScoreInputs::ofShape(T, T, 0, H, H, d);
    in.queries = RowSource::strided(q.data(), C);
    in.keys = RowSource::strided(k.data(), C);
    in.spans = spans.data();
    attendAllHeads(in, v.data(), C, heads.data(), C, keep);
    // Post-LayerNorm blocks: each sub-layer's output joins the stream, then the sum is normed.
    project(heads, L.o, attnOut);
    attnOut += x;
    layerNormRows(attnOut, L.attnNorm.w, L.attnNorm.b, m_config.layerNormEps, attnOut);
    project(attnOut, L.ffnIn, inner);
    activate(inner);
    project(inner, L.ffnOut, ffn);
    ffn += attnOut;
    layerNormRows(ffn, L.ffnNorm.w, L.ffnNorm.b, m_config.layerNormEps, x);
    lv.heads = H;
    lv.inputs = in;
    lv.kvHeads = H;
    lv.headDim = d;
    lv.attnOutput = attnOut.data();
    lv.hidden = x.data();
}

void EncoderModel::headRows(const RowMatrix& x, RowMatrix& transformed, RowMatrix& logits) const
{
    multiplyTransposed(x, m_head->dense.w, transformed);
    transformed.rowwise() += asVector(m_head->dense.b);
    activate(transformed);
    layerNormRows(transformed, m_head->norm.w, m_head->norm.b, m_config.layerNormEps, transformed);
    multiplyTransposed(transformed, m_head->decoder, logits);
    logits.rowwise() += asVector(m_head->bias);
}

bool EncoderModel::readOut(const float* hidden, int rows, std::vector<float>& out) const
{
    if (!m_head)
        return false;
    const RowMatrix x = ConstMatrixMap(hidden, rows, m_config.hidden);
    RowMatrix transformed, logits;
    headRows(x, transformed, logits);
    out.assign(logits.data(), logits.data() + logits.size());
    return true;
}

} // namespace attnscope::core
