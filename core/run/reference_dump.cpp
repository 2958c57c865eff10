// reference_dump: input.json parsing and a capture observer that names tensors like the reference data.
#include "run/reference_dump.h"

#include "run/generation.h"
#include "run/picture_prompt.h"
#include "run/speech_run.h"
#include "model/run_limits.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

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

// Where the reference names a site's tensors: "layer{l}." in a model of one stack, "encoder.layer{l}." and
// "decoder.layer{l}." in an encoder-decoder model (whose attention is "attn_prob", "self_attn_prob", "cross_attn_prob").
std::string stackPrefix(Stack stack)
{
    return stack == Stack::Encoder ? "encoder." : stack == Stack::Decoder ? "decoder." : "";
}

// The stack whose sites read a stream's tokens as queries.
Stack stackOfStream(const ModelInfo& info, int stream)
{
    for (const auto& site : info.sites)
        if (site.queryStream == stream)
            return site.stack;
    return Stack::Only;
}

class DumpObserver final : public AttentionObserver {
public:
    DumpObserver(const ModelInfo& info, std::vector<OutputTensor>& out)
        : m_info(info)
        , m_relative(info.can.decomposition == ScoreDecomposition::RelativeTerms)
        , m_rotary(info.can.decomposition == ScoreDecomposition::RotaryBands)
        , m_fixedTerms(info.fixedTerms)
        , m_encoder(!info.can.causal)
        , m_segmentStack(stackOfStream(info, info.segmentStream()))
        , m_out(out)
    {
    }
    // Sites over a read stream too long to dump whole (a speech encoder's 1500 frames): these query rows only.
    void setStreamRows(std::vector<int> rows) { m_streamRows = std::move(rows); }
    bool wantTerms() const override { return m_relative || m_fixedTerms; }
    bool wantLogits() const override { return !m_relative; }
    bool wantScores() const override { return m_rotary; }

    void onSegment(const SegmentView& s) override
    {
        m_segPrefix = m_relative ? "seg" + std::to_string(s.segment) + "." : "";
        // As the references name it: "embeddings" for encoders, "decoder.embedding" in an encoder-decoder model.
        add(stackPrefix(m_segmentStack) + (m_encoder ? "embeddings" : "embedding"), {s.qlen, s.dModel}, s.embedding);
        m_layerInput.assign(s.embedding, s.embedding + static_cast<std::size_t>(s.qlen) * s.dModel);
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
        const AttentionSite& site = m_info.site(l.site);
        const std::string p = stackPrefix(site.stack) + "layer" + std::to_string(l.layer) + ".";
        const Shape probShape{l.heads, l.qlen, l.klen};
        if (l.inputs.mixer != Mixer::Softmax) {
            addImplicitSite(p, l);
            return;
        }
        if (!m_streamRows.empty() && site.queryStream != m_info.segmentStream()) {
            addSampledRows(p, l);
            return;
        }
        if (m_rotary) {
            const auto& in = l.inputs;
            addHeadMajor(p + "q_rot", in.queries, l.qlen, l.heads, l.headDim);
            addHeadMajor(p + "k_rot", in.keys, l.klen, l.kvHeads, l.headDim);
            add(p + "attn_scores", probShape, l.scores);
        }
        const char* prob = site.stack != Stack::Decoder ? "attn_prob" : site.kind == SiteKind::Cross ? "cross_attn_prob" : "self_attn_prob";
        add(p + prob, probShape, l.attnProb);
        addParts(p, l);
        static const char* termNames[4] = {"term_a", "term_b", "term_c", "term_d"};
        for (int t = 0; t < 4; ++t)
            if (l.terms[t]) // a model's named terms under the reference's names (DeepSeek's score_rope, score_nope)
                add(p + (m_fixedTerms ? m_fixedTerms->named[static_cast<std::size_t>(t)].dumpName : termNames[t]),
                    probShape, l.terms[t]);
        if (l.memsIn && l.mlen > 0)
            add(p + "mems_in", {l.mlen, l.dModel}, l.memsIn);
        if (site.stack == Stack::Only) { // one output per layer; an encoder-decoder layer's sites share theirs
            add(p + "attn_output", {l.qlen, l.dModel}, l.attnOutput);
            addMixerOut(p, l);
        }
        if (l.hidden)
            add(p + "hidden", {l.qlen, l.dModel}, l.hidden);
        if (l.inputs.sinks)
            add(p + "sinks", {l.heads}, l.inputs.sinks);
        if (l.inputs.positionBias && l.layer == 0 && l.mlen == 0 && l.qlen == l.klen)
            addPositionTables(stackPrefix(site.stack), *l.inputs.positionBias, l.heads, l.qlen);
        addRouting(p, l);
        keepLayerOutput(l);
    }

