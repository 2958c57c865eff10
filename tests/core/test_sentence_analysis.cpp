// Sentence-level analyses: sentences found as a reader would, the sentence grid and receiver-head scores against
// brute-force sums over the token grid, and attention suppression against the same suppression built layer by layer
// from recorded and substituted attention patterns (analysis/patched_run.h, itself tested against forwards patched by
// hand).
#include "analysis/attention_grid.h"
#include "analysis/grid_regroup.h"
#include "analysis/patched_run.h"
#include "analysis/sentence_analysis.h"
#include "model/model_loader.h"
#include "run/text_capture.h"
#include "test_support.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace attnscope;
using namespace attnscope::core;

namespace {

std::vector<Token> words(const std::vector<std::string>& texts)
{
    std::vector<Token> out;
    std::size_t at = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        out.push_back({static_cast<std::int32_t>(3 + i % 40), texts[i], at, at + texts[i].size()});
        at += texts[i].size() + 1;
    }
    return out;
}

} // namespace

TEST_CASE("sentences end at . ! ? … and line breaks, closing quotes staying with them", "[sentences]")
{
    const auto tokens = words({"The", "cat", "sat.", "\"", "It", "was!", "Was", "it?\"", "Yes…", "so", "\n", "new", "line"});
    CHECK(sentenceOfTokens(tokens) == std::vector<int>{0, 0, 0, 0, 1, 1, 2, 2, 3, 4, 4, 5, 5});
    auto withSpecial = tokens;
    withSpecial.insert(withSpecial.begin(), Token{1, "<s>", 0, 0});
    withSpecial.push_back(Token{2, "</s>", 0, 0});
    const auto s = sentenceOfTokens(withSpecial);
    CHECK(s.front() == 0); // BOS opens the first sentence
    CHECK(s.back() == 5);  // EOS closes the last
}

TEST_CASE("the sentence grid and receiver heads equal sums over the token grid", "[sentences]")
{
    const auto loaded = loadModel((test::testdataDir() / "llama-gqa").string());
    std::vector<std::string> text;
    for (int s = 0; s < 7; ++s)
        for (int w = 0; w < 3; ++w)
            text.push_back(w == 2 ? "w" + std::to_string(s) + "." : "w" + std::to_string(s * 3 + w));
    const auto tokens = words(text);
    std::string joined;
    for (const auto& t : text)
        joined += t + " ";
    CaptureOptions o;
    o.run.memLen = 0;
    auto capture = std::const_pointer_cast<TextCapture>(captureText(*loaded.model, tokens, o));
    capture->text = joined;
    const auto sentence = sentenceOfTokens(tokens);
    REQUIRE(sentence.back() == 6);
    const auto r = receiverHeads(*capture, 0, 2);
    REQUIRE(r.sentences == 7);
    const auto& info = loaded.model->info();
    for (int l = 0; l < info.layers; ++l)
        for (int h = 0; h < info.heads; ++h) {
            const auto g = attentionGrid(*capture, 0, l, {h});
            const auto sg = sentenceLevelGrid(g, tokens, joined, 1.0);
            REQUIRE(sg.rows == 7);
            // cell (a, b): mean over a's query tokens of the sum over b's key tokens
            std::vector<double> brute(49, 0.0);
            for (int a = 0; a < 7; ++a)
                for (int b = 0; b < 7; ++b) {
                    double sum = 0;
                    for (int i = 0; i < g.rows; ++i)
                        for (int j = 0; j < g.cols; ++j)
                            if (sentence[static_cast<std::size_t>(i)] == a && sentence[static_cast<std::size_t>(j)] == b && !std::isnan(g.at(i, j)))
                                sum += g.at(i, j);
                    brute[static_cast<std::size_t>(a * 7 + b)] = sum / 3.0;
                    if (b <= a)
                        CHECK(sg.at(a, b) == Approx(brute[static_cast<std::size_t>(a * 7 + b)]).margin(1e-5));
                }
            // Rows of probabilities: every query sentence's attention sums to 1.
            for (int a = 0; a < 7; ++a) {
                double row = 0;
                for (int b = 0; b <= a; ++b)
                    row += sg.at(a, b);
                CHECK(row == Approx(1.0).margin(1e-5));
            }
            // Vertical scores (proximity 2) and their excess kurtosis.
            std::vector<double> vertical;
            for (int b = 0; b < 7; ++b) {
                double sum = 0;
                int n = 0;
                for (int a = b + 2; a < 7; ++a) {
                    sum += brute[static_cast<std::size_t>(a * 7 + b)];
                    ++n;
                }
                vertical.push_back(n ? sum / n : std::nan(""));
                if (n)
                    CHECK(r.vertical[static_cast<std::size_t>((l * info.heads + h) * 7 + b)] == Approx(sum / n).margin(1e-5));
            }
            double mean = 0, m2 = 0, m4 = 0;
            int n = 0;
            for (double v : vertical)
                if (std::isfinite(v)) {
                    mean += v;
                    ++n;
                }
            mean /= n;
            for (double v : vertical)
                if (std::isfinite(v)) {
                    m2 += (v - mean) * (v - mean) / n;
                    m4 += std::pow(v - mean, 4) / n;
                }
            CHECK(r.kurtosis[static_cast<std::size_t>(l * info.heads + h)] == Approx(m4 / (m2 * m2) - 3).margin(1e-3));
        }
}

