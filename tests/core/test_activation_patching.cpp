// Activation and path patching against a direct computation on every decoder reference case: the corrupted prompt's
// forward from its first layer with the clean activation substituted by hand (taken from the layer views an observer
// sees, or recorded by a hook written here), measured on the logits the forward itself reads out. The analysis reuses
// recorded layers and measures from the stream; both must give the same numbers.
#include "analysis/activation_patching.h"
#include "model/model_loader.h"
#include "run/patch_prompts.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <map>

using namespace attnscope;
using namespace attnscope::core;

namespace {

// Everything one plain run shows its observer: each layer's input, head outputs and probabilities, and the logits.
struct Seen {
    int T = 0, heads = 0, kvHeads = 0, dv = 0, d = 0;
    std::vector<std::vector<float>> input;    // [layers + 1][T * dModel]: layer l's input (l = layers: the final stream)
    std::vector<std::vector<float>> headMix;  // [layers][T * heads * dv]
    std::vector<std::vector<float>> attnOut;  // [layers][T * dModel]: what the attention block adds to the stream
    std::vector<std::vector<float>> probs;    // [layers][heads * T * T]
    std::vector<std::vector<float>> queries;  // [layers][T * heads * d], as scored (rotated)
    std::vector<std::vector<float>> keys;     // [layers][T * kvHeads * d], as scored
    std::vector<float> logits;                // [T * vocab]
    int vocab = 0;
};

class SeeAll final : public AttentionObserver {
public:
    explicit SeeAll(Seen& s, int dModel)
        : m_s(s)
        , m_c(dModel)
    {
    }
    bool wantLogits() const override { return true; }
    void onSegment(const SegmentView& v) override
    {
        m_s.T = v.qlen;
        m_s.input.assign(1, std::vector<float>(v.embedding, v.embedding + static_cast<std::size_t>(v.qlen) * m_c));
    }
    void onLayer(const LayerView& v) override
    {
        const std::size_t T = static_cast<std::size_t>(v.qlen);
        m_s.heads = v.heads;
        m_s.kvHeads = v.inputs.kvHeads;
        m_s.dv = v.inputs.vDim();
        m_s.d = v.inputs.headDim;
        m_s.headMix.emplace_back(v.headMix, v.headMix + T * v.heads * m_s.dv);
        m_s.attnOut.emplace_back(v.attnOutput, v.attnOutput + T * m_c);
        m_s.probs.emplace_back(v.attnProb, v.attnProb + static_cast<std::size_t>(v.heads) * T * T);
        std::vector<float> q(T * v.heads * m_s.d), k(T * m_s.kvHeads * m_s.d);
        for (std::size_t r = 0; r < T; ++r) {
            std::memcpy(q.data() + r * v.heads * m_s.d, v.inputs.queries.row(static_cast<int>(r)), v.heads * m_s.d * sizeof(float));
            std::memcpy(k.data() + r * m_s.kvHeads * m_s.d, v.inputs.keys.row(static_cast<int>(r)),
                        m_s.kvHeads * m_s.d * sizeof(float));
        }
        m_s.queries.push_back(std::move(q));
        m_s.keys.push_back(std::move(k));
        m_s.input.emplace_back(v.hidden, v.hidden + T * m_c);
    }
    void onSegmentEnd(const SegmentEndView& v) override
    {
        m_s.vocab = v.vocab;
        m_s.logits.assign(v.logits, v.logits + static_cast<std::size_t>(v.qlen) * v.vocab);
    }

private:
    Seen& m_s;
    int m_c;
};

// A hook written for this test: copies one unit's columns (all rows or one) of one activation from a source laid out
// [T, groups * width], records activations, or replaces a head's output by P @ V with a given P.
class ByHand final : public Intervention {
public:
    Activation what = Activation::HeadOutputs;
    int layer = -1, unit = -1, position = -1;
    const std::vector<float>* source = nullptr;
    const std::vector<float>* pattern = nullptr; // [heads, T, T] of the donor
    std::map<std::pair<int, int>, std::vector<float>> recorded; // (activation, layer) -> [T, groups * width]
    std::vector<std::pair<Activation, int>> frozen;              // every unit replaced from frozenFrom
    const std::vector<std::vector<float>>* frozenFrom = nullptr; // [layers][T * heads * dv]

