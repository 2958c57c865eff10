// A mixture of experts in place of a decoder's MLP (Qwen3-MoE, OLMoE, Mixtral, Granite-MoE, gpt-oss, DeepSeek-V2):
// reading the router and the experts (stacked GGUF tensors and Hugging Face's per-expert or fused ones, read in place;
// gpt-oss's MXFP4 blocks packed once), and routing each token to its chosen experts.
#include "model/llama.h"

#include "io/mxfp4_pack.h"
#include "model/tensor_names.h"
#include "util/error.h"

namespace attnscope::core {

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
    const bool interleaved = !c.fromGguf && N.expertGateUp.hf && !c.fusedGateUp; // gpt-oss's Hugging Face layout
    if (interleaved && loadMxfp4Experts(N, l, L))
        return;
    auto expertBias = [&](const TensorName& name, std::int64_t width) { // [experts, width] as float32
        return m_weights->getFloat(placedName(m_textPlace, tensorName("", c.fromGguf ? name.gguf : name.hf, l)), {E, width});
    };
    if (interleaved) {
        // gpt-oss's Hugging Face layout: [experts, in, out] (no transpose), gate and up columns interleaved.
        L.expertGateUp = expertSlices(weight(N.expertGateUp, l, {E, C, 2 * F}), {C, 2 * F}, L);
        L.expertDown = expertSlices(weight(N.expertDown, l, {E, F, C}), {F, C}, L);
        L.expertGateUpBias = expertBias(N.expertGateUpBias, 2 * F);
        L.expertDownBias = expertBias(N.expertDownBias, C);
        return;
    }
    if (c.sharedFfn > 0)
        loadSharedExpert(N, l, L);
    loadExpertStacks(N, l, L);
    if (c.expertBiases) {
        L.expertGateBias = expertBias(N.expertGateBias, F);
        L.expertUpBias = expertBias(N.expertUpBias, F);
        L.expertDownBias = expertBias(N.expertDownBias, C);
    }
}

std::vector<WeightView> LlamaModel::expertSlices(const WeightView& stack, const Shape& one, Layer& L) const
{
    // A stack [experts, rows, cols] as one view per expert, read in place (its values checked whole, once).
    L.expertStacks.push_back(stack);
    std::vector<WeightView> out;
    for (std::int64_t e = 0; e < m_config.experts; ++e) {
        WeightView v = stack;
        v.shape = one;
        v.bytes = stack.bytes + static_cast<std::size_t>(e) * static_cast<std::size_t>(one[0]) * v.rowBytes();
        out.push_back(v);
    }
    return out;
}

void LlamaModel::loadSharedExpert(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    if (c.fusedGateUp) {
        splitGateUp(weight(N.sharedGateUp, l, {2 * c.sharedFfn, c.hidden}), L.sharedGate, L.sharedUp);
    } else {
        L.sharedGate = weight(N.sharedGate, l, {c.sharedFfn, c.hidden});
        L.sharedUp = weight(N.sharedUp, l, {c.sharedFfn, c.hidden});
    }
    L.sharedDown = weight(N.sharedDown, l, {c.hidden, c.sharedFfn});
    L.sharedExpertGate = optionalWeight(N.sharedExpertGate, l, {1, c.hidden}, c.sharedExpertGate);
}

void LlamaModel::loadExpertStacks(const DecoderNames& N, int l, Layer& L)
{
    const auto& c = m_config;
    const std::int64_t C = c.hidden, F = c.expertFfn, E = c.experts;
    int firstRole = 0;
    if (c.fusedGateUp) { // Granite-MoE (Hugging Face): [experts, 2 F, C], each expert's gate rows, then its up rows
        for (const WeightView& one : expertSlices(weight(N.expertGateUp, l, {E, 2 * F, C}), {2 * F, C}, L)) {
            L.expertGate.emplace_back();
            L.expertUp.emplace_back();
            splitGateUp(one, L.expertGate.back(), L.expertUp.back());
        }
        firstRole = 2;
    }
    const TensorName* roles[3] = {&N.expertGate, &N.expertUp, &N.expertDown};
    std::vector<WeightView>* lists[3] = {&L.expertGate, &L.expertUp, &L.expertDown};
    for (int r = firstRole; r < 3; ++r) {
        const Shape one = r == 2 ? Shape{C, F} : Shape{F, C};
        if (c.fromGguf || std::string(roles[r]->hf).find("{e}") == std::string::npos) { // a stack [experts, out, in]
            *lists[r] = expertSlices(weight(*roles[r], l, {E, one[0], one[1]}), one, L);
            continue;
        }
        for (std::int64_t e = 0; e < E; ++e) {
            std::string name = placedName(m_textPlace, tensorName("", roles[r]->hf, l));
            name.replace(name.find("{e}"), 3, std::to_string(e));
            lists[r]->push_back(m_weights->get(name, one));
        }
    }
}