TEST_CASE("attention suppression equals the suppressed patterns substituted layer by layer", "[sentences]")
{
    for (const char* name : {"gpt2-tiny", "llama-gqa", "qwen3-tiny"}) {
        INFO(name);
        const auto loaded = loadModel((test::testdataDir() / name).string());
        const auto& model = *loaded.model;
        const auto& info = model.info();
        std::vector<std::string> text;
        for (int s = 0; s < 4; ++s)
            for (int w = 0; w < 3; ++w)
                text.push_back(w == 2 ? "e" + std::to_string(s) + "." : "w" + std::to_string(s * 3 + w));
        const auto tokens = words(text);
        std::vector<std::int32_t> ids;
        for (const auto& t : tokens)
            ids.push_back(t.id);
        const int T = static_cast<int>(ids.size());
        const auto r = sentenceSuppression(model, tokens);
        REQUIRE(r.sentences == 4);
        const int suppressed = 1, begin = 3, end = 6; // sentence 2: tokens 3..5

        // Layer by layer: record the layer's patterns with the earlier layers' already suppressed, suppress them
        // (keys begin..end-1 removed from the rows after `end`, rows rescaled), substitute.
        std::vector<std::vector<float>> patterns(static_cast<std::size_t>(info.layers));
        for (int l = 0; l < info.layers; ++l) {
            PatchedRun run;
            for (int e = 0; e < l; ++e)
                for (int h = 0; h < info.heads; ++h)
                    run.substitutePattern({e, h, -1, &patterns[static_cast<std::size_t>(e)]});
            run.recordPatterns();
            run.run(model, ids, nullptr);
            auto p = run.recording().pattern(l);
            for (int h = 0; h < info.heads; ++h)
                for (int i = end; i < T; ++i) {
                    float* row = p.data() + (static_cast<std::size_t>(h) * T + i) * T;
                    double total = 0, kept = 0;
                    for (int j = 0; j < T; ++j) {
                        total += row[j];
                        if (j >= begin && j < end)
                            row[j] = 0;
                        kept += row[j];
                    }
                    for (int j = 0; j < T; ++j)
                        row[j] = static_cast<float>(row[j] * total / kept);
                }
            patterns[static_cast<std::size_t>(l)] = p;
        }
        PatchedRun all, plain;
        for (int l = 0; l < info.layers; ++l)
            for (int h = 0; h < info.heads; ++h)
                all.substitutePattern({l, h, -1, &patterns[static_cast<std::size_t>(l)]});
        all.run(model, ids, nullptr);
        plain.run(model, ids, nullptr);
        std::vector<float> a, b;
        REQUIRE(model.readOut(all.recording().get(Activation::Residual, info.layers).data(), T, a));
        REQUIRE(model.readOut(plain.recording().get(Activation::Residual, info.layers).data(), T, b));
        const int V = static_cast<int>(a.size()) / T;
        for (int t = 0; t < T; ++t) {
            auto logSoftmax = [&](const std::vector<float>& z, int v) {
                double top = -1e30, sum = 0;
                for (int k = 0; k < V; ++k)
                    top = std::max(top, static_cast<double>(z[static_cast<std::size_t>(t * V + k)]));
                for (int k = 0; k < V; ++k)
                    sum += std::exp(z[static_cast<std::size_t>(t * V + k)] - top);
                return z[static_cast<std::size_t>(t * V + v)] - top - std::log(sum);
            };
            double kl = 0;
            for (int v = 0; v < V; ++v)
                kl += std::exp(logSoftmax(b, v)) * (logSoftmax(b, v) - logSoftmax(a, v));
            INFO("token " << t + 1);
            const double got = r.perToken[static_cast<std::size_t>(suppressed * T + t)];
            if (t < end)
                CHECK(std::isnan(got));
            else
                CHECK(got == Approx(kl).margin(1e-5).epsilon(1e-3));
        }
        CHECK(std::isnan(r.effect[static_cast<std::size_t>(suppressed * 4 + 1)]));
        CHECK(r.effect[static_cast<std::size_t>(suppressed * 4 + 2)] > 0);
    }
}
