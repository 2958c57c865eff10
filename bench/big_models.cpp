// Streaming writers of big random Llama-shaped models: safetensors shards and GGUF files, from their public layouts.
#include "big_models.h"

#include "bench_clock.h"
#include "io/ggml_types.h"

#include "util/error.h"
#include "util/text_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <vector>

namespace fs = std::filesystem;
using namespace attnscope::core;

namespace attnscope::bench {

namespace {

// xorshift64*: fast enough to stream 8 billion values (std::normal_distribution would take minutes).
class FastRandom {
public:
    explicit FastRandom(std::uint64_t seed)
        : m_s(seed * 0x9E3779B97F4A7C15ull + 1)
    {
    }
    std::uint64_t next()
    {
        m_s ^= m_s >> 12;
        m_s ^= m_s << 25;
        m_s ^= m_s >> 27;
        return m_s * 0x2545F4914F6CDD1Dull;
    }
    // Uniform on [-a, a] with standard deviation `sd` (a = sd sqrt 3).
    float symmetric(float sd) { return (static_cast<float>(next() >> 40) / 16777216.0f * 2.0f - 1.0f) * sd * 1.7320508f; }

private:
    std::uint64_t m_s;
};

std::uint16_t halfBits(float f)
{
    // Round to nearest half for values inside the half range (weights and scales here are small).
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
    if (exp <= 0) { // a subnormal half: quantised blocks' scales are often this small (Q6_K's d of weights near 0.02)
        if (exp < -10)
            return static_cast<std::uint16_t>(sign);
        const std::uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
        const int shift = 14 - exp;
        std::uint32_t h = m >> shift;
        if ((m >> (shift - 1)) & 1u)
            ++h;
        return static_cast<std::uint16_t>(sign | h);
    }
    const std::uint32_t mant = x & 0x7FFFFFu;
    std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
    if (mant & 0x1000u)
        ++h;
    return static_cast<std::uint16_t>(h);
}

// One tensor of the model: its name, shape (outermost first) and the standard deviation of its values.
struct TensorPlan {
    std::string hfName, ggufName;
    std::vector<std::int64_t> shape;
    float sd;       // 0: a norm's scale (all ones)
    bool perLayerMoreBits = false; // Q4_K_M gives attn_v and ffn_down Q6_K in some layers
    int layer = -1;
    bool keepF32 = false; // a router: float32 in every format, as llama.cpp's quantiser leaves it
};

std::vector<TensorPlan> plan(const BigLlamaShape& s)
{
    const std::int64_t C = s.hidden, d = s.headDim > 0 ? s.headDim : s.hidden / s.heads, Q = s.heads * d,
                       KV = s.kvHeads * d, I = s.intermediate, E = s.experts, EI = s.expertIntermediate;
    const float inv = 1.0f / std::sqrt(static_cast<float>(C));
    std::vector<TensorPlan> p;
    p.push_back({"model.embed_tokens.weight", "token_embd.weight", {s.vocab, C}, 1.0f});
    if (!s.tied)
        p.push_back({"lm_head.weight", "output.weight", {s.vocab, C}, inv});
    p.push_back({"model.norm.weight", "output_norm.weight", {C}, 0});
    for (int l = 0; l < s.layers; ++l) {
        const std::string h = "model.layers." + std::to_string(l) + ".", g = "blk." + std::to_string(l) + ".";
        p.push_back({h + "input_layernorm.weight", g + "attn_norm.weight", {C}, 0, false, l});
        p.push_back({h + "self_attn.q_proj.weight", g + "attn_q.weight", {Q, C}, 1.5f * inv, false, l});
        p.push_back({h + "self_attn.k_proj.weight", g + "attn_k.weight", {KV, C}, 1.5f * inv, false, l});
        p.push_back({h + "self_attn.v_proj.weight", g + "attn_v.weight", {KV, C}, inv, true, l});
        p.push_back({h + "self_attn.o_proj.weight", g + "attn_output.weight", {C, Q}, 0.8f / std::sqrt(static_cast<float>(Q)), false, l});
        if (s.gptOss) { // biases, and a sink logit per head
            p.push_back({h + "self_attn.q_proj.bias", g + "attn_q.bias", {Q}, 0.02f, false, l});
            p.push_back({h + "self_attn.k_proj.bias", g + "attn_k.bias", {KV}, 0.02f, false, l});
            p.push_back({h + "self_attn.v_proj.bias", g + "attn_v.bias", {KV}, 0.02f, false, l});
            p.push_back({h + "self_attn.o_proj.bias", g + "attn_output.bias", {C}, 0.02f, false, l});
            p.push_back({h + "self_attn.sinks", g + "attn_sinks.weight", {s.heads}, 1.0f, false, l});
        }
        if (s.qkNorm) {
            p.push_back({h + "self_attn.q_norm.weight", g + "attn_q_norm.weight", {s.qkNormWhole ? Q : d}, 0, false, l});
            p.push_back({h + "self_attn.k_norm.weight", g + "attn_k_norm.weight", {s.qkNormWhole ? KV : d}, 0, false, l});
        }
        p.push_back({h + "post_attention_layernorm.weight", g + (s.gptOss ? "post_attention_norm.weight" : "ffn_norm.weight"),
                     {C}, 0, false, l});
        if (s.gptOss) {
            p.push_back({h + "mlp.router.bias", g + "ffn_gate_inp.bias", {E}, 0.02f, false, l});
            p.push_back({h + "mlp.experts.gate_up_proj_bias", g + "ffn_gate_exps.bias", {E, EI}, 0.02f, false, l, true});
            p.push_back({h + "mlp.experts.gate_up_proj_bias", g + "ffn_up_exps.bias", {E, EI}, 0.02f, false, l, true});
            p.push_back({h + "mlp.experts.down_proj_bias", g + "ffn_down_exps.bias", {E, C}, 0.02f, false, l, true});
        }
        if (E > 0) { // the router and each expert's three matrices, stacked [experts, ...] as GGUF keeps them
            p.push_back({h + "mlp.gate.weight", g + "ffn_gate_inp.weight", {E, C}, inv, false, l, true});
            p.push_back({h + "mlp.experts.gate_proj", g + "ffn_gate_exps.weight", {E, EI, C}, inv, false, l});
            p.push_back({h + "mlp.experts.up_proj", g + "ffn_up_exps.weight", {E, EI, C}, inv, false, l});
            p.push_back({h + "mlp.experts.down_proj", g + "ffn_down_exps.weight", {E, C, EI},
                         0.8f / std::sqrt(static_cast<float>(EI)), true, l});
            continue;
        }
        p.push_back({h + "mlp.gate_proj.weight", g + "ffn_gate.weight", {I, C}, inv, false, l});
        p.push_back({h + "mlp.up_proj.weight", g + "ffn_up.weight", {I, C}, inv, false, l});
        p.push_back({h + "mlp.down_proj.weight", g + "ffn_down.weight", {C, I}, 0.8f / std::sqrt(static_cast<float>(I)), true, l});
    }
    return p;
}

std::int64_t numel(const std::vector<std::int64_t>& shape)
{
    std::int64_t n = 1;
    for (auto v : shape)
        n *= v;
    return n;
}

// Writes `n` BF16 (or F16) values of standard deviation sd (or ones) in chunks.
void streamHalfValues(std::ofstream& out, std::int64_t n, float sd, bool bf16, FastRandom& rng)
{
    std::vector<std::uint16_t> buf(1 << 20);
    for (std::int64_t done = 0; done < n;) {
        const std::int64_t k = std::min<std::int64_t>(static_cast<std::int64_t>(buf.size()), n - done);
        for (std::int64_t i = 0; i < k; ++i) {
            const float v = sd == 0 ? 1.0f : rng.symmetric(sd);
            if (bf16) {
                std::uint32_t x;
                std::memcpy(&x, &v, 4);
                buf[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(x >> 16);
            } else {
                buf[static_cast<std::size_t>(i)] = halfBits(v);
            }
        }
        out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(k * 2));
        done += k;
    }
}

// ---- safetensors, sharded ----

fs::path writeSafetensorsFolder(const BigLlamaShape& s, const fs::path& dir)
{
    constexpr std::uint64_t kShardBytes = 5ull << 30;
    const auto tensors = plan(s);
    std::vector<std::vector<const TensorPlan*>> shards(1);
    std::uint64_t inShard = 0;
    for (const auto& t : tensors) {
        const std::uint64_t bytes = static_cast<std::uint64_t>(numel(t.shape)) * 2;
        if (inShard > 0 && inShard + bytes > kShardBytes) {
            shards.emplace_back();
            inShard = 0;
        }
        shards.back().push_back(&t);
        inShard += bytes;
    }
    fs::create_directories(dir);
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    std::uint64_t total = 0;
    FastRandom rng(8);
    char name[64];
    for (std::size_t i = 0; i < shards.size(); ++i) {
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
        nlohmann::json header = {{"__metadata__", {{"format", "pt"}}}};
        std::uint64_t offset = 0;
        for (const auto* t : shards[i]) {
            const std::uint64_t bytes = static_cast<std::uint64_t>(numel(t->shape)) * 2;
            header[t->hfName] = {{"dtype", "BF16"}, {"shape", t->shape}, {"data_offsets", {offset, offset + bytes}}};
            index["weight_map"][t->hfName] = name;
            offset += bytes;
        }
        total += offset;
        std::string h = header.dump();
        h.append((8 - h.size() % 8) % 8, ' ');
        std::ofstream out(dir / (std::string(name) + ".tmp"), std::ios::binary);
        const std::uint64_t len = h.size();
        out.write(reinterpret_cast<const char*>(&len), 8);
        out.write(h.data(), static_cast<std::streamsize>(h.size()));
        for (const auto* t : shards[i])
            streamHalfValues(out, numel(t->shape), t->sd, true, rng);
        out.close();
        if (!out)
            throw Error(ErrorCode::Io, "could not write the shard (disk full?)", (dir / name).string());
        fs::rename(dir / (std::string(name) + ".tmp"), dir / name);
    }
    index["metadata"]["total_size"] = total;
    std::ofstream(dir / "model.safetensors.index.json") << index.dump(2);
    return dir;
}

// ---- GGUF ----

enum class GgufType : std::uint32_t { U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9 };

class GgufHeader {
public:
    void str(const std::string& s)
    {
        u64(s.size());
        m_bytes += s;
    }
    void u32(std::uint32_t v) { m_bytes.append(reinterpret_cast<const char*>(&v), 4); }
    void u64(std::uint64_t v) { m_bytes.append(reinterpret_cast<const char*>(&v), 8); }
    void f32(float v) { m_bytes.append(reinterpret_cast<const char*>(&v), 4); }
    void kvU32(const std::string& k, std::uint32_t v) { str(k), u32(4), u32(v), ++kvs; }
    void kvF32(const std::string& k, float v) { str(k), u32(6), f32(v), ++kvs; }
    void kvStr(const std::string& k, const std::string& v) { str(k), u32(8), str(v), ++kvs; }
    void kvBool(const std::string& k, bool v) { str(k), u32(7), m_bytes.push_back(v ? 1 : 0), ++kvs; }
    void kvStrings(const std::string& k, const std::vector<std::string>& v)
    {
        str(k), u32(9), u32(8), u64(v.size());
        for (const auto& s : v)
            str(s);
        ++kvs;
    }
    void kvI32s(const std::string& k, const std::vector<std::int32_t>& v)
    {
        str(k), u32(9), u32(5), u64(v.size());
        for (auto x : v)
            u32(static_cast<std::uint32_t>(x));
        ++kvs;
    }
    std::string& bytes() { return m_bytes; }
    std::uint64_t kvs = 0;

private:
    std::string m_bytes;
};

// GGUF type ids, block sizes and bytes per block of the types written here.
struct BlockType {
    std::uint32_t id;
    int block, bytes;
};
constexpr BlockType kF32{0, 1, 4}, kF16{1, 1, 2}, kBF16{30, 1, 2}, kQ8_0{8, 32, 34}, kQ4_K{12, 256, 144}, kQ6_K{14, 256, 210},
                    kMXFP4{39, 32, 17};

BlockType typeFor(const TensorPlan& t, const std::string& format, int layers, bool tied)
{
    if (t.shape.size() == 1 || t.keepF32)
        return kF32;
    if (format == "f16")
        return kF16;
    if (format == "bf16-gguf")
        return kBF16;
    if (format == "q8_0")
        return kQ8_0;
    if (format == "mxfp4") // as gpt-oss is released: the experts' matrices MXFP4, the others 8-bit
        return t.shape.size() == 3 ? kMXFP4 : kQ8_0;
    // q4_k_m: Q6_K for the output (the embedding when it doubles as the output) and, in the layers llama.cpp's preset
    // favours (the first and last eighth and every third between), for attn_v and ffn_down; Q4_K elsewhere.
    if (t.ggufName == "output.weight" || (tied && t.ggufName == "token_embd.weight"))
        return kQ6_K;
    if (t.perLayerMoreBits) {
        const int l = t.layer, n = layers;
        if (l < n / 8 || l >= 7 * n / 8 || (l - n / 8) % 3 == 2)
            return kQ6_K;
    }
    return kQ4_K;
}

// Random blocks whose f16 scales are finite and sized so values have roughly standard deviation sd.
void fillBlock(const BlockType& type, std::uint8_t* b, float sd, FastRandom& rng)
{
    for (int i = 0; i < type.bytes; i += 8) {
        const std::uint64_t r = rng.next();
        std::memcpy(b + i, &r, static_cast<std::size_t>(std::min(8, type.bytes - i)));
    }
    auto putHalf = [&](int at, float v) {
        const std::uint16_t h = halfBits(v);
        std::memcpy(b + at, &h, 2);
    };
    if (type.id == kQ8_0.id) {
        putHalf(0, sd / 74.0f);
    } else if (type.id == kQ4_K.id) {
        putHalf(0, sd / 90.0f);
        putHalf(2, sd / 180.0f);
    } else if (type.id == kQ6_K.id) {
        putHalf(208, sd / 1200.0f);
    } else if (type.id == kMXFP4.id) { // an E8M0 exponent (ggml halves it): codes up to 6 times 2^(e - 128)
        b[0] = static_cast<std::uint8_t>(std::clamp(128.0f + std::round(std::log2(sd / 3.0f)), 1.0f, 254.0f));
    }
}

void streamTensor(std::ofstream& out, const TensorPlan& t, const BlockType& type, FastRandom& rng)
{
    const std::int64_t n = numel(t.shape);
    if (type.id == kF32.id) {
        std::vector<float> v(static_cast<std::size_t>(n), 1.0f);
        if (t.sd != 0)
            for (float& x : v)
                x = rng.symmetric(t.sd);
        out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(n * 4));
        return;
    }
    if (type.id == kF16.id || type.id == kBF16.id) {
        streamHalfValues(out, n, t.sd, type.id == kBF16.id, rng);
        return;
    }
    const std::int64_t blocks = n / type.block;
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(type.bytes) * 4096);
    for (std::int64_t done = 0; done < blocks;) {
        const std::int64_t k = std::min<std::int64_t>(4096, blocks - done);
        for (std::int64_t i = 0; i < k; ++i)
            fillBlock(type, buf.data() + i * type.bytes, t.sd, rng);
        out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(k * type.bytes));
        done += k;
    }
}

