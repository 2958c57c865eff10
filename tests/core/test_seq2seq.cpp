// Encoder-decoder models (T5, BART, Marian) against the reference data, through the one run every model has (the
// source read beside the target's segments): every site's probabilities, hidden states, logits, T5's position buckets
// and biases, and a greedy generation through the decoder's cache, from safetensors, PyTorch and GGUF files.
#include "analysis/attention_grid.h"
#include "analysis/logit_lens.h"
#include "analysis/rollout.h"
#include "model/model_loader.h"
#include "model/seq2seq.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "io/safetensors.h"
#include "reference_check.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using namespace attnscope;

namespace {

// Every weight file of a case: the folder (safetensors), its pytorch_model.bin and its GGUF files.
std::vector<std::string> modelSpecs(const fs::path& dir)
{
    std::vector<std::string> specs{dir.string()};
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".gguf" || e.path().filename() == "pytorch_model.bin")
            specs.push_back(e.path().string());
    std::sort(specs.begin() + 1, specs.end());
    return specs;
}

void checkAgainst(const fs::path& expected, const std::vector<core::OutputTensor>& out)
{
    test::checkAgainstReference(expected, out);
}

} // namespace

TEST_CASE("encoder-decoder models reproduce their reference outputs (teacher forcing)", "[seq2seq][reference]")
{
    const auto cases = test::seq2seqReferenceCases();
    REQUIRE(cases.size() >= 4); // t5-tiny, t5v11-tiny, bart-tiny, marian-tiny
    for (const auto& dir : cases)
        for (const auto& spec : modelSpecs(dir)) {
            DYNAMIC_SECTION(fs::relative(spec, dir.parent_path()).string())
            {
                const auto loaded = core::loadModel(spec);
                const auto inputPath = (dir / "input.json").string();
                checkAgainst(dir / "expected.safetensors",
                             core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath));
            }
        }
}

TEST_CASE("encoder-decoder greedy generation through the cache matches the reference step by step", "[seq2seq][reference]")
{
    for (const auto& dir : test::seq2seqReferenceCases()) {
        if (!fs::exists(dir / "generation.json"))
            continue;
        for (const auto& spec : modelSpecs(dir)) {
            DYNAMIC_SECTION(fs::relative(spec, dir.parent_path()).string())
            {
                const auto loaded = core::loadModel(spec);
                const auto inputPath = (dir / "input.json").string();
                const auto gen = core::readJsonFile((dir / "generation.json").string());
                const auto expectedIds = gen["generated_ids"].get<std::vector<std::int32_t>>();
                std::vector<std::int32_t> ids;
                const auto out = core::dumpGeneration(*loaded.model, core::readJsonFile(inputPath), inputPath,
                                                      static_cast<int>(expectedIds.size()), &ids);
                CHECK(ids == expectedIds);
                // A GGUF of a tied T5 reads out as Hugging Face does (scaled by d_model^-1/2), so logits match too.
                checkAgainst(dir / "generation.safetensors", out);
            }
        }
    }
}

namespace {
// Tokens of ids (the reference folders have no tokenizer files), and a capture of a target with its source.
std::vector<core::Token> tokensOf(const std::vector<std::int32_t>& ids)
{
    std::vector<core::Token> out;
    for (auto id : ids)
        out.push_back({id, std::to_string(id), 0, 0});
    return out;
}
core::CaptureOptions withSource(const core::ModelInfo& info, const std::vector<std::int32_t>& source)
{
    core::CaptureOptions o;
    o.streams.resize(info.streams.size());
    o.streams[static_cast<std::size_t>(info.typedReadStream())].tokens = tokensOf(source);
    return o;
}
} // namespace

