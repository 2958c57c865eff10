// The Llama-family forward as named blocks: one loop over the layers, each an attention block and a feed-forward block
// joined by the residual stream. Each family's quirk sits at the line where it acts (Gemma's embedding scale and post
// norms, Qwen3's and OLMo 2's q/k norms, NoPE layers, gpt-oss's sinks, Granite's multipliers, GPT-NeoX's parallel
// residual, DeepSeek's latent attention). Shapes: q = segment length, m = carried keys, k = m + q, C = hidden size, H
// query heads and KV key/value heads of size d; query head n reads key/value head n / (H / KV).
#include "model/llama.h"

#include "model/llama_parts.h"
#include "util/error.h"
#include "util/stage_timer.h"

namespace attnscope::core {

namespace {

// out = x / sqrt(mean(x^2) + eps) * w, row by row: the same arithmetic as the grouped norm, on a copy.
void rmsNormRows(const RowMatrix& x, const WeightView& w, float eps, RowMatrix& out)
{
    out = x;
    rmsNormGroupsInPlace(out, 1, w, eps);
}

void hook(Intervention* hooks, Activation what, int l, RowMatrix& rows, int groups, int width, int firstPosition)
{
    hooks->onActivation(what, l, {rows.data(), static_cast<int>(rows.rows()), rows.cols(), groups, width, firstPosition});
}

// Each row of a picture sees every row of that picture (the keys after it too); `pictureOf` is each segment row's
// picture or -1, `m` the cached keys before the segment.
void seePicturesWhole(const std::vector<int>& pictureOf, int m, Visibility& v)
{
    const int q = static_cast<int>(pictureOf.size()), k = m + q;
    for (int a = 0; a < q;) {
        int b = a + 1;
        while (b < q && pictureOf[static_cast<std::size_t>(b)] == pictureOf[static_cast<std::size_t>(a)])
            ++b;
        if (pictureOf[static_cast<std::size_t>(a)] >= 0)
            for (int i = a; i < b; ++i) {
                auto& span = v.spans[static_cast<std::size_t>(i)];
                span.len = m + b - span.lo;
                for (int j = m + i + 1; j < m + b; ++j)
                    v.mask[static_cast<std::size_t>(i) * k + j] = 0;
            }
        a = b;
    }
}
} // namespace

void LlamaModel::forwardSegment(RunState& baseState, std::span<const std::int32_t> ids, AttentionObserver& observer) const
{
    auto& st = static_cast<State&>(baseState);
    const auto& c = m_config;
    const int q = static_cast<int>(ids.size());
    SegmentDriver::checkIds(ids, c.vocabSize);
    SegmentDriver::checkLength(q, m_info.maxSegmentLen,
                               "the model's context of " + std::to_string(m_info.maxSegmentLen) + " positions");
    SegmentDriver run(st, observer, *m_weights);
    std::optional<StageScope> embedding(std::in_place, Stage::Embedding);
    RowMatrix x;
    const std::vector<int> pictureOf = embed(ids, st, x);
    Segment f;
    f.q = q;
    f.m = st.cache.begin(st.memLen);
    f.k = f.m + q;
    f.mixed = !c.slidingLayers.empty() && c.slidingWindow > 0;
    f.global = causalVisibility(q, f.m, f.mixed ? 0 : c.slidingWindow);
    if (f.mixed)
        f.local = causalVisibility(q, f.m, c.slidingWindow);
    if (!pictureOf.empty()) { // Gemma 3: a picture's tokens see the whole picture, on every layer
        seePicturesWhole(pictureOf, f.m, f.global);
        if (f.mixed)
            seePicturesWhole(pictureOf, f.m, f.local);
    }
    if (c.convWidth > 0) // a convolution's output row reads its own and the width - 1 rows before it
        f.conv = causalVisibility(q, f.m, c.convWidth);
    SegmentView sv;
    sv.embedding = x.data();
    sv.mask = f.global.mask.data();
    run.begin({q, f.m, c.hidden}, sv);
    // LongRoPE switches to its long factors once the sequence outgrows the original context.
    const bool longRope = c.rope.scaling == RopeConfig::Scaling::LongRope && f.k > c.rope.originalMaxPositions;
    f.table = rotaryTable(c.rope, f.k, longRope ? m_invFreqLong : m_invFreq);
    if (!m_invFreqLocal.empty())
        f.localTable = rotaryTable(c.rope, f.k, m_invFreqLocal);
    f.bandCount = run.wantTerms() && st.bands ? st.bands->count() : 0;
    f.keep = run.kept(c.nHead);
    f.bandTerms = std::make_unique<LayerBuffer>(static_cast<std::size_t>(f.bandCount) * c.nHead * q * f.k);
    f.hooks = st.intervene;
    embedding.reset();
    RowMatrix attnOut, ff;
    for (int l = f.hooks ? f.hooks->firstLayer() : 0; l < c.nLayer; ++l) {
        run.checkStop();
        if (f.hooks)
            hook(f.hooks, Activation::Residual, l, x, 1, c.hidden, f.m);
        LayerView lv;
        mixerBlock(l, f, st, x, attnOut, lv);
        // Sequential residual: the MLP reads the attention's sum; parallel (GPT-NeoX): both read the layer input.
        RowMatrix h = x + attnOut;
        Routing route;
        if (c.hasFfn(l))
            feedForwardBlock(l, c.parallelResidual ? x : h, ff, route);
        else // Nemotron-H's mixer blocks: no feed-forward after the mixer
            ff.setZero(h.rows(), h.cols());
        if (f.hooks)
            hook(f.hooks, Activation::MlpOutputs, l, ff, 1, c.hidden, f.m);
        x = h + ff;
        lv.attnOutput = attnOut.data();
        lv.outputScale = c.residualScale;
        lv.hidden = x.data();
        if (c.routes(l))
            showRouting(route, lv);
        run.layerDone(l, lv);
    }
    st.cache.finish();
    if (f.hooks)
        hook(f.hooks, Activation::Residual, c.nLayer, x, 1, c.hidden, f.m);
    RowMatrix normed, logits;
    run.end([&](SegmentEndView& ev) {
        RowMatrix tail;
        readOutRows(rowsFrom(x, ev.firstLogitRow, tail), normed, logits);
        ev.lnF = normed.data();
        ev.logits = logits.data();
        ev.vocab = c.vocabSize;
    });
}

void LlamaModel::mixerBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    switch (m_config.mixer(l)) {
    case Mixer::None: identityBlock(l, f, st, out, lv); return;
    case Mixer::ShortConv: shortConvBlock(l, f, st, x, out, lv); return;
    case Mixer::DeltaRule: deltaRuleBlock(l, f, st, x, out, lv); return;
    case Mixer::StateSpace: stateSpaceBlock(l, f, st, x, out, lv); return;
    case Mixer::Softmax: break;
    }
    attentionBlock(l, f, st, x, out, lv);
}

