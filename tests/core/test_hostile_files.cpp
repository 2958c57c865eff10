// The second reliability campaign's findings (#59), each as a hand-made input of the same kind: a SentencePiece
// charsmap or piece that would crash the library, T5 bucket settings that divide by zero, shard counts a file
// chose, FIFOs and folders where a file is expected, built-in names that are paths, byte pieces in text output,
// sampling settings, legacy preprocessor sizes and folders of results replaced whole.
#include "analysis/head_contexts.h"
#include "analysis/image_dump.h"
#include "analysis/relpos_scan.h"
#include "io/pickle.h"
#include "image/png_reader.h"
#include "image/preprocess.h"
#include "model/model_loader.h"
#include "run/generation.h"
#include "run/image_capture.h"
#include "test_support.h"
#include "tokenize/spm_checks.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/message_text.h"
#include "util/text_file.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sys/stat.h>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
using test::errorOf;

// A copy of reference case `source`'s weights beside `config` as its config.json, in tmp/name.
fs::path caseWithConfig(const test::TempDir& tmp, const fs::path& source, const std::string& name, const nlohmann::json& config)
{
    const fs::path dir = tmp / name;
    fs::create_directories(dir);
    fs::copy_file(source / "model.safetensors", dir / "model.safetensors");
    test::writeBytes(dir / "config.json", config.dump());
    return dir;
}

// Where normalizer_spec.precompiled_charsmap lies in a serialized ModelProto: {offset, length}.
std::pair<std::size_t, std::size_t> charsmapSpan(const std::string& model)
{
    const auto blob = core::normalizerCharsmap(model, "model");
    return {static_cast<std::size_t>(blob.data() - model.data()), blob.size()};
}

void putUnit(std::string& bytes, std::size_t at, std::uint32_t unit) { std::memcpy(bytes.data() + at, &unit, 4); }
std::uint32_t unitAt(const std::string& bytes, std::size_t at)
{
    std::uint32_t u;
    std::memcpy(&u, bytes.data() + at, 4);
    return u;
}

// Damages a charsmap in place (its length kept, so the file around it stays well formed).
struct CharsmapDamage {
    const char* what;
    std::function<void(std::string& bytes, std::size_t at, std::size_t size)> apply;
};
const std::vector<CharsmapDamage>& charsmapDamages()
{
    static const std::vector<CharsmapDamage> d = {
        {"a trie longer than the blob", [](std::string& b, std::size_t at, std::size_t) { putUnit(b, at, 0xFFFFFF00u); }},
        {"the root's children far past the trie", [](std::string& b, std::size_t at, std::size_t) { putUnit(b, at + 4, 0xFFFFFC00u); }},
        {"every leaf's value past the strings",
         [](std::string& b, std::size_t at, std::size_t) {
             const std::uint32_t trieBytes = unitAt(b, at);
             for (std::size_t u = at + 4; u < at + 4 + trieBytes; u += 4)
                 if (unitAt(b, u) & (1u << 31)) // darts-clone's value units
                     putUnit(b, u, 0xFFFFFFFFu);
         }},
    };
    return d;
}

// A serialized ModelProto of Unigram pieces (SentencePiece's public wire format), without normaliser.
std::string unigramModelProto(const std::vector<std::string>& pieces)
{
    auto varint = [](std::string& out, std::uint64_t v) {
        for (; v >= 0x80; v >>= 7)
            out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        out.push_back(static_cast<char>(v));
    };
    std::string model;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        std::string piece;
        piece.push_back(0x0a); // piece = 1, bytes
        varint(piece, pieces[i].size());
        piece += pieces[i];
        piece.push_back(0x18); // type = 3, varint
        piece.push_back(i == 0 ? 2 : 1);
        model.push_back(0x0a); // pieces = 1
        varint(model, piece.size());
        model += piece;
    }
    return model;
}
} // namespace

