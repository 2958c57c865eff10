// Long texts: grids recomputed on demand equal what the model computed (and the reference data), an edited text that
// reuses its prefix equals a fresh run, causal corpus scans (chunks, sliding window) and attention sinks equal direct
// computations from dumped probabilities.
#include "analysis/attention_grid.h"
#include "analysis/relpos_scan.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "model/row_window.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/stop_token.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

using namespace attnscope;

namespace {

// A case's input as capture settings: token ids, the segment length, memory and masking options.
struct CaseInput {
    std::vector<std::int32_t> ids;
    int segmentLen = 0;
    core::RunOptions run;
    bool uniform = true; // segments of one length (the last may be shorter): what a capture can reproduce
};

CaseInput caseInput(const std::filesystem::path& dir, const core::ModelInfo& info)
{
    const auto in = core::readJsonFile((dir / "input.json").string());
    CaseInput c;
    if (in.contains("segments")) {
        const auto& segs = in.at("segments");
        for (std::size_t s = 0; s < segs.size(); ++s) {
            const auto seg = segs[s].get<std::vector<std::int32_t>>();
            if (s == 0)
                c.segmentLen = static_cast<int>(seg.size());
            else if (static_cast<int>(seg.size()) > c.segmentLen ||
                     (s + 1 < segs.size() && static_cast<int>(seg.size()) != c.segmentLen))
                c.uniform = false;
            c.ids.insert(c.ids.end(), seg.begin(), seg.end());
        }
    } else {
        c.ids = in.at(in.contains("token_ids") ? "token_ids" : "input_ids").get<std::vector<std::int32_t>>();
        c.segmentLen = static_cast<int>(c.ids.size());
        // Encoders: token types and padding (attention_mask 0) as the reference ran them.
        if (in.contains("token_type_ids"))
            c.run.tokenTypes = in.at("token_type_ids").get<std::vector<std::int32_t>>();
        if (in.contains("attention_mask"))
            for (const int m : in.at("attention_mask").get<std::vector<int>>())
                c.run.padding.push_back(m == 0 ? 1 : 0);
        if (info.hasRelativeTerms)
            for (const char* key : {"segment_length", "tgt_len"})
                if (in.contains(key) && in.at(key).is_number_integer()) {
                    c.segmentLen = in.at(key).get<int>();
                    break;
                }
    }
    if (info.hasRelativeTerms) {
        if (in.contains("mem_len") && in.at("mem_len").is_number_integer())
            c.run.memLen = in.at("mem_len").get<int>();
        if (in.contains("clamp_len") && in.at("clamp_len").is_number_integer())
            c.run.clampLen = in.at("clamp_len").get<int>();
        if (in.contains("same_length") && in.at("same_length").is_boolean())
            c.run.sameLength = in.at("same_length").get<bool>();
    }
    return c;
}

// The capture settings that reproduce a case's run.
core::CaptureOptions captureOptions(const CaseInput& in)
{
    core::CaptureOptions opt;
    opt.segmentLen = in.segmentLen;
    opt.run = in.run;
    return opt;
}

// body(dir, model, input) for each reference case a capture can reproduce (segments of one length), each in a
// section of its own.
template <typename Body>
void forEachCapturableCase(Body&& body)
{
    for (const auto& dir : test::referenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto in = caseInput(dir, loaded.model->info());
            if (!in.uniform) {
                WARN("segments of different lengths: a capture cannot reproduce this case's segmentation");
                continue;
            }
            body(dir, *loaded.model, in);
        }
    }
}

std::vector<core::Token> tokensOf(const std::vector<std::int32_t>& ids)
{
    std::vector<core::Token> t;
    for (auto id : ids)
        t.push_back({id, std::to_string(id), 0, 0});
    return t;
}

const core::OutputTensor* findTensor(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return &t;
    return nullptr;
}

// Probabilities [heads, q, k] of every segment and layer as the forward pass handed them to an observer.
class ProbabilityObserver final : public core::AttentionObserver {
public:
    void onLayer(const core::LayerView& l) override
    {
        auto& out = probs[{l.segment, l.layer}];
        const std::size_t per = static_cast<std::size_t>(l.qlen) * l.klen;
        if (l.attnProb) {
            out.assign(l.attnProb, l.attnProb + static_cast<std::size_t>(l.heads) * per);
            return;
        }
        // A site whose grid is an implicit map: the map of the inputs the forward pass handed over.
        REQUIRE(l.inputs.mixer != core::Mixer::Softmax);
        out.assign(static_cast<std::size_t>(l.heads) * per, 0.0f);
        for (int h = 0; h < l.heads; ++h)
            core::headAttention(l.inputs, h, {}, out.data() + per * static_cast<std::size_t>(h), l.klen, 0.0f);
    }
    std::map<std::pair<int, int>, std::vector<float>> probs;
};