void LlamaModel::showRouting(const Routing& route, LayerView& lv) const
{
    lv.experts = m_config.experts;
    lv.expertsUsed = m_config.expertsUsed;
    lv.routerLogits = route.logits.data();
    lv.routerProbs = route.probs.data();
    lv.expertIds = route.ids.data();
    lv.expertWeights = route.weights.data();
    if (!route.sharedGate.empty()) // Qwen3-Next's shared expert's factor, under the reference's name
        lv.parts.push_back({"shared_expert_gate", 1, route.sharedGate.data()});
}

std::vector<int> LlamaModel::embed(std::span<const std::int32_t> ids, State& st, RowMatrix& x) const
{
    const int q = static_cast<int>(ids.size());
    x.resize(q, m_config.hidden);
    for (int t = 0; t < q; ++t)
        weightRow(m_embed, ids[static_cast<std::size_t>(t)], x.row(t).data());
    if (m_config.embeddingScale != 1.0f) // Gemma's sqrt(hidden) (rounded to float32 first, as the reference), Granite's
        x *= m_config.embeddingScale;
    if (!st.placed)
        return {};
    const auto& placed = *st.placed;
    std::vector<int> pictureOf(placed.bidirectional ? static_cast<std::size_t>(q) : 0, -1);
    for (int t = 0; t < q; ++t) {
        if (ids[static_cast<std::size_t>(t)] != placed.token)
            continue;
        const auto k = static_cast<int>(st.placedAt.size());
        if (placed.count() == 0)
            throw Error(ErrorCode::BadInput, "the prompt has an image placeholder (token " +
                                                 std::to_string(placed.token) + ") but no picture came with it: open one");
        if (k >= placed.count())
            throw Error(ErrorCode::BadInput, "the prompt has more image tokens (id " + std::to_string(placed.token) +
                                                 ") than the picture gives rows (" + std::to_string(placed.count()) +
                                                 "): one image placeholder expands to exactly that many");
        std::copy_n(placed.rows.data() + static_cast<std::size_t>(k) * placed.cols, placed.cols, x.row(t).data());
        st.placedAt.push_back(st.tokensSeen + t);
        if (placed.bidirectional)
            pictureOf[static_cast<std::size_t>(t)] = placed.pictureOf(k);
    }
    return pictureOf;
}

