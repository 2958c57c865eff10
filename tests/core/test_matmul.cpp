// The product engine and the weight types: every GGUF block type dequantised against llama.cpp's gguf-py
// (tests/data/ggml-blocks), and products of every stored type against the float32 product of its dequantised weight.
#include "io/ggml_types.h"
#include "io/safetensors.h"
#include "io/weight_view.h"
#include "linalg/matmul.h"
#include "linalg/matvec.h"
#include "model/nn_ops.h"
#include "model/model_loader.h"
#include "test_support.h"
#include "util/error.h"
#include "util/memory_info.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <limits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <nlohmann/json.hpp>
#include <random>

using namespace attnscope;

namespace {
const char* kTypes[] = {"F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};

core::GgmlType typeNamed(const std::string& name)
{
    for (std::uint32_t id = 0; id < 64; ++id)
        if (const auto info = core::ggmlTypeInfo(id); info && name == info->name)
            return static_cast<core::GgmlType>(id);
    FAIL("no ggml type " << name);
    return core::GgmlType::F32;
}

struct Blocks {
    std::vector<std::uint8_t> bytes;
    std::vector<float> values; // gguf-py's dequantisation
};

Blocks blocksOf(const core::SafetensorsFile& file, const std::string& type)
{
    const auto* raw = file.find(type + ".blocks");
    const auto* values = file.find(type + ".values");
    REQUIRE(raw);
    REQUIRE(values);
    Blocks b;
    b.bytes.assign(file.bytes(*raw), file.bytes(*raw) + (raw->end - raw->begin));
    b.values = core::readAsFloat(file, *values);
    return b;
}

// out[m][n] = sum_k x[m][k] w[n][k] in double: the float32 product of the dequantised weight, without rounding.
std::vector<double> referenceProduct(const std::vector<float>& x, int M, const std::vector<float>& w, int N, int K)
{
    std::vector<double> out(static_cast<std::size_t>(M) * N);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double s = 0;
            for (int k = 0; k < K; ++k)
                s += static_cast<double>(x[static_cast<std::size_t>(m) * K + k]) * w[static_cast<std::size_t>(n) * K + k];
            out[static_cast<std::size_t>(m) * N + n] = s;
        }
    return out;
}

// Largest |engine - reference| relative to sum_k |x w| (the scale float32 rounding errors grow with).
double worstError(const std::vector<float>& got, std::size_t ld, const std::vector<double>& ref,
                  const std::vector<float>& x, int M, const std::vector<float>& w, int N, int K)
{
    double worst = 0;
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            double scale = 1e-30;
            for (int k = 0; k < K; ++k)
                scale += std::abs(static_cast<double>(x[static_cast<std::size_t>(m) * K + k]) * w[static_cast<std::size_t>(n) * K + k]);
            const double err = std::abs(got[m * ld + n] - ref[static_cast<std::size_t>(m) * N + n]) / scale;
            worst = std::max(worst, err);
        }
    return worst;
}

std::vector<float> randomVector(std::size_t n, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& f : v)
        f = dist(rng);
    return v;
}
} // namespace

TEST_CASE("every GGUF block type dequantises as llama.cpp's gguf-py does", "[matmul][gguf]")
{
    const core::SafetensorsFile file((test::projectDataDir() / "ggml-blocks" / "ggml_blocks.safetensors").string());
    for (const std::string type : kTypes) {
        DYNAMIC_SECTION(type)
        {
            const auto t = typeNamed(type);
            const auto b = blocksOf(file, type);
            const auto n = static_cast<std::int64_t>(b.values.size());
            std::vector<float> whole(b.values.size());
            core::dequantize(t, b.bytes.data(), whole.data(), n);
            // Row by row through a view too (the packing step's path): rows of 256 elements.
            core::WeightView v;
            v.bytes = b.bytes.data();
            v.type = t;
            v.shape = {n / 256, 256};
            std::vector<float> rows(b.values.size());
            for (std::int64_t r = 0; r < v.rows(); ++r)
                v.decodeRow(r, 0, 256, rows.data() + r * 256);
            int mismatches = 0;
            for (std::size_t i = 0; i < b.values.size(); ++i) {
                if (whole[i] != b.values[i] || rows[i] != b.values[i]) {
                    if (++mismatches <= 5)
                        UNSCOPED_INFO("element " << i << ": gguf-py " << b.values[i] << ", whole " << whole[i] << ", rows " << rows[i]);
                }
            }
            CHECK(mismatches == 0);
        }
    }
}

