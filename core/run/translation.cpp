// translation: teacher forcing, generation through the decoder's cache, and the reference dumps of encoder-decoder
// models.
#include "run/translation.h"

#include "run/reference_dump.h"
#include "util/error.h"
#include "util/stop_token.h"
#include "util/text_file.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace attnscope::core {

namespace {

// Collects every site's rows as the model reports them: a teacher-forced call gives whole matrices, a generation
// step one row per decoder site; rows of one site are stacked in order.
class SiteCollector final : public SiteObserver {
public:
    explicit SiteCollector(const ModelInfo& info)
        : m_sites(info.sites.size())
    {
    }
    void onSite(const SiteView& v) override
    {
        auto& s = m_sites[static_cast<std::size_t>(v.site)];
        s.heads = v.inputs.heads;
        for (int i = 0; i < v.qlen; ++i) {
            Row r;
            r.cols = v.klen;
            r.p.resize(static_cast<std::size_t>(s.heads) * v.klen);
            for (int h = 0; h < s.heads; ++h)
                std::copy_n(v.probabilities + (static_cast<std::size_t>(h) * v.qlen + i) * v.klen, v.klen,
                            r.p.data() + static_cast<std::size_t>(h) * v.klen);
            s.rows.push_back(std::move(r));
        }
    }
    // Every site as [heads, rows, cols], the columns the widest row's (a causal site's earlier rows padded with 0).
    std::vector<SiteAttention> assemble() const
    {
        std::vector<SiteAttention> out(m_sites.size());
        for (std::size_t k = 0; k < m_sites.size(); ++k) {
            const auto& s = m_sites[k];
            auto& a = out[k];
            a.heads = s.heads;
            a.rows = static_cast<int>(s.rows.size());
            for (const auto& r : s.rows)
                a.cols = std::max(a.cols, r.cols);
            a.p.assign(static_cast<std::size_t>(a.heads) * a.rows * a.cols, 0.0f);
            for (int i = 0; i < a.rows; ++i) {
                const auto& r = s.rows[static_cast<std::size_t>(i)];
                for (int h = 0; h < a.heads; ++h)
                    std::copy_n(r.p.data() + static_cast<std::size_t>(h) * r.cols, r.cols,
                                a.p.data() + (static_cast<std::size_t>(h) * a.rows + i) * a.cols);
            }
        }
        return out;
    }

private:
    struct Row {
        int cols = 0;
        std::vector<float> p; // [heads, cols]
    };
    struct Site {
        int heads = 0;
        std::vector<Row> rows;
    };
    std::vector<Site> m_sites;
};

} // namespace

std::vector<Token> sourceTokens(const Tokenizer& tokenizer, std::string_view text)
{
    if (tokenizer.encode(text).empty())
        throw Error(ErrorCode::BadInput, "the source text tokenizes to nothing: type a sentence to translate");
    return tokenizer.encodeWithSpecial(text);
}

std::vector<std::int32_t> targetIds(const EncoderDecoderModel& model, const Tokenizer& target, std::string_view text)
{
    std::vector<std::int32_t> ids{model.config().decoderStart};
    const auto rest = idsOf(target.encode(text));
    ids.insert(ids.end(), rest.begin(), rest.end());
    return ids;
}

Translation teacherForce(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                         std::span<const std::int32_t> target, const StopToken* stop)
{
    SiteCollector collect(model.info());
    auto encoded = model.encode(source, collect, stop);
    auto state = model.startDecoder(encoded);
    Translation t;
    model.decode(state, target, collect, &t.logits, stop);
    t.source.assign(source.begin(), source.end());
    t.target.assign(target.begin(), target.end());
    t.typed = static_cast<int>(target.size());
    t.vocab = model.info().vocabSize;
    t.sites = collect.assemble();
    return t;
}