    // A read stream (an encoder-decoder model's source): its embedding and its stack's output.
    void onStream(const StreamView& v) override
    {
        const std::string p = stackPrefix(stackOfStream(m_info, v.stream));
        add(p + "embedding", {v.rows, v.dModel}, v.embedding);
        add(p + "last_hidden_state", {v.rows, v.dModel}, v.output);
    }

    void onSegmentEnd(const SegmentEndView& e) override
    {
        if (e.lnF) {
            const char* name = m_segmentStack == Stack::Decoder ? "decoder.last_hidden_state"
                               : m_rotary                       ? "norm"
                               : m_encoder                      ? "mlm_transform"
                                                                : "ln_f";
            add(name, {e.qlen, e.dModel}, e.lnF);
            add("logits", {e.qlen, e.vocab}, e.logits);
        }
    }

private:
    // A read stream's site by sampled rows: their probabilities and outputs, and every row's largest probability.
    void addSampledRows(const std::string& p, const LayerView& l)
    {
        const auto R = static_cast<int>(m_streamRows.size());
        std::vector<float> rows(static_cast<std::size_t>(l.heads) * R * l.klen), rowMax(static_cast<std::size_t>(l.heads) * l.qlen);
        std::vector<float> hidden(static_cast<std::size_t>(R) * l.dModel), index(m_streamRows.begin(), m_streamRows.end());
        for (int h = 0; h < l.heads; ++h) {
            const float* head = l.attnProb + static_cast<std::size_t>(h) * l.qlen * l.klen;
            for (int i = 0; i < l.qlen; ++i)
                rowMax[static_cast<std::size_t>(h) * l.qlen + i] = *std::max_element(head + static_cast<std::size_t>(i) * l.klen, head + static_cast<std::size_t>(i + 1) * l.klen);
            for (int r = 0; r < R; ++r)
                std::copy_n(head + static_cast<std::size_t>(m_streamRows[static_cast<std::size_t>(r)]) * l.klen, l.klen,
                            rows.begin() + (static_cast<std::ptrdiff_t>(h) * R + r) * l.klen);
        }
        for (int r = 0; r < R && l.hidden; ++r)
            std::copy_n(l.hidden + static_cast<std::size_t>(m_streamRows[static_cast<std::size_t>(r)]) * l.dModel, l.dModel,
                        hidden.begin() + static_cast<std::ptrdiff_t>(r) * l.dModel);
        m_out.push_back({p + "attn_prob_rows", {l.heads, R, l.klen}, std::move(rows)});
        m_out.push_back({p + "attn_rowmax", {l.heads, l.qlen}, std::move(rowMax)});
        if (l.hidden)
            m_out.push_back({p + "hidden_rows", {R, l.dModel}, std::move(hidden)});
        if (l.layer == 0)
            m_out.push_back({stackPrefix(m_info.site(l.site).stack) + "attn_rows", {R}, std::move(index)});
    }