double maxGridDifference(const core::TextCapture& a, const core::TextCapture& b, const core::TermSelection& terms = {})
{
    REQUIRE(a.segments.size() == b.segments.size());
    double worst = 0;
    for (int s = 0; s < static_cast<int>(a.segments.size()); ++s)
        for (int l = 0; l < a.model.layers; ++l)
            for (int h = 0; h < std::min(a.model.heads, a.model.site(l).heads); ++h) {
                const auto ga = core::attentionGrid(a, s, l, {h}, terms);
                const auto gb = core::attentionGrid(b, s, l, {h}, terms);
                REQUIRE(ga.rows == gb.rows);
                REQUIRE(ga.cols == gb.cols);
                REQUIRE(ga.rowTokens == gb.rowTokens);
                for (std::size_t i = 0; i < ga.values.size(); ++i) {
                    REQUIRE(std::isnan(ga.values[i]) == std::isnan(gb.values[i]));
                    if (!std::isnan(ga.values[i]))
                        worst = std::max(worst, static_cast<double>(std::abs(ga.values[i] - gb.values[i])));
                }
            }
    return worst;
}

std::vector<std::int32_t> randomIds(int n, int vocab, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(0, vocab - 1);
    std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
    for (auto& id : ids)
        id = d(rng);
    return ids;
}

// Every head of (segment, layer): the same values from both captures, bit for bit (NaN where masked).
void requireSameGrids(const core::TextCapture& a, const core::TextCapture& b, int segment, int layer)
{
    for (int h = 0; h < std::min(a.model.heads, a.model.site(layer).heads); ++h) {
        const auto ga = core::attentionGrid(a, segment, layer, {h});
        const auto gb = core::attentionGrid(b, segment, layer, {h});
        REQUIRE(ga.values.size() == gb.values.size());
        for (std::size_t i = 0; i < ga.values.size(); ++i)
            REQUIRE((ga.values[i] == gb.values[i] || (std::isnan(ga.values[i]) && std::isnan(gb.values[i]))));
    }
}

} // namespace

TEST_CASE("grids recomputed on demand equal the forward pass and the reference, every case and head", "[long][reference]")
{
    forEachCapturableCase([](const std::filesystem::path& dir, const core::AttentionModel& model, const CaseInput& in) {
        const auto opt = captureOptions(in);
        const auto capture = core::captureText(model, tokensOf(in.ids), opt);

        // The forward pass's own probabilities, same segmentation.
        ProbabilityObserver forward;
        model.runSplit(in.ids, in.segmentLen, in.run, forward);
        const auto expected = test::loadAll((dir / "expected.safetensors").string());
        const bool relative = model.info().hasRelativeTerms;
        const auto& info = model.info();
        REQUIRE(capture->segments.size() * static_cast<std::size_t>(model.info().layers) == forward.probs.size());
        for (int s = 0; s < static_cast<int>(capture->segments.size()); ++s)
            for (int l = 0; l < model.info().layers; ++l) {
                const std::string prefix = (relative ? "seg" + std::to_string(s) + "." : std::string()) + "layer" +
                                           std::to_string(l) + ".";
                // A site of another kind than attention is checked against its implicit map (an MLP block, whose map
                // is the identity, has none in the reference).
                if (info.site(l).mixer == core::Mixer::None)
                    continue;
                const bool softmax = info.site(l).mixer == core::Mixer::Softmax;
                const char* name = softmax ? "attn_prob" : "implicit_attn";
                const auto tol = test::toleranceFor(name);
                const int H = info.site(l).heads;
                const auto* ref = findTensor(expected, prefix + name);
                REQUIRE(ref);
                const auto& fw = forward.probs.at({s, l});
                for (int h = 0; h < H; ++h) {
                    const auto g = core::attentionGrid(*capture, s, l, {h});
                    const std::size_t n = static_cast<std::size_t>(g.rows) * g.cols;
                    REQUIRE(n * H == fw.size());
                    REQUIRE(n * H == ref->data.size());
                    double toForward = 0, toReference = 0;
                    for (std::size_t i = 0; i < n; ++i) {
                        const float v = std::isnan(g.values[i]) ? 0.0f : g.values[i];
                        toForward = std::max(toForward, static_cast<double>(std::abs(v - fw[h * n + i])));
                        toReference = std::max(toReference, static_cast<double>(std::abs(v - ref->data[h * n + i])));
                    }
                    INFO("segment " << s << " layer " << l << " head " << h);
                    CHECK(toForward <= 1e-6);
                    CHECK(toReference <= tol.abs + tol.rel); // |values| <= 1 for probabilities; the maps' are smaller
                }
                if (!relative)
                    continue;
                // Each term alone, raw, equals the reference's term tensor on the visible keys.
                const char* names[4] = {"term_a", "term_b", "term_c", "term_d"};
                for (int t = 0; t < 4; ++t) {
                    const auto* term = findTensor(expected, prefix + names[t]);
                    REQUIRE(term);
                    core::TermSelection sel{t == 0, t == 1, t == 2, t == 3};
                    sel.raw = true;
                    for (int h = 0; h < H; ++h) {
                        const auto g = core::attentionGrid(*capture, s, l, {h}, sel);
                        const std::size_t n = static_cast<std::size_t>(g.rows) * g.cols;
                        const auto ttol = test::toleranceFor(names[t]);
                        for (std::size_t i = 0; i < n; ++i)
                            if (!std::isnan(g.values[i])) {
                                const float e = term->data[h * n + i];
                                REQUIRE(std::abs(g.values[i] - e) <= ttol.abs + ttol.rel * std::abs(e));
                            }
                    }
                }
            }
    });
}