TEST_CASE("products of every stored type equal the float32 product of the dequantised weight", "[matmul]")
{
    const core::SafetensorsFile file((test::projectDataDir() / "ggml-blocks" / "ggml_blocks.safetensors").string());
    for (const std::string type : kTypes) {
        const auto t = typeNamed(type);
        const auto b = blocksOf(file, type);
        const auto info = *core::ggmlTypeInfo(static_cast<std::uint32_t>(t));
        // K spans one or more KC tiles plus a tail; N is odd so the last panel is partial.
        const int K = info.blockSize == 256 ? 512 : (info.blockSize == 32 ? 320 : 300);
        const std::size_t rowBytes = static_cast<std::size_t>(K) / info.blockSize * info.typeSize;
        const int N = static_cast<int>(b.bytes.size() / rowBytes);
        REQUIRE(N >= 7);
        core::WeightView w;
        w.bytes = b.bytes.data();
        w.type = t;
        w.shape = {N, K};
        std::vector<float> deq(static_cast<std::size_t>(N) * K);
        core::dequantize(t, b.bytes.data(), deq.data(), static_cast<std::int64_t>(deq.size()));
        for (const int M : {1, 2, 3, 6, 7, 13, 40}) {
            DYNAMIC_SECTION(type << " M=" << M << " N=" << N << " K=" << K)
            {
                const auto x = randomVector(static_cast<std::size_t>(M) * K, static_cast<std::uint32_t>(M * 7 + K));
                const auto ref = referenceProduct(x, M, deq, N, K);
                const std::size_t ld = static_cast<std::size_t>(N) + 3; // a row stride wider than N
                std::vector<float> out(static_cast<std::size_t>(M) * ld, 1234.0f);
                core::matmulTransposed(x.data(), K, M, w, out.data(), static_cast<std::int64_t>(ld));
                CHECK(worstError(out, ld, ref, x, M, deq, N, K) < 1e-5);
                for (int m = 0; m < M; ++m) // the padding between rows is never written
                    for (std::size_t c = static_cast<std::size_t>(N); c < ld; ++c)
                        CHECK(out[m * ld + c] == 1234.0f);
                // Accumulating adds the same product to what is there.
                std::vector<float> twice = out;
                core::matmulTransposed(x.data(), K, M, w, twice.data(), static_cast<std::int64_t>(ld), true);
                for (int m = 0; m < M; ++m)
                    for (int n = 0; n < N; ++n)
                        CHECK(twice[m * ld + n] == Approx(2 * out[m * ld + n]).margin(1e-4));
            }
        }
    }
}

TEST_CASE("MXFP4 weights (gpt-oss's experts): every row count equals the float32 product of the dequantised weight",
          "[matmul][mxfp4]")
{
    // Random blocks: a power of two near 1/16 and random codes, both signs and every code among them.
    const int K = 352, N = 401; // 11 blocks per row; rows enough to be split between threads (N K >= 2^17), N odd
    std::mt19937 rng(41);
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(N) * (K / 32) * 17);
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<std::uint8_t>(i % 17 == 0 ? 118 + rng() % 12 : rng() % 256);
    core::WeightView w;
    w.bytes = bytes.data();
    w.type = core::GgmlType::MXFP4;
    w.shape = {N, K};
    if (std::string(core::matmulKernelName()) != "portable 6x16")
        CHECK(core::linalg_detail::hasRowKernel(core::GgmlType::MXFP4));
    std::vector<float> deq(static_cast<std::size_t>(N) * K);
    core::dequantize(core::GgmlType::MXFP4, bytes.data(), deq.data(), static_cast<std::int64_t>(deq.size()));
    for (const int M : {1, 2, 3, 7, 13}) { // the row kernel, two rows at a time, and the packed tiles
        DYNAMIC_SECTION("M=" << M)
        {
            const auto x = randomVector(static_cast<std::size_t>(M) * K, static_cast<std::uint32_t>(M));
            const auto ref = referenceProduct(x, M, deq, N, K);
            std::vector<float> out(static_cast<std::size_t>(M) * N);
            core::matmulTransposed(x.data(), K, M, w, out.data(), N);
            CHECK(worstError(out, static_cast<std::size_t>(N), ref, x, M, deq, N, K) < 1e-5);
        }
    }
}

