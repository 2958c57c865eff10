// PyTorch checkpoints (tests/data/pytorch, made with Debian's PyTorch from the shared reference cases; see its README):
// every reference case opens from its torch.save file and matches the original implementation's outputs; dtypes,
// strides, shared storages and pickled modules read as stored; every hostile file is refused by name.
#include "io/checkpoint.h"
#include "io/pickle.h"
#include "io/pytorch_file.h"
#include "io/safetensors.h"
#include "analysis/token_predictions.h"
#include "model/model_loader.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "run/reference_dump.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

fs::path pytorchData() { return test::projectDataDir() / "pytorch"; }

// The shared reference case a tests/data/pytorch folder was made from ("gpt2-tiny-legacy" -> "gpt2-tiny").
std::string referenceOf(std::string name)
{
    for (const char* suffix : {"-legacy", "-module"})
        if (name.size() > std::string(suffix).size() && name.substr(name.size() - std::string(suffix).size()) == suffix)
            name.resize(name.size() - std::string(suffix).size());
    return name;
}

// A Hugging Face folder as a user has it: config.json and the PyTorch files only (no safetensors).
fs::path hubFolder(const test::TempDir& tmp, const fs::path& source)
{
    const auto dir = tmp / source.filename().string();
    fs::create_directories(dir);
    for (const auto& entry : fs::directory_iterator(source))
        fs::copy_file(entry.path(), dir / entry.path().filename());
    fs::copy_file(test::testdataDir() / referenceOf(source.filename().string()) / "config.json", dir / "config.json");
    return dir;
}

core::Error errorOf(const std::function<void()>& f)
{
    try {
        f();
    } catch (const core::Error& e) {
        return e;
    }
    FAIL("no error was thrown");
    throw std::logic_error("unreachable");
}

std::vector<float> floats(const core::WeightView& v)
{
    std::vector<float> out(static_cast<std::size_t>(v.numel()));
    for (std::int64_t r = 0; r < v.rows(); ++r)
        v.decodeRow(r, 0, v.cols(), out.data() + r * v.cols());
    return out;
}

} // namespace

TEST_CASE("every reference case opens from a PyTorch checkpoint and matches the original implementation",
          "[pytorch][reference]")
{
    std::set<std::string> supported;
    for (const auto& c : test::referenceCases())
        supported.insert(c.filename().string());
    int cases = 0; // folders checked, each in a section of its own
    for (const auto& entry : fs::directory_iterator(pytorchData())) {
        const std::string name = entry.path().filename().string();
        const std::string reference = referenceOf(name);
        if (!entry.is_directory() || !supported.count(reference) || name == "txl-adaptive-module")
            continue; // txl-adaptive-module: its per-layer r biases are not an option of the original code (below)
        ++cases;
        DYNAMIC_SECTION(name)
        {
            test::TempDir tmp;
            const auto dir = hubFolder(tmp, entry.path());
            // A folder opens; so does the checkpoint's own path when it is not the standard name.
            std::string spec = dir.string();
            for (const auto& f : fs::directory_iterator(dir))
                if (f.path().extension() == ".pt")
                    spec = f.path().string();
            const auto loaded = core::loadModel(spec);
            const auto input = core::readJsonFile((test::testdataDir() / reference / "input.json").string());
            const auto out = core::dumpReference(*loaded.model, input, "input.json");
            std::vector<std::string> report;
            for (const auto& p : test::referenceMismatches(
                     (test::testdataDir() / reference / "expected.safetensors").string(), out, &report))
                FAIL_CHECK(p);
            CHECK(report.size() >= 4); // tensors compared
        }
    }
    CHECK(cases >= 15);
}

