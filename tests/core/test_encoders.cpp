// Encoders (BERT, RoBERTa, DistilBERT) beyond what the reference cases' plain layout shows: the real checkpoints'
// weight layout (prefixes, legacy LayerNorm.gamma/beta, extra heads), padding at the start, the masked-language-model
// head computed by hand from its weights, and the inputs an encoder refuses.
#include "analysis/grid_regroup.h"
#include "analysis/head_atlas.h"
#include "analysis/token_predictions.h"
#include "model/encoder.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const char* kEncoderCases[] = {"bert-tiny", "roberta-tiny", "distilbert-tiny"};

// The case with its real-checkpoint layout (model.prefixed.safetensors) as the folder's only weights.
fs::path prefixedCase(const test::TempDir& tmp, const std::string& name)
{
    const auto dir = tmp / name;
    fs::create_directories(dir);
    fs::copy_file(test::testdataDir() / name / "model.prefixed.safetensors", dir / "model.safetensors");
    fs::copy_file(test::testdataDir() / name / "config.json", dir / "config.json");
    return dir;
}

const core::OutputTensor& tensor(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return t;
    FAIL("no tensor " << name);
    throw std::logic_error("unreachable");
}

nlohmann::json caseInput(const std::string& name)
{
    return core::readJsonFile((test::testdataDir() / name / "input.json").string());
}

} // namespace

TEST_CASE("encoders in the real checkpoints' layout (prefix, legacy gamma/beta, extra heads) match the reference",
          "[encoders][reference]")
{
    for (const char* name : kEncoderCases) {
        DYNAMIC_SECTION(name)
        {
            test::TempDir tmp;
            const auto dir = prefixedCase(tmp, name);
            const auto loaded = core::loadModel(dir.string());
            CHECK_FALSE(loaded.model->info().can.causal);
            CHECK(loaded.model->info().can.maskedTokens); // every prefixed file carries its MLM head
            const auto out = core::dumpReference(*loaded.model, caseInput(name), "input.json");
            const auto problems =
                test::referenceMismatches((test::testdataDir() / name / "expected.safetensors").string(), out);
            for (const auto& p : problems)
                FAIL_CHECK(p);
        }
    }
    // The plain layout has no head: the model opens without masked prediction.
    const auto plain = core::loadModel((test::testdataDir() / "bert-tiny").string());
    CHECK_FALSE(plain.model->info().can.maskedTokens);
}

TEST_CASE("the masked-language-model head: LN(act(dense(h))) times the tied word embeddings plus the bias",
          "[encoders][mlm]")
{
    for (const char* name : kEncoderCases) {
        DYNAMIC_SECTION(name)
        {
            test::TempDir tmp;
            const auto dir = prefixedCase(tmp, name);
            const auto loaded = core::loadModel(dir.string());
            const auto out = core::dumpReference(*loaded.model, caseInput(name), "input.json");
            const auto& info = loaded.model->info();
            const auto& hidden = tensor(out, "layer" + std::to_string(info.layers - 1) + ".hidden");
            const auto& logits = tensor(out, "logits");
            // The head's weights by their names in the file, the arithmetic written out here in double.
            const auto weights = test::loadAll((dir / "model.safetensors").string());
            auto w = [&](const std::string& n) -> const std::vector<float>& { return tensor(weights, n).data; };
            const std::string family = name == std::string("bert-tiny") ? "bert" : name == std::string("roberta-tiny") ? "roberta" : "distilbert";
            std::string dense, dense_b, ln_w, ln_b, bias, decoder;
            double eps = 1e-12;
            if (family == "bert") {
                dense = "cls.predictions.transform.dense.weight", dense_b = "cls.predictions.transform.dense.bias";
                ln_w = "cls.predictions.transform.LayerNorm.gamma", ln_b = "cls.predictions.transform.LayerNorm.beta";
                bias = "cls.predictions.bias", decoder = "cls.predictions.decoder.weight";
            } else if (family == "roberta") {
                dense = "lm_head.dense.weight", dense_b = "lm_head.dense.bias", ln_w = "lm_head.layer_norm.weight";
                ln_b = "lm_head.layer_norm.bias", bias = "lm_head.bias", decoder = "lm_head.decoder.weight";
                eps = 1e-5;
            } else {
                dense = "vocab_transform.weight", dense_b = "vocab_transform.bias", ln_w = "vocab_layer_norm.weight";
                ln_b = "vocab_layer_norm.bias", bias = "vocab_projector.bias", decoder = "vocab_projector.weight";
            }
            const int C = info.dModel, V = info.vocabSize;
            const int T = static_cast<int>(hidden.shape[0]);
            REQUIRE(logits.shape == core::Shape{T, V});
            double worst = 0;
            for (int t = 0; t < T; ++t) {
                std::vector<double> h(static_cast<std::size_t>(C));
                for (int o = 0; o < C; ++o) {
                    double s = w(dense_b)[static_cast<std::size_t>(o)];
                    for (int i = 0; i < C; ++i)
                        s += w(dense)[static_cast<std::size_t>(o * C + i)] * hidden.data[static_cast<std::size_t>(t * C + i)];
                    h[static_cast<std::size_t>(o)] = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
                }
                double mean = 0, var = 0;
                for (double v : h)
                    mean += v / C;
                for (double v : h)
                    var += (v - mean) * (v - mean) / C;
                for (int o = 0; o < C; ++o)
                    h[static_cast<std::size_t>(o)] = (h[static_cast<std::size_t>(o)] - mean) / std::sqrt(var + eps) *
                                                         w(ln_w)[static_cast<std::size_t>(o)] + w(ln_b)[static_cast<std::size_t>(o)];
                for (int v = 0; v < V; ++v) {
                    double s = w(bias)[static_cast<std::size_t>(v)];
                    for (int i = 0; i < C; ++i)
                        s += w(decoder)[static_cast<std::size_t>(v * C + i)] * h[static_cast<std::size_t>(i)];
                    worst = std::max(worst, std::abs(s - logits.data[static_cast<std::size_t>(t * V + v)]));
                }
            }
            CHECK(worst < 1e-3);
        }
    }
}