Translation generate(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                     std::span<const std::int32_t> prefix, const GenerateOptions& options)
{
    if (prefix.empty())
        throw Error(ErrorCode::BadInput, "generation starts from at least the decoder start token");
    const int V = model.info().vocabSize;
    SiteCollector collect(model.info());
    auto encoded = model.encode(source, collect, options.stop);
    auto state = model.startDecoder(encoded);
    Translation t;
    t.source.assign(source.begin(), source.end());
    t.target.assign(prefix.begin(), prefix.end());
    t.typed = static_cast<int>(prefix.size());
    t.vocab = V;
    std::vector<float> logits;
    model.decode(state, prefix, collect, &logits, options.stop);
    t.logits = logits;
    std::mt19937_64 rng(options.seed);
    const int limit = std::min(options.maxNewTokens, model.maxStreamTokens() - static_cast<int>(prefix.size()));
    for (int step = 0; step < limit; ++step) {
        const float* row = t.logits.data() + (t.logits.size() - static_cast<std::size_t>(V));
        std::int32_t next = 0;
        if (!options.sample) {
            next = static_cast<std::int32_t>(std::max_element(row, row + V) - row);
        } else {
            const float temp = std::max(options.temperature, 1e-3f);
            const float top = *std::max_element(row, row + V);
            std::vector<double> w(static_cast<std::size_t>(V));
            for (int v = 0; v < V; ++v)
                w[static_cast<std::size_t>(v)] = std::exp((row[v] - top) / temp);
            std::discrete_distribution<int> pick(w.begin(), w.end());
            next = pick(rng);
        }
        t.target.push_back(next);
        const bool eos = next == model.config().eos;
        if (!(eos && options.stopAtEos)) {
            const std::int32_t one[1] = {next};
            model.decode(state, one, collect, &logits, options.stop);
            t.logits.insert(t.logits.end(), logits.begin(), logits.end());
        }
        t.finished = eos && options.stopAtEos;
        if (options.onStep) { // the sites so far, only for a caller that shows each step
            t.sites = collect.assemble();
            options.onStep(t);
        }
        if (t.finished)
            break;
    }
    t.sites = collect.assemble();
    return t;
}

namespace {

// Names every tensor of a teacher-forced run as the reference data does.
class DumpCollector final : public SiteObserver {
public:
    DumpCollector(const EncoderDecoderModel& model, std::vector<OutputTensor>& out)
        : m_model(model)
        , m_out(out)
    {
    }
    void onSite(const SiteView& v) override
    {
        const AttentionSite& site = m_model.info().sites[static_cast<std::size_t>(v.site)];
        const std::string name = site.stack == Stack::Encoder
                                     ? "encoder.layer" + std::to_string(site.layer) + ".attn_prob"
                                     : "decoder.layer" + std::to_string(site.layer) +
                                           (site.kind == SiteKind::Cross ? ".cross_attn_prob" : ".self_attn_prob");
        m_out.push_back({name, {v.inputs.heads, v.qlen, v.klen},
                         std::vector<float>(v.probabilities, v.probabilities + static_cast<std::size_t>(v.inputs.heads) *
                                                                                   v.qlen * v.klen)});
    }
    void onEmbedding(Stack s, const float* x, int rows) override { add(prefix(s) + ".embedding", x, rows); }
    void onLayerOutput(Stack s, int layer, const float* x, int rows) override
    {
        add(prefix(s) + ".layer" + std::to_string(layer) + ".hidden", x, rows);
    }
    void onStackOutput(Stack s, const float* x, int rows) override { add(prefix(s) + ".last_hidden_state", x, rows); }

private:
    static std::string prefix(Stack s) { return s == Stack::Encoder ? "encoder" : "decoder"; }
    void add(const std::string& name, const float* x, int rows)
    {
        const int C = m_model.info().dModel;
        m_out.push_back({name, {rows, C}, std::vector<float>(x, x + static_cast<std::size_t>(rows) * C)});
    }
    const EncoderDecoderModel& m_model;
    std::vector<OutputTensor>& m_out;
};

void addPositionTables(const EncoderDecoderModel& model, Stack stack, int n, std::vector<OutputTensor>& out)
{
    if (model.positionBucket(stack, 0) < 0)
        return;
    const int H = model.info().heads;
    const std::string p = stack == Stack::Encoder ? "encoder" : "decoder";
    OutputTensor bucket{p + ".position_bucket", {n, n}, std::vector<float>(static_cast<std::size_t>(n) * n)};
    OutputTensor bias{p + ".position_bias", {H, n, n}, std::vector<float>(static_cast<std::size_t>(H) * n * n)};
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            bucket.data[static_cast<std::size_t>(i) * n + j] = static_cast<float>(model.positionBucket(stack, j - i));
            for (int h = 0; h < H; ++h)
                bias.data[(static_cast<std::size_t>(h) * n + i) * n + j] = model.positionBiasAt(stack, h, j - i);
        }
    out.push_back(std::move(bucket));
    out.push_back(std::move(bias));
}

} // namespace