// The tokenizer's metadata as llama.cpp's converter writes it for the architecture (pre-tokenizer, BOS and EOS).
void addTokenizer(GgufHeader& h, const std::string& tokenizerJson, int vocab, const std::string& arch)
{
    if (tokenizerJson.empty())
        return;
    const auto j = readJsonFile(tokenizerJson);
    std::vector<std::string> tokens(static_cast<std::size_t>(vocab));
    std::vector<std::int32_t> types(static_cast<std::size_t>(vocab), 1);
    for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it) {
        const int id = it->get<int>();
        if (id < vocab)
            tokens[static_cast<std::size_t>(id)] = it.key();
    }
    for (const auto& a : j["added_tokens"]) {
        const int id = a["id"].get<int>();
        if (id < vocab) {
            tokens[static_cast<std::size_t>(id)] = a["content"].get<std::string>();
            types[static_cast<std::size_t>(id)] = a.value("special", false) ? 3 : 4;
        }
    }
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i].empty())
            tokens[i] = "[PAD" + std::to_string(i) + "]";
    // A merge whose result lies past the vocabulary (a stand-in tokenizer larger than the shape's) is left out.
    const std::set<std::string> kept(tokens.begin(), tokens.end());
    std::vector<std::string> merges;
    for (const auto& m : j["model"]["merges"]) {
        const std::string merge = m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>();
        const auto space = merge.find(' ');
        if (space != std::string::npos && kept.count(merge.substr(0, space) + merge.substr(space + 1)))
            merges.push_back(merge);
    }
    // (gpt-oss's o200k tokenizer is not among the test data: Qwen3's stands in for it, padded to its vocabulary)
    // (Granite's StarCoder-style tokenizer is not among them either: GPT-NeoX's stands in, its tokens past Granite's
    // vocabulary and the merges that make them left out)
    const bool qwen = arch == "qwen3moe" || arch == "gpt-oss", olmoe = arch == "olmoe" || arch == "granitemoe";
    h.kvStr("tokenizer.ggml.model", "gpt2");
    h.kvStr("tokenizer.ggml.pre", qwen ? "qwen2" : olmoe ? "gpt-2" : "llama-bpe");
    h.kvStrings("tokenizer.ggml.tokens", tokens);
    h.kvI32s("tokenizer.ggml.token_type", types);
    h.kvStrings("tokenizer.ggml.merges", merges);
    h.kvU32("tokenizer.ggml.bos_token_id", qwen ? 151643 : olmoe ? 0 : 128000);
    h.kvU32("tokenizer.ggml.eos_token_id", qwen ? 151645 : olmoe ? 0 : 128001);
    h.kvBool("tokenizer.ggml.add_bos_token", !qwen && !olmoe);
}