TEST_CASE("PyTorch tensors equal the safetensors they were saved from: names, shapes, types, values",
          "[pytorch]")
{
    const std::pair<const char*, const char*> cases[] = {
        {"gpt2-tiny/pytorch_model.bin", "gpt2-tiny/model.safetensors"},
        {"gpt2-tiny-legacy/pytorch_model.bin", "gpt2-tiny/model.safetensors"},
        {"llama-tiny/pytorch_model.bin", "llama-tiny/model.safetensors"},
        {"bert-tiny/pytorch_model.bin", "bert-tiny/model.prefixed.safetensors"},
        {"roberta-tiny/model.pt", "roberta-tiny/model.prefixed.safetensors"}};
    for (const auto& [torchFile, safetensors] : cases) {
        DYNAMIC_SECTION(torchFile)
        {
            const auto pt = core::Checkpoint::openPytorch((pytorchData() / torchFile).string());
            const auto st = core::Checkpoint::openFile((test::testdataDir() / safetensors).string());
            for (const auto& name : st->names()) {
                INFO(name);
                REQUIRE(pt->has(name));
                CHECK(pt->shape(name) == st->shape(name));
                CHECK(pt->storageType(name) == st->storageType(name));
                CHECK(floats(pt->get(name)) == floats(st->get(name)));
            }
        }
    }
    // Tied weights share one storage: the output layer is the embedding's bytes, not a copy.
    const auto gpt2 = core::Checkpoint::openPytorch((pytorchData() / "gpt2-tiny/pytorch_model.bin").string());
    CHECK(gpt2->get("lm_head.weight").bytes == gpt2->get("wte.weight").bytes);
    // q, k and v saved as views into one storage: three offsets into the same bytes.
    const auto llama = core::Checkpoint::openPytorch((pytorchData() / "llama-tiny/pytorch_model.bin").string());
    const auto q = llama->get("model.layers.0.self_attn.q_proj.weight");
    const auto k = llama->get("model.layers.0.self_attn.k_proj.weight");
    CHECK(k.bytes == q.bytes + q.numel() * 4);
    // Sharded bf16 files with their index.
    const auto sharded = core::Checkpoint::openFolder((pytorchData() / "llama-bf16-sharded").string());
    const auto reference = core::Checkpoint::openFolder((test::testdataDir() / "llama-bf16-sharded").string());
    CHECK(sharded->names() == reference->names());
    for (const auto& name : reference->names()) {
        CHECK(sharded->storageType(name) == "BF16");
        CHECK(floats(sharded->get(name)) == floats(reference->get(name)));
    }
}

TEST_CASE("every dtype, a 0-d tensor and a strided view read as torch.save wrote them (zip and legacy)", "[pytorch]")
{
    for (const char* file : {"dtypes.pt", "dtypes-legacy.pt"}) {
        DYNAMIC_SECTION(file)
        {
            const core::PytorchFile pt((pytorchData() / "dtypes" / file).string());
            const auto tensors = pt.stateDict();
            std::map<std::string, core::TorchTensor> byName;
            for (const auto& t : tensors)
                byName[t.name] = t;
            REQUIRE(byName.size() == 12);
            // The generator's rule (README): element i of n = 6 is (i - 3) * 0.5 for floats, i - 3 for signed
            // integers, i for uint8, i % 2 == 1 for bool; shape [2, 3].
            const std::pair<const char*, core::DType> kinds[] = {
                {"f32", core::DType::F32}, {"f16", core::DType::F16}, {"bf16", core::DType::BF16},
                {"f64", core::DType::F64}, {"i64", core::DType::I64}, {"i32", core::DType::I32},
                {"i16", core::DType::I16}, {"i8", core::DType::I8},   {"u8", core::DType::U8},
                {"bool", core::DType::Bool}};
            for (const auto& [name, dtype] : kinds) {
                INFO(name);
                const auto& t = byName.at(name);
                CHECK(t.dtype == dtype);
                CHECK(t.shape == core::Shape{2, 3});
                REQUIRE(t.contiguous());
                for (int i = 0; i < 6; ++i) {
                    const std::uint8_t* p = t.firstByte() + i * static_cast<int>(core::dtypeSize(dtype));
                    double v = 0;
                    switch (dtype) {
                    case core::DType::F32: { float f; std::memcpy(&f, p, 4); v = f; break; }
                    case core::DType::F64: std::memcpy(&v, p, 8); break;
                    case core::DType::F16: { std::uint16_t h; std::memcpy(&h, p, 2); v = core::halfToFloat(h); break; }
                    case core::DType::BF16: { std::uint16_t h; std::memcpy(&h, p, 2); v = core::bfloat16ToFloat(h); break; }
                    case core::DType::I64: { std::int64_t x; std::memcpy(&x, p, 8); v = static_cast<double>(x); break; }
                    case core::DType::I32: { std::int32_t x; std::memcpy(&x, p, 4); v = x; break; }
                    case core::DType::I16: { std::int16_t x; std::memcpy(&x, p, 2); v = x; break; }
                    case core::DType::I8: v = static_cast<std::int8_t>(*p); break;
                    case core::DType::U8:
                    case core::DType::Bool: v = *p; break;
                    default: break;
                    }
                    const bool isFloat = dtype == core::DType::F32 || dtype == core::DType::F64 ||
                                         dtype == core::DType::F16 || dtype == core::DType::BF16;
                    const double expected = isFloat ? (i - 3) * 0.5
                                            : dtype == core::DType::U8   ? i
                                            : dtype == core::DType::Bool ? i % 2
                                                                         : i - 3;
                    CHECK(v == expected);
                }
            }
            CHECK(byName.at("scalar").shape.empty());
            float scalar;
            std::memcpy(&scalar, byName.at("scalar").firstByte(), 4);
            CHECK(scalar == 2.5f);
            // [4, 6] of (i - 12) * 0.5, viewed [::2, 1::2]: offset 1, strides (12, 2), shape [2, 3].
            const auto& s = byName.at("strided");
            CHECK(s.offset == 1);
            CHECK(s.strides == std::vector<std::int64_t>{12, 2});
            CHECK_FALSE(s.contiguous());
            for (int r = 0; r < 2; ++r)
                for (int c = 0; c < 3; ++c) {
                    float f;
                    std::memcpy(&f, s.storage + 4 * (s.offset + r * 12 + c * 2), 4);
                    CHECK(f == ((2 * r) * 6 + 1 + 2 * c - 12) * 0.5f);
                }
        }
    }
    // A non-contiguous weight becomes a contiguous one in the checkpoint, values in row-major order.
    const auto c = core::Checkpoint::openPytorch((pytorchData() / "dtypes/dtypes.pt").string());
    CHECK(floats(c->get("strided")) == std::vector<float>{-5.5f, -4.5f, -3.5f, 0.5f, 1.5f, 2.5f});
}