TEST_CASE("an edited text reusing its prefix equals a fresh run (edits at the start, middle and end)", "[long][reuse]")
{
    struct Setup {
        const char* name;
        int segmentLen;
        int tokens;
    };
    // Causal models resume inside the changed segment; Transformer-XL from the start of the segment holding it.
    for (const Setup setup : {Setup{"txl-tiny", 6, 29}, Setup{"txl-samelen", 4, 19}, Setup{"gpt2-tiny", 16, 40},
                              Setup{"llama-gqa", 16, 40}, Setup{"llama-gqa", 64, 50}}) {
        const auto dir = test::testdataDir() / setup.name;
        DYNAMIC_SECTION(setup.name << " segments of " << setup.segmentLen)
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& model = *loaded.model;
            const bool causal = !model.info().hasRelativeTerms;
            core::CaptureOptions opt;
            opt.segmentLen = setup.segmentLen;
            const auto base = randomIds(setup.tokens, model.info().vocabSize, 7);
            const auto before = core::captureText(model, tokensOf(base), opt);
            CHECK(before->reusedTokens == 0);

            struct Edit {
                const char* what;
                std::vector<std::int32_t> ids;
                int firstChange;
            };
            const int T = setup.tokens, mid = T / 2;
            const int other = (base[static_cast<std::size_t>(mid)] + 1) % model.info().vocabSize;
            auto replaced = [&](int at) {
                auto v = base;
                v[static_cast<std::size_t>(at)] = (v[static_cast<std::size_t>(at)] + 1) % model.info().vocabSize;
                return v;
            };
            auto inserted = base;
            inserted.insert(inserted.begin() + mid, other);
            auto appended = base;
            appended.push_back(3);
            auto shortened = base;
            shortened.pop_back();
            const std::vector<Edit> edits{{"replace the first token", replaced(0), 0},
                                          {"replace a middle token", replaced(mid), mid},
                                          {"insert in the middle", inserted, mid},
                                          {"replace the last token", replaced(T - 1), T - 1},
                                          {"type a token at the end", appended, T},
                                          {"delete the last token", shortened, T - 1}};
            for (const auto& e : edits) {
                INFO(e.what);
                core::CaptureOptions reuse = opt;
                reuse.previous = before;
                const auto edited = core::captureText(model, tokensOf(e.ids), reuse);
                const auto fresh = core::captureText(model, tokensOf(e.ids), opt);
                const int T2 = static_cast<int>(e.ids.size());
                const int p = std::min(e.firstChange, T2 - 1);
                const int expectedReuse = causal ? p : p / setup.segmentLen * setup.segmentLen;
                CHECK(edited->reusedTokens == expectedReuse);
                CHECK(maxGridDifference(*edited, *fresh) <= 2e-6);
                if (model.info().hasRelativeTerms) {
                    core::TermSelection b{false, true, false, false};
                    CHECK(maxGridDifference(*edited, *fresh, b) <= 2e-6);
                }
                // An edit of an edit goes on reusing (the states it keeps are fresh).
                core::CaptureOptions again = opt;
                again.previous = edited;
                auto twice = e.ids;
                twice.push_back(5);
                const auto second = core::captureText(model, tokensOf(twice), again);
                CHECK(second->reusedTokens > 0);
                CHECK(maxGridDifference(*second, *core::captureText(model, tokensOf(twice), opt)) <= 2e-6);
            }
            // Another model's or other settings' capture is never reused.
            core::CaptureOptions otherSettings = opt;
            otherSettings.segmentLen = setup.segmentLen - 1;
            otherSettings.previous = before;
            CHECK(core::captureText(model, tokensOf(base), otherSettings)->reusedTokens == 0);
        }
    }
}

