// The reliability campaign's findings, each as a hand-made input of the same kind: a clear error naming the file
// (and key), never a crash, a wrong result or a damaged earlier file.
#include "analysis/head_contexts.h"
#include "analysis/logit_lens.h"
#include "analysis/relpos_scan.h"
#include "analysis/sentence_analysis.h"
#include "analysis/token_predictions.h"
#include "attention/rotary_bands.h"
#include "io/pickle.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/model_loader.h"
#include "model/run_limits.h"
#include "run/reference_dump.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "tokenize/tokenizer.h"
#include "util/atomic_file.h"
#include "util/checked_size.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
using test::errorOf;

fs::path copyCase(const test::TempDir& tmp, const std::string& name)
{
    const auto dst = tmp / name;
    fs::copy(test::testdataDir() / name, dst);
    for (const auto& e : fs::directory_iterator(dst))
        fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
    return dst;
}

// A scan result of a small model, saved and loaded back as tensors to damage.
std::vector<core::OutputTensor> savedScan(const test::TempDir& tmp, std::map<std::string, std::string>& metadata)
{
    const auto m = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    core::ScanOptions opt;
    opt.segmentLen = 8;
    opt.terms = "";
    core::RelposScanner scanner(*m.model, opt);
    const std::vector<std::int32_t> ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    scanner.feed(ids);
    const auto r = scanner.finish();
    const auto path = (tmp / "scan.safetensors").string();
    r.save(path);
    metadata = core::SafetensorsFile(path).metadata();
    auto tensors = test::loadAll(path);
    // loadAll reads float32: keep the exact doubles where the file has them.
    const core::SafetensorsFile f(path);
    for (auto& t : tensors)
        if (const auto* info = f.find(t.name); info && info->dtype == core::DType::F64) {
            t.storeAs = core::DType::F64;
            t.data64 = core::readAsDouble(f, *info);
        }
    return tensors;
}
} // namespace

TEST_CASE("scan results: profiles of different shapes, non-finite sums and broken metadata are refused by name",
          "[reliability][scan]")
{
    test::TempDir tmp;
    std::map<std::string, std::string> md;
    auto tensors = savedScan(tmp, md);
    const auto damaged = (tmp / "damaged.safetensors").string();
    // A second profile with another shape (the campaign's out-of-bounds reads).
    auto twoProfiles = tensors;
    for (const auto& t : tensors)
        if (t.name == "relpos.full.sum") {
            auto other = t;
            other.name = "relpos.term_a.sum";
            other.shape[1] += 1;
            other.data64.resize(static_cast<std::size_t>(core::shapeNumel(other.shape)));
            twoProfiles.push_back(other);
        }
    auto md2 = md;
    md2["profiles"] = "full,term_a";
    core::writeSafetensors(damaged, twoProfiles, md2);
    CHECK_THAT(errorOf([&] { core::ScanResult::load(damaged); }),
               Catch::Contains("damaged.safetensors") && Catch::Contains("different shapes"));
    // Another of attnscope's files, or a model's weights, is not taken for a scan result or a head-contexts shard.
    const auto weights = (test::projectDataDir() / "reference" / "granite-tiny" / "model.safetensors").string();
    CHECK_THAT(errorOf([&] { core::ScanResult::load(weights); }),
               Catch::Contains("not an attnscope scan result") && Catch::Contains("granite-tiny/model.safetensors"));
    CHECK_THAT(errorOf([&] { core::HeadContextValues::load(damaged); }),
               Catch::Contains("not a shard of attnscope head contexts") && Catch::Contains("damaged.safetensors"));
    // A NaN sum.
    auto nan = tensors;
    for (auto& t : nan)
        if (t.name == "relpos.full.sum")
            t.data64[0] = std::nan("");
    core::writeSafetensors(damaged, nan, md);
    CHECK_THAT(errorOf([&] { core::ScanResult::load(damaged); }), Catch::Contains("relpos.full.sum") && Catch::Contains("non-finite"));
    // A finite sum no corpus could give (1e308: merged or averaged it printed as inf).
    auto huge = tensors;
    for (auto& t : huge)
        if (t.name == "relpos.full.sum")
            t.data64[0] = 1e308;
    core::writeSafetensors(damaged, huge, md);
    CHECK_THAT(errorOf([&] { core::ScanResult::load(damaged); }),
               Catch::Contains("relpos.full.sum") && Catch::Contains("impossibly large"));
    // Metadata that is not a number.
    auto md3 = md;
    md3["tokens"] = "abc";
    core::writeSafetensors(damaged, tensors, md3);
    CHECK_THAT(errorOf([&] { core::ScanResult::load(damaged); }), Catch::Contains("damaged.safetensors") && Catch::Contains("tokens"));
}