void LlamaModel::attentionBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int H = c.nHead, KV = c.nKvHead, d = c.headDim, dv = c.valueDim();
    if (L.attnNorm) {
        StageScope timed(Stage::Norms);
        familyNorm(x, L.attnNorm, L.attnNormBias, f.a);
    }
    projectQkv(l, f, st, L.attnNorm ? f.a : x);
    ScoreInputs in = scoreInputs(l, f, st);
    AttentionCapture keep = f.keep;
    for (int b = 0; b < f.bandCount; ++b)
        keep.terms[b] = f.bandTerms->data() + static_cast<std::size_t>(b) * H * f.q * f.k;
    const float* values = c.latentAttention() ? f.V.data() : st.cache.values(l);
    f.heads.resize(f.q, H * dv);
    attendAllHeads(in, values, KV * dv, f.heads.data(), H * dv, keep);
    if (L.qGate) { // Qwen3.5: each head's output times sigmoid of its gate, before o_proj
        StageScope timed(Stage::Projections);
        linear(L.attnNorm ? f.a : x, L.qGate, WeightView{}, f.gate);
        f.gate.array() = 1.0f / (1.0f + (-f.gate.array()).exp());
        f.heads.array() *= f.gate.array();
        lv.parts = {{"attn_gate", H * dv, f.gate.data()}};
    }
    if (f.hooks) {
        f.hooks->onAttention(l, in, values, KV * dv, {f.heads.data(), f.q, H * dv, H, dv, f.m});
        hook(f.hooks, Activation::HeadOutputs, l, f.heads, H, dv, f.m);
    }
    if (st.ablate && st.ablate->layer == l)
        f.heads.middleCols(static_cast<Eigen::Index>(st.ablate->head) * dv, dv).setZero();
    {
        StageScope timed(Stage::Projections);
        linear(f.heads, L.o, L.oBias, out);
    }
    if (L.attnPostNorm) { // OLMo 2, Gemma: the output normed before it joins the stream
        StageScope timed(Stage::Norms);
        rmsNormGroupsInPlace(out, 1, L.attnPostNorm, c.rmsNormEps);
    }
    if (c.residualScale != 1.0f) // Granite: what each block adds to the stream is scaled
        out *= c.residualScale;
    lv.heads = H;
    lv.inputs = in;
    for (int b = 0; b < f.bandCount; ++b)
        lv.terms[b] = keep.terms[b];
    lv.mask = (f.mixed && c.slides(l) ? f.local : f.global).mask.data();
    lv.kvHeads = KV;
    lv.headDim = d;
    lv.headMix = f.heads.data();
}

void LlamaModel::identityBlock(int l, Segment& f, State& st, RowMatrix& out, LayerView& lv) const
{
    // An MLP block mixes no tokens: its site's grid is the identity, keys one placeholder number a row.
    out.setZero(f.q, m_config.hidden);
    const RowMatrix placeholder = RowMatrix::Zero(f.q, 1);
    st.cache.append(l, placeholder.data(), nullptr, f.q);
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, 1, 1, 1);
    in.mixer = Mixer::None;
    f.Q = placeholder;
    in.queries = RowSource::strided(f.Q.data(), 1);
    in.keys = RowSource::strided(st.cache.keys(l), 1);
    in.spans = f.global.spans.data();
    lv.heads = lv.kvHeads = lv.headDim = 1;
    lv.inputs = in;
    lv.mask = f.global.mask.data();
}

