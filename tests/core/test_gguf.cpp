// GGUF: every model-*.gguf in the reference cases reproduces its reference (F32 -> expected.safetensors, F16 / Q8_0
// -> expected-f16 / expected-q8_0, the float32 forward of the dequantised weights); block layouts of the quantised
// types against hand-made blocks; and a corrupt-file matrix where each damage is refused naming the file and field.
#include "io/checkpoint.h"
#include "io/ggml_types.h"
#include "io/gguf.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "tokenize/tokenizer.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
// model-f32.gguf -> expected.safetensors; model-TAG.gguf -> expected-TAG.safetensors.
fs::path expectedFor(const fs::path& gguf)
{
    std::string tag = gguf.stem().string();
    tag = tag.rfind("model-", 0) == 0 ? tag.substr(6) : tag;
    // MXFP4 dequantised to float32 reproduces the float32 reference (gptoss-tiny's README: its expected-mxfp4 is
    // llama.cpp's run with activations rounded to Q8_0, which a float32 implementation does not do).
    if (tag == "mxfp4")
        return gguf.parent_path() / "expected.safetensors";
    return gguf.parent_path() / (tag == "f32" ? "expected.safetensors" : "expected-" + tag + ".safetensors");
}

std::vector<fs::path> ggufCases()
{
    std::vector<fs::path> out;
    for (const auto& dir : test::referenceCases())
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".gguf" && fs::exists(expectedFor(e.path())))
                out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}
} // namespace

TEST_CASE("GGUF files reproduce their reference outputs", "[gguf][reference]")
{
    const auto files = ggufCases();
    REQUIRE(files.size() >= 6); // llama-tiny and llama-gqa in F32, F16 and Q8_0
    for (const auto& file : files) {
        DYNAMIC_SECTION(file.parent_path().filename().string() << "/" << file.filename().string())
        {
            const auto loaded = core::loadModel(file.string());
            CHECK(loaded.ggufPath == file.string());
            const auto inputPath = (file.parent_path() / "input.json").string();
            const auto out = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
            std::vector<std::string> report;
            const auto problems = test::referenceMismatches(expectedFor(file).string(), out, &report);
            for (const auto& line : report)
                UNSCOPED_INFO(line);
            for (const auto& p : problems)
                FAIL_CHECK(p);
        }
    }
}

TEST_CASE("a GGUF and its Hugging Face source give the same attention", "[gguf]")
{
    for (const char* name : {"llama-tiny", "llama-gqa"}) {
        const auto dir = test::testdataDir() / name;
        const auto hf = core::loadModel(dir.string());
        const auto gguf = core::loadModel((dir / "model-f32.gguf").string());
        const auto input = core::readJsonFile((dir / "input.json").string());
        const auto a = core::dumpReference(*hf.model, input, "input.json");
        const auto b = core::dumpReference(*gguf.model, input, "input.json");
        REQUIRE(a.size() == b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            INFO(name << " " << a[i].name);
            REQUIRE(a[i].name == b[i].name);
            CHECK(test::compare(a[i], b[i], 1e-5, 1e-6).ok); // same weights: equal up to float32 rounding
        }
        CHECK(gguf.model->info().kvHeads == hf.model->info().kvHeads);
        CHECK(gguf.model->info().parameterCount == hf.model->info().parameterCount);
    }
}