    void onActivation(Activation a, int l, const ActivationRows& rows) override
    {
        const int packed = rows.groups * rows.width;
        for (auto [fa, fl] : frozen)
            if (fa == a && fl == l)
                for (int r = 0; r < rows.rows; ++r)
                    std::memcpy(rows.at(r, 0), (*frozenFrom)[static_cast<std::size_t>(l)].data() + r * packed, packed * sizeof(float));
        if (a == what && l == layer && source)
            for (int r = 0; r < rows.rows; ++r) {
                if (position >= 0 && r != position)
                    continue;
                for (int g = 0; g < rows.groups; ++g)
                    if (unit < 0 || g == unit)
                        std::memcpy(rows.at(r, g), source->data() + r * packed + g * rows.width, rows.width * sizeof(float));
            }
        auto& rec = recorded[{static_cast<int>(a), l}];
        rec.resize(static_cast<std::size_t>(rows.rows) * packed);
        for (int r = 0; r < rows.rows; ++r)
            std::memcpy(rec.data() + r * packed, rows.at(r, 0), packed * sizeof(float));
    }
    void onAttention(int l, const ScoreInputs& in, const float* values, std::ptrdiff_t stride,
                     const ActivationRows& heads) override
    {
        if (!pattern || l != layer)
            return;
        const int T = in.qlen, dv = in.vDim(), g = in.keyHead(unit);
        for (int r = 0; r < T; ++r) {
            if (position >= 0 && r != position)
                continue;
            for (int e = 0; e < dv; ++e) {
                double sum = 0;
                for (int j = 0; j < T; ++j)
                    sum += static_cast<double>((*pattern)[(static_cast<std::size_t>(unit) * T + r) * T + j]) *
                           values[j * stride + g * dv + e];
                heads.at(r, unit)[e] = static_cast<float>(sum);
            }
        }
    }
};

Seen runPlain(const AttentionModel& model, const std::vector<std::int32_t>& ids, Intervention* hook = nullptr)
{
    Seen s;
    SeeAll see(s, model.info().dModel);
    RunOptions o;
    o.memLen = 0;
    o.intervene = hook;
    auto st = model.newState(o);
    model.forwardSegment(*st, ids, see);
    return s;
}

double logitDiff(const Seen& s, int answer, int wrong)
{
    const float* last = s.logits.data() + static_cast<std::size_t>(s.T - 1) * s.vocab;
    return static_cast<double>(last[answer]) - last[wrong];
}

struct Case {
    std::string name;
    LoadedModel loaded;
    std::vector<std::int32_t> clean, corrupt;
    int answer = 0, wrong = 1;
};

// The decoder cases with hooks: the clean prompt is the case's input, the corrupted one differs in one token two
// thirds of the way in; the answer and wrong tokens are the clean run's top two at the last position.
std::vector<Case> decoderCases()
{
    std::vector<Case> out;
    for (const auto& dir : test::referenceCases()) {
        const auto input = readJsonFile((dir / "input.json").string());
        if (!input.contains("token_ids"))
            continue;
        Case c;
        c.name = dir.filename().string();
        c.loaded = loadModel(dir.string());
        if (!c.loaded.model->info().can.interventions)
            continue;
        for (const auto& id : input["token_ids"])
            c.clean.push_back(id.get<std::int32_t>());
        c.corrupt = c.clean;
        const std::size_t at = c.clean.size() * 2 / 3;
        c.corrupt[at] = (c.clean[at] + 7) % c.loaded.model->info().vocabSize;
        const Seen s = runPlain(*c.loaded.model, c.clean);
        const float* last = s.logits.data() + static_cast<std::size_t>(s.T - 1) * s.vocab;
        std::vector<int> order(static_cast<std::size_t>(s.vocab));
        for (int i = 0; i < s.vocab; ++i)
            order[static_cast<std::size_t>(i)] = i;
        std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int a, int b) { return last[a] > last[b]; });
        c.answer = order[0];
        c.wrong = order[1];
        out.push_back(std::move(c));
    }
    return out;
}

const std::vector<Case>& cases()
{
    static const std::vector<Case> all = decoderCases();
    return all;
}