fs::path writeGguf(const BigLlamaShape& s, const std::string& format, const fs::path& path, const std::string& tokenizerJson)
{
    constexpr std::uint64_t kAlign = 32;
    const auto tensors = plan(s);
    GgufHeader kv;
    const std::string a = s.arch + ".";
    const auto d = static_cast<std::uint32_t>(s.headDim > 0 ? s.headDim : s.hidden / s.heads);
    kv.kvStr("general.architecture", s.arch);
    kv.kvStr("general.name", "random " + s.name + " (attnscope-bench)");
    kv.kvU32(a + "context_length", 131072);
    kv.kvU32(a + "embedding_length", static_cast<std::uint32_t>(s.hidden));
    kv.kvU32(a + "block_count", static_cast<std::uint32_t>(s.layers));
    kv.kvU32(a + "feed_forward_length", static_cast<std::uint32_t>(s.experts > 0 && s.arch == "olmoe" ? s.expertIntermediate
                                                                                                       : s.intermediate));
    kv.kvU32(a + "attention.head_count", static_cast<std::uint32_t>(s.heads));
    kv.kvU32(a + "attention.head_count_kv", static_cast<std::uint32_t>(s.kvHeads));
    kv.kvU32(a + "rope.dimension_count", d);
    kv.kvF32(a + "rope.freq_base", s.arch == "llama"     ? 500000.0f
                                    : s.arch == "olmoe" || s.arch == "granitemoe" ? 10000.0f
                                    : s.gptOss           ? 150000.0f
                                                         : 1000000.0f);
    kv.kvF32(a + "attention.layer_norm_rms_epsilon", s.arch == "qwen3moe" || s.arch == "granitemoe" ? 1e-6f : 1e-5f);
    if (s.arch == "granitemoe") { // Granite's multipliers, as its converter writes them
        kv.kvF32(a + "attention.scale", 0.015625f);
        kv.kvF32(a + "embedding_scale", 12.0f);
        kv.kvF32(a + "residual_scale", 0.22f);
        kv.kvF32(a + "logit_scale", 6.0f);
    }
    kv.kvU32(a + "vocab_size", static_cast<std::uint32_t>(s.vocab));
    if (s.headDim > 0) {
        kv.kvU32(a + "attention.key_length", d);
        kv.kvU32(a + "attention.value_length", d);
    }
    if (s.gptOss) { // gpt-oss's rope and window, as its converter writes them
        kv.kvStr(a + "rope.scaling.type", "yarn");
        kv.kvF32(a + "rope.scaling.factor", 32.0f);
        kv.kvU32(a + "rope.scaling.original_context_length", 4096);
        kv.kvF32(a + "rope.scaling.yarn_beta_fast", 32.0f);
        kv.kvF32(a + "rope.scaling.yarn_beta_slow", 1.0f);
        kv.kvU32(a + "attention.sliding_window", static_cast<std::uint32_t>(s.slidingWindow));
    }
    if (s.experts > 0) {
        kv.kvU32(a + "expert_count", static_cast<std::uint32_t>(s.experts));
        kv.kvU32(a + "expert_used_count", static_cast<std::uint32_t>(s.expertsUsed));
        if (s.arch != "olmoe")
            kv.kvU32(a + "expert_feed_forward_length", static_cast<std::uint32_t>(s.expertIntermediate));
    }
    addTokenizer(kv, tokenizerJson, s.vocab, s.arch);

    GgufHeader head;
    head.u32(0x46554747u); // "GGUF"
    head.u32(3);
    head.u64(tensors.size());
    head.u64(kv.kvs);
    head.bytes() += kv.bytes();
    std::uint64_t offset = 0;
    std::vector<BlockType> types;
    for (const auto& t : tensors) {
        const BlockType type = typeFor(t, format, s.layers, s.tied);
        types.push_back(type);
        head.str(t.ggufName);
        head.u32(static_cast<std::uint32_t>(t.shape.size()));
        for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) // ggml order: the contiguous dimension first
            head.u64(static_cast<std::uint64_t>(*it));
        head.u32(type.id);
        head.u64(offset);
        offset += (static_cast<std::uint64_t>(numel(t.shape)) / type.block * type.bytes + kAlign - 1) / kAlign * kAlign;
    }
    head.bytes().append((kAlign - head.bytes().size() % kAlign) % kAlign, '\0');
    const fs::path tmp = path.string() + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    out.write(head.bytes().data(), static_cast<std::streamsize>(head.bytes().size()));
    FastRandom rng(9);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::uint64_t before = static_cast<std::uint64_t>(out.tellp());
        streamTensor(out, tensors[i], types[i], rng);
        const std::uint64_t written = static_cast<std::uint64_t>(out.tellp()) - before;
        const std::string pad((kAlign - written % kAlign) % kAlign, '\0');
        out.write(pad.data(), static_cast<std::streamsize>(pad.size()));
    }
    out.close();
    if (!out)
        throw Error(ErrorCode::Io, "could not write the GGUF file (disk full?)", tmp.string());
    fs::rename(tmp, path);
    return path;
}

} // namespace