TEST_CASE("quantised blocks dequantise as the format describes", "[gguf][quant]")
{
    auto putHalf = [](std::uint8_t* p, float f) {
        const std::uint16_t h = core::floatToHalf(f);
        std::memcpy(p, &h, 2);
    };
    SECTION("MXFP4: the E2M1 codes times 2^(e - 128), the factor exact down to e = 0")
    {
        static constexpr float kCodes[16] = {0, 1, 2, 3, 4, 6, 8, 12, -0.0f, -1, -2, -3, -4, -6, -8, -12};
        for (int e : {0, 1, 2, 100, 127, 128, 200, 252}) {
            std::uint8_t b[17];
            b[0] = static_cast<std::uint8_t>(e);
            for (int j = 0; j < 16; ++j)
                b[1 + j] = static_cast<std::uint8_t>(j | ((15 - j) << 4));
            float y[32];
            core::dequantize(core::GgmlType::MXFP4, b, y, 32);
            const float d = std::ldexp(1.0f, e - 128);
            INFO("e = " << e << ", d = " << d);
            CHECK(core::mxfp4Scale(static_cast<std::uint8_t>(e)) == d);
            for (int j = 0; j < 16; ++j) {
                CHECK(y[j] == d * kCodes[j]);
                CHECK(y[j + 16] == d * kCodes[15 - j]);
            }
        }
    }
    SECTION("Q8_0: d times the int8")
    {
        std::uint8_t b[34];
        putHalf(b, 0.5f);
        for (int j = 0; j < 32; ++j)
            b[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(j - 16));
        float y[32];
        core::dequantize(core::GgmlType::Q8_0, b, y, 32);
        for (int j = 0; j < 32; ++j)
            CHECK(y[j] == 0.5f * static_cast<float>(j - 16));
    }
    SECTION("Q4_0: low nibbles are elements 0..15, high nibbles 16..31, minus 8")
    {
        std::uint8_t b[18];
        putHalf(b, 2.0f);
        for (int j = 0; j < 16; ++j)
            b[2 + j] = static_cast<std::uint8_t>((j & 0x0F) | ((15 - j) << 4));
        float y[32];
        core::dequantize(core::GgmlType::Q4_0, b, y, 32);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == 2.0f * static_cast<float>(j - 8));
            CHECK(y[16 + j] == 2.0f * static_cast<float>(15 - j - 8));
        }
    }
    SECTION("Q4_K: 6-bit scales and mins per sub-block of 32, two sub-blocks per 32 bytes")
    {
        std::uint8_t b[144] = {};
        putHalf(b, 0.25f);    // d
        putHalf(b + 2, 0.5f); // dmin
        // Sub-block j: scale j + 1 + 16 (j >= 4 uses the top bits), min 2 j + 1 (+ 32 for j >= 4).
        int sc[8], mn[8];
        for (int j = 0; j < 8; ++j) {
            sc[j] = j + 1 + (j >= 4 ? 16 : 0);
            mn[j] = 2 * j + 1 + (j >= 4 ? 32 : 0);
        }
        std::uint8_t* s = b + 4;
        for (int j = 0; j < 4; ++j) {
            s[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
            s[j + 4] = static_cast<std::uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
            s[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0x0F) | ((mn[j + 4] & 0x0F) << 4));
        }
        std::uint8_t* q = b + 16;
        for (int i = 0; i < 128; ++i)
            q[i] = static_cast<std::uint8_t>((i % 16) | (((i + 5) % 16) << 4));
        float y[256];
        core::dequantize(core::GgmlType::Q4_K, b, y, 256);
        for (int e = 0; e < 256; ++e) {
            const int sub = e / 32, chunk = e / 64, l = e % 32;
            const int byte = chunk * 32 + l;
            const int nib = (sub % 2 == 0) ? q[byte] & 0x0F : q[byte] >> 4;
            CHECK(y[e] == Approx(0.25f * sc[sub] * nib - 0.5f * mn[sub]).margin(1e-6));
        }
    }
    SECTION("Q6_K: low 4 bits in ql, top 2 in qh, int8 scale per 16, minus 32, d last")
    {
        std::uint8_t b[210] = {};
        for (int i = 0; i < 128; ++i)
            b[i] = static_cast<std::uint8_t>((i * 7) & 0xFF);
        for (int i = 0; i < 64; ++i)
            b[128 + i] = static_cast<std::uint8_t>((i * 13 + 1) & 0xFF);
        for (int i = 0; i < 16; ++i)
            b[192 + i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(i - 8));
        putHalf(b + 208, 0.125f);
        float y[256];
        core::dequantize(core::GgmlType::Q6_K, b, y, 256);
        for (int e = 0; e < 256; ++e) {
            const int half = e / 128, r = (e % 128) / 32, l = e % 32;
            const std::uint8_t* ql = b + 64 * half;
            const std::uint8_t* qh = b + 128 + 32 * half;
            const int low = r == 0 ? ql[l] & 0xF : r == 1 ? ql[l + 32] & 0xF : r == 2 ? ql[l] >> 4 : ql[l + 32] >> 4;
            const int high = (qh[l] >> (2 * r)) & 3;
            const int scale = static_cast<std::int8_t>(b[192 + e / 16]);
            CHECK(y[e] == Approx(0.125f * scale * ((low | (high << 4)) - 32)).margin(1e-6));
        }
    }
}