PatchRequest requestFor(const Case& c, PatchComponent component, bool perPosition = false, bool noising = false)
{
    PatchRequest r;
    r.clean = c.clean;
    r.corrupt = c.corrupt;
    r.component = component;
    r.perPosition = perPosition;
    r.noising = noising;
    r.metric.answer = c.answer;
    r.metric.wrong = c.wrong;
    return r;
}

// Two receivers' hooks in one run.
struct TwoHooks final : Intervention {
    ByHand a, b;
    void onActivation(Activation w, int l, const ActivationRows& rows) override
    {
        a.onActivation(w, l, rows);
        b.onActivation(w, l, rows);
    }
};

PathPatchRequest pathRequestFor(const Case& c, PatchComponent input, int senderLayer, int senderHead,
                                std::vector<std::pair<int, int>> receivers)
{
    PathPatchRequest r;
    r.clean = c.clean;
    r.corrupt = c.corrupt;
    r.metric.answer = c.answer;
    r.metric.wrong = c.wrong;
    r.senderLayer = senderLayer;
    r.senderHead = senderHead;
    r.input = input;
    r.receivers = std::move(receivers);
    return r;
}

bool close(double a, double b) { return std::abs(a - b) <= 2e-4 + 2e-4 * std::abs(b); }
// Scores divide by m_clean - m_corrupt, which can be small: compared as the metric differences they stand for.
bool closeScore(double a, double b, double mClean, double mCorrupt)
{
    return close(a * (mClean - mCorrupt), b * (mClean - mCorrupt));
}

} // namespace

TEST_CASE("patching covers the decoder reference cases, grouped ones among them", "[patching]")
{
    REQUIRE(cases().size() >= 5);
    bool grouped = false;
    for (const auto& c : cases())
        grouped = grouped || c.loaded.model->info().kvHeads < c.loaded.model->info().heads;
    CHECK(grouped);
}

TEST_CASE("head outputs, patterns and the residual stream patched equal the forward patched by hand", "[patching]")
{
    for (const auto& c : cases()) {
        INFO(c.name);
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        const Seen clean = runPlain(model, c.clean), corrupt = runPlain(model, c.corrupt);
        const double mClean = logitDiff(clean, c.answer, c.wrong), mCorrupt = logitDiff(corrupt, c.answer, c.wrong);

        const auto heads = patchActivations(model, requestFor(c, PatchComponent::HeadOutput));
        CHECK(close(heads.clean, mClean));
        CHECK(close(heads.corrupt, mCorrupt));
        REQUIRE(heads.shape == std::vector<int>{info.layers, info.heads});
        for (int l = 0; l < info.layers; ++l)
            for (int h = 0; h < info.heads; ++h) {
                ByHand hand;
                hand.what = Activation::HeadOutputs;
                hand.layer = l;
                hand.unit = h;
                hand.source = &clean.headMix[static_cast<std::size_t>(l)];
                const double m = logitDiff(runPlain(model, c.corrupt, &hand), c.answer, c.wrong);
                INFO("layer " << l + 1 << " head " << h + 1);
                CHECK(close(heads.metrics[static_cast<std::size_t>(l * info.heads + h)], m));
                CHECK(closeScore(heads.scores[static_cast<std::size_t>(l * info.heads + h)], (m - mCorrupt) / (mClean - mCorrupt), mClean,
                                 mCorrupt));
            }

        const auto pattern = patchActivations(model, requestFor(c, PatchComponent::Pattern, true));
        REQUIRE(pattern.shape == std::vector<int>{info.layers, info.heads, static_cast<int>(c.clean.size())});
        const int T = static_cast<int>(c.clean.size());
        for (int l = 0; l < info.layers; ++l)
            for (int h = 0; h < info.heads; h += 2)
                for (int p : {T / 2, T - 1}) {
                    ByHand hand;
                    hand.layer = l;
                    hand.unit = h;
                    hand.position = p;
                    hand.pattern = &clean.probs[static_cast<std::size_t>(l)];
                    const double m = logitDiff(runPlain(model, c.corrupt, &hand), c.answer, c.wrong);
                    INFO("pattern of layer " << l + 1 << " head " << h + 1 << " at position " << p + 1);
                    CHECK(close(pattern.metrics[static_cast<std::size_t>((l * info.heads + h) * T + p)], m));
                }

        const auto resid = patchActivations(model, requestFor(c, PatchComponent::Residual));
        REQUIRE(resid.shape == std::vector<int>{info.layers + 1, T});
        const int differs = static_cast<int>(c.clean.size() * 2 / 3);
        for (int l = 0; l <= info.layers; ++l)
            for (int p = 0; p < T; ++p) {
                const double score = resid.scores[static_cast<std::size_t>(l * T + p)];
                INFO("residual of layer " << l + 1 << " at position " << p + 1);
                // The prompts agree here: nothing changes (to the last bits a mixture-of-experts layer's batching by
                // expert leaves).
                if (p < differs)
                    CHECK(closeScore(score, 0.0, resid.clean, resid.corrupt));
                if (l == 0 && p == differs) // the only differing input: the clean run exactly
                    CHECK(close(score, 1.0));
                if (l == info.layers && p == T - 1) // the final stream at the measured position
                    CHECK(close(score, 1.0));
                if (l > 0 && p >= differs && l < info.layers && p == T - 1) {
                    ByHand hand;
                    hand.what = Activation::Residual;
                    hand.layer = l;
                    hand.position = p;
                    hand.source = &clean.input[static_cast<std::size_t>(l)];
                    CHECK(close(resid.metrics[static_cast<std::size_t>(l * T + p)],
                                logitDiff(runPlain(model, c.corrupt, &hand), c.answer, c.wrong)));
                }
            }
    }
}