TEST_CASE("one or two rows: each stored row read once from its bytes, over rows split between threads", "[matmul]")
{
    // Generation's products: the row kernels of F32, F16, BF16, Q8_0, Q4_K and Q6_K (the types of BF16/F16/Q8_0/Q4_K_M
    // files) and the decode-then-dot path of the others, on weights large enough to be split between threads, read
    // through a row order (a GGUF q/k weight) as well.
    if (std::string(core::matmulKernelName()) != "portable 6x16")
        for (const auto t : {core::GgmlType::F32, core::GgmlType::F16, core::GgmlType::BF16, core::GgmlType::Q8_0,
                             core::GgmlType::Q4_K, core::GgmlType::Q6_K})
            CHECK(core::linalg_detail::hasRowKernel(t));
    const core::SafetensorsFile file((test::projectDataDir() / "ggml-blocks" / "ggml_blocks.safetensors").string());
    for (const std::string type : {"F32", "F16", "BF16", "Q8_0", "Q4_K", "Q6_K", "Q5_K", "Q4_0"}) {
        const auto t = type == "F32" ? core::GgmlType::F32 : typeNamed(type);
        std::vector<std::uint8_t> stored;
        if (type == "F32") {
            const auto f = randomVector(4096, 11);
            stored.resize(f.size() * 4);
            std::memcpy(stored.data(), f.data(), stored.size());
        } else {
            stored = blocksOf(file, type).bytes;
        }
        const auto info = *core::ggmlTypeInfo(static_cast<std::uint32_t>(t));
        // 352 = 11 blocks of 32: an odd last block, and a last group of 64 values only half full; 300: a tail of 12.
        const int K = info.blockSize == 256 ? 512 : (info.blockSize == 32 ? 352 : 300);
        const std::size_t rowBytes = static_cast<std::size_t>(K) / info.blockSize * info.typeSize;
        // The stored rows repeated until the product is worth two threads (N K >= 2^17).
        const int N = static_cast<int>((131072 / K + 1));
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(N) * rowBytes);
        for (std::size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = stored[i % (stored.size() / rowBytes * rowBytes)];
        // Repeated rows would hide a kernel that reads or writes the wrong one of the rows it takes together (a
        // thread reads eight parts of its rows side by side): each row's first scale (its first value for F32, F16,
        // BF16) gets row-dependent low bits, so the 64 rows around any row all differ.
        const std::size_t scaleAt = type == "Q6_K" ? 208 : type == "F32" ? 2 : 0;
        for (int n = 0; n < N; ++n)
            bytes[static_cast<std::size_t>(n) * rowBytes + scaleAt] ^= static_cast<std::uint8_t>(n % 64);
        core::WeightView w;
        w.bytes = bytes.data();
        w.type = t;
        w.shape = {N, K};
        std::vector<float> deq(static_cast<std::size_t>(N) * K);
        core::dequantize(t, bytes.data(), deq.data(), static_cast<std::int64_t>(deq.size()));
        for (const bool integer : {true, false}) // the integer kernels where the CPU has them, and the float ones
        for (const bool reordered : {false, true})
            for (const int M : {1, 2}) {
                DYNAMIC_SECTION(type << " M=" << M << (reordered ? ", rows reversed" : "") << (integer ? "" : ", float kernels"))
                {
                    core::linalg_detail::setIntegerKernels(integer);
                    auto view = w;
                    std::vector<float> logical = deq;
                    if (reordered) {
                        auto order = std::make_shared<std::vector<std::int32_t>>(N);
                        for (int n = 0; n < N; ++n)
                            (*order)[static_cast<std::size_t>(n)] = N - 1 - n;
                        view.rowOrder = order;
                        for (int n = 0; n < N; ++n)
                            std::copy_n(deq.begin() + static_cast<std::ptrdiff_t>(N - 1 - n) * K, K,
                                        logical.begin() + static_cast<std::ptrdiff_t>(n) * K);
                    }
                    // Activations of every size: ordinary, far below one (a random model's fell to 1e-29, which made
                    // the integer kernels' scales denormal), and one block a billion times smaller than the rest.
                    const auto base = randomVector(static_cast<std::size_t>(M) * K, static_cast<std::uint32_t>(M + 3));
                    auto tiny = base, mixed = base;
                    for (auto& v : tiny)
                        v *= 1e-29f;
                    for (int i = 0; i < 32; ++i)
                        mixed[static_cast<std::size_t>(i)] *= 1e-9f;
                    const std::vector<float>* sets[] = {&base, &tiny, &mixed};
                    for (const auto* x : sets) {
                        INFO((x == &base ? "ordinary" : x == &tiny ? "tiny" : "one tiny block") << " activations");
                        const auto ref = referenceProduct(*x, M, logical, N, K);
                        std::vector<float> out(static_cast<std::size_t>(M) * N);
                        core::matmulTransposed(x->data(), K, M, view, out.data(), N);
                        CHECK(worstError(out, static_cast<std::size_t>(N), ref, *x, M, logical, N, K) < 1e-5);
                    }
                    core::linalg_detail::setIntegerKernels(true);
                }
            }
    }
}