namespace {
// Byte offset just after the length-prefixed string `s` in `bytes` (its first occurrence).
std::size_t after(const std::string& bytes, const std::string& s)
{
    std::string needle(8, '\0');
    const std::uint64_t n = s.size();
    std::memcpy(needle.data(), &n, 8);
    needle += s;
    const auto at = bytes.find(needle);
    REQUIRE(at != std::string::npos);
    return at + needle.size();
}
template <typename T> void put(std::string& bytes, std::size_t at, T v)
{
    std::memcpy(bytes.data() + at, &v, sizeof(T));
}
template <typename T> T get(const std::string& bytes, std::size_t at)
{
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof(T));
    return v;
}
// The error loading `bytes` as a GGUF model (empty if it loads).
std::string loadError(const test::TempDir& tmp, const std::string& bytes)
{
    const auto path = tmp / "model.gguf";
    test::writeBytes(path, bytes);
    try {
        core::loadModel(path.string());
    } catch (const core::Error& e) {
        return e.what();
    }
    return {};
}
} // namespace

TEST_CASE("corrupt GGUF files are refused with the file and the field named", "[gguf][corrupt]")
{
    const auto good = test::readBytes(test::testdataDir() / "llama-tiny" / "model-f32.gguf");
    test::TempDir tmp;
    const std::string file = (tmp / "model.gguf").string();
    REQUIRE(loadError(tmp, good).empty());
    // Tensor info of blk.0.attn_q.weight: n_dims (u32), dims (2 x i64), type (u32), offset (u64).
    const std::size_t q = after(good, "blk.0.attn_q.weight");
    REQUIRE(get<std::uint32_t>(good, q) == 2);
    const std::size_t qType = q + 4 + 16, qOffset = qType + 4;

    auto check = [&](const std::string& what, std::string bytes, const std::vector<std::string>& mustSay) {
        INFO(what);
        const std::string err = loadError(tmp, bytes);
        INFO(err);
        REQUIRE_FALSE(err.empty());
        CHECK(err.find(file) != std::string::npos);
        for (const auto& s : mustSay)
            CHECK(err.find(s) != std::string::npos);
    };
    check("truncated in the tensor data", good.substr(0, good.size() - 100), {"outside the data section"});
    check("truncated in the header", good.substr(0, 200), {"truncated"});
    std::string magic = good;
    magic[0] = 'X';
    check("bad magic", magic, {"magic"});
    std::string version = good;
    put<std::uint32_t>(version, 4, 7);
    check("unknown version", version, {"version", "7"});
    std::string tensors = good;
    put<std::uint64_t>(tensors, 8, 1ull << 40);
    check("huge tensor count", tensors, {"tensor_count"});
    std::string kvs = good;
    put<std::uint64_t>(kvs, 16, 1ull << 40);
    check("huge metadata count", kvs, {"metadata_kv_count"});
    std::string longString = good;
    put<std::uint64_t>(longString, 24, 1ull << 50); // the first key's length
    check("huge string length", longString, {"metadata key #0", "string length"});
    std::string pastEnd = good;
    put<std::uint64_t>(pastEnd, qOffset, 1ull << 30);
    check("tensor data past the end", pastEnd, {"blk.0.attn_q.weight", "outside the data section"});
    std::string misaligned = good;
    put<std::uint64_t>(misaligned, qOffset, get<std::uint64_t>(good, qOffset) + 4);
    check("misaligned offset", misaligned, {"blk.0.attn_q.weight", "alignment"});
    std::string unknownType = good;
    put<std::uint32_t>(unknownType, qType, 99);
    check("unknown tensor type", unknownType, {"blk.0.attn_q.weight", "unknown tensor type id 99"});
    std::string unsupported = good;
    put<std::uint32_t>(unsupported, qType, 20); // IQ4_NL: a real type attnscope does not read, refused when used
    check("unsupported tensor type", unsupported, {"blk.0.attn_q.weight", "IQ4_NL", "Q8_0", "Q5_K"});
    std::string dims = good;
    put<std::int64_t>(dims, q + 4, 16); // ne0 32 -> 16: the data still fits, the shape disagrees with the metadata
    check("dims that disagree with the metadata", dims, {"blk.0.attn_q.weight", "[32, 16]", "[32, 32]"});
    // Numbers a forward pass divides by or raises to a power: NaN attention without a word before.
    const std::size_t base = after(good, "llama.rope.freq_base");
    REQUIRE(get<std::uint32_t>(good, base) == 6); // FLOAT32
    for (const float bad : {0.0f, -10000.0f, std::nanf(""), 1e-30f}) {
        std::string rope = good;
        put<float>(rope, base + 4, bad);
        check("rope base " + std::to_string(bad), rope, {"llama.rope.freq_base", "rotary base"});
    }
    const std::size_t eps = after(good, "llama.attention.layer_norm_rms_epsilon");
    std::string nanEps = good;
    put<float>(nanEps, eps + 4, std::nanf(""));
    check("NaN norm epsilon", nanEps, {"llama.attention.layer_norm_rms_epsilon", "epsilon"});
    std::string heads = good;
    const std::size_t hc = after(good, "llama.attention.head_count");
    REQUIRE(get<std::uint32_t>(good, hc) == 4); // value type UINT32
    put<std::uint32_t>(heads, hc + 4, 8);
    check("a head count the tensors do not have", heads, {"blk.0.attn_q.weight", "[64, 32]"});
    put<std::uint32_t>(heads, hc + 4, 3);
    check("heads that key/value heads cannot share", heads, {"head_count_kv", "3"});
    std::string arch = good;
    const std::size_t a = after(good, "general.architecture");
    put<std::uint64_t>(arch, a + 4, 5); // "llama" -> "llama" of length 5: same; make it unknown instead
    arch.replace(a + 12, 5, "gemma");
    check("unknown architecture", arch, {"general.architecture", "gemma"});
}