TEST_CASE("queries, keys and values patched (grouped models by key/value group) equal the forward patched by hand",
          "[patching]")
{
    for (const auto& c : cases()) {
        INFO(c.name);
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        ByHand recorder; // the clean run's activations, as the hooks hand them over
        const Seen clean = runPlain(model, c.clean, &recorder);
        const double mClean = logitDiff(clean, c.answer, c.wrong);
        const double mCorrupt = logitDiff(runPlain(model, c.corrupt), c.answer, c.wrong);
        const int T = static_cast<int>(c.clean.size());
        for (const auto& [component, act] : {std::pair{PatchComponent::Queries, Activation::Queries},
                                            std::pair{PatchComponent::Keys, Activation::Keys},
                                            std::pair{PatchComponent::Values, Activation::Values}}) {
            const bool byGroup = component != PatchComponent::Queries;
            const int units = byGroup ? info.kvHeads : info.heads;
            const auto r = patchActivations(model, requestFor(c, component, true));
            REQUIRE(r.shape == std::vector<int>{info.layers, units, T});
            CHECK(r.axes[1] == (byGroup && info.kvHeads != info.heads ? "group" : "head"));
            for (int l = 0; l < info.layers; ++l)
                for (int u = 0; u < units; ++u)
                    for (int p : {T * 2 / 3, T - 1}) {
                        ByHand hand;
                        hand.what = act;
                        hand.layer = l;
                        hand.unit = u;
                        hand.position = p;
                        hand.source = &recorder.recorded.at({static_cast<int>(act), l});
                        const Seen patched = runPlain(model, c.corrupt, &hand);
                        const double m = logitDiff(patched, c.answer, c.wrong);
                        INFO("layer " << l + 1 << " unit " << u + 1 << " position " << p + 1);
                        const std::size_t cell = static_cast<std::size_t>((l * units + u) * T + p);
                        CHECK(close(r.metrics[cell], m));
                        CHECK(closeScore(r.scores[cell], (m - mCorrupt) / (mClean - mCorrupt), mClean, mCorrupt));
                        // The hook sits where it says: the patched head's (group's) scored query (keys) at that
                        // position are the clean run's, rotation included, and a neighbour's are not replaced.
                        if (act == Activation::Values)
                            continue;
                        const auto& got = act == Activation::Queries ? patched.queries[static_cast<std::size_t>(l)]
                                                                     : patched.keys[static_cast<std::size_t>(l)];
                        const auto& want = act == Activation::Queries ? clean.queries[static_cast<std::size_t>(l)]
                                                                      : clean.keys[static_cast<std::size_t>(l)];
                        const std::size_t at = (static_cast<std::size_t>(p) * units + u) * info.dHead;
                        for (int e = 0; e < info.dHead; ++e)
                            CHECK(got[at + e] == Approx(want[at + e]).margin(1e-5));
                    }
        }
    }
}