namespace {
// The shapes, from each model's published config.json: a row each.
const std::vector<BigLlamaShape>& bigShapes()
{
    static const std::vector<BigLlamaShape> shapes = {
        {.name = "llama-3.2-1b", .hidden = 2048, .layers = 16, .heads = 32, .kvHeads = 8, .intermediate = 8192, .vocab = 128256, .tied = true},
        {.name = "llama-3.2-3b", .hidden = 3072, .layers = 28, .heads = 24, .kvHeads = 8, .intermediate = 8192, .vocab = 128256, .tied = true},
        {.name = "llama-3.1-8b", .hidden = 4096, .layers = 32, .heads = 32, .kvHeads = 8, .intermediate = 14336, .vocab = 128256, .tied = false},
        // Qwen/Qwen3-30B-A3B
        {.name = "qwen3-30b-a3b", .hidden = 2048, .layers = 48, .heads = 32, .kvHeads = 4, .intermediate = 6144, .vocab = 151936,
         .tied = false, .arch = "qwen3moe", .headDim = 128, .experts = 128, .expertsUsed = 8, .expertIntermediate = 768,
         .qkNorm = true},
        // allenai/OLMoE-1B-7B-0924
        {.name = "olmoe-1b-7b", .hidden = 2048, .layers = 16, .heads = 16, .kvHeads = 16, .intermediate = 1024, .vocab = 50304,
         .tied = false, .arch = "olmoe", .experts = 64, .expertsUsed = 8, .expertIntermediate = 1024, .qkNorm = true,
         .qkNormWhole = true},
        // ibm-granite/granite-3.0-3b-a800m (3.1: the same shape)
        {.name = "granite-3b-a800m", .hidden = 1536, .layers = 32, .heads = 24, .kvHeads = 8, .intermediate = 512, .vocab = 49155,
         .tied = true, .arch = "granitemoe", .experts = 40, .expertsUsed = 8, .expertIntermediate = 512},
        // openai/gpt-oss-20b
        {.name = "gpt-oss-20b", .hidden = 2880, .layers = 24, .heads = 64, .kvHeads = 8, .intermediate = 2880, .vocab = 201088,
         .tied = false, .arch = "gpt-oss", .headDim = 64, .experts = 32, .expertsUsed = 4, .expertIntermediate = 2880,
         .slidingWindow = 128, .gptOss = true},
    };
    return shapes;
}
} // namespace