namespace {

// The probabilities with the experts outside the groupsUsed best groups (a group's score: its best expert) at 0
// (DeepSeek-V2's group-limited routing).
const float* limitedToGroups(const float* p, int experts, int groupCount, int groupsUsed, std::vector<float>& kept)
{
    const int per = experts / groupCount;
    std::vector<std::pair<float, int>> groups(static_cast<std::size_t>(groupCount));
    for (int g = 0; g < groupCount; ++g)
        groups[static_cast<std::size_t>(g)] = {*std::max_element(p + g * per, p + (g + 1) * per), g};
    std::partial_sort(groups.begin(), groups.begin() + groupsUsed, groups.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    kept.assign(static_cast<std::size_t>(experts), 0.0f);
    for (int i = 0; i < groupsUsed; ++i) {
        const int g = groups[static_cast<std::size_t>(i)].second;
        std::copy(p + g * per, p + (g + 1) * per, kept.begin() + g * per);
    }
    return kept.data();
}

} // namespace

std::vector<std::vector<int>> LlamaModel::route(const RowMatrix& in, const Layer& L, Routing& route) const
{
    const auto& c = m_config;
    const int T = static_cast<int>(in.rows()), E = c.experts, K = c.expertsUsed;
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
    for (int t = 0; t < T; ++t) {
        float* p = route.probs.data() + static_cast<std::size_t>(t) * E;
        const float* z = logits.row(t).data();
        std::copy_n(z, E, p);
        if (!c.softmaxOverChosen)
            softmaxInPlace(p, E, nullptr);
        // The K highest experts (probabilities, or gpt-oss's logits), highest first (ties: the lower index); with
        // expert groups (DeepSeek-V2), only among the groups whose best expert is highest.
        const float* choose = c.expertGroups > 1 ? limitedToGroups(p, E, c.expertGroups, c.groupsUsed, groupScores) : p;
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
    return tokensOf;
}

void LlamaModel::runExpert(int e, const RowMatrix& rows, const Layer& L, RowMatrix& down) const
{
    const auto& c = m_config;
    const auto ue = static_cast<std::size_t>(e);
    RowMatrix gate, up;
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
}

void LlamaModel::mixtureOfExperts(const RowMatrix& in, const Layer& L, RowMatrix& out, Routing& routing) const
{
    const auto& c = m_config;
    const int T = static_cast<int>(in.rows()), K = c.expertsUsed;
    for (const auto& stack : L.expertStacks) // a GGUF stack's values are checked whole, once
        stack.checkFinite();
    const auto tokensOf = route(in, L, routing);
    // Only the chosen experts run, each on the rows routed to it.
    out = RowMatrix::Zero(T, c.hidden);
    RowMatrix rows, down;
    for (int e = 0; e < c.experts; ++e) {
        const auto& tokens = tokensOf[static_cast<std::size_t>(e)];
        if (tokens.empty())
            continue;
        rows.resize(static_cast<Eigen::Index>(tokens.size()), c.hidden);
        for (std::size_t i = 0; i < tokens.size(); ++i)
            rows.row(static_cast<Eigen::Index>(i)) = in.row(tokens[i]);
        runExpert(e, rows, L, down);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            const int t = tokens[i];
            float w = 0;
            for (int k = 0; k < K; ++k)
                if (routing.ids[static_cast<std::size_t>(t) * K + k] == e)
                    w = routing.weights[static_cast<std::size_t>(t) * K + k];
            out.row(t) += w * down.row(static_cast<Eigen::Index>(i));
        }
    }
    if (L.sharedGate) { // DeepSeek: the shared expert runs on every token, unweighted; Qwen3-Next: gated
        RowMatrix gate, up, shared;
        multiplyTransposed(in, L.sharedGate, gate);
        multiplyTransposed(in, L.sharedUp, up);
        gate.array() = gate.array() / (1.0f + (-gate.array()).exp()) * up.array();
        multiplyTransposed(gate, L.sharedDown, shared);
        if (L.sharedExpertGate) {
            RowMatrix factor;
            multiplyTransposed(in, L.sharedExpertGate, factor); // [T, 1]
            factor.array() = 1.0f / (1.0f + (-factor.array()).exp());
            routing.sharedGate.assign(factor.data(), factor.data() + factor.size());
            shared.array().colwise() *= factor.col(0).array();
        }
        out += shared;
    }
}

} // namespace attnscope::core