TEST_CASE("a capture keeps queries and keys, not probabilities: memory grows with tokens, not tokens squared", "[long]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto& info = loaded.model->info();
    core::CaptureOptions opt;
    opt.stateBudget = 0; // records only
    const auto small = core::captureText(*loaded.model, tokensOf(randomIds(100, info.vocabSize, 1)), opt);
    const auto large = core::captureText(*loaded.model, tokensOf(randomIds(400, info.vocabSize, 1)), opt);
    REQUIRE(small->segments.size() == 1);
    REQUIRE(large->segments.size() == 1);
    const double perToken = static_cast<double>(info.layers) * (info.heads + info.kvHeads) * info.dHead * sizeof(float);
    const int paged = (400 + core::RowPages::kPageRows - 1) / core::RowPages::kPageRows * core::RowPages::kPageRows;
    CHECK(static_cast<double>(large->bytes()) <= 1.05 * perToken * paged); // rows are kept in whole pages
    CHECK(static_cast<double>(large->bytes()) / static_cast<double>(small->bytes()) == Approx(4.0).epsilon(0.05));
    // A limit that cannot hold the records is refused up front, with the numbers.
    opt.maxBytes = 1000;
    CHECK_THROWS_WITH(core::captureText(*loaded.model, tokensOf(randomIds(400, info.vocabSize, 1)), opt),
                      Catch::Contains("400 tokens") && Catch::Contains("limit"));
}

TEST_CASE("a generation whose capture would pass the limit is refused before its first step, with the numbers",
          "[long][generate]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "t5-tiny").string());
    const auto& info = loaded.model->info();
    const auto tokenizer = core::loadModelTargetTokenizer(loaded);
    core::CaptureOptions opt;
    opt.stateBudget = 0;
    opt.streams = core::typedSource(info, *core::loadModelTokenizer(loaded), "5 6 7 8 9 10");
    const auto prompt = core::streamTokens(info, info.segmentStream(), *tokenizer, "");
    // Room for the prompt and a few steps, not for a long generation.
    opt.maxBytes = static_cast<std::size_t>(core::estimateCaptureBytes(info, prompt.size() + 20, 1 << 16, 0));
    int steps = 0;
    const auto count = [&](const std::shared_ptr<const core::TextCapture>&, int) { ++steps; };
    CHECK_THROWS_WITH(core::writeGreedily(*loaded.model, prompt, 100000, *tokenizer, opt, count),
                      Catch::Contains("writing 100000 tokens") && Catch::Contains("limit"));
    CHECK(steps == 0);
    CHECK_NOTHROW(core::writeGreedily(*loaded.model, prompt, 3, *tokenizer, opt, count));
}

namespace {
// Profile sums and counts, and sink counts, accumulated directly from [heads, q, q] probabilities of one causal
// chunk (query i sees keys 0..i; distance i - j).
struct DirectProfile {
    int layers, heads, distances;
    std::vector<double> sum, count, sinkMass, sinkHits, entropy, attended;
    double sinkQueries = 0, queries = 0;
    DirectProfile(int L, int H, int D)
        : layers(L), heads(H), distances(D), sum(static_cast<std::size_t>(L) * H * D), count(static_cast<std::size_t>(D)),
          sinkMass(static_cast<std::size_t>(L) * H), sinkHits(static_cast<std::size_t>(L) * H),
          entropy(static_cast<std::size_t>(L) * H), attended(static_cast<std::size_t>(L) * H)
    {
    }
    // probs [heads, q, k] of a segment with m cached keys before its q queries; query i sees keys lo(i)..m+i.
    void add(int layer, const std::vector<float>& probs, int q, int k, int m, bool countPairs)
    {
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < q; ++i) {
                int lo = 0;
                while (probs[(static_cast<std::size_t>(h) * q + i) * k + lo] == 0.0f && lo < m + i)
                    ++lo; // (probabilities of visible keys are never exactly 0 here)
                for (int j = lo; j <= m + i; ++j) {
                    const double pij = probs[(static_cast<std::size_t>(h) * q + i) * k + j];
                    sum[(static_cast<std::size_t>(layer) * heads + h) * distances + (m + i - j)] += pij;
                    entropy[static_cast<std::size_t>(layer) * heads + h] -= pij > 0 ? pij * std::log(pij) : 0.0;
                    attended[static_cast<std::size_t>(layer) * heads + h] += pij * (m + i - j);
                    if (countPairs && h == 0)
                        count[static_cast<std::size_t>(m + i - j)] += 1;
                }
                if (countPairs && h == 0)
                    queries += 1;
                if (m + i - lo >= 1) {
                    const float first = probs[(static_cast<std::size_t>(h) * q + i) * k + lo];
                    sinkMass[static_cast<std::size_t>(layer) * heads + h] += first;
                    sinkHits[static_cast<std::size_t>(layer) * heads + h] += first > 0.3f ? 1 : 0;
                    if (countPairs && h == 0)
                        sinkQueries += 1;
                }
            }
    }
};