TEST_CASE("a memory length or segment length from a file or the command line is capped before anything is allocated",
          "[reliability][limits]")
{
    test::TempDir tmp;
    const auto dir = test::testdataDir() / "txl-tiny";
    const auto m = core::loadModel(dir.string());
    auto input = core::readJsonFile((dir / "input.json").string());
    input["mem_len"] = 2147483647;
    CHECK_THAT(errorOf([&] { core::dumpReference(*m.model, input, "in.json"); }),
               Catch::Contains("in.json") && Catch::Contains("mem_len") && Catch::Contains("memory length 2147483647"));
    input["mem_len"] = 8;
    input["segment_length"] = 100000000;
    input.erase("segments");
    CHECK_THAT(errorOf([&] { core::dumpReference(*m.model, input, "in.json"); }),
               Catch::Contains("in.json") && Catch::Contains("segment length 100000000"));
    // A scan asking for more memory than the machine has is refused with the amount (with a band profile, so every
    // layer's probabilities over a million keys are kept; the full attention alone is summed as it is computed).
    core::ScanOptions opt;
    opt.memLen = static_cast<int>(core::kMaxMemoryLength);
    opt.segmentLen = 1000;
    opt.terms = "1";
    const auto gpt2 = core::loadModel((test::testdataDir() / "llama-gqa").string());
    CHECK_THAT(errorOf([&] { core::RelposScanner(*gpt2.model, opt); }), Catch::Contains("would need about"));
    opt.memLen = -5;
    CHECK_THAT(errorOf([&] { core::RelposScanner(*gpt2.model, opt); }), Catch::Contains("memory length -5"));
    // A config with a memory of 2^31 - 1.
    const auto folder = copyCase(tmp, "txl-tiny");
    auto config = core::readJsonFile((folder / "config.json").string());
    config["mem_len"] = 99999999;
    std::ofstream(folder / "config.json") << config.dump();
    CHECK_THAT(errorOf([&] { core::loadModel(folder.string()); }),
               Catch::Contains("config.json") && Catch::Contains("mem_len") && Catch::Contains("99999999"));
}

TEST_CASE("JSON that cannot be read names its file: numbers out of range, folders, wrong types", "[reliability][json]")
{
    test::TempDir tmp;
    const auto folder = copyCase(tmp, "txl-tiny");
    std::ofstream(folder / "config.json") << R"({"model_type": "transfo-xl", "d_model": 1e400})";
    CHECK_THAT(errorOf([&] { core::loadModel(folder.string()); }), Catch::Contains("config.json") && Catch::Contains("1e400"));
    std::ofstream(tmp / "input.json") << R"({"token_ids": [1, 2], "mem_len": 1e400})";
    CHECK_THAT(errorOf([&] { core::readJsonFile((tmp / "input.json").string()); }), Catch::Contains("input.json"));
    // A folder where config.json should be a file.
    fs::create_directories(tmp / "weird" / "config.json");
    CHECK_THAT(errorOf([&] { core::readJsonFile((tmp / "weird" / "config.json").string()); }),
               Catch::Contains("config.json") && Catch::Contains("is a folder"));
    CHECK_THAT(errorOf([&] { core::readTextFile(tmp.path().string()); }), Catch::Contains("is a folder"));
    // A safetensors header with a number out of range.
    const std::string header = R"({"a": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    test::writeBytes(tmp / "h.safetensors", bytes + header + std::string(4, '\0'));
    CHECK_THAT(errorOf([&] { core::SafetensorsFile((tmp / "h.safetensors").string()); }), Catch::Contains("h.safetensors"));
    // tokenizer.json with a merge that is not a string pair names the key.
    std::ofstream(tmp / "tokenizer.json")
        << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", 7]]}})";
    CHECK_THAT(errorOf([&] { core::loadTokenizer((tmp / "tokenizer.json").string()); }),
               Catch::Contains("tokenizer.json") && Catch::Contains("merges"));
}

