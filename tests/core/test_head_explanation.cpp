// The mechanism view's numbers on every reference case: the softmax of the explained scores (with the sink where the
// family has one) is the explained row, and that row is the reference implementation's attention probabilities.
#include "analysis/head_explanation.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace attnscope;
using namespace attnscope::core;

TEST_CASE("explain: softmax(scores) is the row, and the row is the reference's attention", "[explain]")
{
    int cases = 0, withValues = 0, streams = 0, predictions = 0, rotated = 0, headParts = 0;
    for (const auto& dir : test::referenceCases()) {
        const auto loaded = loadModel(dir.string());
        const auto& model = *loaded.model;
        const auto& info = model.info();
        INFO(dir.filename().string());
        const auto input = readJsonFile((dir / "input.json").string());
        const auto run = parseReferenceInput(model, input, (dir / "input.json").string());
        const auto expected = test::loadAll((dir / "expected.safetensors").string());
        std::int64_t tokens = 0;
        for (const auto& s : run.segments)
            tokens += static_cast<std::int64_t>(s.size());
        ++cases;
        // The first and the last attention layer (a hybrid's others mix by convolutions or a delta rule, refused).
        int firstLayer = 0, lastLayer = info.layers - 1;
        while (info.site(firstLayer).mixer != Mixer::Softmax)
            ++firstLayer;
        while (info.site(lastLayer).mixer != Mixer::Softmax)
            --lastLayer;
        if (firstLayer > 0)
            CHECK_THROWS_WITH(explainHead(model, run.segments, run.options, 0, 0, tokens - 1), Catch::Contains("not attention"));
        for (const auto& [layer, head, position] :
             {std::tuple{firstLayer, 0, tokens / 2}, std::tuple{lastLayer, info.heads - 1, tokens - 1}}) {
            INFO("layer " << layer + 1 << " head " << head + 1 << " position " << position + 1);
            const auto e = explainHead(model, run.segments, run.options, layer, head, position);
            REQUIRE(e.scores.size() == e.probs.size());
            // softmax over the visible scores (and the sink) gives the probabilities
            double top = e.sink ? *e.sink : -1e30;
            for (float s : e.scores)
                if (!std::isnan(s))
                    top = std::max(top, static_cast<double>(s));
            double z = e.sink ? std::exp(*e.sink - top) : 0.0;
            for (float s : e.scores)
                if (!std::isnan(s))
                    z += std::exp(s - top);
            for (std::size_t j = 0; j < e.scores.size(); ++j) {
                const double p = std::isnan(e.scores[j]) ? 0.0 : std::exp(e.scores[j] - top) / z;
                CHECK(e.probs[j] == Approx(p).margin(2e-6));
            }
            // the reference's row: layer{l}.attn_prob [heads, q, k] (Transformer-XL per segment: seg{s}.layer{l}...)
            const std::string name = (info.hasRelativeTerms ? "seg" + std::to_string(e.segment) + "." : std::string()) +
                                     "layer" + std::to_string(layer) + ".attn_prob";
            const OutputTensor* ref = nullptr;
            for (const auto& t : expected)
                if (t.name == name)
                    ref = &t;
            REQUIRE(ref);
            REQUIRE(ref->shape.size() == 3);
            const auto q = ref->shape[1], k = ref->shape[2];
            REQUIRE(static_cast<std::int64_t>(e.probs.size()) == k);
            std::int64_t first = 0;
            for (int s = 0; s < e.segment; ++s)
                first += static_cast<std::int64_t>(run.segments[static_cast<std::size_t>(s)].size());
            const auto row = position - first;
            REQUIRE(row < q);
            const auto tol = test::toleranceFor(name);
            for (std::int64_t j = 0; j < k; ++j) {
                const float want = ref->data[static_cast<std::size_t>((head * q + row) * k + j)];
                CHECK(std::abs(e.probs[static_cast<std::size_t>(j)] - want) <= tol.abs + tol.rel * std::abs(want));
            }
            CHECK(e.query.size() == static_cast<std::size_t>(info.dHead > 0 ? e.query.size() : 0));
            CHECK(e.keys.size() == e.probs.size());
            // a hooked family's values, weighed by the row, are the head's output as its forward computed it
            if (info.can.interventions) {
                ++withValues;
                REQUIRE(e.values.size() == e.probs.size());
                REQUIRE(!e.output.empty());
                for (std::size_t d = 0; d < e.output.size(); ++d) {
                    double sum = 0;
                    for (std::size_t j = 0; j < e.values.size(); ++j)
                        sum += static_cast<double>(e.probs[j]) * e.values[j][d];
                    CHECK(e.output[d] == Approx(sum).margin(1e-5));
                }
            }
            // The rest of the pipeline: the stream into and out of the layer, the attention's output, the prediction.
            const std::string p = info.hasRelativeTerms ? "seg" + std::to_string(e.segment) + "." : std::string();
            auto refRow = [&](const std::string& tensor) -> std::vector<float> {
                for (const auto& t : expected)
                    if (t.name == tensor && t.shape.size() == 2) {
                        const auto width = t.shape[1];
                        return {t.data.begin() + row * width, t.data.begin() + (row + 1) * width};
                    }
                return {};
            };
            auto near = [](const std::vector<float>& a, const std::vector<float>& b) {
                REQUIRE(a.size() == b.size());
                for (std::size_t d = 0; d < a.size(); ++d)
                    CHECK(a[d] == Approx(b[d]).margin(2e-4).epsilon(1e-3));
            };
            if (const auto out = refRow(p + "layer" + std::to_string(layer) + ".hidden"); !out.empty()) {
                near(e.layerOut, out);
                ++streams;
            }
            if (layer > 0)
                if (const auto in = refRow(p + "layer" + std::to_string(layer - 1) + ".hidden"); !in.empty())
                    near(e.residualIn, in);
            if (const auto att = refRow(p + "layer" + std::to_string(layer) + ".attn_output"); !att.empty() && !e.attentionOut.empty())
                near(e.attentionOut, att);
            const OutputTensor* logits = nullptr;
            for (const auto& t : expected)
                if (t.name == "logits")
                    logits = &t;
            if (logits && !e.next.empty() && info.can.causal && logits->shape.size() == 2 && layer == info.layers - 1) {
                const auto V = logits->shape[1];
                const float* zs = logits->data.data() + row * V;
                CHECK(e.next.front().id == std::max_element(zs, zs + V) - zs);
                ++predictions;
            }
            if (!e.queryUnrotated.empty()) {
                ++rotated;
                CHECK(e.queryUnrotated.size() == e.query.size());
            }
        }
        // Each head's part through W_O: the parts of all heads differ between two positions exactly as the layer's
        // attention output does (the output projection's bias cancels).
        if (info.can.interventions && info.can.causal && tokens >= 2) {
            const int layer = info.layers - 1;
            std::vector<double> parts(static_cast<std::size_t>(info.dModel), 0.0);
            std::vector<float> outA, outB;
            bool split = true;
            for (int head = 0; head < info.heads && split; ++head) {
                const auto a = explainHead(model, run.segments, run.options, layer, head, tokens - 1);
                const auto b = explainHead(model, run.segments, run.options, layer, head, tokens - 2);
                split = !a.headPart.empty();
                if (!split)
                    break;
                for (int d = 0; d < info.dModel; ++d)
                    parts[static_cast<std::size_t>(d)] += static_cast<double>(a.headPart[static_cast<std::size_t>(d)]) - b.headPart[static_cast<std::size_t>(d)];
                outA = a.attentionOut;
                outB = b.attentionOut;
            }
            if (split && !outA.empty()) {
                ++headParts;
                for (int d = 0; d < info.dModel; ++d)
                    CHECK(parts[static_cast<std::size_t>(d)] == Approx(outA[static_cast<std::size_t>(d)] - outB[static_cast<std::size_t>(d)]).margin(1e-4));
            }
        }
    }
    CHECK(cases >= 15);
    CHECK(withValues >= 20); // two queries on each of the ten-plus decoder cases
    CHECK(streams >= 20);
    CHECK(predictions >= 8);
    CHECK(rotated >= 8);
    CHECK(headParts >= 8);
}

TEST_CASE("explain refuses what is not there", "[explain]")
{
    const auto dir = test::testdataDir() / "gpt2-tiny";
    const auto loaded = loadModel(dir.string());
    const auto run = parseReferenceInput(*loaded.model, readJsonFile((dir / "input.json").string()), "input.json");
    CHECK_THROWS_WITH(explainHead(*loaded.model, run.segments, run.options, 9, 0, 0), Catch::Contains("no layer 10"));
    CHECK_THROWS_WITH(explainHead(*loaded.model, run.segments, run.options, 0, 9, 0), Catch::Contains("no head 10"));
    CHECK_THROWS_WITH(explainHead(*loaded.model, run.segments, run.options, 0, 0, 99), Catch::Contains("no position 100"));
}