void requireSameProfile(const core::ScanResult& scan, const DirectProfile& d)
{
    REQUIRE(scan.distances == d.distances);
    for (int i = 0; i < d.distances; ++i)
        REQUIRE(scan.count[static_cast<std::size_t>(i)] == d.count[static_cast<std::size_t>(i)]);
    const auto& sum = scan.sums.at("full");
    for (std::size_t i = 0; i < d.sum.size(); ++i)
        REQUIRE(sum[i] == Approx(d.sum[i]).margin(2e-5));
    const auto& mass = scan.headMeans.at(core::kFirstKeyMass);
    const auto& hits = scan.headMeans.at(core::kSinkRate);
    const auto& ent = scan.headMeans.at(core::kQueryEntropy);
    const auto& dist = scan.headMeans.at(core::kAttendedDistance);
    REQUIRE(mass.queries == d.sinkQueries);
    REQUIRE(hits.queries == d.sinkQueries);
    REQUIRE(ent.queries == d.queries);
    REQUIRE(dist.queries == d.queries);
    for (std::size_t i = 0; i < d.sinkMass.size(); ++i) {
        REQUIRE(mass.sum[i] == Approx(d.sinkMass[i]).margin(2e-5));
        REQUIRE(hits.sum[i] == d.sinkHits[i]);
        REQUIRE(ent.sum[i] == Approx(d.entropy[i]).margin(1e-3));
        REQUIRE(dist.sum[i] == Approx(d.attended[i]).epsilon(1e-5));
    }
}
} // namespace

TEST_CASE("chunk-mode scans of causal models equal profiles and sinks computed from dump output", "[long][scan]")
{
    for (const char* name : {"gpt2-tiny", "llama-tiny", "llama-gqa", "llama-bf16-sharded"}) {
        const auto dir = test::testdataDir() / name;
        if (!std::filesystem::exists(dir / "config.json"))
            continue;
        DYNAMIC_SECTION(name)
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& model = *loaded.model;
            const auto& info = model.info();
            const int C = std::min(12, info.maxSegmentLen);
            const auto ids = randomIds(3 * C + 5, info.vocabSize, 11); // three full chunks and a short one
            core::ScanOptions opt;
            opt.segmentLen = C;
            opt.memLen = 0;
            core::RelposScanner scanner(model, opt);
            scanner.feed(ids);
            const auto scan = scanner.finish();
            CHECK(scan.metadata.at("mode") == "chunks");

            DirectProfile d(info.layers, info.heads, C);
            for (std::size_t b = 0; b < ids.size(); b += static_cast<std::size_t>(C)) {
                const std::vector<std::int32_t> chunk(ids.begin() + static_cast<std::ptrdiff_t>(b),
                                                      ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), b + C)));
                const auto dump = core::dumpReference(model, nlohmann::json{{"token_ids", chunk}}, "chunk");
                const int q = static_cast<int>(chunk.size());
                for (int l = 0; l < info.layers; ++l)
                    d.add(l, findTensor(dump, "layer" + std::to_string(l) + ".attn_prob")->data, q, q, 0, l == 0);
            }
            requireSameProfile(scan, d);
            // The head summary reports the same sinks.
            const auto heads = core::summariseHeads(scan);
            for (std::size_t i = 0; i < heads.size(); ++i) {
                CHECK(heads[i].firstKeyMass == Approx(d.sinkMass[i] / d.sinkQueries));
                CHECK(heads[i].sinkRate == Approx(d.sinkHits[i] / d.sinkQueries));
                CHECK(heads[i].queryEntropy == Approx(d.entropy[i] / d.queries).epsilon(1e-4));
                CHECK(heads[i].attendedDistance == Approx(d.attended[i] / d.queries).epsilon(1e-4));
                // Previous-token score: mean P[i][i-1] over the queries that see their previous token.
                double prev = 0, n = 0;
                for (std::size_t b = 0; b < ids.size(); b += static_cast<std::size_t>(C))
                    n += static_cast<double>(std::min<std::size_t>(ids.size() - b, C) - 1);
                prev = d.sum[i * static_cast<std::size_t>(C) + 1] / n;
                CHECK(heads[i].previousToken == Approx(prev).epsilon(1e-5));
            }
        }
    }
}