TEST_CASE("silent wrong results are refused: NaN weights, token ids past 32 bits", "[reliability][model]")
{
    test::TempDir tmp;
    const auto folder = copyCase(tmp, "gpt2-tiny");
    auto weights = test::loadAll((folder / "model.safetensors").string());
    for (auto& w : weights)
        if (w.name == "h.0.mlp.c_fc.weight")
            w.data[5] = std::numeric_limits<float>::infinity();
    core::writeSafetensors((folder / "model.safetensors").string(), weights);
    // Opening reads headers only; the damaged tensor is refused by name before the first product uses it.
    const auto damaged = core::loadModel(folder.string());
    const auto damagedInput = core::readJsonFile((folder / "input.json").string());
    CHECK_THAT(errorOf([&] { core::dumpReference(*damaged.model, damagedInput, "input.json"); }),
               Catch::Contains("h.0.mlp.c_fc.weight") && Catch::Contains("NaN or infinite") && Catch::Contains("element 5"));

    const auto m = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    nlohmann::json input{{"token_ids", {1, 4294967297ULL}}};
    CHECK_THAT(errorOf([&] { core::dumpReference(*m.model, input, "in.json"); }),
               Catch::Contains("4294967297") && Catch::Contains("in.json"));
}

TEST_CASE("checkpoints with integer buffers load, empty tensors read without touching memory", "[reliability][model]")
{
    test::TempDir tmp;
    const auto folder = copyCase(tmp, "gpt2-tiny");
    auto weights = test::loadAll((folder / "model.safetensors").string());
    const auto before = core::loadModel(folder.string()).model->info().parameterCount;
    // An empty float tensor next to the weights (written as zero elements).
    weights.push_back({"extra.empty", {0, 4}, {}});
    core::writeSafetensors((folder / "model.safetensors").string(), weights);
    CHECK(core::loadModel(folder.string()).model->info().parameterCount == before);
    CHECK(core::readAsFloat(core::SafetensorsFile((folder / "model.safetensors").string()),
                            *core::SafetensorsFile((folder / "model.safetensors").string()).find("extra.empty"))
              .empty());
    // Shapes whose product overflows 64 bits are too large, not negative.
    CHECK(core::shapeNumel({1LL << 40, 1LL << 40}) == std::numeric_limits<std::int64_t>::max());
}

TEST_CASE("results are never renamed over a device node, a FIFO or a folder", "[reliability][atomic]")
{
    test::TempDir tmp;
    const auto fifo = (tmp / "pipe").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(errorOf([&] { core::writeFileAtomically(fifo, "{}"); }),
               Catch::Contains("pipe") && Catch::Contains("not a regular file"));
    struct stat st {};
    REQUIRE(::stat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode)); // still the FIFO
    CHECK_THAT(errorOf([&] { core::writeFileAtomically("/dev/null", "{}"); }), Catch::Contains("not a regular file"));
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    CHECK_THAT(errorOf([&] { core::writeFileAtomically(tmp.path().string(), "{}"); }), Catch::Contains("is a folder"));
}

TEST_CASE("a failed write leaves the previous file intact", "[reliability][atomic]")
{
    test::TempDir tmp;
    const auto path = (tmp / "result.safetensors").string();
    core::writeSafetensors(path, {{"a", {2}, {1.0f, 2.0f}}});
    const std::string before = test::readBytes(path);
    // The file size limit stands in for a full disk: writes past it fail (EFBIG) instead of killing us.
    std::vector<float> big(100000, 3.0f);
    std::string message;
    {
        const test::FileSizeLimit limit(4096);
        message = errorOf([&] { core::writeSafetensors(path, {{"big", {100000}, big}}); });
    }
    CHECK_THAT(message, Catch::Contains("result.safetensors") && Catch::Contains("previous file is unchanged"));
    CHECK(test::readBytes(path) == before);
    // No temporary file is left behind.
    int files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path()))
        ++files;
    CHECK(files == 1);
    // An unwritable folder: a clear message, nothing created.
    CHECK_THAT(errorOf([&] { core::writeFileAtomically((tmp / "missing" / "x.json").string(), "{}"); }),
               Catch::Contains("x.json") && Catch::Contains("cannot create"));
}

TEST_CASE("one long word tokenizes in linear time (priority-queue BPE)", "[reliability][tokenizer]")
{
    // The campaign's quadratic case: a megabyte without a space (a minified blob). ctest's timeout is the bound.
    const auto tok = core::loadTokenizer((test::testdataDir() / "tokenizers" / "llama3").string());
    std::string word;
    word.reserve(1 << 20);
    for (int i = 0; word.size() < (1 << 20); ++i)
        word += static_cast<char>('a' + (i * 7 + i / 26) % 26);
    const auto tokens = tok->encode(word);
    CHECK(tokens.size() > 1000);
    CHECK(tokens.back().end == word.size());
}