TEST_CASE("a damaged precompiled charsmap is refused by name before libsentencepiece follows it", "[hostile][sentencepiece]")
{
    const fs::path spm = test::testdataDir() / "tokenizers" / "marian-en-fr" / "source.spm";
    const std::string bytes = test::readBytes(spm);
    const auto [at, size] = charsmapSpan(bytes);
    REQUIRE(size > 1024); // Marian's nmt_nfkc charsmap
    // The real one passes the check and encodes (its ids are checked against the reference in test_seq2seq).
    CHECK_FALSE(core::SpmTokenizer(spm.string()).encode("Hello, world").empty());
    test::TempDir tmp;
    for (const auto& damage : charsmapDamages()) {
        DYNAMIC_SECTION(damage.what)
        {
            std::string damaged = bytes;
            damage.apply(damaged, at, size);
            REQUIRE(damaged != bytes);
            test::writeBytes(tmp / "source.spm", damaged);
            const std::string file = (tmp / "source.spm").string();
            CHECK_THAT(errorOf([&] { core::SpmTokenizer t(file); (void)t.encode("Hello, world"); }),
                       Catch::Contains(file) && Catch::Contains("precompiled charsmap is damaged") &&
                           Catch::Contains("normalizer_spec.precompiled_charsmap"));
            // The same blob as a tokenizer.json's or a T5 GGUF's charsmap reaches the library through fromPieces.
            core::SpmTokenizer::Pieces p;
            p.pieces = {"<unk>", "\xE2\x96\x81" "a", "b"};
            p.scores = {0, -1, -2};
            p.types = {2, 1, 1};
            p.charsmap = damaged.substr(at, size);
            p.charsmapField = "tokenizer.ggml.precompiled_charsmap";
            CHECK_THAT(errorOf([&] { core::SpmTokenizer::fromPieces(p, "t5.gguf"); }),
                       Catch::Contains("t5.gguf") && Catch::Contains("tokenizer.ggml.precompiled_charsmap"));
        }
    }
    // Random damage inside the trie either passes the check (and then encodes without a crash) or is refused.
    std::mt19937 rng(7);
    for (int trial = 0; trial < 40; ++trial) {
        std::string damaged = bytes;
        for (int k = 0; k < 8; ++k)
            damaged[at + 4 + rng() % (size - 4)] = static_cast<char>(rng());
        core::SpmTokenizer::Pieces p;
        p.pieces = {"<unk>", "\xE2\x96\x81" "a", "b"};
        p.scores = {0, -1, -2};
        p.types = {2, 1, 1};
        p.charsmap = damaged.substr(at, size);
        try {
            (void)core::SpmTokenizer::fromPieces(p, "t5.gguf")->encode("H\xC3\xA9llo \xEF\xBC\xA1 w\xE2\x80\x8Brld\t\xF0\x9F\x98\x80");
        } catch (const core::Error& e) {
            CHECK_THAT(std::string(e.what()), Catch::Contains("t5.gguf"));
        }
    }
}