TEST_CASE("a sliding-window scan carries the cache: with a window of a whole chunk it equals one long run", "[long][scan]")
{
    for (const char* name : {"llama-tiny", "llama-gqa"}) {
        DYNAMIC_SECTION(name)
        {
            const auto loaded = core::loadModel((test::testdataDir() / name).string());
            const auto& model = *loaded.model;
            const auto& info = model.info();
            const int C = 10;
            const auto ids = randomIds(2 * C, info.vocabSize, 5);
            // Window W = C over two chunks: chunk 2's queries see the carried C keys and their own, exactly what
            // a single run of all 2C tokens computes for them (rotary scores depend on distances only).
            core::ScanOptions opt;
            opt.segmentLen = C;
            opt.memLen = C;
            core::RelposScanner scanner(model, opt);
            scanner.feed(ids);
            const auto scan = scanner.finish();
            CHECK(scan.metadata.at("mode") == "sliding");

            DirectProfile d(info.layers, info.heads, 2 * C);
            const auto dump = core::dumpReference(model, nlohmann::json{{"token_ids", ids}}, "whole");
            for (int l = 0; l < info.layers; ++l)
                d.add(l, findTensor(dump, "layer" + std::to_string(l) + ".attn_prob")->data, 2 * C, 2 * C, 0, l == 0);
            requireSameProfile(scan, d);

            // A shorter window W < C: chunk 2's queries see only the last W carried keys; the scan's bookkeeping
            // equals the probabilities the model hands out for that run.
            opt.memLen = 4;
            core::RelposScanner narrow(model, opt);
            narrow.feed(ids);
            const auto scan2 = narrow.finish();
            ProbabilityObserver probs;
            core::RunOptions ro;
            ro.memLen = 4;
            model.runSplit(ids, C, ro, probs);
            DirectProfile d2(info.layers, info.heads, C + 4);
            for (int s = 0; s < 2; ++s)
                for (int l = 0; l < info.layers; ++l)
                    d2.add(l, probs.probs.at({s, l}), C, C + (s ? 4 : 0), s ? 4 : 0, l == 0);
            requireSameProfile(scan2, d2);
        }
    }
}

TEST_CASE("the text profile of a capture equals a scan of the same text, sinks included", "[long][scan]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto& model = *loaded.model;
    const auto ids = randomIds(30, model.info().vocabSize, 3);
    core::CaptureOptions copt;
    copt.segmentLen = 30;
    const auto capture = core::captureText(model, tokensOf(ids), copt);
    const auto fromCapture = core::relposFromCapture(*capture);
    core::ScanOptions opt;
    opt.segmentLen = 30;
    core::RelposScanner scanner(model, opt);
    scanner.feed(ids);
    const auto scan = scanner.finish();
    REQUIRE(fromCapture.distances == scan.distances);
    for (std::size_t i = 0; i < scan.sums.at("full").size(); ++i)
        CHECK(fromCapture.sums.at("full")[i] == Approx(scan.sums.at("full")[i]).margin(1e-5));
    for (const char* name : {core::kFirstKeyMass, core::kSinkRate, core::kQueryEntropy, core::kAttendedDistance}) {
        CHECK(fromCapture.headMeans.at(name).queries == scan.headMeans.at(name).queries);
        for (std::size_t i = 0; i < scan.headMeans.at(name).sum.size(); ++i)
            CHECK(fromCapture.headMeans.at(name).sum[i] == Approx(scan.headMeans.at(name).sum[i]).margin(1e-4));
    }
}