TEST_CASE("encoder-decoder sites: encoder self, decoder self (causal) and cross per layer, over two streams", "[seq2seq]")
{
    const auto cases = test::seq2seqReferenceCases("t5v11");
    REQUIRE(cases.size() == 1);
    const auto loaded = core::loadModel(cases[0].string());
    const auto& info = loaded.model->info();
    REQUIRE(info.streams.size() == 2);
    CHECK(info.streams[0].name == "source");
    CHECK(info.streams[1].name == "target");
    REQUIRE(info.sites.size() == 2 + 2 * 3); // 2 encoder layers, 3 decoder layers
    CHECK(info.sites[0].stack == core::Stack::Encoder);
    CHECK_FALSE(info.sites[0].causal);
    CHECK(info.sites[0].positionBias);
    CHECK(info.sites[2].stack == core::Stack::Decoder);
    CHECK(info.sites[2].kind == core::SiteKind::Self);
    CHECK(info.sites[2].causal);
    CHECK(info.sites[3].kind == core::SiteKind::Cross);
    CHECK(info.sites[3].queryStream == 1);
    CHECK(info.sites[3].keyStream == 0);
    CHECK_FALSE(info.sites[3].positionBias);
    CHECK(info.sites[3].label() == "decoder layer 1 cross-attention");
    CHECK(info.can.encoderDecoder);

    CHECK(info.streams[0].role == core::StreamRole::Read);
    CHECK(info.streams[1].role == core::StreamRole::Segments);
    CHECK(info.segmentStream() == 1);
    CHECK(info.typedReadStream() == 0);

    // A teacher-forced run keeps every site; the cross site's rows are target tokens, its columns source tokens.
    const auto input = core::readJsonFile((cases[0] / "input.json").string());
    const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
    const auto target = input["decoder_input_ids"].get<std::vector<std::int32_t>>();
    const auto t = core::captureText(*loaded.model, tokensOf(target), withSource(info, source));
    CHECK(t->record(0, 3).qlen == static_cast<int>(target.size()));
    CHECK(t->record(0, 3).klen == static_cast<int>(source.size()));
    CHECK(t->record(0, 0).qlen == static_cast<int>(source.size()));
    CHECK(t->record(0, 2).klen == static_cast<int>(target.size()));
    CHECK(std::isnan(core::attentionGrid(*t, 0, 2, {0}).at(0, 1))); // causal: the first target row sees only itself
    const auto cross = core::attentionGrid(*t, 0, 3, {0});
    CHECK(cross.rowStream == 1);
    CHECK(cross.colStream == 0);

    // Generation after a typed prefix continues it through the cache: every site's grid equals a run over the whole
    // result at once.
    std::vector<core::Token> prefix = tokensOf(std::vector<std::int32_t>(target.begin(), target.begin() + 3));
    auto grown = core::captureText(*loaded.model, prefix, withSource(info, source));
    for (int step = 0; step < 5; ++step) { // continued a token at a time from the previous capture (resumeWithin)
        prefix.push_back({target[static_cast<std::size_t>(3 + step)], "x", 0, 0});
        auto o = withSource(info, source);
        o.previous = grown;
        grown = core::captureText(*loaded.model, prefix, o);
        CHECK(grown->reusedTokens == 3 + step);
    }
    const auto again = core::captureText(*loaded.model, prefix, withSource(info, source));
    for (int k = 0; k < info.siteCount(); ++k)
        for (int h = 0; h < info.heads; ++h) {
            const auto a = core::attentionGrid(*grown, 0, k, {h}), b = core::attentionGrid(*again, 0, k, {h});
            REQUIRE(a.values.size() == b.values.size());
            for (std::size_t i = 0; i < a.values.size(); ++i)
                REQUIRE((std::isnan(a.values[i]) ? std::isnan(b.values[i]) : a.values[i] == Approx(b.values[i]).margin(2e-6)));
        }
}

