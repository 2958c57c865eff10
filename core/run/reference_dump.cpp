// reference_dump: input.json parsing and a capture observer that names tensors like the reference data.
#include "run/reference_dump.h"

#include "model/run_limits.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace attnscope::core {

std::vector<std::int32_t> jsonIdList(const nlohmann::json& v, const std::string& file, const std::string& key)
{
    if (!v.is_array())
        throw Error(ErrorCode::BadInput, "must be a list of token ids", file, key);
    std::vector<std::int32_t> ids;
    for (const auto& x : v) {
        if (!x.is_number_integer())
            throw Error(ErrorCode::BadInput, "token id " + jsonPreview(x) + " is not an integer", file, key);
        // Read wide: get<int32_t> would wrap 4294967297 to 1.
        if (x.is_number_unsigned() ? x.get<std::uint64_t>() > 0x7fffffffULL
                                   : (x.get<std::int64_t>() < 0 || x.get<std::int64_t>() > 0x7fffffffLL))
            throw Error(ErrorCode::BadInput, "token id " + jsonPreview(x) + " is outside 0 .. 2147483647", file, key);
        ids.push_back(static_cast<std::int32_t>(x.get<std::int64_t>()));
    }
    return ids;
}

namespace {

class DumpObserver final : public AttentionObserver {
public:
    DumpObserver(const ModelInfo& info, std::vector<OutputTensor>& out)
        : m_relative(info.can.decomposition == ScoreDecomposition::RelativeTerms)
        , m_rotary(info.can.decomposition == ScoreDecomposition::RotaryBands)
        , m_fixedTerms(info.fixedTerms)
        , m_encoder(!info.can.causal)
        , m_out(out)
    {
    }
    bool wantTerms() const override { return m_relative || m_fixedTerms; }
    bool wantLogits() const override { return !m_relative; }
    bool wantScores() const override { return m_rotary; }

    void onSegment(const SegmentView& s) override
    {
        m_segPrefix = m_relative ? "seg" + std::to_string(s.segment) + "." : "";
        add(m_encoder ? "embeddings" : "embedding", {s.qlen, s.dModel}, s.embedding); // as the references name it
        if (s.posEmb)
            add("pos_emb", {s.klen, s.dModel}, s.posEmb);
        if (m_relative) {
            std::vector<float> mask(static_cast<std::size_t>(s.qlen) * s.klen);
            for (std::size_t i = 0; i < mask.size(); ++i)
                mask[i] = s.mask[i] ? 1.0f : 0.0f;
            m_out.push_back({m_segPrefix + "mask", {s.qlen, s.klen}, std::move(mask)});
        }
    }

    void onLayer(const LayerView& l) override
    {
        const std::string p = "layer" + std::to_string(l.layer) + ".";
        const Shape probShape{l.heads, l.qlen, l.klen};
        if (m_rotary) {
            const auto& in = l.inputs;
            addHeadMajor(p + "q_rot", in.queries, l.qlen, l.heads, l.headDim);
            addHeadMajor(p + "k_rot", in.keys, l.klen, l.kvHeads, l.headDim);
            add(p + "attn_scores", probShape, l.scores);
        }
        add(p + "attn_prob", probShape, l.attnProb);
        static const char* termNames[4] = {"term_a", "term_b", "term_c", "term_d"};
        for (int t = 0; t < 4; ++t)
            if (l.terms[t]) // a model's named terms under the reference's names (DeepSeek's score_rope, score_nope)
                add(p + (m_fixedTerms ? m_fixedTerms->named[static_cast<std::size_t>(t)].dumpName : termNames[t]),
                    probShape, l.terms[t]);
        if (l.memsIn && l.mlen > 0)
            add(p + "mems_in", {l.mlen, l.dModel}, l.memsIn);
        add(p + "attn_output", {l.qlen, l.dModel}, l.attnOutput);
        add(p + "hidden", {l.qlen, l.dModel}, l.hidden);
        if (l.inputs.sinks)
            add(p + "sinks", {l.heads}, l.inputs.sinks);
        if (l.routerLogits) { // a mixture-of-experts layer's routing
            add(p + "router_logits", {l.qlen, l.experts}, l.routerLogits);
            add(p + "router_probs", {l.qlen, l.experts}, l.routerProbs);
            add(p + "expert_weights", {l.qlen, l.expertsUsed}, l.expertWeights);
            std::vector<float> ids(static_cast<std::size_t>(l.qlen) * l.expertsUsed);
            for (std::size_t i = 0; i < ids.size(); ++i)
                ids[i] = static_cast<float>(l.expertIds[i]);
            add(p + "expert_ids", {l.qlen, l.expertsUsed}, ids.data());
        }
    }