    // A site whose grid is an implicit map: the mixer's parts, its map per head (masked entries 0), the aggregate its
    // row declares, the layer's output before the residual add and after it.
    void addImplicitSite(const std::string& p, const LayerView& l)
    {
        addParts(p, l);
        const auto per = static_cast<std::size_t>(l.qlen) * l.klen;
        auto mapsOf = [&](const ScoreInputs& in) {
            std::vector<float> maps(per * static_cast<std::size_t>(l.heads));
            for (int h = 0; h < l.heads; ++h)
                headAttention(in, h, {}, maps.data() + per * static_cast<std::size_t>(h), l.klen, 0.0f);
            return maps;
        };
        std::vector<float> maps = mapsOf(l.inputs);
        if (mixerRow(l.inputs.mixer).heuristic) { // the approximation shown beside the exact map
            ScoreInputs heuristic = l.inputs;
            heuristic.heuristicMap = true;
            m_out.push_back({m_segPrefix + p + "heuristic_attn", {l.heads, l.qlen, l.klen}, mapsOf(heuristic)});
        }
        if (mixerRow(l.inputs.mixer).aggregate == HeadAggregate::MeanMagnitude) {
            std::vector<float> mean(per, 0.0f);
            for (std::size_t k = 0; k < maps.size(); ++k)
                mean[k % per] += std::abs(maps[k]) / static_cast<float>(l.heads);
            m_out.push_back({m_segPrefix + p + "implicit_attn_absmean", {l.qlen, l.klen}, std::move(mean)});
        }
        m_out.push_back({m_segPrefix + p + "implicit_attn", {l.heads, l.qlen, l.klen}, std::move(maps)});
        addMixerOut(p, l);
        if (l.hidden)
            add(p + "hidden", {l.qlen, l.dModel}, l.hidden);
        addRouting(p, l);
        keepLayerOutput(l);
    }

    // The residual stream entering the next layer (an MLP block's mixer_out is what it adds to it).
    void keepLayerOutput(const LayerView& l)
    {
        if (l.hidden)
            m_layerInput.assign(l.hidden, l.hidden + static_cast<std::size_t>(l.qlen) * l.dModel);
    }

    // A mixture-of-experts layer's routing.
    void addRouting(const std::string& p, const LayerView& l)
    {
        if (!l.routerLogits)
            return;
        add(p + "router_logits", {l.qlen, l.experts}, l.routerLogits);
        add(p + "router_probs", {l.qlen, l.experts}, l.routerProbs);
        add(p + "expert_weights", {l.qlen, l.expertsUsed}, l.expertWeights);
        std::vector<float> ids(static_cast<std::size_t>(l.qlen) * l.expertsUsed);
        for (std::size_t i = 0; i < ids.size(); ++i)
            ids[i] = static_cast<float>(l.expertIds[i]);
        add(p + "expert_ids", {l.qlen, l.expertsUsed}, ids.data());
    }

    // The hybrid references' mixer_out: the mixer's output before the residual multiplier the forward folds in.
    void addMixerOut(const std::string& p, const LayerView& l)
    {
        const auto n = static_cast<std::size_t>(l.qlen) * l.dModel;
        std::vector<float> out(l.attnOutput, l.attnOutput + n);
        if (l.inputs.mixer == Mixer::None && l.hidden && m_layerInput.size() == n) // an MLP block: what it added
            for (std::size_t k = 0; k < n; ++k)
                out[k] = l.hidden[k] - m_layerInput[k];
        if (l.outputScale != 1.0f)
            for (float& v : out)
                v /= l.outputScale;
        m_out.push_back({m_segPrefix + p + "mixer_out", {l.qlen, l.dModel}, std::move(out)});
    }

    // The mixer's own intermediate rows, [qlen, cols] or per head [qlen, groups, cols / groups].
    void addParts(const std::string& p, const LayerView& l)
    {
        for (const auto& part : l.parts)
            add(p + part.name, part.groups > 1 ? Shape{l.qlen, part.groups, part.cols / part.groups} : Shape{l.qlen, part.cols},
                part.data);
    }

    // Rows of `heads` head vectors as [heads, rows, d], the reference's layout.
    void addHeadMajor(const std::string& name, const RowSource& x, int rows, int heads, int d)
    {
        std::vector<float> out(static_cast<std::size_t>(heads) * rows * d);
        for (int n = 0; n < heads; ++n)
            for (int t = 0; t < rows; ++t)
                std::copy_n(x.row(t) + n * d, d, out.begin() + (static_cast<std::ptrdiff_t>(n) * rows + t) * d);
        m_out.push_back({m_segPrefix + name, {heads, rows, d}, std::move(out)});
    }