TEST_CASE("coarse to fine: layers by hand first, then only the heads and positions that reach the threshold",
          "[patching]")
{
    int layersKept = 0, layersSkipped = 0;
    for (const auto& c : cases()) {
        INFO(c.name);
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        const int T = static_cast<int>(c.clean.size());
        const Seen clean = runPlain(model, c.clean), corrupt = runPlain(model, c.corrupt);
        const double mClean = logitDiff(clean, c.answer, c.wrong), mCorrupt = logitDiff(corrupt, c.answer, c.wrong);
        const auto exhaustive = patchActivations(model, requestFor(c, PatchComponent::HeadOutput));
        const auto exhaustivePositions = patchActivations(model, requestFor(c, PatchComponent::HeadOutput, true));

        // A threshold so small nothing is skipped: every cell is the exhaustive one, and each layer's score is the
        // corrupted run with every head of that layer patched by hand.
        auto request = requestFor(c, PatchComponent::HeadOutput);
        request.coarseToFine = 1e-300;
        const auto all = patchActivations(model, request);
        REQUIRE(all.layerScores.size() == static_cast<std::size_t>(info.layers));
        std::vector<double> layerMagnitudes;
        for (int l = 0; l < info.layers; ++l) {
            ByHand hand;
            hand.layer = l;
            hand.source = &clean.headMix[static_cast<std::size_t>(l)]; // unit -1: every head
            const double m = logitDiff(runPlain(model, c.corrupt, &hand), c.answer, c.wrong);
            INFO("layer " << l + 1);
            CHECK(closeScore(all.layerScores[static_cast<std::size_t>(l)], (m - mCorrupt) / (mClean - mCorrupt), mClean, mCorrupt));
            layerMagnitudes.push_back(std::abs(all.layerScores[static_cast<std::size_t>(l)]));
        }
        for (std::size_t i = 0; i < exhaustive.scores.size(); ++i)
            if (layerMagnitudes[i / static_cast<std::size_t>(info.heads)] > 0)
                CHECK(all.scores[i] == Approx(exhaustive.scores[i]).margin(1e-9));

        // The median layer's magnitude as the threshold: the layers below it leave their heads out (NaN, counted),
        // the others' heads are the exhaustive cells, and with positions only the heads that reach it get them.
        std::vector<double> sorted = layerMagnitudes;
        std::sort(sorted.begin(), sorted.end());
        request.coarseToFine = sorted[sorted.size() / 2];
        request.perPosition = true;
        const auto fine = patchActivations(model, request);
        REQUIRE(fine.shape == exhaustivePositions.shape);
        REQUIRE(fine.unitScores.size() == static_cast<std::size_t>(info.layers * info.heads));
        int nan = 0;
        for (int l = 0; l < info.layers; ++l) {
            const bool kept = layerMagnitudes[static_cast<std::size_t>(l)] >= request.coarseToFine;
            (kept ? layersKept : layersSkipped) += 1;
            for (int h = 0; h < info.heads; ++h) {
                const std::size_t unit = static_cast<std::size_t>(l * info.heads + h);
                INFO("layer " << l + 1 << " head " << h + 1);
                CHECK(std::isnan(fine.unitScores[unit]) == !kept);
                if (kept)
                    CHECK(fine.unitScores[unit] == Approx(exhaustive.scores[unit]).margin(1e-9));
                const bool headKept = kept && std::abs(fine.unitScores[unit]) >= request.coarseToFine;
                for (int p = 0; p < T; ++p) {
                    const double v = fine.scores[unit * T + static_cast<std::size_t>(p)];
                    CHECK(std::isnan(v) == !headKept);
                    nan += std::isnan(v) ? 1 : 0;
                    if (headKept)
                        CHECK(v == Approx(exhaustivePositions.scores[unit * T + static_cast<std::size_t>(p)]).margin(1e-9));
                }
            }
        }
        CHECK(fine.skipped == nan);
        CHECK(fine.runs < exhaustivePositions.runs + info.layers);
    }
    CHECK(layersKept > 0);
    CHECK(layersSkipped > 0);
    // The residual stream has one unit per position: nothing coarser to start from.
    auto resid = requestFor(cases().front(), PatchComponent::Residual);
    resid.coarseToFine = 0.1;
    CHECK_THROWS_WITH(patchActivations(*cases().front().loaded.model, resid), Catch::Contains("coarse to fine"));
}