TEST_CASE("a pickled torch.nn.Module (the original Transformer-XL release) is walked, never run", "[pytorch]")
{
    for (const char* name : {"txl-tiny", "txl-adaptive"}) {
        DYNAMIC_SECTION(name)
        {
            const auto module = core::Checkpoint::openPytorch(
                (pytorchData() / (std::string(name) + "-module") / "model.pt").string());
            const auto hf = core::Checkpoint::openFile((test::testdataDir() / name / "model.safetensors").string());
            int compared = 0;
            for (const auto& hfName : hf->names()) {
                const std::string own = hfName.substr(std::string("transformer.").size());
                if (own.find("dec_attn.r_w_bias") != std::string::npos || own.find("dec_attn.r_r_bias") != std::string::npos)
                    continue; // per-layer biases: not an option of the original code (the module has one pair)
                INFO(own);
                REQUIRE(module->has(own));
                CHECK(floats(module->get(own)) == floats(hf->get(hfName)));
                ++compared;
            }
            CHECK(compared > 10);
            CHECK(module->has("r_w_bias"));
            CHECK(module->has("crit.out_layers.0.bias")); // the adaptive softmax, a child module
        }
    }
}

TEST_CASE("folders: safetensors first, then pytorch_model.bin, then a lone checkpoint, a bare .bin needs its config",
          "[pytorch]")
{
    test::TempDir tmp;
    const auto dir = hubFolder(tmp, pytorchData() / "gpt2-tiny");
    CHECK(core::Checkpoint::openFolder(dir.string())->describeStorage().find("PyTorch") != std::string::npos);
    fs::copy_file(test::testdataDir() / "gpt2-tiny" / "model.safetensors", dir / "model.safetensors");
    CHECK(core::Checkpoint::openFolder(dir.string())->describeStorage().find("PyTorch") == std::string::npos);

    const auto alone = tmp / "alone";
    fs::create_directories(alone);
    fs::copy_file(pytorchData() / "gpt2-tiny" / "pytorch_model.bin", alone / "weights.bin");
    auto e = errorOf([&] { core::loadModel((alone / "weights.bin").string()); });
    CHECK(e.message().find("config.json") != std::string::npos);
    CHECK(e.file() == (alone / "weights.bin").string());
    fs::copy_file(test::testdataDir() / "gpt2-tiny" / "config.json", alone / "config.json");
    CHECK(core::loadModel(alone.string()).model->info().layers > 0);
    fs::copy_file(alone / "weights.bin", alone / "other.pt");
    e = errorOf([&] { core::loadModel(alone.string()); });
    CHECK(e.message().find("several") != std::string::npos);
}

