// Encoder-decoder models (T5, BART, Marian) against the reference data: every site's probabilities, hidden states,
// logits, T5's position buckets and biases, and a greedy generation through the decoder's cache, from safetensors,
// PyTorch and GGUF files.
#include "model/model_loader.h"
#include "model/seq2seq.h"
#include "run/translation.h"
#include "analysis/seq2seq_lens.h"
#include "io/safetensors.h"
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
    std::vector<std::string> report;
    const auto problems = test::referenceMismatches(expected.string(), out, &report);
    for (const auto& line : report)
        UNSCOPED_INFO(line);
    for (const auto& p : problems)
        FAIL_CHECK(p);
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
                const auto& model = core::asEncoderDecoder(*loaded.model);
                const auto inputPath = (dir / "input.json").string();
                checkAgainst(dir / "expected.safetensors",
                             core::dumpSeq2Seq(model, core::readJsonFile(inputPath), inputPath));
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
                const auto& model = core::asEncoderDecoder(*loaded.model);
                const auto input = core::readJsonFile((dir / "input.json").string());
                const auto gen = core::readJsonFile((dir / "generation.json").string());
                const auto expectedIds = gen["generated_ids"].get<std::vector<std::int32_t>>();
                const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
                std::vector<std::int32_t> ids;
                const auto out = core::dumpGeneration(model, source, static_cast<int>(expectedIds.size()), &ids);
                CHECK(ids == expectedIds);
                // A GGUF of a tied T5 reads out as Hugging Face does (scaled by d_model^-1/2), so logits match too.
                checkAgainst(dir / "generation.safetensors", out);
            }
        }
    }
}

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

    // A teacher-forced run keeps every site; the cross site's rows are target tokens, its columns source tokens.
    const auto input = core::readJsonFile((cases[0] / "input.json").string());
    const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
    const auto target = input["decoder_input_ids"].get<std::vector<std::int32_t>>();
    const auto t = core::teacherForce(core::asEncoderDecoder(*loaded.model), source, target);
    REQUIRE(t.sites.size() == info.sites.size());
    CHECK(t.sites[3].rows == static_cast<int>(target.size()));
    CHECK(t.sites[3].cols == static_cast<int>(source.size()));
    CHECK(t.sites[0].rows == static_cast<int>(source.size()));
    CHECK(t.sites[2].cols == static_cast<int>(target.size()));
    CHECK(t.sites[2].at(0, 0, 1) == 0.0f); // causal: the first target row sees only itself

    // Generation after a typed prefix continues it: its rows equal a teacher-forced run over the whole result.
    core::GenerateOptions g;
    g.maxNewTokens = 5;
    g.stopAtEos = false;
    const auto gen = core::generate(core::asEncoderDecoder(*loaded.model), source,
                                    std::span(target).first(3), g);
    REQUIRE(gen.target.size() == 8);
    const auto again = core::teacherForce(core::asEncoderDecoder(*loaded.model), source, gen.target);
    for (std::size_t k = 0; k < info.sites.size(); ++k) {
        REQUIRE(gen.sites[k].p.size() == again.sites[k].p.size());
        for (std::size_t i = 0; i < gen.sites[k].p.size(); ++i)
            REQUIRE(gen.sites[k].p[i] == Approx(again.sites[k].p[i]).margin(2e-6));
    }
}

TEST_CASE("an encoder-decoder model refuses a single-stream run and bad streams by name", "[seq2seq][errors]")
{
    const auto cases = test::seq2seqReferenceCases("bart");
    REQUIRE(cases.size() == 1);
    const auto loaded = core::loadModel(cases[0].string());
    CHECK_THROWS_WITH(loaded.model->newState({}), Catch::Contains("encoder-decoder") && Catch::Contains("--source"));
    const auto& m = core::asEncoderDecoder(*loaded.model);
    core::SiteObserver none;
    const std::vector<std::int32_t> tooLong(100, 5); // max_position_embeddings 64
    CHECK_THROWS_WITH(m.encode(tooLong, none), Catch::Contains("100 tokens") && Catch::Contains("max_position_embeddings"));
    const std::vector<std::int32_t> outside{3, 150};
    CHECK_THROWS_WITH(m.encode(outside, none), Catch::Contains("150"));
    const std::vector<std::int32_t> empty;
    CHECK_THROWS_WITH(m.encode(empty, none), Catch::Contains("source is empty"));
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
            const auto& m = core::asEncoderDecoder(*loaded.model);
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto source = input["input_ids"].get<std::vector<std::int32_t>>();
            const auto target = input["decoder_input_ids"].get<std::vector<std::int32_t>>();
            const auto t = core::teacherForce(m, source, target);
            // The last layer's lens is the model's own read-out: its top token and the reference logits' argmax agree.
            const auto lens = core::decoderLogitLens(m, t);
            REQUIRE(lens.layers == m.config().decLayers);
            REQUIRE(lens.positions == static_cast<int>(target.size()));
            core::SafetensorsFile expected((dir / "expected.safetensors").string());
            const auto logits = core::readAsFloat(expected, *expected.find("logits"));
            const int V = loaded.model->info().vocabSize;
            for (int p = 0; p < lens.positions; ++p) {
                const float* row = logits.data() + static_cast<std::size_t>(p) * V;
                CHECK(lens.at(lens.layers - 1, p).front().id == std::max_element(row, row + V) - row);
            }
            // Rollout mixes the residual in: rows sum to 1, and nothing is negative.
            const auto r = core::encoderRollout(loaded.model->info(), t);
            const std::size_t S = source.size();
            REQUIRE(r.size() == S * S);
            for (std::size_t i = 0; i < S; ++i) {
                double sum = 0;
                for (std::size_t j = 0; j < S; ++j) {
                    CHECK(r[i * S + j] >= 0);
                    sum += r[i * S + j];
                }
                CHECK(sum == Approx(1.0).margin(1e-5));
            }
        }
    }
}