TEST_CASE("noising patches the corrupted activation into the clean run", "[patching]")
{
    const auto& c = cases().front();
    const auto& model = *c.loaded.model;
    const int T = static_cast<int>(c.clean.size());
    const auto r = patchActivations(model, requestFor(c, PatchComponent::Residual, false, true));
    const int differs = T * 2 / 3;
    CHECK(close(r.scores[static_cast<std::size_t>(differs)], 0.0)); // layer 1 at the differing token: the corrupted run
    CHECK(r.scores[0] == 1.0);                                           // an agreeing token: the clean run unchanged
    CHECK(close(r.scores[static_cast<std::size_t>(model.info().layers * T + T - 1)], 0.0));
}

TEST_CASE("path patching equals the three runs done by hand, sender and receivers in different layers", "[patching]")
{
    for (const auto& c : cases()) {
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        if (info.layers < 2)
            continue;
        INFO(c.name);
        const Seen clean = runPlain(model, c.clean), corrupt = runPlain(model, c.corrupt);
        const double mClean = logitDiff(clean, c.answer, c.wrong), mCorrupt = logitDiff(corrupt, c.answer, c.wrong);
        for (const auto& [input, act] : {std::pair{PatchComponent::Queries, Activation::Queries},
                                        std::pair{PatchComponent::Keys, Activation::Keys},
                                        std::pair{PatchComponent::Values, Activation::Values}}) {
            const int units = input == PatchComponent::Queries ? info.heads : info.kvHeads;
            PathPatchRequest request =
                pathRequestFor(c, input, 0, info.heads - 1, {{info.layers - 1, units - 1}, {1, 0}});
            const auto r = pathPatch(model, request);

            // 1. The corrupted run, the sender's output clean, every head of layers 1..last-1 frozen at its corrupted
            //    output (the sender's layer first, then the sender itself).
            ByHand sender;
            sender.frozenFrom = &corrupt.headMix;
            for (int l = 0; l < info.layers - 1; ++l)
                sender.frozen.push_back({Activation::HeadOutputs, l});
            sender.what = Activation::HeadOutputs;
            sender.layer = 0;
            sender.unit = info.heads - 1;
            sender.source = &clean.headMix[0];
            runPlain(model, c.corrupt, &sender);
            // 2. The corrupted run with the receivers' inputs from run 1 (two hooks' worth: one receiver each).
            TwoHooks both;
            for (auto [hand, receiver] : {std::pair{&both.a, request.receivers[0]}, std::pair{&both.b, request.receivers[1]}}) {
                hand->what = act;
                hand->layer = receiver.first;
                hand->unit = receiver.second;
                hand->source = &sender.recorded.at({static_cast<int>(act), receiver.first});
            }
            const double m = logitDiff(runPlain(model, c.corrupt, &both), c.answer, c.wrong);
            INFO("input " << static_cast<int>(act));
            CHECK(close(r.clean, mClean));
            CHECK(close(r.corrupt, mCorrupt));
            CHECK(close(r.patched, m));
            CHECK(closeScore(r.score, (m - mCorrupt) / (mClean - mCorrupt), mClean, mCorrupt));
        }
    }
}