void LlamaModel::shortConvBlock(int l, Segment& f, State& st, const RowMatrix& x, RowMatrix& out, LayerView& lv) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int C = c.hidden, W = c.convWidth;
    {
        StageScope timed(Stage::Norms);
        familyNorm(x, L.attnNorm, L.attnNormBias, f.a);
    }
    RowMatrix p;
    {
        StageScope timed(Stage::Projections);
        linear(f.a, L.convIn, WeightView{}, p);
    }
    // in_proj's rows in the order B, C, x: B and x are interchangeable in the output, not in the map (B is the key
    // side, x the value it weighs).
    f.convB = p.leftCols(C);
    f.convC = p.middleCols(C, C);
    f.convX = p.rightCols(C);
    const RowMatrix bx = f.convB.cwiseProduct(f.convX);
    st.cache.append(l, f.convB.data(), bx.data(), f.q);
    // Causal depthwise convolution over every cached row: tap k reads the row width - 1 - k before the current one.
    const float* rows = st.cache.values(l);
    const float* taps = L.convTaps.floats();
    f.convOut.setZero(f.q, C);
    for (int i = 0; i < f.q; ++i)
        for (int k = 0; k < W; ++k) {
            const int row = f.m + i - (W - 1) + k;
            if (row < 0)
                continue;
            const float* in = rows + static_cast<std::ptrdiff_t>(row) * C;
            float* o = f.convOut.row(i).data();
            for (int ch = 0; ch < C; ++ch)
                o[ch] += taps[static_cast<std::ptrdiff_t>(ch) * W + k] * in[ch];
        }
    f.heads = f.convC.cwiseProduct(f.convOut); // each channel's output: its map times x (a channel is a head)
    if (st.ablate && st.ablate->layer == l)
        f.heads.col(st.ablate->head).setZero();
    {
        StageScope timed(Stage::Projections);
        linear(f.heads, L.convOut, WeightView{}, out);
    }
    if (c.residualScale != 1.0f)
        out *= c.residualScale;
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, C, C, 1);
    in.mixer = Mixer::ShortConv;
    in.queries = RowSource::strided(f.convC.data(), C);
    in.keys = RowSource::strided(st.cache.keys(l), C);
    in.spans = f.conv.spans.data();
    in.convTaps = m_info.layerRules[static_cast<std::size_t>(l)].convTaps.data();
    in.convWidth = W;
    lv.heads = lv.kvHeads = C;
    lv.headDim = 1;
    lv.inputs = in;
    lv.mask = f.conv.mask.data();
    lv.headMix = f.heads.data();
    lv.parts = {{"conv_B", C, f.convB.data()}, {"conv_C", C, f.convC.data()}, {"conv_x", C, f.convX.data()},
                {"conv_out", C, f.convOut.data()}};
}

void LlamaModel::projectQkv(int l, Segment& f, State& st, const RowMatrix& in) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const int H = c.nHead, KV = c.nKvHead, d = c.headDim, dv = c.valueDim();
    if (c.latentAttention()) {
        // The cache keeps the latent rows; this layer's keys and values are expanded from all of them.
        StageScope timed(Stage::Projections);
        m_latent.queries(in, L.mla, f.Q);
        m_latent.compress(in, L.mla, f.Knew);
        st.cache.append(l, f.Knew.data(), nullptr, f.q);
        m_latent.expand(st.cache.keys(l), f.k, L.mla, f.K, f.V);
    } else {
        StageScope timed(Stage::Projections);
        linear(in, L.q, L.qBias, f.Q);
        linear(in, L.k, L.kBias, f.Knew);
        linear(in, L.v, L.vBias, f.Vnew);
    }
    if (L.qNorm) { // Qwen3 per head, OLMo 2 over the whole projection: before rotation and the cache
        StageScope timed(Stage::Norms);
        const bool perHead = c.qkNorm == LlamaConfig::QkNorm::PerHead;
        rmsNormGroupsInPlace(f.Q, perHead ? H : 1, L.qNorm, c.rmsNormEps);
        rmsNormGroupsInPlace(f.Knew, perHead ? KV : 1, L.kNorm, c.rmsNormEps);
    }
    if (f.hooks) { // latent attention: keys and values as expanded from every cached row (positions 0..)
        hook(f.hooks, Activation::Queries, l, f.Q, H, d, f.m);
        hook(f.hooks, Activation::Keys, l, c.latentAttention() ? f.K : f.Knew, KV, d, c.latentAttention() ? 0 : f.m);
        hook(f.hooks, Activation::Values, l, c.latentAttention() ? f.V : f.Vnew, KV, dv, c.latentAttention() ? 0 : f.m);
    }
    if (!c.latentAttention()) {
        StageScope timed(Stage::Copies);
        st.cache.append(l, f.Knew.data(), f.Vnew.data(), f.q);
        f.K = Eigen::Map<const RowMatrix>(st.cache.keys(l), f.k, KV * d);
    }
    // Queries at positions m.., every key (cached ones too) at 0..: angles stay small, scores depend on i - j only.
    StageScope timed(Stage::Rotary);
    if (c.rotates(l)) { // a NoPE layer (SmolLM3) uses q and k as projected
        const bool local = f.mixed && c.slides(l) && !m_invFreqLocal.empty(); // Gemma 3's local base
        const RotaryTable& table = local ? f.localTable : f.table;
        rotateRows(table, f.Q.data(), f.q, H * d, H, d, f.m);
        rotateRows(table, f.K.data(), f.k, KV * d, KV, d, 0);
    }
}