TEST_CASE("mapped weights: a file replaced by a rename keeps working, a truncated one is refused, not a crash", "[reliability][mmap]")
{
    test::TempDir tmp;
    const auto folder = copyCase(tmp, "llama-tiny");
    const auto input = core::readJsonFile((folder / "input.json").string());
    const auto weights = (folder / "model.safetensors").string();
    const auto loaded = core::loadModel(folder.string());
    const auto first = core::dumpReference(*loaded.model, input, "input.json");

    // Replaced by a rename (an editor's or a download's way of writing): the open model keeps the old file's pages.
    test::writeBytes(tmp / "other.safetensors", std::string(4096, 'x'));
    fs::rename(tmp / "other.safetensors", weights);
    const auto again = core::dumpReference(*loaded.model, input, "input.json");
    REQUIRE(again.size() == first.size());
    for (std::size_t i = 0; i < first.size(); ++i)
        CHECK(again[i].data == first[i].data);

    // Truncated in place under the open model: reads past the new end would raise SIGBUS; the run is refused by name.
    const auto victim = copyCase(tmp, "llama-gqa");
    const auto victimModel = core::loadModel(victim.string());
    const auto victimInput = core::readJsonFile((victim / "input.json").string());
    core::dumpReference(*victimModel.model, victimInput, "input.json");
    REQUIRE(::truncate((victim / "model.safetensors").c_str(), 4096) == 0);
    CHECK_THAT(errorOf([&] { core::dumpReference(*victimModel.model, victimInput, "input.json"); }),
               Catch::Contains((victim / "model.safetensors").string()) && Catch::Contains("truncated"));

    // Written over in place, same size (a copy onto the open file): the map shows the new bytes, so a run's result
    // would mix two files; it is refused by name instead of reported (it was a NaN scan with exit 0).
    const auto overwritten = copyCase(tmp, "gpt2-tiny");
    const auto overwrittenModel = core::loadModel(overwritten.string());
    const auto overwrittenInput = core::readJsonFile((overwritten / "input.json").string());
    core::dumpReference(*overwrittenModel.model, overwrittenInput, "input.json");
    const auto file = (overwritten / "model.safetensors").string();
    const auto size = fs::file_size(file);
    {
        std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(size - 64));
        const std::string junk(64, '\x7f');
        f.write(junk.data(), 64);
    }
    CHECK_THAT(errorOf([&] { core::dumpReference(*overwrittenModel.model, overwrittenInput, "input.json"); }),
               Catch::Contains(file) && Catch::Contains("written over"));

    // The same with the modification time put back afterwards (touch -d, rsync -t): the change time still moved.
    const auto retimed = copyCase(tmp, "olmo2-tiny");
    const auto retimedModel = core::loadModel(retimed.string());
    const auto retimedFile = (retimed / "model.safetensors").string();
    struct stat before {};
    REQUIRE(::stat(retimedFile.c_str(), &before) == 0);
    ::usleep(20'000); // a change time the filesystem can tell apart
    {
        std::fstream f(retimedFile, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(fs::file_size(retimedFile) - 64));
        const std::string junk(64, '\x7f');
        f.write(junk.data(), 64);
    }
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    REQUIRE(::utimensat(AT_FDCWD, retimedFile.c_str(), times, 0) == 0);
    const auto retimedInput = core::readJsonFile((retimed / "input.json").string());
    CHECK_THAT(errorOf([&] { core::dumpReference(*retimedModel.model, retimedInput, "input.json"); }),
               Catch::Contains(retimedFile) && Catch::Contains("written over"));
}

TEST_CASE("a FIFO named like a model file is refused at once, not read forever", "[reliability][mmap]")
{
    test::TempDir tmp;
    fs::create_directories(tmp / "m");
    fs::copy_file(test::testdataDir() / "llama-tiny" / "config.json", tmp / "m" / "config.json");
    REQUIRE(::mkfifo((tmp / "m" / "model.safetensors").c_str(), 0600) == 0);
    CHECK_THAT(errorOf([&] { core::loadModel((tmp / "m").string()); }),
               Catch::Contains("model.safetensors") && Catch::Contains("not a regular file"));
    // The same for config.json, read as text (info would block on it forever).
    fs::remove(tmp / "m" / "config.json");
    REQUIRE(::mkfifo((tmp / "m" / "config.json").c_str(), 0600) == 0);
    CHECK_THAT(errorOf([&] { core::loadModel((tmp / "m").string()); }),
               Catch::Contains("config.json") && Catch::Contains("not a regular file"));
}