TEST_CASE("path patching with the MLPs frozen: the receivers read the plain stream plus the sender's own write",
          "[patching]")
{
    // Built by stream algebra, not by freezing: the sender's write is what its layer's attention adds with only the
    // sender patched, minus what it adds in the plain run; each receiver's input is recomputed from the plain run's
    // stream at the receiver's layer plus that write.
    int differing = 0;
    for (const auto& c : cases()) {
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        if (info.layers < 3)
            continue;
        INFO(c.name);
        const Seen clean = runPlain(model, c.clean), corrupt = runPlain(model, c.corrupt);
        const double mClean = logitDiff(clean, c.answer, c.wrong), mCorrupt = logitDiff(corrupt, c.answer, c.wrong);
        const int senderLayer = 0, senderHead = info.heads - 1;
        ByHand senderOnly;
        senderOnly.layer = senderLayer;
        senderOnly.unit = senderHead;
        senderOnly.source = &clean.headMix[senderLayer];
        const Seen sent = runPlain(model, c.corrupt, &senderOnly);
        std::vector<float> write(corrupt.attnOut[senderLayer].size());
        for (std::size_t i = 0; i < write.size(); ++i)
            write[i] = sent.attnOut[senderLayer][i] - corrupt.attnOut[senderLayer][i];

        for (const auto& [input, act] : {std::pair{PatchComponent::Queries, Activation::Queries},
                                        std::pair{PatchComponent::Values, Activation::Values}}) {
            const int units = input == PatchComponent::Queries ? info.heads : info.kvHeads;
            PathPatchRequest request =
                pathRequestFor(c, input, senderLayer, senderHead, {{info.layers - 1, units - 1}, {2, 0}});
            const double recomputed = pathPatch(model, request).patched;
            request.freezeMlps = true;
            const auto r = pathPatch(model, request);

            TwoHooks both;
            std::vector<std::vector<float>> inputs; // each receiver's input, recomputed from the shifted stream
            for (const auto& [layer, unit] : request.receivers) {
                std::vector<float> shifted = corrupt.input[static_cast<std::size_t>(layer)];
                for (std::size_t i = 0; i < shifted.size(); ++i)
                    shifted[i] += write[i];
                ByHand stream;
                stream.what = Activation::Residual;
                stream.layer = layer;
                stream.source = &shifted;
                runPlain(model, c.corrupt, &stream);
                inputs.push_back(stream.recorded.at({static_cast<int>(act), layer}));
            }
            for (std::size_t i = 0; i < 2; ++i) {
                ByHand& hand = i == 0 ? both.a : both.b;
                hand.what = act;
                hand.layer = request.receivers[i].first;
                hand.unit = request.receivers[i].second;
                hand.source = &inputs[i];
            }
            const double m = logitDiff(runPlain(model, c.corrupt, &both), c.answer, c.wrong);
            INFO("input " << static_cast<int>(act));
            CHECK(close(r.patched, m));
            CHECK(closeScore(r.score, (m - mCorrupt) / (mClean - mCorrupt), mClean, mCorrupt));
            if (std::abs(recomputed - m) > 1e-3 * (std::abs(mClean - mCorrupt) + 1e-6))
                ++differing;
        }
    }
    // The two definitions differ wherever an MLP between sender and receivers reacts to the sender.
    CHECK(differing > 0);
}

TEST_CASE("receiver-head-only path patching: every head of a group alone equals the group, one head differs",
          "[patching]")
{
    int grouped = 0;
    for (const auto& c : cases()) {
        const ModelInfo& info = c.loaded.model->info();
        if (info.layers < 2 || info.kvHeads == info.heads)
            continue;
        INFO(c.name);
        ++grouped;
        const int perGroup = info.heads / info.kvHeads;
        PathPatchRequest group;
        group.clean = c.clean;
        group.corrupt = c.corrupt;
        group.metric.answer = c.answer;
        group.metric.wrong = c.wrong;
        group.input = PatchComponent::Keys;
        group.receivers = {{1, 0}};
        PathPatchRequest heads = group;
        heads.receiverHeadOnly = true;
        heads.receivers.clear();
        for (int h = 0; h < perGroup; ++h)
            heads.receivers.push_back({1, h});
        const double whole = pathPatch(*c.loaded.model, group).patched;
        CHECK(close(pathPatch(*c.loaded.model, heads).patched, whole));
        heads.receivers = {{1, 0}};
        const double one = pathPatch(*c.loaded.model, heads).patched;
        CHECK(std::isfinite(one));
    }
    CHECK(grouped > 0);
}

TEST_CASE("patching refuses what it cannot do, naming the problem", "[patching]")
{
    const auto& c = cases().front();
    auto r = requestFor(c, PatchComponent::HeadOutput);
    r.corrupt.pop_back();
    CHECK_THROWS_WITH(patchActivations(*c.loaded.model, r), Catch::Contains("same length"));
    r = requestFor(c, PatchComponent::HeadOutput);
    r.corrupt = r.clean;
    CHECK_THROWS_WITH(patchActivations(*c.loaded.model, r), Catch::Contains("no difference"));
    r = requestFor(c, PatchComponent::HeadOutput);
    r.metric.answer = c.loaded.model->info().vocabSize;
    CHECK_THROWS_WITH(patchActivations(*c.loaded.model, r), Catch::Contains("outside the vocabulary"));
    const auto encoder = loadModel((test::testdataDir() / "bert-tiny").string());
    r = requestFor(c, PatchComponent::HeadOutput);
    CHECK_THROWS_WITH(patchActivations(*encoder.model, r), Catch::Contains("needs a decoder"));
    PathPatchRequest p;
    p.clean = c.clean;
    p.corrupt = c.corrupt;
    p.metric.answer = c.answer;
    p.metric.wrong = c.wrong;
    p.receivers = {{0, 0}};
    CHECK_THROWS_WITH(pathPatch(*c.loaded.model, p), Catch::Contains("must come after the sender"));
}

