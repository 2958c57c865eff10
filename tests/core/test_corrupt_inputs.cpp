// Hostile and broken inputs: each gets an Error whose message names the file and the problem.
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

std::string le64(std::uint64_t n)
{
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i)
        s[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return s;
}

std::string safetensorsBytes(const std::string& header, const std::string& data)
{
    std::string out = le64(header.size());
    out.append(header).append(data);
    return out;
}

// Expects `fn` to throw core::Error with `code` and a message containing every fragment.
template <typename Fn>
void expectError(Fn&& fn, core::ErrorCode code, std::initializer_list<std::string> fragments)
{
    try {
        fn();
        FAIL("no error was raised");
    } catch (const core::Error& e) {
        INFO("message: " << e.what());
        CHECK(core::errorCodeName(e.code()) == std::string(core::errorCodeName(code)));
        for (const auto& f : fragments)
            CHECK(std::string(e.what()).find(f) != std::string::npos);
    }
}

// A copy of a reference model folder to damage.
fs::path copyCase(const test::TempDir& tmp, const std::string& name)
{
    const auto dst = tmp / name;
    fs::copy(test::testdataDir() / name, dst);
    for (const auto& e : fs::directory_iterator(dst))
        fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    return dst;
}

} // namespace

TEST_CASE("safetensors headers are validated field by field", "[errors][safetensors]")
{
    test::TempDir tmp;
    const auto file = tmp / "x.safetensors";
    const std::string path = file.string();
    auto open = [&] { core::SafetensorsFile f(path); };
    const std::string eight(8, '\0'); // 2 floats

    SECTION("file shorter than the length prefix")
    {
        test::writeBytes(file, "abc");
        expectError(open, core::ErrorCode::CorruptFile, {path, "too short"});
    }
    SECTION("header length past the end of the file")
    {
        test::writeBytes(file, le64(4096).append("{}"));
        expectError(open, core::ErrorCode::CorruptFile, {path, "past the end"});
    }
    SECTION("absurd header length")
    {
        test::writeBytes(file, le64(1ull << 40).append("{}"));
        expectError(open, core::ErrorCode::CorruptFile, {path, "exceeds the limit"});
    }
    SECTION("header is not JSON")
    {
        test::writeBytes(file, safetensorsBytes("{\"a\": [1, 2", eight));
        expectError(open, core::ErrorCode::BadJson, {path, "not valid JSON"});
    }
    SECTION("unknown dtype")
    {
        test::writeBytes(file, safetensorsBytes(R"({"w":{"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", eight));
        expectError(open, core::ErrorCode::UnsupportedDtype, {path, "'w'", "F17"});
    }
    SECTION("shape x dtype size disagrees with the byte range")
    {
        test::writeBytes(file, safetensorsBytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight));
        expectError(open, core::ErrorCode::CorruptFile, {path, "'w'", "needs 12 bytes"});
    }
    SECTION("offsets outside the data section")
    {
        test::writeBytes(file, safetensorsBytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight));
        expectError(open, core::ErrorCode::CorruptFile, {path, "'w'", "outside the data section"});
    }
    SECTION("overlapping ranges")
    {
        test::writeBytes(file, safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                                eight));
        expectError(open, core::ErrorCode::CorruptFile, {path, "overlap"});
    }
    SECTION("reversed offsets")
    {
        test::writeBytes(file, safetensorsBytes(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", eight));
        expectError(open, core::ErrorCode::CorruptFile, {path, "reversed"});
    }
    SECTION("negative dimension")
    {
        test::writeBytes(file, safetensorsBytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight));
        expectError(open, core::ErrorCode::CorruptFile, {path, "negative"});
    }
    SECTION("a valid file opens and reads back")
    {
        core::writeSafetensors(path, {{"b", {2}, {1.5f, -2.0f}}, {"a", {1, 1}, {3.0f}}}, {{"k", "v"}});
        core::SafetensorsFile f(path);
        REQUIRE(f.tensors().size() == 2);
        REQUIRE(f.metadata().at("k") == "v");
        CHECK(core::readAsFloat(f, *f.find("b")) == std::vector<float>{1.5f, -2.0f});
        CHECK(test::readBytes(file).substr(8, 1) == "{");
        CHECK((test::readBytes(file).size() - 8 - 12) % 8 == 0); // header padded to 8
    }
}

TEST_CASE("a truncated checkpoint is reported with its file name", "[errors][model]")
{
    test::TempDir tmp;
    const auto dir = copyCase(tmp, "txl-tiny");
    const auto bytes = test::readBytes(dir / "model.safetensors");
    test::writeBytes(dir / "model.safetensors", bytes.substr(0, bytes.size() - 100));
    expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::CorruptFile,
                {(dir / "model.safetensors").string(), "truncated"});
}

TEST_CASE("config problems name config.json and the key", "[errors][model]")
{
    test::TempDir tmp;
    const auto dir = copyCase(tmp, "txl-tiny");
    const auto configPath = (dir / "config.json").string();
    auto config = core::readJsonFile(configPath);

    SECTION("unknown model type lists the supported ones")
    {
        config["model_type"] = "mamba";
        test::writeBytes(configPath, config.dump());
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::UnknownModelType,
                    {configPath, "bert", "transfo-xl", "gpt2"});
    }
    SECTION("config that is not JSON")
    {
        test::writeBytes(configPath, "{ \"model_type\": ");
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::BadJson, {configPath});
    }
    SECTION("missing required key")
    {
        config.erase("n_head");
        test::writeBytes(configPath, config.dump());
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::BadConfig, {configPath, "n_head", "missing"});
    }
    SECTION("shape that disagrees with the config")
    {
        config["d_inner"] = 21;
        test::writeBytes(configPath, config.dump());
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::ShapeMismatch,
                    {"model.safetensors", "layers.0.pos_ff.CoreNet.0.weight", "[20, 12]", "[21, 12]"});
    }
    SECTION("unsupported attention type")
    {
        config["attn_type"] = 2;
        test::writeBytes(configPath, config.dump());
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::BadConfig, {configPath, "attn_type"});
    }
}