TEST_CASE("a rotary model whose heads have fewer pairs than bands gets fewer bands, not an abort", "[reliability][bands]")
{
    // Heads of size 2 (one rotation pair): the views ask for three equal bands by default.
    test::TempDir tmp;
    const int hidden = 8, vocab = 12, inter = 16;
    nlohmann::json cfg = {{"model_type", "llama"},        {"hidden_size", hidden},     {"intermediate_size", inter},
                          {"num_attention_heads", 4},     {"num_key_value_heads", 4},  {"num_hidden_layers", 1},
                          {"rms_norm_eps", 1e-5},         {"rope_theta", 10000.0},     {"max_position_embeddings", 64},
                          {"tie_word_embeddings", true},  {"vocab_size", vocab}};
    std::ofstream(tmp / "config.json") << cfg.dump();
    std::vector<core::OutputTensor> w;
    std::uint32_t seed = 1;
    auto tensor = [&](const std::string& name, core::Shape shape, bool ones = false) {
        core::OutputTensor t{name, shape, std::vector<float>(static_cast<std::size_t>(core::shapeNumel(shape)))};
        for (auto& v : t.data)
            v = ones ? 1.0f : static_cast<float>((seed = seed * 1103515245u + 12345u) >> 16 & 0xFF) / 128.0f - 1.0f;
        w.push_back(t);
    };
    tensor("model.embed_tokens.weight", {vocab, hidden});
    tensor("model.norm.weight", {hidden}, true);
    tensor("model.layers.0.input_layernorm.weight", {hidden}, true);
    tensor("model.layers.0.post_attention_layernorm.weight", {hidden}, true);
    for (const char* p : {"q", "k", "v", "o"})
        tensor(std::string("model.layers.0.self_attn.") + p + "_proj.weight", {hidden, hidden});
    tensor("model.layers.0.mlp.gate_proj.weight", {inter, hidden});
    tensor("model.layers.0.mlp.up_proj.weight", {inter, hidden});
    tensor("model.layers.0.mlp.down_proj.weight", {hidden, inter});
    core::writeSafetensors((tmp / "model.safetensors").string(), w);

    const auto m = core::loadModel(tmp.path().string());
    REQUIRE(m.model->info().rotaryFrequencies.size() == 1);
    const auto split = core::BandSplit::equal(1, 3);
    CHECK(split.count() == 1);
    // A scan with the default bands, as the Relative Position dock and --view bands run it.
    core::ScanOptions opt;
    opt.segmentLen = 6;
    opt.terms = "1";
    core::RelposScanner scanner(*m.model, opt);
    const std::vector<std::int32_t> ids{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0};
    scanner.feed(ids);
    const auto r = scanner.finish();
    CHECK(r.tokens == 12);
    CHECK_THROWS_AS(core::BandSplit::equal(0, 3), core::Error);
}

TEST_CASE("deeply nested JSON is refused by name, never a stack overflow", "[reliability][json]")
{
    // 100,000 nested lists in 200 kB: the readers, their messages and the scan tools once walked such values recursively.
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    test::TempDir tmp;
    auto write = [&](const std::string& name, const std::string& text) {
        test::writeBytes(tmp / name, text);
        return (tmp / name).string();
    };
    const auto config = write("config.json", R"({"model_type": "llama", "rope_scaling": )" + deep + "}");
    CHECK_THAT(errorOf([&] { core::readModelConfig(config); }), Catch::Contains("config.json") && Catch::Contains("nest"));
    const auto tokenizer = write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": )" + deep + "}}");
    CHECK_THAT(errorOf([&] { core::loadTokenizer(tokenizer); }), Catch::Contains("tokenizer.json") && Catch::Contains("nest"));
    const auto input = write("input.json", R"({"token_ids": )" + deep + "}");
    CHECK_THAT(errorOf([&] { core::readJsonFile(input); }), Catch::Contains("input.json") && Catch::Contains("128 levels"));
    // A safetensors header of the same kind, and a scan result (read through the same header reader).
    std::string header = R"({"a": {"dtype": "F32", "shape": )" + deep + R"(, "data_offsets": [0, 4]}})";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string file(8, '\0');
    const std::uint64_t len = header.size();
    std::memcpy(file.data(), &len, 8);
    file += header + std::string(4, '\0');
    const auto weights = write("model.safetensors", file);
    CHECK_THAT(errorOf([&] { core::SafetensorsFile f(weights); }),
               Catch::Contains("model.safetensors") && Catch::Contains("header") && Catch::Contains("nest"));
    // Strings holding brackets are not nesting, and library error codes stay out of messages.
    const auto brackets = write("brackets.json", "{\"s\": \"" + std::string(1000, '[') + "\"}");
    CHECK(core::readJsonFile(brackets)["s"].get<std::string>().size() == 1000);
    const auto huge = write("huge.json", R"({"x": 1e400})");
    CHECK_THAT(errorOf([&] { core::readJsonFile(huge); }),
               Catch::Contains("out of range") && !Catch::Contains("json.exception"));
}