    // T5's buckets and biases over n x n positions of a stack, as its first layer's score used them.
    void addPositionTables(const std::string& prefix, const PositionBias& bias, int heads, int n)
    {
        OutputTensor bucket{prefix + "position_bucket", {n, n}, std::vector<float>(static_cast<std::size_t>(n) * n)};
        OutputTensor values{prefix + "position_bias", {heads, n, n}, std::vector<float>(static_cast<std::size_t>(heads) * n * n)};
        for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) {
                if (bias.buckets)
                    bucket.data[static_cast<std::size_t>(i) * n + j] = static_cast<float>(bias.buckets[bias.center + j - i]);
                for (int h = 0; h < heads; ++h)
                    values.data[(static_cast<std::size_t>(h) * n + i) * n + j] = bias.at(h, j - i);
            }
        if (bias.buckets)
            m_out.push_back(std::move(bucket));
        m_out.push_back(std::move(values));
    }

    void add(const std::string& name, const Shape& shape, const float* data)
    {
        const auto n = static_cast<std::size_t>(shapeNumel(shape));
        m_out.push_back({m_segPrefix + name, shape, std::vector<float>(data, data + n)});
    }

    const ModelInfo& m_info;
    bool m_relative;
    bool m_rotary;
    std::optional<BandSplit> m_fixedTerms;
    bool m_encoder;
    Stack m_segmentStack;
    std::vector<OutputTensor>& m_out;
    std::string m_segPrefix;
    std::vector<int> m_streamRows;
    std::vector<float> m_layerInput; // the residual stream entering the current layer
};

} // namespace

std::unique_ptr<AttentionObserver> referenceObserver(const ModelInfo& info, std::vector<OutputTensor>& out)
{
    return std::make_unique<DumpObserver>(info, out);
}

namespace {

// Transformer-XL's input: "segments" (a list of id lists), or "token_ids" cut by "segment_length" / "tgt_len"; its memory
// length, same_length and clamp_len.
void readRelativeRun(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile,
                     ReferenceRun& run)
{
    auto& segments = run.segments;
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
        run.options.memLen = checkedMemoryLength(*m, inputFile, "mem_len");
    run.options.clampLen = intKey("clamp_len");
    if (const auto it = input.find("same_length"); it != input.end() && !it->is_null()) {
        if (!it->is_boolean())
            throw Error(ErrorCode::BadInput, "must be true or false", inputFile, "same_length");
        run.options.sameLength = it->get<bool>();
    }
}

// An encoder-decoder model's input: "input_ids" the source (read whole), "decoder_input_ids" the target from the
// decoder start token (the one segment); an attention_mask must be all 1.
void readSourceAndTarget(const nlohmann::json& input, const std::string& inputFile, ReferenceRun& run)
{
    for (const char* key : {"input_ids", "decoder_input_ids"})
        if (!input.contains(key))
            throw Error(ErrorCode::BadInput, "an encoder-decoder input needs \"input_ids\" (the source) and "
                                             "\"decoder_input_ids\" (the target, from the decoder start token)",
                        inputFile, key);
    auto source = jsonIdList(input["input_ids"], inputFile, "input_ids");
    run.segments.push_back(jsonIdList(input["decoder_input_ids"], inputFile, "decoder_input_ids"));
    if (input.contains("attention_mask")) {
        const auto& mask = input["attention_mask"];
        if (!mask.is_array() || mask.size() != source.size() ||
            std::any_of(mask.begin(), mask.end(), [](const nlohmann::json& m) { return !(m.is_number() && m == 1); }))
            throw Error(ErrorCode::BadInput, "padding is not supported: attention_mask must be all 1, one per source token",
                        inputFile, "attention_mask");
    }
    run.options.source = std::make_shared<const std::vector<std::int32_t>>(std::move(source));
}

// The folder a model was opened from (its preprocessor_config.json lives there).
std::string modelFolder(const ModelInfo& info)
{
    const std::filesystem::path p(info.source);
    return std::filesystem::is_directory(p) ? p.string() : p.parent_path().string();
}

// A speech model's input: "audio" (a file beside input.json) or "input_features" (a safetensors file holding them),
// and "decoder_input_ids". The encoder's sites are dumped at a few rows: the first two, the recording's middle, its
// last, the two after it, the window's middle and its last (as the reference stores them).
void readAudioAndTarget(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile,
                        ReferenceRun& run)
{
    const std::filesystem::path dir = std::filesystem::path(inputFile).parent_path();
    auto fileAt = [&](const char* key) {
        if (!input[key].is_string())
            throw Error(ErrorCode::BadInput, "must be a file name", inputFile, key);
        return (dir / input[key].get<std::string>()).string();
    };
    if (input.contains("input_features"))
        run.options.audio = readAudioFeatures(fileAt("input_features"));
    else if (input.contains("audio"))
        run.options.audio = audioFeaturesOfFile(model, modelFolder(model.info()), fileAt("audio"));
    else
        throw Error(ErrorCode::BadInput, "a speech model's input needs \"audio\" (a recording beside it) or "
                                         "\"input_features\"", inputFile);
    if (!input.contains("decoder_input_ids"))
        throw Error(ErrorCode::BadInput, "a speech model's input needs \"decoder_input_ids\" (the transcript from the start "
                                         "token)", inputFile, "decoder_input_ids");
    run.segments.push_back(jsonIdList(input["decoder_input_ids"], inputFile, "decoder_input_ids"));
    const int S = run.options.audio->frames / 2, F = std::clamp(run.options.audio->contentFrames / 2, 1, S);
    std::set<int> rows{0, 1, F / 2, F - 1, F, F + 1, S / 2, S - 1};
    for (const int r : rows)
        if (r >= 0 && r < S)
            run.streamRows.push_back(r);
}

// One sequence: "token_ids", or the encoders' Hugging Face names: "input_ids" with "token_type_ids" and
// "attention_mask"; positions 0 .. T-1 and batch 1.
void readOneSequence(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile,
                     ReferenceRun& run)
{
    const char* idsKey = input.contains("token_ids") ? "token_ids" : "input_ids";
    const auto ids = input.find(idsKey);
    if (ids == input.end())
        throw Error(ErrorCode::BadInput, "needs \"token_ids\" or \"input_ids\"", inputFile);
    run.segments.push_back(jsonIdList(*ids, inputFile, idsKey));
    const std::size_t n = run.segments.front().size();
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
        run.options.tokenTypes = perToken("token_type_ids");
        for (const auto m : perToken("attention_mask")) {
            if (m > 1)
                throw Error(ErrorCode::BadInput, "must hold 1 (a token) or 0 (padding)", inputFile, "attention_mask");
            run.options.padding.push_back(m == 0 ? 1 : 0);
        }
    } else if (input.contains("attention_mask") || input.contains("token_type_ids")) {
        throw Error(ErrorCode::BadInput, "attention_mask and token_type_ids are for encoders; this model is causal",
                    inputFile);
    }
    // Causal models run one sequence from position 0; other positions are not a run this dump can make.
    if (const auto pos = input.find("positions"); pos != input.end() && pos->is_array() && model.info().can.causal) {
        const auto p = jsonIdList(*pos, inputFile, "positions");
        for (std::size_t t = 0; t < p.size(); ++t)
            if (p.size() != n || p[t] != static_cast<std::int32_t>(t))
                throw Error(ErrorCode::BadInput, "must be 0, 1, ..., T-1 for the T token ids", inputFile, "positions");
    }
    if (const auto b = input.find("batch"); b != input.end() && !(b->is_number_integer() && b->get<std::int64_t>() == 1))
        throw Error(ErrorCode::BadInput, "only batch 1 is supported", inputFile, "batch");
}