TEST_CASE("sink counts survive save, load and merge, GPT-2 refuses a sliding window with the reason", "[long][scan]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    const auto ids = randomIds(40, loaded.model->info().vocabSize, 9);
    core::ScanOptions opt;
    opt.segmentLen = 16;
    core::RelposScanner a(*loaded.model, opt);
    a.feed(std::span(ids).first(20));
    auto ra = a.finish();
    core::RelposScanner b(*loaded.model, opt);
    b.feed(std::span(ids).subspan(20));
    const auto rb = b.finish();
    test::TempDir tmp;
    ra.save((tmp / "a.safetensors").string());
    auto back = core::ScanResult::load((tmp / "a.safetensors").string());
    REQUIRE(back.headMeans.size() == ra.headMeans.size());
    for (const auto& [name, m] : ra.headMeans) {
        CHECK(back.headMeans.at(name).sum == m.sum);
        CHECK(back.headMeans.at(name).queries == m.queries);
    }
    back.merge(rb);
    CHECK(back.headMeans.at(core::kSinkRate).queries == ra.headMeans.at(core::kSinkRate).queries + rb.headMeans.at(core::kSinkRate).queries);
    CHECK(back.headMeans.at(core::kSinkRate).mean().size() == static_cast<std::size_t>(back.layers * back.heads));
    // A part without a statistic (saved before it was counted) leaves the merged result without it.
    auto older = rb;
    older.headMeans.erase(core::kQueryEntropy);
    back.merge(older);
    CHECK(!back.has(core::kQueryEntropy));
    CHECK(back.hasSinks());

    opt.memLen = 8;
    CHECK_THROWS_WITH(core::RelposScanner(*loaded.model, opt), Catch::Contains("absolute"));
    core::RunOptions ro;
    ro.memLen = 8;
    CHECK_THROWS_WITH(loaded.model->newState(ro), Catch::Contains("absolute"));
}

TEST_CASE("an edit at the end shares the unchanged pages of the previous capture", "[long][reuse]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto& model = *loaded.model;
    auto ids = randomIds(300, model.info().vocabSize, 4);
    const auto before = core::captureText(model, tokensOf(ids), {});
    ids.push_back(1);
    core::CaptureOptions opt;
    opt.previous = before;
    const auto after = core::captureText(model, tokensOf(ids), opt);
    CHECK(after->reusedTokens == 300);
    for (int l = 0; l < model.info().layers; ++l) {
        const auto& a = before->segment(0).sites[static_cast<std::size_t>(l)];
        const auto& b = after->segment(0).sites[static_cast<std::size_t>(l)];
        // Full pages (rows 0..255) are the same memory; the partial last page was copied before it was written.
        CHECK(a.queries.row(0) == b.queries.row(0));
        CHECK(a.keys.row(255) == b.keys.row(255));
        CHECK(a.queries.row(299) != b.queries.row(299));
        CHECK(b.queries.rows() == 301);
    }
    CHECK(maxGridDifference(*after, *core::captureText(model, tokensOf(ids), {})) <= 2e-6);
}

TEST_CASE("a grid over many heads reports each head and stops when asked", "[long]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto capture = core::captureText(*loaded.model, tokensOf(randomIds(40, loaded.model->info().vocabSize, 2)), {});
    std::vector<std::pair<int, int>> reports;
    core::GridOptions opt;
    opt.headsDone = [&](int done, int total) { reports.emplace_back(done, total); };
    core::attentionGrid(*capture, 0, 1, {}, opt);
    REQUIRE(reports.size() == 8);
    CHECK(reports.back() == std::pair{8, 8});
    core::StopToken stop;
    stop.requestStop();
    core::GridOptions stopped;
    stopped.stop = &stop;
    CHECK_THROWS_WITH(core::attentionGrid(*capture, 0, 1, {}, stopped), Catch::Contains("cancelled"));
    CHECK_NOTHROW(core::attentionGrid(*capture, 0, 1, {3}, stopped)); // one head: nothing to stop between
    CHECK_THROWS_WITH(core::relposFromCapture(*capture, "", &stop), Catch::Contains("cancelled"));
}