BigLlamaShape bigLlamaShape(const std::string& name)
{
    std::string names;
    for (const auto& s : bigShapes()) {
        if (s.name == name)
            return s;
        names += (names.empty() ? "" : ", ") + s.name;
    }
    throw Error(ErrorCode::BadInput, "unknown shape \"" + name + "\" (" + names + ")");
}

bool isBigLlamaShape(const std::string& name)
{
    // Any Llama 3 name is one of these (an unknown one is refused with the list of those there are).
    return name.rfind("llama-3.", 0) == 0 || std::any_of(bigShapes().begin(), bigShapes().end(),
                                                         [&](const BigLlamaShape& s) { return s.name == name; });
}

fs::path bigLlamaModel(const BigLlamaShape& shape, const std::string& format, const fs::path& root,
                       const std::string& tokenizerJson)
{
    fs::create_directories(root);
    if (format == "bf16" && shape.experts > 0)
        throw Error(ErrorCode::BadInput, "the mixture-of-experts shapes are written as GGUF files only (f16, q8_0, q4_k_m)");
    if (format == "bf16") {
        const fs::path dir = root / (shape.name + "-bf16");
        if (!fs::exists(dir / "model.safetensors.index.json")) {
            writeSafetensorsFolder(shape, dir);
            nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"},
                                  {"hidden_size", shape.hidden},          {"intermediate_size", shape.intermediate},
                                  {"num_attention_heads", shape.heads},    {"num_key_value_heads", shape.kvHeads},
                                  {"num_hidden_layers", shape.layers},     {"rms_norm_eps", 1e-5},
                                  {"rope_theta", 500000.0},                {"max_position_embeddings", 131072},
                                  {"tie_word_embeddings", shape.tied},     {"vocab_size", shape.vocab},
                                  {"hidden_act", "silu"},                  {"torch_dtype", "bfloat16"},
                                  {"bos_token_id", 128000},                {"eos_token_id", 128001},
                                  {"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                                                    {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}}}};
            std::ofstream(dir / "config.json") << cfg.dump(2);
            if (!tokenizerJson.empty())
                fs::copy_file(tokenizerJson, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
        }
        return dir;
    }
    if (format != "f16" && format != "q8_0" && format != "q4_k_m" && format != "bf16-gguf" && format != "mxfp4")
        throw Error(ErrorCode::BadInput, "unknown format \"" + format + "\" (bf16, bf16-gguf, f16, q8_0, q4_k_m, mxfp4)");
    const std::string stem = format == "bf16-gguf" ? "bf16" : format;
    const fs::path file = root / (shape.name + "-" + stem + ".gguf");
    if (!fs::exists(file))
        writeGguf(shape, format, file, tokenizerJson);
    return file;
}

int blockDecodeSpeed(int megabytes, int rounds, const std::string& only)
{
    if (megabytes < 1 || megabytes > 4096 || rounds < 1 || rounds > 1000) {
        std::fprintf(stderr, "attnscope-bench decode: --megabytes 1..4096 and --rounds 1..1000\n");
        return 2;
    }
    FastRandom rng(7);
    for (const auto& [name, type] : {std::pair{"Q8_0", kQ8_0}, std::pair{"Q4_K", kQ4_K}, std::pair{"Q6_K", kQ6_K}}) {
        if (!only.empty() && only != name)
            continue;
        const std::int64_t blocks = static_cast<std::int64_t>(megabytes) * 1048576 / type.bytes;
        std::vector<std::uint8_t> data(static_cast<std::size_t>(blocks * type.bytes));
        for (std::int64_t i = 0; i < blocks; ++i)
            fillBlock(type, data.data() + i * type.bytes, 0.02f, rng);
        const auto decode = core::blockDecoder(static_cast<core::GgmlType>(type.id));
        std::vector<float> out(static_cast<std::size_t>(type.block));
        double best = 1e30, sum = 0;
        for (int r = 0; r < rounds; ++r) {
            const auto t0 = Clock::now();
            for (std::int64_t i = 0; i < blocks; ++i) {
                decode(data.data() + i * type.bytes, out.data()); // one block at a time, as the packing step decodes
                sum += out[static_cast<std::size_t>(i % type.block)];
            }
            best = std::min(best, seconds(t0, Clock::now()));
        }
        std::printf("decode %s: %.0f M elements/s (%lld blocks, best of %d; checksum %g)\n", name,
                    static_cast<double>(blocks) * type.block / best / 1e6, static_cast<long long>(blocks), rounds, sum);
    }
    return 0;
}

} // namespace attnscope::bench