TEST_CASE("padding at the start: no query sees it, and RoBERTa's real tokens keep their positions and results",
          "[encoders][padding]")
{
    for (const char* name : kEncoderCases) {
        DYNAMIC_SECTION(name)
        {
            const auto loaded = core::loadModel((test::testdataDir() / name).string());
            auto input = caseInput(name);
            const int pad = loaded.model->info().family == core::ModelFamily::Roberta ? 1 : 0;
            // Real tokens only, then the same with three padding tokens in front.
            std::vector<int> ids, mask;
            for (std::size_t t = 0; t < input["input_ids"].size(); ++t)
                if (input["attention_mask"][t] == 1)
                    ids.push_back(input["input_ids"][t]);
            const int real = static_cast<int>(ids.size());
            std::vector<int> padded(3, pad);
            padded.insert(padded.end(), ids.begin(), ids.end());
            mask.assign(3, 0);
            mask.resize(padded.size(), 1);
            const auto plain = core::dumpReference(*loaded.model, {{"input_ids", ids}}, "plain");
            const auto left = core::dumpReference(*loaded.model, {{"input_ids", padded}, {"attention_mask", mask}}, "left");
            const int T = real + 3, H = loaded.model->info().heads;
            for (int l = 0; l < loaded.model->info().layers; ++l) {
                const auto& p = tensor(left, "layer" + std::to_string(l) + ".attn_prob").data;
                for (int h = 0; h < H; ++h)
                    for (int i = 0; i < T; ++i) {
                        double sum = 0;
                        for (int j = 0; j < T; ++j) {
                            const float v = p[(static_cast<std::size_t>(h) * T + i) * T + j];
                            if (j < 3)
                                REQUIRE(v == 0.0f); // exactly
                            sum += v;
                        }
                        REQUIRE(sum == Approx(1.0).margin(1e-5));
                    }
            }
            if (pad != 1)
                continue; // BERT and DistilBERT count positions from the first token, padding included
            // RoBERTa: positions skip padding, so the real tokens compute what they computed unpadded.
            const auto& a = tensor(plain, "layer1.hidden").data;
            const auto& b = tensor(left, "layer1.hidden").data;
            const int C = loaded.model->info().dModel;
            double worst = 0;
            for (int t = 0; t < real; ++t)
                for (int c = 0; c < C; ++c)
                    worst = std::max(worst, static_cast<double>(std::abs(a[static_cast<std::size_t>(t * C + c)] -
                                                                         b[static_cast<std::size_t>((t + 3) * C + c)])));
            CHECK(worst < 1e-5);
        }
    }
}