TEST_CASE("hostile pickles and archives are refused by name without running anything", "[pytorch][hostile]")
{
    // File -> the error code and a phrase the message must hold (the global, opcode or problem by name).
    const std::map<std::string, std::pair<core::ErrorCode, std::string>> expected = {
        {"os_system.pkl", {core::ErrorCode::Unsafe, "os.system"}},
        {"builtins_eval.pkl", {core::ErrorCode::Unsafe, "builtins.eval"}},
        {"stack_global_exec.pkl", {core::ErrorCode::Unsafe, "builtins.exec"}},
        {"subprocess_in_state_dict.pkl", {core::ErrorCode::Unsafe, "subprocess.check_output"}},
        {"unknown_class_reduce.pkl", {core::ErrorCode::Unsafe, "mymodule.EvilThing"}},
        {"inst_opcode.pkl", {core::ErrorCode::Unsafe, "INST opcode would call os.system"}},
        {"ext_opcode.pkl", {core::ErrorCode::Unsafe, "EXT"}},
        {"setitem_on_list.pkl", {core::ErrorCode::CorruptFile, "SETITEM on a list"}},
        {"memo_get_missing.pkl", {core::ErrorCode::CorruptFile, "never stored"}},
        {"truncated_pickle.pkl", {core::ErrorCode::CorruptFile, "truncated"}},
        {"stack_underflow.pkl", {core::ErrorCode::CorruptFile, "MARK"}},
        {"huge_string_length.pkl", {core::ErrorCode::CorruptFile, "runs past the end"}},
        {"storage_past_entry.pt", {core::ErrorCode::CorruptFile, "storage of 1000000 elements"}},
        {"view_past_storage.pt", {core::ErrorCode::CorruptFile, "reaches element 15 of a storage of 12"}},
        {"offset_past_storage.pt", {core::ErrorCode::CorruptFile, "offset 10"}},
        {"negative_stride.pt", {core::ErrorCode::CorruptFile, "stride -4"}},
        {"overlapping_view.pt", {core::ErrorCode::CorruptFile, "overlap"}},
        {"extent_wraps.pt", {core::ErrorCode::CorruptFile, "reaches past any storage"}},
        {"shared_module_paths.pkl", {core::ErrorCode::CorruptFile, "paths"}},
        {"missing_storage.pt", {core::ErrorCode::CorruptFile, "storage '7'"}},
        {"unknown_storage_class.pt", {core::ErrorCode::UnsupportedDtype, "torch.EvilStorage"}},
        {"compressed_entry.pt", {core::ErrorCode::CorruptFile, "compressed"}},
        {"zip_bomb.pt", {core::ErrorCode::CorruptFile, "compressed"}},
        {"truncated_archive.bin", {core::ErrorCode::CorruptFile, "ZIP"}},
        {"truncated_legacy.bin", {core::ErrorCode::CorruptFile, "truncated"}}};
    std::set<std::string> seen;
    for (const auto& entry : fs::directory_iterator(pytorchData() / "hostile")) {
        const std::string name = entry.path().filename().string();
        seen.insert(name);
        DYNAMIC_SECTION(name)
        {
            REQUIRE(expected.count(name));
            const auto e = errorOf([&] { core::PytorchFile(entry.path().string()).stateDict(); });
            INFO(e.what());
            CHECK(e.code() == expected.at(name).first);
            CHECK(std::string(e.what()).find(expected.at(name).second) != std::string::npos);
            CHECK(std::string(e.what()).find(entry.path().string()) != std::string::npos);
        }
    }
    CHECK(seen.size() == expected.size());
}

TEST_CASE("a non-contiguous view listed under 30,000 names is gathered once", "[pytorch][hostile]")
{
    // (make_pytorch_data.py) A transposed 3 x 4 view of 12 floats, one memoised tensor under the names w0 .. w29999.
    const auto c = core::Checkpoint::openPytorch((pytorchData() / "view-many-names.pt").string());
    REQUIRE(c->names().size() == 30000);
    const auto a = c->get("w0"), b = c->get("w29999");
    CHECK(a.bytes == b.bytes); // one copy, not one per name
    const auto values = floats(a);
    REQUIRE(values.size() == 12);
    CHECK(values[0] == 0.0f);
    CHECK(values[1] == 4.0f); // row 0 of the transposed view: storage elements 0, 4, 8
    CHECK(values[3] == 1.0f);
}