ScoreInputs LlamaModel::scoreInputs(int l, const Segment& f, const State& st) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    const LayerRule& rule = m_info.layerRules[static_cast<std::size_t>(l)];
    ScoreInputs in = ScoreInputs::ofShape(f.q, f.k, f.m, c.nHead, c.nKvHead, c.headDim);
    in.queries = RowSource::strided(f.Q.data(), c.nHead * c.headDim);
    in.keys = RowSource::strided(f.K.data(), c.nKvHead * c.headDim);
    if (st.bands)
        in.bands = &*st.bands;
    in.spans = (f.mixed && c.slides(l) ? f.local : f.global).spans.data();
    in.scale = rule.scale;
    in.softCap = rule.softCap;
    in.valueDim = c.valueDim();
    if (L.sinks) // gpt-oss: a learned logit per head in every softmax's denominator
        in.sinks = L.sinks.floats();
    return in;
}

void LlamaModel::feedForwardBlock(int l, const RowMatrix& x, RowMatrix& out, Routing& route) const
{
    const auto& c = m_config;
    const auto& L = m_layers[static_cast<std::size_t>(l)];
    RowMatrix a, hGate, hUp;
    if (L.ffnNorm) {
        StageScope timed(Stage::Norms);
        familyNorm(x, L.ffnNorm, L.ffnNormBias, a);
    }
    const RowMatrix& in = L.ffnNorm ? a : x;
    StageScope timed(Stage::FeedForward);
    if (c.routes(l)) {
        mixtureOfExperts(in, L, out, route);
    } else if (c.mlp == LlamaConfig::Mlp::GatedSilu) {
        linear(in, L.gate, L.gateBias, hGate);
        linear(in, L.up, L.upBias, hUp);
        // silu(gate) * up, in Eigen's vectorised exp (a scalar std::exp per element cost a sixth of the block)
        hGate.array() = hGate.array() / (1.0f + (-hGate.array()).exp()) * hUp.array();
        linear(hGate, L.down, L.downBias, out);
    } else if (c.mlp == LlamaConfig::Mlp::GatedGeluTanh) { // Gemma's GeGLU: gelu_tanh(gate) * up
        linear(in, L.gate, L.gateBias, hGate);
        linear(in, L.up, L.upBias, hUp);
        geluNewInPlace(hGate);
        hGate.array() *= hUp.array();
        linear(hGate, L.down, L.downBias, out);
    } else if (c.mlp == LlamaConfig::Mlp::ReluSquared) { // Nemotron-H: down(relu(up x)^2)
        linear(in, L.up, L.upBias, hGate);
        hGate.array() = hGate.array().max(0.0f).square();
        linear(hGate, L.down, L.downBias, out);
    } else { // GPT-NeoX: gelu(up)
        linear(in, L.up, L.upBias, hGate);
        geluErfInPlace(hGate);
        linear(hGate, L.down, L.downBias, out);
    }
    if (L.ffnPostNorm)
        rmsNormGroupsInPlace(out, 1, L.ffnPostNorm, c.rmsNormEps);
    if (c.residualScale != 1.0f)
        out *= c.residualScale;
}

void LlamaModel::familyNorm(const RowMatrix& in, const WeightView& w, const WeightView& b, RowMatrix& out) const
{
    if (m_config.norm == LlamaConfig::Norm::Layer)
        layerNormRows(in, w, b, m_config.rmsNormEps, out);
    else
        rmsNormRows(in, w, m_config.rmsNormEps, out);
}

} // namespace attnscope::core