TEST_CASE("a missing tensor is named with its file", "[errors][model]")
{
    test::TempDir tmp;
    const auto dir = copyCase(tmp, "gpt2-tiny");
    auto weights = test::loadAll((dir / "model.safetensors").string());
    std::erase_if(weights, [](const core::OutputTensor& t) { return t.name == "h.1.mlp.c_fc.bias"; });
    core::writeSafetensors((dir / "model.safetensors").string(), weights);
    expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::MissingTensor,
                {dir.string(), "h.1.mlp.c_fc.bias"});
}

TEST_CASE("folders and paths that are not models", "[errors][model]")
{
    test::TempDir tmp;
    expectError([&] { core::loadModel((tmp / "nope").string()); }, core::ErrorCode::Io, {"nope", "no such"});
    expectError([&] { core::loadModel(tmp.path().string()); }, core::ErrorCode::Io, {"config.json"});
    expectError([&] { core::loadModel("builtin:no-such-model", {tmp.path().string()}); }, core::ErrorCode::Io,
                {"builtin:no-such-model"});
}

TEST_CASE("GPT-2 accepts the transformer. prefix, and checkpoints may be sharded", "[model]")
{
    const auto ref = test::testdataDir() / "gpt2-tiny";
    const auto input = core::readJsonFile((ref / "input.json").string());
    const auto expected = (ref / "expected.safetensors").string();

    SECTION("prefixed names (GPT2LMHeadModel layout)")
    {
        test::TempDir tmp;
        const auto dir = copyCase(tmp, "gpt2-tiny");
        auto weights = test::loadAll((dir / "model.safetensors").string());
        for (auto& w : weights)
            w.name = "transformer." + w.name;
        core::writeSafetensors((dir / "model.safetensors").string(), weights);
        const auto m = core::loadModel(dir.string());
        CHECK(test::referenceMismatches(expected, core::dumpReference(*m.model, input, "input.json")).empty());
    }
    SECTION("two shards with an index, opened through config.json")
    {
        test::TempDir tmp;
        const auto dir = copyCase(tmp, "gpt2-tiny");
        auto weights = test::loadAll((dir / "model.safetensors").string());
        fs::remove(dir / "model.safetensors");
        std::vector<core::OutputTensor> a, b;
        nlohmann::json index;
        for (auto& w : weights) {
            const bool first = w.name.rfind("h.0.", 0) == 0;
            index["weight_map"][w.name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
            (first ? a : b).push_back(w);
        }
        core::writeSafetensors((dir / "model-00001-of-00002.safetensors").string(), a);
        core::writeSafetensors((dir / "model-00002-of-00002.safetensors").string(), b);
        test::writeBytes(dir / "model.safetensors.index.json", index.dump());
        const auto m = core::loadModel((dir / "config.json").string());
        CHECK(test::referenceMismatches(expected, core::dumpReference(*m.model, input, "input.json")).empty());

        fs::remove(dir / "model-00002-of-00002.safetensors");
        expectError([&] { core::loadModel(dir.string()); }, core::ErrorCode::Io, {"model-00002-of-00002.safetensors"});
    }
}

TEST_CASE("bad run inputs are rejected with the input file named", "[errors][run]")
{
    const auto dir = test::testdataDir() / "txl-tiny";
    const auto m = core::loadModel(dir.string());
    expectError([&] { core::dumpReference(*m.model, nlohmann::json{{"segments", {{1, 2, 999}}}}, "in.json"); },
                core::ErrorCode::BadInput, {"in.json", "999", "outside the vocabulary"});
    expectError([&] { core::dumpReference(*m.model, nlohmann::json{{"segments", nlohmann::json::array()}}, "in.json"); },
                core::ErrorCode::BadInput, {"in.json", "no tokens"});
    expectError([&] { core::dumpReference(*m.model, nlohmann::json{{"segments", {{1}}}, {"mem_len", -3}}, "in.json"); },
                core::ErrorCode::BadInput, {"in.json", "memory length"});
    const auto g = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    std::vector<int> tooLong(17, 1);
    expectError([&] { core::dumpReference(*g.model, nlohmann::json{{"token_ids", tooLong}}, "in.json"); },
                core::ErrorCode::BadInput, {"in.json", "17 tokens", "n_positions"});
}

TEST_CASE("a tokenizer of another model is refused by its file when it gives ids the model has no embedding for",
          "[errors][run][tokenizer]")
{
    test::TempDir tmp;
    const auto dir = copyCase(tmp, "gptneox-tiny"); // 280 tokens, beside Pythia's real 50,254-token tokenizer
    fs::copy_file(test::projectDataDir() / "tokenizers" / "pythia" / "tokenizer.json", dir / "tokenizer.json");
    const auto m = core::loadModel(dir.string());
    const auto tok = core::loadModelTokenizer(m);
    CHECK(tok->source() == (dir / "tokenizer.json").string());
    expectError([&] { core::captureText(*m.model, *tok, "Hello world", {}); }, core::ErrorCode::BadInput,
                {(dir / "tokenizer.json").string(), "belongs to another model", "\"Hello\"", "only 280 tokens"});
    expectError([&] { core::captureTextPair(*m.model, *tok, "Hello", "world", {}); }, core::ErrorCode::BadInput,
                {"belongs to another model"});
}