TEST_CASE("a million nested lists are refused as they are built, a cycle does not hang", "[pytorch][hostile]")
{
    test::TempDir tmp;
    // 1,000,000 x EMPTY_LIST, then APPEND each into the one below it: 2 MB of pickle.
    std::string deep = "\x80\x02";
    deep += std::string(1000000, ']');
    deep += std::string(999999, 'a');
    deep += '.';
    const auto path = (tmp / "deep.pkl").string();
    std::ofstream(path, std::ios::binary) << deep;
    const auto e = errorOf([&] { core::PytorchFile{path}; });
    CHECK(e.code() == core::ErrorCode::CorruptFile);
    CHECK(e.message().find("nested more than 1000 deep") != std::string::npos);

    // A list inside itself (EMPTY_LIST, MEMOIZE, BINGET 0, APPEND): read, and then no state dict.
    const std::string cycle = std::string("\x80\x04]\x94h\x00" "a.", 8);
    const auto cyclePath = (tmp / "cycle.pkl").string();
    std::ofstream(cyclePath, std::ios::binary) << cycle;
    const core::PytorchFile f(cyclePath);
    CHECK(f.root().kind == core::PickleNode::Kind::List);
    CHECK(errorOf([&] { f.stateDict(); }).message().find("no state dict") != std::string::npos);
}

TEST_CASE("Transformer-XL's vocab.pkl reads with the same unpickler, torch.save'd or pickled", "[pytorch][tokenizer]")
{
    const auto dir = pytorchData() / "txl-vocab";
    std::vector<std::string> words;
    {
        std::ifstream in(dir / "idx2sym.txt");
        for (std::string line; std::getline(in, line);)
            words.push_back(line);
    }
    for (const char* file : {"vocab.pkl", "vocab-protocol4.pkl"}) {
        DYNAMIC_SECTION(file)
        {
            const auto tok = core::loadTokenizer((dir / file).string());
            REQUIRE(tok->vocabSize() == static_cast<int>(words.size()));
            for (std::size_t i = 0; i < words.size(); i += 97)
                CHECK(tok->pieceOf(static_cast<std::int32_t>(i)) == words[i]);
            CHECK(tok->kind() == "word-level (WikiText)");
        }
    }
    // A folder with vocab.pkl and no other tokenizer file uses it.
    CHECK(core::loadTokenizer(dir.string())->vocabSize() == static_cast<int>(words.size()));
}

namespace {
std::vector<std::string> wordsOf(const core::Tokenizer& tok, const std::string& text)
{
    std::vector<std::string> out;
    for (const auto& t : tok.encode(text))
        out.push_back(t.text);
    return out;
}
} // namespace