std::vector<OutputTensor> dumpSeq2Seq(const EncoderDecoderModel& model, const nlohmann::json& input,
                                      const std::string& inputFile)
{
    if (!input.is_object())
        throw Error(ErrorCode::BadInput, "input is not a JSON object", inputFile);
    for (const char* key : {"input_ids", "decoder_input_ids"})
        if (!input.contains(key))
            throw Error(ErrorCode::BadInput, "an encoder-decoder input needs \"input_ids\" (the source) and "
                                             "\"decoder_input_ids\" (the target, from the decoder start token)",
                        inputFile, key);
    const auto source = jsonIdList(input["input_ids"], inputFile, "input_ids");
    const auto target = jsonIdList(input["decoder_input_ids"], inputFile, "decoder_input_ids");
    if (input.contains("attention_mask")) {
        const auto& mask = input["attention_mask"];
        if (!mask.is_array() || mask.size() != source.size() ||
            std::any_of(mask.begin(), mask.end(), [](const nlohmann::json& m) { return !(m.is_number() && m == 1); }))
            throw Error(ErrorCode::BadInput, "padding is not supported: attention_mask must be all 1, one per source token",
                        inputFile, "attention_mask");
    }
    std::vector<OutputTensor> out;
    DumpCollector collect(model, out);
    auto encoded = model.encode(source, collect);
    auto state = model.startDecoder(encoded);
    std::vector<float> logits;
    model.decode(state, target, collect, &logits);
    const int V = model.info().vocabSize;
    out.push_back({"logits", {static_cast<std::int64_t>(target.size()), V}, std::move(logits)});
    addPositionTables(model, Stack::Encoder, static_cast<int>(source.size()), out);
    addPositionTables(model, Stack::Decoder, static_cast<int>(target.size()), out);
    return out;
}

std::vector<OutputTensor> dumpGeneration(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                                         int steps, std::vector<std::int32_t>* generated)
{
    const std::int32_t start[1] = {model.config().decoderStart};
    GenerateOptions options;
    options.maxNewTokens = steps;
    options.stopAtEos = false;
    const Translation t = generate(model, source, start, options);
    std::vector<OutputTensor> out;
    const int V = t.vocab, S = static_cast<int>(t.source.size());
    const auto& sites = model.info().sites;
    for (int s = 0; s < steps && s + 1 < static_cast<int>(t.target.size()); ++s) {
        for (std::size_t k = 0; k < sites.size(); ++k) {
            if (sites[k].stack != Stack::Decoder)
                continue;
            const SiteAttention& a = t.sites[k];
            const bool cross = sites[k].kind == SiteKind::Cross;
            const int cols = cross ? S : s + 1;
            OutputTensor o{"step" + std::to_string(s) + ".layer" + std::to_string(sites[k].layer) +
                               (cross ? ".cross_attn" : ".self_attn"),
                           {a.heads, cols},
                           std::vector<float>(static_cast<std::size_t>(a.heads) * cols)};
            for (int h = 0; h < a.heads; ++h)
                for (int j = 0; j < cols; ++j)
                    o.data[static_cast<std::size_t>(h) * cols + j] = a.at(h, s, j);
            out.push_back(std::move(o));
        }
        out.push_back({"step" + std::to_string(s) + ".logits", {V},
                       std::vector<float>(t.logits.begin() + static_cast<std::ptrdiff_t>(s) * V,
                                          t.logits.begin() + static_cast<std::ptrdiff_t>(s + 1) * V)});
    }
    if (generated)
        generated->assign(t.target.begin() + 1, t.target.end());
    return out;
}

} // namespace attnscope::core