    void onSegmentEnd(const SegmentEndView& e) override
    {
        if (e.lnF) {
            add(m_rotary ? "norm" : m_encoder ? "mlm_transform" : "ln_f", {e.qlen, e.dModel}, e.lnF);
            add("logits", {e.qlen, e.vocab}, e.logits);
        }
    }

private:
    // Rows of `heads` head vectors as [heads, rows, d], the reference's layout.
    void addHeadMajor(const std::string& name, const RowSource& x, int rows, int heads, int d)
    {
        std::vector<float> out(static_cast<std::size_t>(heads) * rows * d);
        for (int n = 0; n < heads; ++n)
            for (int t = 0; t < rows; ++t)
                std::copy_n(x.row(t) + n * d, d, out.begin() + (static_cast<std::ptrdiff_t>(n) * rows + t) * d);
        m_out.push_back({m_segPrefix + name, {heads, rows, d}, std::move(out)});
    }

    void add(const std::string& name, const Shape& shape, const float* data)
    {
        const auto n = static_cast<std::size_t>(shapeNumel(shape));
        m_out.push_back({m_segPrefix + name, shape, std::vector<float>(data, data + n)});
    }

    bool m_relative;
    bool m_rotary;
    std::optional<BandSplit> m_fixedTerms;
    bool m_encoder;
    std::vector<OutputTensor>& m_out;
    std::string m_segPrefix;
};

} // namespace