// The run fits the memory: its activations, and every token's logits the dump keeps.
void checkReferenceRunFits(const AttentionModel& model, const ReferenceRun& run, const std::string& inputFile)
{
    if (run.segments.empty())
        throw Error(ErrorCode::BadInput, "no tokens to run", inputFile);
    std::size_t longest = 0, total = 0;
    for (const auto& s : run.segments) {
        if (s.empty())
            throw Error(ErrorCode::BadInput, "a segment is empty", inputFile);
        longest = std::max(longest, s.size());
        total += s.size();
    }
    checkRunFits(model.info(), run.options.memLen.value_or(model.info().defaultMemLen),
                 static_cast<int>(std::min<std::size_t>(longest, kMaxSegmentLength)), true, "the run of " + inputFile);
    if (!model.info().hasRelativeTerms) // logits of every token are dumped: the read-out's array and the dump's copy
        checkFits(logitsBytes(model.info(), total), "the logits of " + std::to_string(total) + " tokens over a vocabulary of " +
                                                        std::to_string(model.info().vocabSize),
                  "use fewer tokens", inputFile);
}

} // namespace

ReferenceRun parseReferenceInput(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile)
{
    if (!input.is_object())
        throw Error(ErrorCode::BadInput, "input is not a JSON object", inputFile);
    ReferenceRun run;
    if (model.info().hasRelativeTerms)
        readRelativeRun(model, input, inputFile, run);
    else if (model.info().can.audio)
        readAudioAndTarget(model, input, inputFile, run);
    else if (model.info().typedReadStream() >= 0)
        readSourceAndTarget(input, inputFile, run);
    else
        readOneSequence(model, input, inputFile, run);
    checkReferenceRunFits(model, run, inputFile);
    if (model.info().fixedTerms)
        run.options.bands = model.info().fixedTerms;
    return run;
}