TEST_CASE("a layer's grid from the partial capture handed on when it is done equals the whole run's", "[long]")
{
    forEachCapturableCase([](const std::filesystem::path&, const core::AttentionModel& model, const CaseInput& in) {
        auto opt = captureOptions(in);
        const auto whole = core::captureText(model, tokensOf(in.ids), opt);
        std::vector<std::pair<int, int>> seen;
        opt.layerDone = [&](int segment, int layer, const core::CaptureOptions::PartialCapture& partial) {
            seen.emplace_back(segment, layer);
            const auto p = partial();
            REQUIRE(p->tokens.size() == in.ids.size());
            REQUIRE(p->segments.size() == static_cast<std::size_t>(segment) + 1);
            const auto& sites = p->segment(segment).sites;
            REQUIRE(std::count_if(sites.begin(), sites.end(), [](const core::SiteRecord& r) { return r.present; }) == layer + 1);
            requireSameGrids(*p, *whole, segment, layer);
        };
        core::captureText(model, tokensOf(in.ids), opt);
        CHECK(seen.size() == whole->segments.size() * static_cast<std::size_t>(model.info().layers));

        // A hook that has what it wanted stops the run: nothing after that layer runs.
        core::StopToken stop;
        opt.run.stop = &stop;
        seen.clear();
        opt.layerDone = [&](int segment, int layer, const core::CaptureOptions::PartialCapture&) {
            seen.emplace_back(segment, layer);
            if (segment == 0 && layer == 0)
                stop.requestStop();
        };
        CHECK_THROWS_WITH(core::captureText(model, tokensOf(in.ids), opt), Catch::Contains("cancelled"));
        CHECK(seen == std::vector<std::pair<int, int>>{{0, 0}});
    });
}

TEST_CASE("an edited text's partial captures (the unchanged prefix reused) give the finished capture's grids", "[long][reuse]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "llama-gqa").string());
    const auto& model = *loaded.model;
    auto ids = randomIds(200, model.info().vocabSize, 5);
    core::CaptureOptions opt;
    opt.segmentLen = 64; // four segments, the edit in the third (resumed after its first 52 tokens)
    const auto before = core::captureText(model, tokensOf(ids), opt);
    ids[180] = (ids[180] + 1) % model.info().vocabSize;
    opt.previous = before;
    const auto after = core::captureText(model, tokensOf(ids), opt);
    REQUIRE(after->reusedTokens == 180);
    int checked = 0;
    opt.layerDone = [&](int segment, int layer, const core::CaptureOptions::PartialCapture& partial) {
        const auto p = partial();
        REQUIRE(segment >= 2); // the first two are reused whole
        requireSameGrids(*p, *after, segment, layer);
        ++checked;
    };
    const auto again = core::captureText(model, tokensOf(ids), opt);
    CHECK(again->reusedTokens == 180);
    CHECK(checked == 2 * model.info().layers);
}

TEST_CASE("a row window keeps the newest rows through growth, compaction and reserved room, a copy holds only them", "[long]")
{
    core::RowWindow w(3);
    std::vector<float> all; // every row appended, row r = (r, r + 0.5, r + 0.25)
    int next = 0;
    auto block = [&](int n) {
        core::RowMatrix b(n, 3);
        for (int r = 0; r < n; ++r, ++next) {
            b.row(r) << static_cast<float>(next), next + 0.5f, next + 0.25f;
            all.insert(all.end(), {static_cast<float>(next), next + 0.5f, next + 0.25f});
        }
        return b;
    };
    auto expectLast = [&](const core::RowWindow& win, int rows) {
        REQUIRE(win.rows() == rows);
        const std::size_t from = all.size() - static_cast<std::size_t>(rows) * 3;
        for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * 3; ++i)
            REQUIRE(win.data()[i] == all[from + i]);
    };
    for (int segment = 0; segment < 40; ++segment) { // growing, then sliding: compactions along the way
        const int n = 1 + segment % 7, keep = 10;
        const int kept = static_cast<int>(std::min<Eigen::Index>(w.rows(), keep));
        w.append(block(n), keep);
        expectLast(w, kept + n);
        w.keepLast(keep);
        expectLast(w, std::min(kept + n, keep));
        const core::RowWindow copy = w;
        expectLast(copy, static_cast<int>(w.rows()));
        CHECK(copy.bytes() == static_cast<std::size_t>(w.rows()) * 3 * sizeof(float));
    }
    CHECK(w.bytes() <= static_cast<std::size_t>(10 + 7 + 10) * 3 * sizeof(float)); // room: at most the kept rows again
    w.append(block(3), 0); // no memory: only the new rows
    expectLast(w, 3);

    // Reserved room keeps the rows, and appends within it never move them elsewhere.
    w.reserve(2);
    expectLast(w, 3);
    w.reserve(30);
    expectLast(w, 3);
    CHECK(w.bytes() == 30 * 3 * sizeof(float));
    const float* first = w.data();
    for (int n = 0; n < 27; n += 9)
        w.append(block(9), 100);
    expectLast(w, 30);
    CHECK(w.data() == first);
}