TEST_CASE("float32 products: odd sizes, tails and the [in, out] layout", "[matmul]")
{
    // (up to twelve rows a [K, N] weight is read in place, whole panels of 32 or 16 features: 64 and 96 are all whole)
    for (const auto& [M, N, K] : {std::tuple{1, 1, 1}, {5, 33, 17}, {7, 65, 257}, {64, 100, 600}, {2, 300, 1000}, {13, 31, 513},
                                  {12, 64, 513}, {10, 96, 300}}) {
        DYNAMIC_SECTION("M=" << M << " N=" << N << " K=" << K)
        {
            const auto x = randomVector(static_cast<std::size_t>(M) * K, 1);
            const auto w = randomVector(static_cast<std::size_t>(N) * K, 2);
            const auto ref = referenceProduct(x, M, w, N, K);
            std::vector<float> out(static_cast<std::size_t>(M) * N);
            core::matmulTransposed(x.data(), K, M, core::WeightView::ofFloats(w.data(), {N, K}), out.data(), N);
            CHECK(worstError(out, static_cast<std::size_t>(N), ref, x, M, w, N, K) < 1e-5);

            // The same weight stored transposed ([K, N], GPT-2's Conv1D) through matmul().
            std::vector<float> wt(w.size());
            for (int n = 0; n < N; ++n)
                for (int k = 0; k < K; ++k)
                    wt[static_cast<std::size_t>(k) * N + n] = w[static_cast<std::size_t>(n) * K + k];
            std::vector<float> out2(out.size());
            core::matmul(x.data(), K, M, core::WeightView::ofFloats(wt.data(), {K, N}), out2.data(), N);
            CHECK(worstError(out2, static_cast<std::size_t>(N), ref, x, M, w, N, K) < 1e-5);
        }
    }
}