TEST_CASE("an encoder-decoder model refuses a run without a source and bad streams by name", "[seq2seq][errors]")
{
    const auto cases = test::seq2seqReferenceCases("bart");
    REQUIRE(cases.size() == 1);
    const auto loaded = core::loadModel(cases[0].string());
    const auto& info = loaded.model->info();
    CHECK_THROWS_WITH(loaded.model->newState({}), Catch::Contains("encoder-decoder") && Catch::Contains("--source"));
    auto run = [&](const std::vector<std::int32_t>& source) {
        return core::captureText(*loaded.model, tokensOf({2}), withSource(info, source));
    };
    const std::vector<std::int32_t> tooLong(100, 5); // max_position_embeddings 64
    CHECK_THROWS_WITH(run(tooLong), Catch::Contains("100 tokens") && Catch::Contains("max_position_embeddings"));
    CHECK_THROWS_WITH(run({3, 150}), Catch::Contains("150"));
    CHECK_THROWS_WITH(loaded.model->newState([] {
        core::RunOptions o;
        o.source = std::make_shared<const std::vector<std::int32_t>>();
        return o;
    }()), Catch::Contains("source"));
}

TEST_CASE("a T5 GGUF file reads text with its own SentencePiece Unigram vocabulary", "[seq2seq][gguf][tokenizer]")
{
    // t5-tiny's GGUF carries a 128-piece Unigram model trained on WikiText (its README): words made of its pieces
    // come back as the text, the word boundary as a space, every id inside the model's vocabulary.
    const auto file = test::testdataDir() / "t5-tiny" / "model-f32.gguf";
    const auto loaded = core::loadModel(file.string());
    const auto tok = core::loadModelTokenizer(loaded);
    CHECK(tok->kind() == "SentencePiece");
    const std::string text = "the war ended in the north";
    const auto tokens = tok->encode(text);
    REQUIRE(!tokens.empty());
    std::string back;
    for (const auto& t : tokens) {
        CHECK(t.id >= 0);
        CHECK(t.id < loaded.model->info().vocabSize);
        CHECK(t.end <= text.size());
        back += tok->textOf(t.id);
    }
    CHECK(back == " " + text);
    // The end-of-sequence token T5 appends is the file's eos (1).
    const auto withEos = tok->encodeWithSpecial(text);
    CHECK(withEos.back().id == 1);
}

TEST_CASE("encoder rollout and the decoder's logit lens of a translation", "[seq2seq][analysis]")
{
    for (const auto& dir : test::seq2seqReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& info = loaded.model->info();
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
            const auto target = input["decoder_input_ids"].get<std::vector<std::int32_t>>();
            const auto t = core::captureText(*loaded.model, tokensOf(target), withSource(info, source));
            // The last layer's lens is the model's own read-out: its top token and the reference logits' argmax agree.
            const auto lens = core::logitLens(*loaded.model, *t, 0);
            int decoderLayers = 0;
            for (const auto& site : info.sites)
                decoderLayers += site.kind == core::SiteKind::Cross ? 1 : 0;
            REQUIRE(lens.layers == decoderLayers);
            REQUIRE(lens.positions == static_cast<int>(target.size()));
            core::SafetensorsFile expected((dir / "expected.safetensors").string());
            const auto logits = core::readAsFloat(expected, *expected.find("logits"));
            const int V = info.vocabSize;
            for (int p = 0; p < lens.positions; ++p) {
                const float* row = logits.data() + static_cast<std::size_t>(p) * V;
                CHECK(lens.at(lens.layers - 1, p).front().id == std::max_element(row, row + V) - row);
            }
            // Rollout over the encoder's layers mixes the residual in: rows sum to 1, and nothing is negative.
            const auto r = core::attentionRollout(*t, 0, nullptr, {}, info.typedReadStream());
            const int S = static_cast<int>(source.size());
            REQUIRE(r.rows == S);
            REQUIRE(r.cols == S);
            for (int i = 0; i < S; ++i) {
                double sum = 0;
                for (int j = 0; j < S; ++j) {
                    CHECK(r.at(i, j) >= 0);
                    sum += r.at(i, j);
                }
                CHECK(sum == Approx(1.0).margin(1e-5));
            }
            // The decoder's layers read the source too: no rollout of the target alone, said by name.
            CHECK_THROWS_WITH(core::attentionRollout(*t, 0), Catch::Contains("cross-attention"));
        }
    }
}