TEST_CASE("config numbers that would make NaN attention are refused by name", "[reliability][config]")
{
    test::TempDir tmp;
    for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
             {"rope_theta", 1e-300}, {"rope_theta", 0}, {"rms_norm_eps", 1e-300},
             {"rope_scaling", {{"rope_type", "linear"}, {"factor", 1e-300}}}, {"num_hidden_layers", 100000000}}) {
        INFO(key << " = " << value.dump());
        const auto folder = copyCase(tmp, "llama-tiny");
        auto cfg = core::readJsonFile((folder / "config.json").string());
        cfg[key] = value;
        std::ofstream(folder / "config.json") << cfg.dump();
        CHECK_THAT(errorOf([&] { core::loadModel(folder.string()); }),
                   Catch::Contains("config.json") && Catch::Contains(key));
        fs::remove_all(folder);
    }
}

TEST_CASE("normalizers that grow a text without bound are refused, not run to gigabytes", "[reliability][tokenizer]")
{
    test::TempDir tmp;
    nlohmann::json steps = nlohmann::json::array();
    for (int i = 0; i < 24; ++i) // each doubles every "a": 23 bytes would become 386 million characters
        steps.push_back({{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "aa"}});
    nlohmann::json tj;
    tj["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
    tj["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", nlohmann::json::array()}};
    test::writeBytes(tmp / "tokenizer.json", tj.dump());
    const auto tok = core::loadTokenizer((tmp / "tokenizer.json").string());
    CHECK_THAT(errorOf([&] { tok->encode(std::string(23, 'a')); }),
               Catch::Contains("tokenizer.json") && Catch::Contains("Replace"));
    // One step whose replacement is huge is refused before it builds its output: 60,000 "b" for every "l" of a
    // 20,000-character text would be 1.2 billion characters (gigabytes) in one step.
    nlohmann::json big;
    big["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", "l"}}}, {"content", std::string(60000, 'b')}};
    big["model"] = {{"type", "BPE"}, {"vocab", {{"b", 0}, {"l", 1}}}, {"merges", nlohmann::json::array()}};
    fs::create_directories(tmp / "big");
    test::writeBytes(tmp / "big" / "tokenizer.json", big.dump());
    const auto wide = core::loadTokenizer((tmp / "big" / "tokenizer.json").string());
    CHECK_THAT(errorOf([&] { wide->encode(std::string(20000, 'l')); }),
               Catch::Contains("big/tokenizer.json") && Catch::Contains("Replace"));
    // A normalizer nested past the JSON depth limit is refused when the file is read.
    std::string nested = R"({"type": "Lowercase"})";
    for (int i = 0; i < 200; ++i)
        nested = R"({"type": "Sequence", "normalizers": [)" + nested + "]}";
    test::writeBytes(tmp / "deep.json", R"({"normalizer": )" + nested + R"(, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})");
    CHECK_THAT(errorOf([&] { core::loadTokenizer((tmp / "deep.json").string()); }), Catch::Contains("deep.json"));
}

TEST_CASE("temporary files of a writer killed mid-write are cleaned up by the next write", "[reliability][atomic]")
{
    test::TempDir tmp;
    const auto path = tmp / "result.json";
    // A process id that cannot be running (above the kernel's pid limit), and one that is: this test's own parent.
    test::writeBytes(tmp / "result.json.tmp-99999999-0", "half a file");
    const std::string alive = "result.json.tmp-" + std::to_string(::getppid()) + "-3";
    test::writeBytes(tmp / alive, "someone else is writing");
    test::writeBytes(tmp / "result.json.tmp-notes.txt", "not ours");
    core::writeFileAtomically(path.string(), "{}");
    CHECK(test::readBytes(path) == "{}");
    CHECK_FALSE(fs::exists(tmp / "result.json.tmp-99999999-0"));
    CHECK(fs::exists(tmp / alive));
    CHECK(fs::exists(tmp / "result.json.tmp-notes.txt"));
}