std::vector<OutputTensor> dumpReference(const AttentionModel& model, const nlohmann::json& input,
                                        const std::string& inputFile)
{
    if (model.info().pictureToken >= 0)
        return dumpPicturePrompt(model, input, inputFile);
    const ReferenceRun run = parseReferenceInput(model, input, inputFile);
    std::vector<OutputTensor> out;
    DumpObserver observer(model.info(), out);
    observer.setStreamRows(run.streamRows);
    try {
        model.run(run.segments, run.options, observer);
    } catch (const Error& e) {
        if (e.file().empty())
            throw Error(e.code(), e.message(), inputFile, e.key());
        throw;
    }
    if (model.info().can.audio) { // a speech reference names the transcript it ran
        const auto& ids = run.segments.front();
        out.push_back({"decoder.input_ids", {static_cast<std::int64_t>(ids.size())}, std::vector<float>(ids.begin(), ids.end())});
    }
    return out;
}

namespace {
// Each forward of a greedy generation, in the layout of generation.safetensors: step{s}.layer{l}.self_attn [heads,
// s + 1] and step{s}.layer{l}.cross_attn [heads, S] (the new token's row of a decoder's sites), step{s}.logits.
class StepObserver final : public AttentionObserver {
public:
    StepObserver(const ModelInfo& info, std::vector<OutputTensor>& out)
        : m_info(info)
        , m_out(out)
    {
    }
    bool wantLogits() const override { return true; }
    void onLayer(const LayerView& l) override
    {
        const AttentionSite& site = m_info.site(l.site);
        if (site.queryStream != m_info.segmentStream())
            return; // the encoder runs once, before the first step
        const int last = l.qlen - 1; // the new token's row
        OutputTensor t{"step" + std::to_string(m_step) + ".layer" + std::to_string(l.layer) +
                           (site.kind == SiteKind::Cross ? ".cross_attn" : ".self_attn"),
                       {l.heads, l.klen},
                       std::vector<float>(static_cast<std::size_t>(l.heads) * l.klen)};
        for (int h = 0; h < l.heads; ++h)
            std::copy_n(l.attnProb + (static_cast<std::size_t>(h) * l.qlen + last) * l.klen, l.klen,
                        t.data.begin() + static_cast<std::ptrdiff_t>(h) * l.klen);
        m_out.push_back(std::move(t));
    }
    void onSegmentEnd(const SegmentEndView& e) override
    {
        const float* row = e.logits + static_cast<std::size_t>(e.qlen - 1 - e.firstLogitRow) * e.vocab;
        m_out.push_back({"step" + std::to_string(m_step) + ".logits", {e.vocab}, std::vector<float>(row, row + e.vocab)});
        ++m_step;
    }

private:
    const ModelInfo& m_info;
    std::vector<OutputTensor>& m_out;
    int m_step = 0;
};
} // namespace

std::vector<OutputTensor> dumpGeneration(const AttentionModel& model, const nlohmann::json& input,
                                         const std::string& inputFile, int steps, std::vector<std::int32_t>* generated)
{
    const ReferenceRun run = parseReferenceInput(model, input, inputFile);
    const TokenStream& target = model.info().streams.at(static_cast<std::size_t>(model.info().segmentStream()));
    if (target.startToken < 0)
        throw Error(ErrorCode::BadInput, "a generation from the decoder start token needs an encoder-decoder model",
                    model.info().source);
    std::vector<OutputTensor> out;
    StepObserver steps_(model.info(), out);
    const std::int32_t start[1] = {target.startToken};
    const auto g = generateTokens(model, start, steps, Sampling{}, 0, nullptr, GenerationRun{run.options, &steps_});
    if (generated)
        *generated = g.ids;
    return out;
}

} // namespace attnscope::core