TEST_CASE("a bias and ReLU inside the product equal the same applied to its output afterwards, bit for bit", "[matmul]")
{
    // One or two rows (row by row), edge tiles, several k-blocks, rows split between threads; both layouts; with and
    // without accumulation.
    for (const auto& [M, N, K] : {std::tuple{1, 33, 17}, {2, 300, 1000}, {7, 65, 257}, {13, 31, 513}, {150, 410, 2100}}) {
        DYNAMIC_SECTION("M=" << M << " N=" << N << " K=" << K)
        {
            const auto x = randomVector(static_cast<std::size_t>(M) * K, 5);
            const auto w = randomVector(static_cast<std::size_t>(N) * K, 6);
            const auto bias = randomVector(static_cast<std::size_t>(N), 7);
            const auto start = randomVector(static_cast<std::size_t>(M) * N, 8);
            std::vector<float> wt(w.size());
            for (int n = 0; n < N; ++n)
                for (int k = 0; k < K; ++k)
                    wt[static_cast<std::size_t>(k) * N + n] = w[static_cast<std::size_t>(n) * K + k];
            for (const bool accumulate : {false, true})
                for (const bool relu : {false, true})
                    for (const bool transposedLayout : {false, true}) {
                        auto run = [&](const core::ProductEpilogue& then) {
                            std::vector<float> out = start;
                            if (transposedLayout)
                                core::matmul(x.data(), K, M, core::WeightView::ofFloats(wt.data(), {K, N}), out.data(), N,
                                             accumulate, then);
                            else
                                core::matmulTransposed(x.data(), K, M, core::WeightView::ofFloats(w.data(), {N, K}),
                                                       out.data(), N, accumulate, then);
                            return out;
                        };
                        auto expected = run({});
                        for (int m = 0; m < M; ++m)
                            for (int n = 0; n < N; ++n) {
                                float& v = expected[static_cast<std::size_t>(m) * N + n];
                                v += bias[static_cast<std::size_t>(n)];
                                if (relu)
                                    v = std::max(v, 0.0f);
                            }
                        const auto fused = run({bias.data(), relu});
                        INFO("accumulate " << accumulate << ", relu " << relu << ", [in, out] layout " << transposedLayout);
                        CHECK(fused == expected);
                    }
        }
    }
}

TEST_CASE("a row order reads a weight's rows permuted without copying it", "[matmul]")
{
    const int N = 40, K = 64, M = 9;
    const auto w = randomVector(static_cast<std::size_t>(N) * K, 3);
    const auto x = randomVector(static_cast<std::size_t>(M) * K, 4);
    auto order = std::make_shared<std::vector<std::int32_t>>(N);
    for (int n = 0; n < N; ++n)
        (*order)[static_cast<std::size_t>(n)] = (n * 7) % N; // 7 is coprime with 40: a permutation
    auto view = core::WeightView::ofFloats(w.data(), {N, K});
    view.rowOrder = order;
    std::vector<float> permuted(w.size());
    for (int n = 0; n < N; ++n)
        std::copy_n(w.begin() + (*order)[static_cast<std::size_t>(n)] * K, K, permuted.begin() + n * K);
    const auto ref = referenceProduct(x, M, permuted, N, K);
    std::vector<float> out(static_cast<std::size_t>(M) * N);
    core::matmulTransposed(x.data(), K, M, view, out.data(), N);
    CHECK(worstError(out, N, ref, x, M, permuted, N, K) < 1e-5);
}