TEST_CASE("a post-processor template that expands to millions of ids is refused at load, quickly", "[reliability][tokenizer]")
{
    // 2,000 items naming one special token of 2,000 ids: 4 million ids from a small file (the campaign's 20,000 x
    // 20,000 took a minute and 2 GB).
    test::TempDir tmp;
    nlohmann::json tj;
    tj["model"] = {{"type", "BPE"}, {"vocab", {{"a", 0}, {"<s>", 1}}}, {"merges", nlohmann::json::array()}};
    nlohmann::json single = nlohmann::json::array();
    for (int i = 0; i < 2000; ++i)
        single.push_back({{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}});
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    tj["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", single},
                            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", std::vector<int>(2000, 1)}, {"tokens", std::vector<std::string>(2000, "<s>")}}}}}};
    test::writeBytes(tmp / "tokenizer.json", tj.dump());
    CHECK_THAT(errorOf([&] { core::loadTokenizer((tmp / "tokenizer.json").string()); }),
               Catch::Contains("tokenizer.json") && Catch::Contains("special token ids"));
}

TEST_CASE("finite but huge weights end in a message naming the file, not NaN everywhere", "[reliability][nonfinite]")
{
    test::TempDir tmp;
    const auto src = test::testdataDir() / "gpt2-tiny";
    std::filesystem::copy_file(src / "config.json", tmp / "config.json");
    auto tensors = test::loadAll((src / "model.safetensors").string());
    for (auto& t : tensors)
        if (t.name.find("h.0.attn.c_attn.weight") != std::string::npos)
            std::fill(t.data.begin(), t.data.end(), 1e30f); // finite in float32, but its products are not
    core::writeSafetensors((tmp / "model.safetensors").string(), tensors);
    const auto loaded = core::loadModel(tmp.path().string());
    struct Quiet final : core::AttentionObserver {
        void onLayer(const core::LayerView&) override {}
    } quiet;
    const std::vector<std::int32_t> ids = {1, 2, 3, 4};
    CHECK_THROWS_WITH(loaded.model->run({ids}, {}, quiet),
                      Catch::Contains("NaN or infinity") && Catch::Contains("model.safetensors"));
}

namespace {
// ATTNSCOPE_MEMORY_LIMIT for one scope: how the refusals are reached without filling the machine.
class MemoryLimit {
public:
    explicit MemoryLimit(const char* value) { ::setenv("ATTNSCOPE_MEMORY_LIMIT", value, 1); }
    ~MemoryLimit() { ::unsetenv("ATTNSCOPE_MEMORY_LIMIT"); }
    MemoryLimit(const MemoryLimit&) = delete;
    MemoryLimit& operator=(const MemoryLimit&) = delete;
};
} // namespace

TEST_CASE("memory a text or a file sizes is estimated before it is allocated, and refused with both figures",
          "[reliability][memory]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    const auto& model = *loaded.model;
    std::vector<core::Token> tokens;
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 16; ++i) {
        ids.push_back(3 + i % 40);
        tokens.push_back({ids.back(), "w", static_cast<std::size_t>(2 * i), static_cast<std::size_t>(2 * i + 1)});
    }
    const auto capture = core::captureText(model, tokens, {});
    const std::vector<int> last = {15};
    // Unlimited, each analysis runs (so the refusals below are the estimate's, not another error's).
    CHECK_NOTHROW(core::topPredictions(model, ids, {}, last, 3));
    CHECK_NOTHROW(core::logitLens(model, *capture, 0, 3));
    CHECK_NOTHROW(core::sentenceSuppression(model, tokens));
    core::HeadContextOptions o;
    o.window = 8;
    auto corpus = tokens; // head contexts read a corpus in windows: 48 tokens here
    for (int i = 16; i < 48; ++i)
        corpus.push_back({3 + i % 40, "w", static_cast<std::size_t>(2 * i), static_cast<std::size_t>(2 * i + 1)});
    CHECK_NOTHROW(core::headContexts(model, corpus, o));

    MemoryLimit limit("1K"); // half of it, 512 bytes, is what a request may take
    auto refused = [](const std::string& message, const char* what) {
        INFO(message);
        CHECK(message.find(what) != std::string::npos);
        CHECK(message.find("would need about") != std::string::npos);
        CHECK(message.find("more than half of the 1 KiB available") != std::string::npos);
        CHECK(message.find("gpt2-tiny") != std::string::npos); // the model it was asked of (#59 item 16)
    };
    refused(errorOf([&] { core::topPredictions(model, ids, {}, last, 3); }), "logits of 16 tokens over a vocabulary of 50");
    refused(errorOf([&] { core::logitLens(model, *capture, 0, 3); }), "logit lens over 16 tokens");
    refused(errorOf([&] { core::sentenceSuppression(model, tokens); }), "attention suppression over 16 tokens");
    refused(errorOf([&] { core::headContexts(model, corpus, o); }), "head contexts of 2 x 4 heads over 48 tokens");
}