TEST_CASE("a Llama folder with a missing tensor names the tensor", "[corrupt][llama]")
{
    test::TempDir tmp;
    const auto dir = test::testdataDir() / "llama-tiny";
    auto weights = test::loadAll((dir / "model.safetensors").string());
    std::erase_if(weights, [](const core::OutputTensor& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
    core::writeSafetensors((tmp / "model.safetensors").string(), weights);
    fs::copy_file(dir / "config.json", tmp / "config.json");
    try {
        core::loadModel(tmp.path().string());
        FAIL("a checkpoint without model.layers.1.mlp.up_proj.weight loaded");
    } catch (const core::Error& e) {
        CHECK(e.code() == core::ErrorCode::MissingTensor);
        CHECK(std::string(e.what()).find("model.layers.1.mlp.up_proj.weight") != std::string::npos);
    }
}

TEST_CASE("a vocab-only GGUF (no tensors, no padding after the metadata) opens as a tokenizer", "[gguf][tokenizer]")
{
    // As llama.cpp's models/ggml-vocab-*.gguf: metadata only, the file ending right after the last value.
    std::string b;
    auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](std::uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) { u64(s.size()); b += s; };
    u32(0x46554747u);
    u32(3);
    u64(0); // tensors
    u64(4); // metadata
    str("general.architecture"), u32(8), str("llama");
    str("tokenizer.ggml.model"), u32(8), str("gpt2");
    str("tokenizer.ggml.tokens"), u32(9), u32(8), u64(4), str("a"), str("b"), str("ab"), str("\xC4\xA0"); // "Ġ": a space
    str("tokenizer.ggml.merges"), u32(9), u32(8), u64(1), str("a b");
    REQUIRE(b.size() % 32 != 0); // really unpadded
    test::TempDir tmp;
    test::writeBytes(tmp / "ggml-vocab-tiny.gguf", b);
    const core::GgufFile g((tmp / "ggml-vocab-tiny.gguf").string());
    CHECK(g.tensors().empty());
    const auto tok = core::loadTokenizer((tmp / "ggml-vocab-tiny.gguf").string());
    std::vector<int> ids;
    for (const auto& t : tok->encode("ab b"))
        ids.push_back(t.id);
    CHECK(ids == std::vector<int>{2, 3, 1});
    // Opening it as a model says what is missing, not that it is truncated.
    try {
        core::loadModel((tmp / "ggml-vocab-tiny.gguf").string());
        FAIL("a vocab-only file is not a model");
    } catch (const core::Error& e) {
        CHECK(std::string(e.what()).find("truncated") == std::string::npos);
        CHECK(std::string(e.what()).find("ggml-vocab-tiny.gguf") != std::string::npos);
    }
}

TEST_CASE("a tensor of a type nothing reads does not refuse the file until a model uses it", "[gguf][reliability]")
{
    auto bytes = test::readBytes(test::testdataDir() / "llama-tiny" / "model-f32.gguf");
    const std::size_t q = after(bytes, "blk.0.attn_q.weight");
    put<std::uint32_t>(bytes, q + 4 + 16, 20); // IQ4_NL: 32 elements per 18 bytes, a known type attnscope cannot decode
    test::TempDir tmp;
    test::writeBytes(tmp / "model.gguf", bytes);
    const auto weights = core::Checkpoint::openGguf((tmp / "model.gguf").string()); // opens: headers only
    CHECK(weights->get("blk.0.attn_k.weight").type == core::GgmlType::F32);
    CHECK_THROWS_WITH(weights->get("blk.0.attn_q.weight"), Catch::Contains("IQ4_NL") && Catch::Contains("blk.0.attn_q.weight"));
}

TEST_CASE("a SentencePiece vocabulary with a 256 kB piece loads and merges as usual", "[gguf][tokenizer]")
{
    // The merges are every split of a piece into two pieces; a huge piece among short ones has none and must not cost
    // a copy of its halves per byte.
    std::string b;
    auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](std::uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); };
    auto str = [&](const std::string& s) { u64(s.size()); b += s; };
    const std::string space = "\xE2\x96\x81"; // U+2581, SentencePiece's space
    const std::vector<std::string> tokens{"<unk>", "<s>", "</s>", space, "a", space + "a", "aa", space + "aa",
                                          std::string(256 * 1024, 'a')};
    u32(0x46554747u);
    u32(3);
    u64(0);
    u64(5);
    str("general.architecture"), u32(8), str("llama");
    str("tokenizer.ggml.model"), u32(8), str("llama");
    str("tokenizer.ggml.tokens"), u32(9), u32(8), u64(tokens.size());
    for (const auto& t : tokens)
        str(t);
    str("tokenizer.ggml.scores"), u32(9), u32(6), u64(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        const float s = i < 3 ? 0.0f : -10.0f + static_cast<float>(std::min<std::size_t>(tokens[i].size(), 8));
        b.append(reinterpret_cast<const char*>(&s), 4);
    }
    str("tokenizer.ggml.token_type"), u32(9), u32(5), u64(tokens.size());
    for (std::size_t i = 0; i < tokens.size(); ++i)
        u32(i == 0 ? 2 : i < 3 ? 3 : 1);
    test::TempDir tmp;
    test::writeBytes(tmp / "vocab.gguf", b);
    const auto tok = core::loadTokenizer((tmp / "vocab.gguf").string());
    std::vector<int> ids;
    for (const auto& t : tok->encode("aa"))
        ids.push_back(t.id);
    CHECK(ids == std::vector<int>{7});
}