TEST_CASE("products refuse weights they cannot read or holding NaN", "[matmul][errors]")
{
    std::vector<float> w(64, 1.0f), x(8, 1.0f), out(8);
    core::WeightSource source("layers.0.q.weight", "model.safetensors");
    auto view = core::WeightView::ofFloats(w.data(), {8, 8});
    view.source = &source;
    std::vector<std::uint8_t> iq(66 * 2);
    core::WeightView unreadable;
    unreadable.bytes = iq.data();
    unreadable.type = core::GgmlType::IQ2_XXS;
    unreadable.shape = {2, 256};
    unreadable.source = &source;
    std::vector<float> x256(256);
    CHECK_THROWS_WITH(core::matmulTransposed(x256.data(), 256, 1, unreadable, out.data(), 2),
                      Catch::Contains("IQ2_XXS") && Catch::Contains("layers.0.q.weight"));
    w[13] = std::nanf("");
    CHECK_THROWS_WITH(core::matmulTransposed(x.data(), 8, 1, view, out.data(), 8),
                      Catch::Contains("NaN") && Catch::Contains("layers.0.q.weight") && Catch::Contains("model.safetensors"));
    // A quantised block whose scale is infinite: found from the stored scale, named with the block's first element.
    core::WeightSource quantSource("blk.0.attn_q.weight", "model.gguf");
    std::vector<std::uint8_t> q8(34 * 4, 1); // two rows of two Q8_0 blocks
    const std::uint16_t inf = 0x7C00, one = 0x3C00;
    for (int b = 0; b < 4; ++b)
        std::memcpy(q8.data() + 34 * b, b == 3 ? &inf : &one, 2);
    core::WeightView quant;
    quant.bytes = q8.data();
    quant.type = core::GgmlType::Q8_0;
    quant.shape = {2, 64};
    quant.source = &quantSource;
    std::vector<float> x64(64, 1.0f);
    CHECK_THROWS_WITH(core::matmulTransposed(x64.data(), 64, 1, quant, out.data(), 2),
                      Catch::Contains("blk.0.attn_q.weight") && Catch::Contains("element 96"));
}

namespace {
// A Llama-shaped model in BF16 written without holding its weights as floats: raw BF16 bytes per tensor.
std::uint64_t writeBf16Llama(const std::filesystem::path& dir, int hidden, int layers, int intermediate, int vocab)
{
    std::filesystem::create_directories(dir);
    const int heads = 8, kvHeads = 2, d = hidden / heads;
    nlohmann::json cfg = {{"model_type", "llama"},          {"hidden_size", hidden},       {"intermediate_size", intermediate},
                          {"num_attention_heads", heads},   {"num_key_value_heads", kvHeads}, {"num_hidden_layers", layers},
                          {"rms_norm_eps", 1e-5},           {"rope_theta", 10000.0},        {"max_position_embeddings", 256},
                          {"tie_word_embeddings", true},    {"vocab_size", vocab}};
    std::ofstream(dir / "config.json") << cfg.dump();
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> tensors{{"model.embed_tokens.weight", {vocab, hidden}},
                                                                          {"model.norm.weight", {hidden}}};
    for (int l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
                 {"input_layernorm.weight", {hidden}}, {"post_attention_layernorm.weight", {hidden}},
                 {"self_attn.q_proj.weight", {heads * d, hidden}}, {"self_attn.k_proj.weight", {kvHeads * d, hidden}},
                 {"self_attn.v_proj.weight", {kvHeads * d, hidden}}, {"self_attn.o_proj.weight", {hidden, heads * d}},
                 {"mlp.gate_proj.weight", {intermediate, hidden}}, {"mlp.up_proj.weight", {intermediate, hidden}},
                 {"mlp.down_proj.weight", {hidden, intermediate}}})
            tensors.emplace_back(p + name, shape);
    }
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const auto& [name, shape] : tensors) {
        std::uint64_t n = 2;
        for (auto v : shape)
            n *= static_cast<std::uint64_t>(v);
        header[name] = {{"dtype", "BF16"}, {"shape", shape}, {"data_offsets", {offset, offset + n}}};
        offset += n;
    }
    std::string h = header.dump();
    h.append((8 - h.size() % 8) % 8, ' ');
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    const std::uint64_t len = h.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << h;
    std::mt19937 rng(5);
    std::vector<std::uint16_t> chunk(1 << 16);
    for (std::uint64_t done = 0; done < offset; done += chunk.size() * 2) {
        for (auto& v : chunk) // small random values: sign, exponent 2^-7..2^-4, random mantissa
            v = static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((120u + rng() % 4u) << 7) | (rng() & 0x7Fu));
        out.write(reinterpret_cast<const char*>(chunk.data()),
                  static_cast<std::streamsize>(std::min<std::uint64_t>(chunk.size() * 2, offset - done)));
    }
    return offset;
}
} // namespace