TEST_CASE("path patching from many senders: each cell is that sender's path score, the plain runs made once",
          "[patching]")
{
    for (const auto& c : cases()) {
        const auto& model = *c.loaded.model;
        const ModelInfo& info = model.info();
        if (info.layers < 3)
            continue;
        INFO(c.name);
        for (const bool freeze : {false, true}) {
            PathPatchRequest request = pathRequestFor(c, PatchComponent::Queries, 0, 0, {{2, 0}, {info.layers - 1, 1}});
            request.freezeMlps = freeze;
            int reports = 0;
            const auto map = pathPatchSenders(model, request, {}, [&](const PatchResult&, int done, int total) {
                ++reports;
                CHECK(done <= total);
                CHECK(total == 2 * info.heads);
            });
            REQUIRE(map.axes == std::vector<std::string>{"layer", "head"});
            REQUIRE(map.shape == std::vector<int>{info.layers, info.heads});
            CHECK(reports == 2 * info.heads);
            CHECK(map.runs == 2 * info.heads);
            CHECK_FALSE(map.partial);
            for (int l = 0; l < info.layers; ++l)
                for (int h = 0; h < info.heads; ++h) {
                    const double cell = map.scores[static_cast<std::size_t>(l) * info.heads + h];
                    if (l >= 2) { // every sender comes before the first receiver
                        CHECK(std::isnan(cell));
                        continue;
                    }
                    request.senderLayer = l;
                    request.senderHead = h;
                    const auto one = pathPatch(model, request);
                    INFO("sender " << l << "." << h << " freeze " << freeze);
                    CHECK(close(cell, one.score));
                    CHECK(close(map.clean, one.clean));
                    CHECK(close(map.corrupt, one.corrupt));
                }
        }
        // Named senders: only their cells.
        PathPatchRequest request = pathRequestFor(c, PatchComponent::Values, 0, 0, {{info.layers - 1, 0}});
        const auto named = pathPatchSenders(model, request, {{1, info.heads - 1}});
        CHECK(named.runs == 1);
        CHECK(std::count_if(named.scores.begin(), named.scores.end(), [](double v) { return std::isfinite(v); }) == 1);
        request.senderLayer = 1;
        request.senderHead = info.heads - 1;
        CHECK(close(named.scores[static_cast<std::size_t>(info.heads) * 2 - 1], pathPatch(model, request).score));
        // A receiver in the first layer has no senders; a named sender after a receiver is refused.
        request.receivers = {{0, 0}};
        CHECK_THROWS_WITH(pathPatchSenders(model, request, {}), Catch::Contains("no heads before it"));
        request.receivers = {{1, 0}};
        CHECK_THROWS_WITH(pathPatchSenders(model, request, {{1, 0}}), Catch::Contains("must come after the sender"));
        return; // one case with three layers says it; the rest add run time only
    }
    FAIL("no reference case with three layers");
}

TEST_CASE("LAYER.HEAD lists as people type them, counted from 1", "[patching]")
{
    using Pairs = std::vector<std::pair<int, int>>;
    CHECK(layerDotUnits("3.1", "x") == Pairs{{2, 0}});
    CHECK(layerDotUnits(" 1.4, 10.12 ,2.1", "x") == Pairs{{0, 3}, {9, 11}, {1, 0}});
    CHECK(layerDotUnits("", "x").empty());
    CHECK(layerDotUnits("  ", "x").empty());
    for (const char* bad : {"3", "3.", ".1", "0.1", "1.0", "1.2.3", "a.b", "1.2,,2.1", "-1.2", "1234567.1", "1.x"})
        CHECK_THROWS_WITH(layerDotUnits(bad, "Receivers"), Catch::Contains("Receivers expects LAYER.HEAD"));
}