TEST_CASE("typed text reaches a Transformer-XL vocabulary split as WikiText was", "[pytorch][tokenizer]")
{
    const auto tok = core::loadTokenizer((pytorchData() / "txl-vocab" / "vocab.pkl").string());
    using V = std::vector<std::string>;
    CHECK(wordsOf(*tok, "state-of-the-art, 1,000 km") == V{"state", "@-@", "of", "@-@", "the", "@-@", "art", ",", "1",
                                                            "@,@", "000", "km"});
    CHECK(wordsOf(*tok, "Mr. Smith's car didn't stop at 3.5 km/h.") ==
          V{"Mr.", "Smith", "'s", "car", "didn", "'t", "stop", "at", "3", "@.@", "5", "km", "/", "h", "."});
    CHECK(wordsOf(*tok, "The U.S. Army (1941) said \"no\"; St. Louis!") ==
          V{"The", "U.S.", "Army", "(", "1941", ")", "said", "\"", "no", "\"", ";", "St.", "Louis", "!"});
    CHECK(wordsOf(*tok, "the 1990's <unk>-based line\nnext") ==
          V{"the", "1990", "'s", "<unk>", "@-@", "based", "line", "<eos>", "next"});
    // Spans point at the typed characters: "@-@" at the hyphen.
    const auto tokens = tok->encode("well-known");
    REQUIRE(tokens.size() == 3);
    CHECK(tokens[1].begin == 4);
    CHECK(tokens[1].end == 5);

    // The corpus as its own reference: WikiText-2 lines written back as typed text (joining hyphens and number
    // separators restored, punctuation and clitics attached) split into the corpus's own words. Lines where WikiText
    // put <unk> inside a number ("16 @,@ <unk>") cannot be typed back and are left out.
    std::ifstream in(test::testdataDir().parent_path() / "data" / "wikitext-2" / "valid.txt");
    REQUIRE(in);
    const std::pair<std::regex, std::string> detokenize[] = {
        {std::regex(" @([-,.])@ "), "$1"},
        {std::regex(" ([,.;:!?)\\]%])"), "$1"},
        {std::regex("([(\\[$]) "), "$1"},
        {std::regex(" ('s|'t|'re|'ve|'ll|'d|'m)\\b"), "$1"}};
    int lines = 0, equal = 0;
    std::vector<std::string> mismatches;
    for (std::string line; std::getline(in, line) && lines < 400;) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
            line.pop_back();
        while (!line.empty() && line.front() == ' ')
            line.erase(0, 1);
        if (line.empty() || line[0] == '=' || std::regex_search(line, std::regex("@[,.]@ <unk>|<unk> @[,.]@")))
            continue;
        std::string typed = line;
        for (const auto& [pattern, replacement] : detokenize)
            typed = std::regex_replace(typed, pattern, replacement);
        std::vector<std::string> want;
        std::istringstream words(line);
        for (std::string w; words >> w;)
            want.push_back(w);
        ++lines;
        if (wordsOf(*tok, typed) == want)
            ++equal;
        else if (mismatches.size() < 5)
            mismatches.push_back(typed.substr(0, 200));
    }
    INFO("first lines that differ:\n" << [&] { std::string s; for (const auto& m : mismatches) s += m + "\n"; return s; }());
    CHECK(lines >= 250);
    CHECK(equal >= lines * 97 / 100);
}

TEST_CASE("Transformer-XL's projected adaptive softmax gives the original code's log-probabilities", "[pytorch][txl]")
{
    const auto dir = test::projectDataDir() / "txl-crit";
    const auto expected = test::loadAll((dir / "expected.safetensors").string());
    const auto input = core::readJsonFile((dir / "input.json").string());
    std::vector<core::Token> tokens;
    for (const auto& id : input["token_ids"])
        tokens.push_back({id.get<std::int32_t>(), std::to_string(id.get<int>()), 0, 0});
    // Tied tables and projections left out (safetensors), and the whole pickled module with every tensor.
    for (const auto& spec : {dir.string(), (dir / "model.pt").string()}) {
        DYNAMIC_SECTION(spec)
        {
            const auto loaded = core::loadModel(spec);
            REQUIRE(loaded.model->info().can.nextTokenLoss);
            core::CaptureOptions copt;
            copt.segmentLen = 5;
            copt.run.memLen = 6;
            const auto capture = core::captureText(*loaded.model, tokens, copt);
            REQUIRE(capture->segments.size() == 3);
            for (int p = 0; p < 15; ++p) {
                const auto lp = core::nextTokenLogits(*loaded.model, *capture, p);
                REQUIRE(lp.size() == 40);
                const auto& ref = *std::find_if(expected.begin(), expected.end(), [&](const auto& t) {
                    return t.name == "seg" + std::to_string(p / 5) + ".logprobs";
                });
                double z = 0;
                for (int v = 0; v < 40; ++v) {
                    CHECK(lp[static_cast<std::size_t>(v)] ==
                          Approx(ref.data[static_cast<std::size_t>(p % 5) * 40 + v]).margin(1e-4));
                    z += std::exp(static_cast<double>(lp[static_cast<std::size_t>(v)]));
                }
                CHECK(z == Approx(1.0).margin(1e-5)); // a distribution over the whole vocabulary
            }
        }
    }
}

TEST_CASE("a vocab.pkl listing one memoised word over and over is refused before its words are copied", "[pytorch][hostile]")
{
    // (make_pytorch_data.py) One 128 kB word listed 65,536 times in 262 kB: 8.6 GB if each entry were copied.
    const auto path = (pytorchData() / "repeated-word" / "vocab.pkl").string();
    const auto e = errorOf([&] { core::loadTokenizer(path); });
    CHECK(e.code() == core::ErrorCode::CorruptFile);
    CHECK_THAT(std::string(e.what()), Catch::Contains(path) && Catch::Contains("listed over and over"));
}