TEST_CASE("a BF16 model runs from its memory map: no float32 copy of its weights is made", "[matmul][memory]")
{
    test::TempDir tmp;
    const std::uint64_t bf16Bytes = writeBf16Llama(tmp / "model", 512, 8, 2048, 4096);
    REQUIRE(bf16Bytes > 60u << 20);
    malloc_trim(0); // what the test itself freed goes back, so the growth below is the model's own
    const auto before = core::residentSplit();
    {
        const auto loaded = core::loadModel((tmp / "model").string());
        const auto opened = core::residentSplit();
        // Opening reads headers: nothing like the weights' size becomes resident.
        CHECK(opened.anonymous < before.anonymous + (8u << 20));
        CHECK(opened.file < before.file + (8u << 20));
        std::vector<std::int32_t> ids(16);
        for (std::size_t i = 0; i < ids.size(); ++i)
            ids[i] = static_cast<std::int32_t>(i * 37 % 4096);
        core::RunOptions ro;
        struct Nothing final : core::AttentionObserver {
            void onLayer(const core::LayerView&) override {}
        } none;
        loaded.model->runSplit(ids, 16, ro, none);
        const auto ran = core::residentSplit();
        // Every weight was read through the map (file-backed pages), and no float32 copy (2x the file) was allocated.
        CHECK(ran.file >= before.file + bf16Bytes * 9 / 10);
        CHECK(ran.anonymous < before.anonymous + bf16Bytes / 4);
        UNSCOPED_INFO("anonymous +" << (ran.anonymous - before.anonymous) / 1024 << " KiB, file +"
                                    << (ran.file - before.file) / 1024 << " KiB for " << bf16Bytes / 1024 << " KiB of BF16");
    }
}

TEST_CASE("floatErf is within an ulp of the correctly rounded erf (two without FMA), and exact at its edges",
          "[matmul][erf]")
{
    // The truth: the double erf rounded to float. Every 127th float from 0 to 6, both signs, in one array.
    std::vector<float> x;
    for (std::uint32_t bits = 0; bits <= 0x40C00000u; bits += 127) {
        const float v = std::bit_cast<float>(bits);
        x.push_back(v);
        x.push_back(-v);
    }
    for (const float edge : {1.0f, std::nextafter(1.0f, 0.0f), 4.0f, std::nextafter(4.0f, 0.0f), 3.92f, 1e-38f, 1e-45f})
        for (const float v : {edge, -edge})
            x.push_back(v);
    std::vector<float> y = x;
    core::floatErf(y.data(), static_cast<std::int64_t>(y.size()));
#if defined(__FMA__)
    const std::int64_t allowed = 1;
#else
    const std::int64_t allowed = 2;
#endif
    std::int64_t worst = 0, wrongSigns = 0;
    float worstAt = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float truth = static_cast<float>(std::erf(static_cast<double>(x[i])));
        if (std::signbit(y[i]) != std::signbit(truth)) {
            ++wrongSigns;
            continue;
        }
        const std::int64_t ulps = std::abs(static_cast<std::int64_t>(std::bit_cast<std::int32_t>(y[i])) -
                                           static_cast<std::int64_t>(std::bit_cast<std::int32_t>(truth)));
        if (ulps > worst) {
            worst = ulps;
            worstAt = x[i];
        }
    }
    INFO("worst " << worst << " ulps at x = " << worstAt << " over " << x.size() << " values");
    CHECK(wrongSigns == 0);
    CHECK(worst <= allowed);
    // The edges: 0 stays 0 with its sign, the tails are +-1, infinities give +-1 and NaN stays NaN.
    float special[] = {0.0f, -0.0f, 10.0f, -10.0f, std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    core::floatErf(special, 7);
    CHECK(special[0] == 0.0f);
    CHECK_FALSE(std::signbit(special[0]));
    CHECK(std::signbit(special[1]));
    CHECK(special[2] == 1.0f);
    CHECK(special[3] == -1.0f);
    CHECK(special[4] == 1.0f);
    CHECK(special[5] == -1.0f);
    CHECK(std::isnan(special[6]));
}