TEST_CASE("an encoder refuses what it cannot run, with the reason", "[encoders][errors]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "bert-tiny").string());
    const auto& model = *loaded.model;
    SECTION("padding between real tokens")
    {
        CHECK_THROWS_WITH(core::dumpReference(model, {{"input_ids", {2, 5, 0, 6}}, {"attention_mask", {1, 1, 0, 1}}}, "in.json"),
                          Catch::Contains("between real tokens"));
    }
    SECTION("only padding")
    {
        CHECK_THROWS_WITH(core::dumpReference(model, {{"input_ids", {0, 0}}, {"attention_mask", {0, 0}}}, "in.json"),
                          Catch::Contains("every token"));
    }
    SECTION("a token type the model does not have")
    {
        CHECK_THROWS_WITH(core::dumpReference(model, {{"input_ids", {2, 5}}, {"token_type_ids", {0, 2}}}, "in.json"),
                          Catch::Contains("token type 2"));
    }
    SECTION("a mask of another length")
    {
        CHECK_THROWS_WITH(core::dumpReference(model, {{"input_ids", {2, 5}}, {"attention_mask", {1}}}, "in.json"),
                          Catch::Contains("attention_mask") && Catch::Contains("1 entries for 2 tokens"));
    }
    SECTION("more tokens than positions")
    {
        std::vector<int> ids(41, 5); // max_position_embeddings 40
        CHECK_THROWS_WITH(core::dumpReference(model, {{"input_ids", ids}}, "in.json"), Catch::Contains("40"));
    }
    SECTION("memory, and ablation")
    {
        core::RunOptions mem;
        mem.memLen = 4;
        CHECK_THROWS_WITH(model.newState(mem), Catch::Contains("encoder"));
        core::RunOptions ablate;
        ablate.ablate = core::RunOptions::HeadRef{0, 0};
        CHECK_THROWS_WITH(model.newState(ablate), Catch::Contains("next-token"));
    }
    SECTION("a relative position type")
    {
        test::TempDir tmp;
        fs::copy_file(test::testdataDir() / "bert-tiny" / "model.safetensors", tmp / "model.safetensors");
        auto config = core::readJsonFile((test::testdataDir() / "bert-tiny" / "config.json").string());
        config["position_embedding_type"] = "relative_key";
        test::writeBytes(tmp / "config.json", config.dump());
        CHECK_THROWS_WITH(core::loadModel(tmp.path().string()), Catch::Contains("position_embedding_type") &&
                                                                    Catch::Contains("relative_key"));
    }
}

TEST_CASE("Clark et al.'s head statistics equal the same sums over the reference's attention", "[encoders][atlas]")
{
    const auto dir = test::testdataDir() / "bert-tiny";
    const auto loaded = core::loadModel(dir.string());
    const auto input = caseInput("bert-tiny");
    const auto ids = input["input_ids"].get<std::vector<std::int32_t>>();
    const int T = static_cast<int>(ids.size());
    // Tokens: [CLS] and the two [SEP] as special tokens (empty spans), every fourth other token a full stop.
    std::vector<core::Token> tokens;
    std::size_t at = 0;
    for (int t = 0; t < T; ++t) {
        const bool special = t == 0 || ids[static_cast<std::size_t>(t)] == 3;
        const std::string text = special ? (t == 0 ? "[CLS]" : "[SEP]") : t % 4 == 1 ? "." : "w" + std::to_string(t);
        tokens.push_back({ids[static_cast<std::size_t>(t)], text, at, special ? at : at + text.size()});
        at = tokens.back().end;
    }
    core::CaptureOptions opt;
    opt.segmentLen = T;
    opt.run.tokenTypes = input["token_type_ids"].get<std::vector<std::int32_t>>();
    for (const int m : input["attention_mask"].get<std::vector<int>>())
        opt.run.padding.push_back(m == 0 ? 1 : 0);
    const auto capture = core::captureText(*loaded.model, tokens, opt);
    const auto scores = core::tokenAttentionScores(*capture);
    const auto expected = test::loadAll((dir / "expected.safetensors").string());
    const int H = loaded.model->info().heads;
    for (int l = 0; l < loaded.model->info().layers; ++l) {
        const auto& p = tensor(expected, "layer" + std::to_string(l) + ".attn_prob").data;
        for (int h = 0; h < H; ++h) {
            double cls = 0, sep = 0, punct = 0, prev = 0, next = 0, entropy = 0;
            for (int i = 0; i < T; ++i)
                for (int j = 0; j < T; ++j) {
                    const double v = p[(static_cast<std::size_t>(h) * T + i) * T + j];
                    const auto& key = tokens[static_cast<std::size_t>(j)];
                    cls += key.text == "[CLS]" ? v : 0;
                    sep += key.text == "[SEP]" ? v : 0;
                    punct += key.text == "." ? v : 0;
                    prev += j == i - 1 ? v : 0;
                    next += j == i + 1 ? v : 0;
                    entropy -= v > 0 ? v * std::log(v) : 0;
                }
            const auto& s = scores[static_cast<std::size_t>(l) * H + h];
            INFO("layer " << l << " head " << h);
            CHECK(s.cls == Approx(cls / T).margin(1e-5));
            CHECK(s.sep == Approx(sep / T).margin(1e-5));
            CHECK(s.punctuation == Approx(punct / T).margin(1e-5));
            CHECK(s.previous == Approx(prev / T).margin(1e-5));
            CHECK(s.next == Approx(next / T).margin(1e-5));
            CHECK(s.entropy == Approx(entropy / T).margin(1e-4));
        }
    }
    CHECK(core::isPunctuationToken(" ,"));
    CHECK(core::isPunctuationToken("\xC4\xA0..."));
    CHECK_FALSE(core::isPunctuationToken("a."));
    CHECK_FALSE(core::isPunctuationToken(" "));
}