TEST_CASE("a pickle whose values would pass the memory available is refused as they are made", "[reliability][memory][pytorch]")
{
    // PROTO 2, MARK, 200,000 EMPTY_LISTs, LIST, STOP: 200 kB of opcodes making 200,000 values of ~170 bytes each.
    std::vector<std::uint8_t> pickle = {0x80, 2, '('};
    pickle.insert(pickle.end(), 200000, ']');
    pickle.push_back('l');
    pickle.push_back('.');
    {
        core::PickleDocument doc;
        core::unpickle(doc, pickle.data(), pickle.size(), "lists.pkl");
        CHECK(doc.root->items.size() == 200000);
    }
    MemoryLimit limit("8M");
    core::PickleDocument doc;
    const auto message = errorOf([&] { core::unpickle(doc, pickle.data(), pickle.size(), "lists.pkl"); });
    CHECK(message.rfind("lists.pkl: unpickling 200005 bytes", 0) == 0);
    CHECK(message.find("more than half of the 8 MiB available") != std::string::npos);
}

TEST_CASE("config messages say what the file gave: tiny numbers, the bound passed, the keys a width came from, "
          "unknown layer kinds and kind-less scaling", "[reliability][config]")
{
    auto parse = [](nlohmann::json cfg) {
        return errorOf([&] { core::parseModelConfig(cfg, "config.json"); });
    };
    const auto llama = core::readJsonFile((test::testdataDir() / "llama-tiny" / "config.json").string());
    auto with = [&](const char* key, nlohmann::json value) {
        auto c = llama;
        c[key] = std::move(value);
        return c;
    };
    // 1e-35 was printed as "0.000000".
    CHECK_THAT(parse(with("rms_norm_eps", 1e-35)), Catch::Contains("got 1e-35"));
    // Too large is reported against the maximum, too small against the minimum.
    CHECK_THAT(parse(with("hidden_size", 1000000000000LL)), Catch::Contains("above the maximum 100000000"));
    CHECK_THAT(parse(with("hidden_size", 0)), Catch::Contains("below the minimum 1"));
    // An odd head width the file never gave as head_dim is named by the keys it came from.
    auto odd = with("hidden_size", 36);
    odd.erase("head_dim");
    CHECK_THAT(parse(odd), Catch::Contains("'hidden_size'") && Catch::Contains("36 / num_attention_heads 4 gives heads of 9") &&
                               !Catch::Contains("'head_dim'"));
    CHECK_THAT(parse(with("head_dim", 9)), Catch::Contains("'head_dim'") && Catch::Contains("must be even"));
    // A scaling factor without a kind was dropped silently.
    CHECK_THAT(parse(with("rope_scaling", {{"factor", 8.0}})), Catch::Contains("'rope_scaling'") && Catch::Contains("no rope_type"));
    CHECK(parse(with("rope_scaling", nlohmann::json::object())) == "(no error)");
    // Gemma's layer kinds: an unknown one was read as full attention.
    auto gemma = core::readJsonFile((test::testdataDir() / "gemma2-tiny" / "config.json").string());
    CHECK(parse(gemma) == "(no error)");
    gemma["layer_types"][1] = "chunked_attention";
    CHECK_THAT(parse(gemma), Catch::Contains("'layer_types'") && Catch::Contains("layer 2 is \"chunked_attention\""));
    gemma["layer_types"] = {"sliding_attention"};
    CHECK_THAT(parse(gemma), Catch::Contains("for each of the 3 layers"));
}

TEST_CASE("sizes from files saturate instead of wrapping, in counts and in messages", "[reliability][sizes]")
{
    CHECK(core::productOrMax(1ull << 40, 1ull << 30) == core::kSaturatedSize);
    CHECK(core::productOrMax(3, 5) == 15);
    CHECK(core::sumOrMax(std::int64_t{1} << 62, std::int64_t{3} << 61) == std::numeric_limits<std::int64_t>::max());
    CHECK(core::sizeText(core::kSaturatedSize) == "more than 18446744073709551614");
    // A safetensors header whose shape times its element size passes 2^64: the message gives no wrapped number.
    test::TempDir tmp;
    const std::string header = R"({"w":{"dtype":"F32","shape":[4611686018427387904,2],"data_offsets":[0,8]}})";
    std::string file(8, '\0');
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i)
        file[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    file += header + std::string(8, '\0');
    test::writeBytes(tmp / "model.safetensors", file);
    const auto message = errorOf([&] { core::SafetensorsFile f((tmp / "model.safetensors").string()); });
    INFO(message);
    CHECK((message.find("is too large") != std::string::npos || message.find("needs more than") != std::string::npos));
    CHECK(message.find("needs 0 bytes") == std::string::npos);
}