ReferenceRun parseReferenceInput(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile)
{
    if (!input.is_object())
        throw Error(ErrorCode::BadInput, "input is not a JSON object", inputFile);
    const bool relative = model.info().hasRelativeTerms;
    ReferenceRun run;
    auto& segments = run.segments;
    auto& options = run.options;
    if (relative) {
        if (const auto it = input.find("segments"); it != input.end()) {
            if (!it->is_array())
                throw Error(ErrorCode::BadInput, "must be a list of segments", inputFile, "segments");
            for (const auto& s : *it)
                segments.push_back(jsonIdList(s, inputFile, "segments"));
        } else if (const auto ids = input.find("token_ids"); ids != input.end()) {
            const auto all = jsonIdList(*ids, inputFile, "token_ids");
            int len = model.info().defaultSegmentLen;
            for (const char* key : {"segment_length", "tgt_len"})
                if (const auto l = input.find(key); l != input.end() && l->is_number_integer()) {
                    len = checkedSegmentLength(l->get<long long>(), model.info().maxSegmentLen, inputFile, key);
                    break;
                }
            for (std::size_t b = 0; b < all.size(); b += static_cast<std::size_t>(len))
                segments.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(b),
                                      all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), b + len)));
        } else {
            throw Error(ErrorCode::BadInput, "needs \"segments\" or \"token_ids\"", inputFile);
        }
        auto intKey = [&](const char* key) -> std::optional<int> {
            const auto it = input.find(key);
            if (it == input.end() || it->is_null())
                return std::nullopt;
            if (!it->is_number_integer())
                throw Error(ErrorCode::BadInput, "must be an integer", inputFile, key);
            return it->get<int>();
        };
        if (const auto m = intKey("mem_len"))
            options.memLen = checkedMemoryLength(*m, inputFile, "mem_len");
        options.clampLen = intKey("clamp_len");
        if (const auto it = input.find("same_length"); it != input.end() && !it->is_null()) {
            if (!it->is_boolean())
                throw Error(ErrorCode::BadInput, "must be true or false", inputFile, "same_length");
            options.sameLength = it->get<bool>();
        }
    } else {
        // "token_ids", or the encoders' Hugging Face names: "input_ids" with "token_type_ids" and "attention_mask".
        const char* idsKey = input.contains("token_ids") ? "token_ids" : "input_ids";
        const auto ids = input.find(idsKey);
        if (ids == input.end())
            throw Error(ErrorCode::BadInput, "needs \"token_ids\" or \"input_ids\"", inputFile);
        segments.push_back(jsonIdList(*ids, inputFile, idsKey));
        const std::size_t n = segments.front().size();
        auto perToken = [&](const char* key) -> std::vector<std::int32_t> {
            const auto it = input.find(key);
            if (it == input.end() || it->is_null())
                return {};
            auto v = jsonIdList(*it, inputFile, key);
            if (v.size() != n)
                throw Error(ErrorCode::BadInput, "has " + std::to_string(v.size()) + " entries for " + std::to_string(n) +
                                                     " tokens", inputFile, key);
            return v;
        };
        if (!model.info().can.causal) {
            options.tokenTypes = perToken("token_type_ids");
            for (const auto m : perToken("attention_mask")) {
                if (m > 1)
                    throw Error(ErrorCode::BadInput, "must hold 1 (a token) or 0 (padding)", inputFile, "attention_mask");
                options.padding.push_back(m == 0 ? 1 : 0);
            }
        } else if (input.contains("attention_mask") || input.contains("token_type_ids")) {
            throw Error(ErrorCode::BadInput, "attention_mask and token_type_ids are for encoders; this model is causal",
                        inputFile);
        }
        // Causal models run one sequence from position 0; other positions are not a run this dump can make.
        if (const auto pos = input.find("positions"); pos != input.end() && pos->is_array() && model.info().can.causal) {
            const auto p = jsonIdList(*pos, inputFile, "positions");
            for (std::size_t t = 0; t < p.size(); ++t)
                if (p.size() != segments.front().size() || p[t] != static_cast<std::int32_t>(t))
                    throw Error(ErrorCode::BadInput, "must be 0, 1, ..., T-1 for the T token ids", inputFile, "positions");
        }
        if (const auto b = input.find("batch"); b != input.end() && !(b->is_number_integer() && b->get<std::int64_t>() == 1))
            throw Error(ErrorCode::BadInput, "only batch 1 is supported", inputFile, "batch");
    }
    if (segments.empty())
        throw Error(ErrorCode::BadInput, "no tokens to run", inputFile);
    for (const auto& s : segments)
        if (s.empty())
            throw Error(ErrorCode::BadInput, "a segment is empty", inputFile);

    std::size_t longest = 0;
    for (const auto& seg : segments)
        longest = std::max(longest, seg.size());
    checkRunFits(model.info(), options.memLen.value_or(model.info().defaultMemLen), static_cast<int>(std::min<std::size_t>(longest, kMaxSegmentLength)),
                 true, "the run of " + inputFile);
    if (!model.info().hasRelativeTerms) { // logits of every token are dumped: the read-out's array and the dump's copy
        std::size_t total = 0;
        for (const auto& seg : segments)
            total += seg.size();
        checkFits(logitsBytes(model.info(), total), "the logits of " + std::to_string(total) + " tokens over a vocabulary of " +
                                                        std::to_string(model.info().vocabSize),
                  "use fewer tokens", inputFile);
    }
    if (model.info().fixedTerms)
        options.bands = model.info().fixedTerms;
    return run;
}

std::vector<OutputTensor> dumpReference(const AttentionModel& model, const nlohmann::json& input,
                                        const std::string& inputFile)
{
    const ReferenceRun run = parseReferenceInput(model, input, inputFile);
    std::vector<OutputTensor> out;
    DumpObserver observer(model.info(), out);
    try {
        model.run(run.segments, run.options, observer);
    } catch (const Error& e) {
        if (e.file().empty())
            throw Error(e.code(), e.message(), inputFile, e.key());
        throw;
    }
    return out;
}

} // namespace attnscope::core