TEST_CASE("whole words and hidden special tokens regroup a grid as Clark et al. read it", "[encoders][words]")
{
    // [CLS] un ##believ ##able cat . [SEP]: "unbelievable" is one word of three pieces; "." and "cat" are words.
    const std::string text = "unbelievable cat.";
    std::vector<core::Token> tokens = {{101, "[CLS]", 0, 0},   {1, "un", 0, 2},       {2, "believ", 2, 8},
                                       {3, "able", 8, 12},     {4, "cat", 13, 16},    {5, ".", 16, 17},
                                       {102, "[SEP]", 17, 17}};
    CHECK(core::wordOfTokens(tokens) == std::vector<int>{0, 1, 1, 1, 2, 3, 4});
    // GPT-2 style pieces carry their leading space; SentencePiece ones a ▁.
    std::vector<core::Token> bpe = {{1, "Hello", 0, 5}, {2, " wor", 5, 9}, {3, "ld", 9, 11}, {4, "\xE2\x96\x81x", 11, 13}};
    CHECK(core::wordOfTokens(bpe) == std::vector<int>{0, 1, 1, 2});

    core::AttentionGrid g;
    g.rows = g.cols = 7;
    for (int i = 0; i < 7; ++i) {
        g.rowTokens.push_back(i);
        g.colTokens.push_back(i);
    }
    // Row i: mass 0.4 on [SEP], the rest spread evenly; row sums 1.
    for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 7; ++j)
            g.values.push_back(j == 6 ? 0.4f : 0.1f);
    const auto words = core::wordLevelGrid(g, tokens, text, true, 0.2);
    REQUIRE(words.rows == 5);
    REQUIRE(words.cols == 5);
    CHECK(words.colLabels == std::vector<std::string>{"[CLS]", "unbelievable", "cat", ".", "[SEP]"});
    CHECK(words.at(1, 1) == Approx(0.3)); // summed over the three key pieces, averaged over the three query pieces
    CHECK(words.at(0, 4) == Approx(0.4));
    for (int r = 0; r < words.rows; ++r) {
        double sum = 0;
        for (int c = 0; c < words.cols; ++c)
            sum += words.at(r, c);
        CHECK(sum == Approx(1.0)); // still distributions
    }
    const auto plain = core::withoutSpecialTokens(g, tokens, true, 0.2);
    REQUIRE(plain.rows == 5);
    REQUIRE(plain.cols == 5);
    CHECK(plain.rowTokens.front() == 1);
    CHECK(plain.at(0, 0) == Approx(0.2)); // 0.1 of the 0.5 left, renormalised
    const auto raw = core::withoutSpecialTokens(g, tokens, false, 0.2);
    CHECK(raw.at(0, 0) == Approx(0.1));
}

TEST_CASE("the fillers of a captured text's masks equal the head's predictions for the same ids and token types",
          "[encoders][mlm]")
{
    test::TempDir tmp;
    const auto dir = prefixedCase(tmp, "bert-tiny");
    const auto loaded = core::loadModel(dir.string());
    // [CLS] 5 [MASK] 7 [SEP] | 9 [MASK] [SEP] with types 0 ... 1: the token texts mark the masks.
    const std::vector<std::int32_t> ids{2, 5, 4, 7, 3, 9, 4, 3};
    const std::vector<std::int32_t> types{0, 0, 0, 0, 0, 1, 1, 1};
    std::vector<core::Token> tokens;
    for (std::size_t t = 0; t < ids.size(); ++t)
        tokens.push_back({ids[t], ids[t] == 4 ? "[MASK]" : "w", t, t + 1});
    core::CaptureOptions opt;
    opt.run.tokenTypes = types;
    const auto capture = core::captureText(*loaded.model, tokens, opt);
    const auto fills = core::maskedFills(*loaded.model, *capture, 5);
    REQUIRE(fills.size() == 2);
    core::RunOptions ro;
    ro.tokenTypes = types;
    const auto direct = core::topPredictions(*loaded.model, ids, ro, std::vector<int>{2, 6}, 5);
    for (std::size_t m = 0; m < 2; ++m) {
        CHECK(fills[m].position == (m == 0 ? 2 : 6));
        for (std::size_t i = 0; i < 5; ++i) {
            CHECK(fills[m].top[i].id == direct[m][i].id);
            CHECK(fills[m].top[i].probability == Approx(direct[m][i].probability).margin(1e-7));
        }
    }
    const auto plain = core::loadModel((test::testdataDir() / "bert-tiny").string());
    CHECK_THROWS_WITH(core::maskedFills(*plain.model, *core::captureText(*plain.model, tokens, opt), 5),
                      Catch::Contains("masked-language-model head"));
}