TEST_CASE("one huge Unigram piece is refused before the library builds its trie", "[hostile][sentencepiece]")
{
    const std::string huge(300'000, 'x');
    test::TempDir tmp;
    // A spiece.model / .spm file.
    test::writeBytes(tmp / "spiece.model", unigramModelProto({"<unk>", "a", huge}));
    CHECK_THAT(errorOf([&] { core::SpmTokenizer((tmp / "spiece.model").string()); }),
               Catch::Contains("spiece.model") && Catch::Contains("piece 2 is 300000 bytes long"));
    // A tokenizer.json's Unigram model.
    const nlohmann::json tj = {{"model", {{"type", "Unigram"}, {"unk_id", 0},
                                          {"vocab", nlohmann::json::array({nlohmann::json::array({"<unk>", 0.0}),
                                                                            nlohmann::json::array({"a", -1.0}),
                                                                            nlohmann::json::array({huge, -2.0})})}}}};
    test::writeBytes(tmp / "tokenizer.json", tj.dump());
    CHECK_THAT(errorOf([&] { core::loadTokenizer((tmp / "tokenizer.json").string()); }),
               Catch::Contains("tokenizer.json") && Catch::Contains("bytes long"));
    // A T5 GGUF's pieces come through the same fromPieces; a piece at the bound is still a piece.
    core::SpmTokenizer::Pieces p{{"<unk>", "a", std::string(4096, 'y')}, {0, -1, -2}, {2, 1, 1}, {}, {}, true, true};
    CHECK_NOTHROW(core::SpmTokenizer::fromPieces(p, "t5.gguf"));
    p.pieces[2] += "y";
    CHECK_THAT(errorOf([&] { core::SpmTokenizer::fromPieces(p, "t5.gguf"); }), Catch::Contains("4097 bytes"));
}

TEST_CASE("T5 bucket settings that divide by zero or index before the table are refused by key", "[hostile][t5]")
{
    const fs::path source = test::testdataDir() / "t5-tiny";
    const auto config = core::readJsonFile((source / "config.json").string());
    test::TempDir tmp;
    struct Case {
        const char* key;
        int value;
        const char* says;
    };
    for (const Case c : {Case{"relative_attention_max_distance", 8, "must be above the 16 exact buckets"},
                         Case{"relative_attention_max_distance", 16, "must be above the 16 exact buckets"},
                         Case{"relative_attention_num_buckets", 2, "from 4 to 1,000,000 buckets"},
                         Case{"relative_attention_num_buckets", 3, "from 4 to 1,000,000 buckets"}}) {
        nlohmann::json j = config;
        j["relative_attention_num_buckets"] = 32;
        j[c.key] = c.value;
        const fs::path dir = caseWithConfig(tmp, source, std::string(c.key) + std::to_string(c.value), j);
        CHECK_THAT(errorOf([&] { core::loadModel(dir.string()); }),
                   Catch::Contains("config.json") && Catch::Contains(c.key) && Catch::Contains(c.says));
    }
    // A T5 GGUF with 3 buckets (its key rewritten in place), and a negative epsilon (a GGUF may store one).
    std::string gguf = test::readBytes(source / "model-f32.gguf");
    const std::string key = "t5.attention.relative_buckets_count";
    const auto at = gguf.find(key);
    REQUIRE(at != std::string::npos);
    const std::size_t value = at + key.size() + 4; // after the key, its uint32 type
    REQUIRE(unitAt(gguf, value - 4) == 4u);         // GGUF_TYPE_UINT32
    putUnit(gguf, value, 3);
    test::writeBytes(tmp / "t5-3-buckets.gguf", gguf);
    CHECK_THAT(errorOf([&] { core::loadModel((tmp / "t5-3-buckets.gguf").string()); }),
               Catch::Contains("t5-3-buckets.gguf") && Catch::Contains(key) && Catch::Contains("from 4"));
}

TEST_CASE("shard counts a file chose are checked against the files given before anything is sized by them",
          "[hostile][shards]")
{
    test::TempDir tmp;
    // Scan shards: 1/100000000 printed a 989 MB message, 1/2147483647 never ended its loop.
    const auto m = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    core::ScanOptions opt;
    opt.segmentLen = 8;
    opt.terms = "";
    core::RelposScanner scanner(*m.model, opt);
    scanner.feed(std::vector<std::int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    auto r = scanner.finish();
    for (const char* shard : {"1/100000000", "3/2147483647"}) {
        r.metadata["shard"] = shard;
        const std::string path = (tmp / "scan.safetensors").string();
        r.save(path);
        const std::string message = errorOf([&] { core::mergeScanFiles({path}); });
        CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("1 shard file(s) given") &&
                                Catch::Contains("more of " + std::string(std::strchr(shard, '/') + 1) + " are missing"));
        CHECK(message.size() < 400);
    }
    // Head-contexts shards: a count of 2147483647 sized a table of 17 GB.
    core::HeadContextValues v;
    v.shard = 1;
    v.shards = 2147483647;
    v.layers = m.model->info().layers;
    v.heads = m.model->info().heads;
    std::vector<core::Token> tokens;
    for (int i = 0; i < 20; ++i)
        tokens.push_back({i % 7, "t", 0, 0});
    core::HeadContextOptions o;
    o.window = 8;
    const std::string message = errorOf([&] { core::mergeHeadContexts(*m.model, tokens, o, {v}); });
    CHECK_THAT(message, Catch::Contains("shards 2, 3, 4, 5, 6 and 2147483641 more of 2147483647 are missing"));
    CHECK(message.size() < 400);
}

TEST_CASE("gpt-oss chooses no more experts per token than it has, whichever key says it", "[hostile][experts]")
{
    const fs::path source = test::testdataDir() / "gptoss-tiny";
    const auto config = core::readJsonFile((source / "config.json").string());
    test::TempDir tmp;
    for (const bool ownKey : {false, true}) {
        nlohmann::json j = config;
        const char* key = ownKey ? "experts_per_token" : "num_experts_per_tok";
        if (ownKey)
            j.erase("num_experts_per_tok");
        j[key] = 9;
        const fs::path dir = caseWithConfig(tmp, source, key, j);
        CHECK_THAT(errorOf([&] { core::loadModel(dir.string()); }),
                   Catch::Contains(key) && Catch::Contains("more than the 4 there are"));
    }
}

TEST_CASE("a FIFO or a folder where a file is expected is named so, never read forever", "[hostile][fifo]")
{
    test::TempDir tmp;
    for (const char* name : {"model.gguf", "model.pt", "pytorch_model.bin", "picture.png", "tokenizer.json"})
        REQUIRE(::mkfifo((tmp / name).c_str(), 0600) == 0);
    fs::copy_file(test::testdataDir() / "gpt2-tiny" / "config.json", tmp / "config.json");
    for (const char* name : {"model.gguf", "model.pt", "pytorch_model.bin"})
        CHECK_THAT(errorOf([&] { core::loadModel((tmp / name).string()); }),
                   Catch::Contains(name) && Catch::Contains("not a regular file"));
    CHECK_THAT(errorOf([&] { core::readPng((tmp / "picture.png").string()); }), Catch::Contains("not a regular file"));
    CHECK_THAT(errorOf([&] { core::readPng(tmp.path().string()); }), Catch::Contains("is a folder, not a picture"));
    CHECK_THAT(errorOf([&] { core::loadTokenizer((tmp / "tokenizer.json").string()); }),
               Catch::Contains("not a regular file"));
}

TEST_CASE("builtin: names only the built-in models, never a path", "[hostile][builtin]")
{
    const auto dirs = std::vector<std::string>{(fs::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()};
    REQUIRE_FALSE(core::listBuiltinModels(dirs).empty());
    CHECK_NOTHROW(core::resolveModelFolder("builtin:" + core::listBuiltinModels(dirs).front(), dirs));
    const std::string outside = (test::testdataDir() / "gpt2-tiny").string();
    for (const std::string& spec : std::vector<std::string>{"builtin:../../x", "builtin:" + outside, "builtin:..",
                                                            "builtin:heads-1/../heads-1", "builtin:"})
        CHECK_THAT(errorOf([&] { core::resolveModelFolder(spec, dirs); }), Catch::Contains("no built-in model of that name"));
}

TEST_CASE("a byte-level piece that is part of a character is spelled <0xNN> wherever a token is shown",
          "[hostile][utf8]")
{
    const auto tok = core::loadTokenizer((test::testdataDir() / "gpt2-tokenizer").string());
    int partial = 0;
    for (int id = 0; id < tok->vocabSize(); ++id) {
        const std::string piece = tok->pieceOf(id);
        REQUIRE(core::validUtf8(piece) == piece); // JSON and Python strings take it
        if (core::validUtf8(tok->textOf(id)) != tok->textOf(id)) { // the bytes themselves, for generated text
            ++partial;
            CHECK_THAT(piece, Catch::Contains("<0x"));
        }
    }
    CHECK(partial > 0);
    CHECK(core::bytesSpelled("a\xE2\x96") == "a<0xE2><0x96>");
    CHECK(core::bytesSpelled("\xE2\x96\x81" "b") == "\xE2\x96\x81" "b");
}

TEST_CASE("sampling settings are refused by name, and a tiny temperature picks the top token with probability 1",
          "[hostile][sampling]")
{
    core::Sampling s;
    s.temperature = std::nan("");
    CHECK_THROWS_WITH(core::checkSampling(s), Catch::Contains("temperature must be a positive finite number"));
    s.temperature = -1;
    CHECK_THROWS_WITH(core::checkSampling(s, {"--temperature", "--top-k", "--top-p"}), Catch::Contains("--temperature"));
    s.temperature = 1;
    s.topK = -2;
    CHECK_THROWS_WITH(core::checkSampling(s), Catch::Contains("top_k"));
    s.topK = 0;
    s.topP = std::nan("");
    CHECK_THROWS_WITH(core::checkSampling(s), Catch::Contains("top_p"));
    s.topP = 1;
    CHECK_NOTHROW(core::checkSampling(s));
    const std::vector<float> logits{1.0f, 3.0f, 2.5f, -4.0f};
    const auto d = core::distributionOf(logits, 1e-300, 2, 1);
    REQUIRE(d.top.size() == 2);
    CHECK(d.top[0].id == 1);
    CHECK(d.top[0].probability == 1.0);
    CHECK(d.top[1].probability == 0.0);
    CHECK(d.actualProbability == 1.0);
}

TEST_CASE("legacy integer sizes in preprocessor_config.json read as Hugging Face's get_size_dict reads them",
          "[hostile][preprocessor]")
{
    // google/vit-base-patch16-224's legacy file: an integer size is the square.
    auto vit = core::parsePreprocessor({{"feature_extractor_type", "ViTFeatureExtractor"}, {"size", 224}, {"resample", 2}},
                                       "preprocessor_config.json");
    CHECK(vit.height == 224);
    CHECK(vit.width == 224);
    CHECK(vit.shortestEdge == 0);
    // openai/clip-vit-base-patch32's: the size is the shortest edge, the crop a square.
    auto clip = core::parsePreprocessor({{"feature_extractor_type", "CLIPFeatureExtractor"}, {"size", 224},
                                         {"crop_size", 224}, {"do_center_crop", true}},
                                        "preprocessor_config.json");
    CHECK(clip.shortestEdge == 224);
    CHECK(clip.cropHeight == 224);
    CHECK(clip.cropWidth == 224);
    CHECK_THAT(errorOf([] { core::parsePreprocessor({{"size", "big"}}, "preprocessor_config.json"); }),
               Catch::Contains("preprocessor_config.json") && Catch::Contains("size"));
}

TEST_CASE("a folder of head contexts is replaced whole, and a folder of other files is never replaced",
          "[hostile][atomic]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    std::vector<core::Token> tokens;
    for (int i = 0; i < 24; ++i)
        tokens.push_back({(i * 5) % 11, "t", 0, 0});
    core::HeadContextOptions o;
    o.window = 8;
    const auto r = core::headContexts(*loaded.model, tokens, o);
    test::TempDir tmp;
    const std::string out = (tmp / "out").string();
    core::writeHeadContexts(r, "first", out);
    test::writeBytes(tmp / "out" / "heads" / "L9-H9.json", "{}"); // a file an earlier, larger model's run left
    core::writeHeadContexts(r, "second", out);
    CHECK(core::readJsonFile((tmp / "out" / "index.json").string())["model"] == "second");
    CHECK_FALSE(fs::exists(tmp / "out" / "heads" / "L9-H9.json")); // nothing of the earlier folder is left
    {
        const test::FileSizeLimit full(200); // a full disk: the new folder cannot be written
        CHECK_THROWS(core::writeHeadContexts(r, "third", out));
    }
    CHECK(core::readJsonFile((tmp / "out" / "index.json").string())["model"] == "second");
    for (const auto& e : fs::directory_iterator(tmp.path())) // no staging folder is left behind
        CHECK(e.path().filename() == "out");
    fs::create_directories(tmp / "mine");
    test::writeBytes(tmp / "mine" / "notes.txt", "mine");
    CHECK_THAT(errorOf([&] { core::writeHeadContexts(r, "x", (tmp / "mine").string()); }),
               Catch::Contains("is a folder of other files"));
    CHECK(fs::exists(tmp / "mine" / "notes.txt"));
}

TEST_CASE("a final norm that overflows ends in a message naming the file, in encoder-decoder and decoder models alike",
          "[hostile][nonfinite]")
{
    for (const auto& [name, norm] : {std::pair{"t5-tiny", "decoder.final_layer_norm.weight"},
                                     std::pair{"gpt2-tiny", "ln_f.weight"}}) {
        DYNAMIC_SECTION(name)
        {
            test::TempDir tmp;
            const auto src = test::testdataDir() / name;
            fs::copy_file(src / "config.json", tmp / "config.json");
            auto tensors = test::loadAll((src / "model.safetensors").string());
            bool found = false;
            for (auto& t : tensors)
                if (t.name == norm || t.name == std::string("transformer.") + norm) {
                    std::fill(t.data.begin(), t.data.end(), 3e38f); // finite, but the read-out of it is not
                    found = true;
                }
            REQUIRE(found);
            core::writeSafetensors((tmp / "model.safetensors").string(), tensors);
            const auto loaded = core::loadModel(tmp.path().string());
            struct Logits final : core::AttentionObserver {
                bool wantLogits() const override { return true; }
                void onLayer(const core::LayerView&) override {}
            } logits;
            core::RunOptions options;
            if (loaded.model->info().can.encoderDecoder)
                options.source = std::make_shared<const std::vector<std::int32_t>>(std::vector<std::int32_t>{5, 6, 7, 1});
            CHECK_THROWS_WITH(loaded.model->run({{0, 4, 9}}, options, logits),
                              Catch::Contains("NaN or infinity") && Catch::Contains("model.safetensors"));
        }
    }
}

TEST_CASE("DINOv2 runs a picture at its own size and aspect: the tokens are the preprocessed picture's patches",
          "[hostile][vision]")
{
    // No centre crop and a shortest edge of 36: the 320 x 240 picture becomes 48 x 36 pixels, 12 x 9 patches and a
    // class token, more than the 1 + 10 x 10 of the config's image_size (the count the run was once given).
    test::TempDir tmp;
    const fs::path source = test::testdataDir() / "dinov2-tiny";
    for (const char* f : {"config.json", "model.safetensors", "image.png"})
        fs::copy_file(source / f, tmp / f);
    auto pre = core::readJsonFile((source / "preprocessor_config.json").string());
    pre["do_center_crop"] = false;
    pre["size"] = {{"shortest_edge", 36}};
    test::writeBytes(tmp / "preprocessor_config.json", pre.dump());
    const auto loaded = core::loadModel(tmp.path().string());
    const auto picture = core::capturePngFile(*loaded.model, tmp.path().string(), (tmp / "image.png").string());
    CHECK(picture.seen->width == 48);
    CHECK(picture.seen->height == 36);
    REQUIRE(picture.capture->tokens.size() == 1 + 9 * 12);
    CHECK(picture.capture->tokens.back().text == "r9c12");
    const auto pixels = std::make_shared<const core::PixelValues>(
        core::preprocessImage(core::readPng((tmp / "image.png").string()), core::readPreprocessor(tmp.path().string())));
    for (const auto& t : core::dumpImage(*loaded.model, pixels))
        if (t.name == "layer0.attn_prob")
            CHECK(t.shape == core::Shape{3, 109, 109});
}

TEST_CASE("a pickle of millions of one-byte values costs its stack, and past any real pickle's count it is refused",
          "[hostile][pytorch]")
{
    // 8 MB of EMPTY_TUPLE made a node of ~150 bytes per byte (a 20 MB file took 2.4 GB before its refusal): the
    // immutable one-byte values (empty tuple, None, True, False) are one shared node each.
    std::vector<std::uint8_t> tuples = {0x80, 2, '('};
    tuples.insert(tuples.end(), 8'000'000, ')');
    tuples.insert(tuples.end(), {'N', 0x88, 0x89, 'l', '.'});
    {
        core::PickleDocument doc;
        core::unpickle(doc, tuples.data(), tuples.size(), "tuples.pkl");
        REQUIRE(doc.root->items.size() == 8'000'003);
        CHECK(doc.root->items[0] == doc.root->items[7'999'999]); // one shared empty tuple
        CHECK(doc.root->items[8'000'001]->integer == 1); // True
        CHECK(doc.root->items[8'000'002]->integer == 0); // False
    }
    // Mutable ones (empty lists) are values each, up to a count no checkpoint or vocabulary comes near.
    std::vector<std::uint8_t> lists = {0x80, 2, '('};
    lists.insert(lists.end(), 5'000'000, ']');
    lists.insert(lists.end(), {'l', '.'});
    core::PickleDocument doc;
    CHECK_THAT(errorOf([&] { core::unpickle(doc, lists.data(), lists.size(), "lists.pkl"); }),
               Catch::Contains("lists.pkl") && Catch::Contains("values: more than any checkpoint"));
}

TEST_CASE("DeepSeek's latent widths and shared experts are bounded where they are read", "[hostile][config]")
{
    const fs::path source = test::testdataDir() / "deepseek2-tiny";
    const auto config = core::readJsonFile((source / "config.json").string());
    test::TempDir tmp;
    for (const auto& [key, value] : {std::pair{"qk_nope_head_dim", 100'000'000}, std::pair{"kv_lora_rank", 20'000},
                                     std::pair{"n_shared_experts", 90'000'000}}) {
        nlohmann::json j = config;
        j[key] = value;
        const fs::path dir = caseWithConfig(tmp, source, key, j);
        CHECK_THAT(errorOf([&] { core::loadModel(dir.string()); }),
                   Catch::Contains(key) && Catch::Contains("wider than any model's"));
    }
}

TEST_CASE("a Unigram tokenizer's added tokens match longest first through the trie, many of them", "[hostile][tokenizer]")
{
    core::SpmTokenizer::Pieces p{{"<unk>", "\xE2\x96\x81" "a", "b", "\xE2\x96\x81"}, {0, -1, -2, -3}, {2, 1, 1, 1}, {}, {},
                                 true, true};
    auto t = core::SpmTokenizer::fromPieces(p, "tokenizer.json");
    std::vector<std::pair<std::string, std::int32_t>> added;
    for (int i = 0; i < 20'000; ++i)
        added.emplace_back("<extra_" + std::to_string(i) + ">", 100 + i);
    added.emplace_back("<x>", 50);
    added.emplace_back("<x>y", 51);
    t->setAddedTokens(added);
    const auto tokens = t->encode("a <extra_123> b<x>y<x><extra_19999>");
    std::vector<std::int32_t> ids;
    for (const auto& tok : tokens)
        ids.push_back(tok.id);
    CHECK(std::count(ids.begin(), ids.end(), 223) == 1);
    CHECK(std::count(ids.begin(), ids.end(), 51) == 1); // "<x>y" before "<x>"
    CHECK(std::count(ids.begin(), ids.end(), 50) == 1);
    CHECK(std::count(ids.begin(), ids.end(), 20'099) == 1);
}

TEST_CASE("a preprocessor's or rope scaling's number that would overflow is blamed on its key, not on the weights",
          "[hostile][config]")
{
    CHECK_THAT(errorOf([] {
                   core::parsePreprocessor({{"size", {{"height", 32}, {"width", 32}}}, {"image_std", {1e-300, 0.5, 0.5}}},
                                           "preprocessor_config.json");
               }),
               Catch::Contains("preprocessor_config.json") && Catch::Contains("image_std"));
    const fs::path source = test::testdataDir() / "deepseek2-tiny";
    auto j = core::readJsonFile((source / "config.json").string());
    j["rope_scaling"] = {{"type", "yarn"}, {"factor", 40.0}, {"original_max_position_embeddings", 64}, {"mscale", 1e308},
                         {"mscale_all_dim", 1.0}};
    test::TempDir tmp;
    fs::copy_file(source / "model.safetensors", tmp / "model.safetensors");
    test::writeBytes(tmp / "config.json", j.dump());
    CHECK_THAT(errorOf([&] { core::loadModel(tmp.path().string()); }),
               Catch::Contains("config.json") && Catch::Contains("mscale must be at most 1000"));
}

TEST_CASE("a crop a picture cannot take names the preprocessor file that asked for it", "[hostile][preprocessor]")
{
    const auto p = core::parsePreprocessor({{"do_resize", false}, {"do_center_crop", true}, {"crop_size", 64}},
                                           "/models/x/preprocessor_config.json");
    core::Image8 small;
    small.width = 20;
    small.height = 10;
    small.rgb.assign(20 * 10 * 3, 0);
    CHECK_THAT(errorOf([&] { core::preparedImage(small, p); }),
               Catch::Contains("/models/x/preprocessor_config.json") && Catch::Contains("crop"));
}

TEST_CASE("PNG rows are unfiltered and converted one at a time, in every colour type and filter",
          "[hostile][vision][png]")
{
    // Decoded row by row beside the inflated data (a 16-bit RGBA picture of 10,000 x 10,000 held a second 800 MB
    // copy); tests/data/png's pictures with their expected RGB, written by PNG's rules outside the reader.
    for (const char* name : {"rgba16", "pal4", "grey2", "ga8"}) {
        DYNAMIC_SECTION(name)
        {
            const fs::path dir = test::projectDataDir() / "png";
            const auto img = core::readPng((dir / (std::string(name) + ".png")).string());
            CHECK(img.width == 13);
            CHECK(img.height == 7);
            const std::string expected = test::readBytes(dir / (std::string(name) + ".rgb"));
            CHECK(std::string(img.rgb.begin(), img.rgb.end()) == expected);
        }
    }
}
