// Random model writers.
#include "random_models.h"

#include "io/safetensors.h"
#include "tokenize/id_tokenizer.h"
#include "util/error.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

namespace fs = std::filesystem;
using namespace attnscope::core;

namespace attnscope::bench {

namespace {
class Draw {
public:
    explicit Draw(unsigned seed)
        : m_rng(seed)
    {
    }
    OutputTensor normal(std::string name, Shape s, float stddev, DType dtype = DType::F32)
    {
        std::normal_distribution<float> nd(0.0f, stddev);
        OutputTensor t{std::move(name), s, std::vector<float>(static_cast<std::size_t>(shapeNumel(s))), dtype};
        for (auto& v : t.data)
            v = nd(m_rng);
        return t;
    }
    static OutputTensor constant(std::string name, Shape s, float v, DType dtype = DType::F32)
    {
        return {std::move(name), s, std::vector<float>(static_cast<std::size_t>(shapeNumel(s)), v), dtype};
    }

private:
    std::mt19937 m_rng;
};
} // namespace

TransfoXLShape wt103Shape()
{
    TransfoXLShape s;
    s.layers = 18, s.heads = 16, s.dModel = 1024, s.dHead = 64, s.dInner = 4096, s.memLen = 1600, s.tgtLen = 128;
    s.vocab = 267735, s.cutoffs = {20000, 40000, 200000}, s.divVal = 4, s.clampLen = 1000, s.sameLength = true;
    s.untieR = true, s.name = "wt103";
    return s;
}

fs::path randomTransfoXL(const TransfoXLShape& o)
{
    const fs::path dir = fs::temp_directory_path() /
                         ("attnscope-bench-txl-" + (o.name.empty() ? std::to_string(o.layers) + "x" + std::to_string(o.heads) +
                                                                         "x" + std::to_string(o.dModel)
                                                                   : o.name));
    if (fs::exists(dir / "model.safetensors") && fs::exists(dir / "config.json"))
        return dir;
    fs::create_directories(dir);
    nlohmann::json cfg = {{"model_type", "transfo-xl"}, {"vocab_size", o.vocab}, {"d_model", o.dModel},
                          {"d_embed", o.dModel},        {"n_head", o.heads},     {"d_head", o.dHead},
                          {"d_inner", o.dInner},        {"n_layer", o.layers},   {"mem_len", o.memLen},
                          {"tgt_len", o.tgtLen},        {"cutoffs", o.cutoffs},
                          {"div_val", o.divVal},        {"clamp_len", o.clampLen}, {"same_length", o.sameLength},
                          {"untie_r", o.untieR}};
    std::ofstream(dir / "config.json") << cfg.dump(2);
    Draw draw(7);
    std::vector<OutputTensor> w;
    const std::int64_t d = o.dModel, hd = static_cast<std::int64_t>(o.heads) * o.dHead;
    const std::string t = "transformer.";
    if (o.cutoffs.empty()) {
        w.push_back(draw.normal(t + "word_emb.emb_layers.0.weight", {o.vocab, d}, 0.02f));
    } else { // cluster c: words [cut(c-1), cut(c)) embedded in d / div_val^c, projected up to d
        std::vector<std::int64_t> ends(o.cutoffs.begin(), o.cutoffs.end());
        ends.push_back(o.vocab);
        std::int64_t start = 0, dEmb = d;
        for (std::size_t c = 0; c < ends.size(); ++c, dEmb /= o.divVal) {
            const std::string i = std::to_string(c);
            w.push_back(draw.normal(t + "word_emb.emb_layers." + i + ".weight", {ends[c] - start, dEmb}, 1.0f));
            w.push_back(draw.normal(t + "word_emb.emb_projs." + i, {d, dEmb},
                                    1.0f / std::sqrt(static_cast<float>(dEmb * d))));
            start = ends[c];
        }
    }
    if (!o.untieR) {
        w.push_back(draw.normal(t + "r_w_bias", {o.heads, o.dHead}, 0.02f));
        w.push_back(draw.normal(t + "r_r_bias", {o.heads, o.dHead}, 0.02f));
    }
    for (int l = 0; l < o.layers; ++l) {
        const std::string p = t + "layers." + std::to_string(l) + ".";
        if (o.untieR) {
            w.push_back(draw.normal(p + "dec_attn.r_w_bias", {o.heads, o.dHead}, 0.02f));
            w.push_back(draw.normal(p + "dec_attn.r_r_bias", {o.heads, o.dHead}, 0.02f));
        }
        w.push_back(draw.normal(p + "dec_attn.qkv_net.weight", {3 * hd, d}, 0.02f));
        w.push_back(draw.normal(p + "dec_attn.r_net.weight", {hd, d}, 0.02f));
        w.push_back(draw.normal(p + "dec_attn.o_net.weight", {d, hd}, 0.02f));
        w.push_back(Draw::constant(p + "dec_attn.layer_norm.weight", {d}, 1));
        w.push_back(Draw::constant(p + "dec_attn.layer_norm.bias", {d}, 0));
        w.push_back(draw.normal(p + "pos_ff.CoreNet.0.weight", {o.dInner, d}, 0.02f));
        w.push_back(Draw::constant(p + "pos_ff.CoreNet.0.bias", {o.dInner}, 0));
        w.push_back(draw.normal(p + "pos_ff.CoreNet.3.weight", {d, o.dInner}, 0.02f));
        w.push_back(Draw::constant(p + "pos_ff.CoreNet.3.bias", {d}, 0));
        w.push_back(Draw::constant(p + "pos_ff.layer_norm.weight", {d}, 1));
        w.push_back(Draw::constant(p + "pos_ff.layer_norm.bias", {d}, 0));
    }
    writeSafetensors((dir / "model.safetensors").string(), w);
    return dir;
}

LlamaShape llamaShape(const std::string& name)
{
    if (name == "smollm2-135m")
        return {name, 576, 30, 9, 3, 1536, 49152, 8192, 100000.0, true};
    if (name == "llama-1b")
        return {name, 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0, true};
    if (name == "tiny")
        return {name, 64, 2, 8, 2, 128, 100, 2048, 10000.0, false};
    throw Error(ErrorCode::BadInput, "unknown shape \"" + name + "\" (smollm2-135m, llama-1b, tiny)");
}

void writeRandomLlama(const LlamaShape& s, const fs::path& dir, DType dtype, const std::string& tokenizerJson)
{
    fs::create_directories(dir);
    const int d = s.hidden / s.heads;
    nlohmann::json cfg = {{"architectures", {"LlamaForCausalLM"}},
                          {"model_type", "llama"},
                          {"hidden_size", s.hidden},
                          {"intermediate_size", s.intermediate},
                          {"num_attention_heads", s.heads},
                          {"num_key_value_heads", s.kvHeads},
                          {"num_hidden_layers", s.layers},
                          {"rms_norm_eps", 1e-5},
                          {"rope_theta", s.ropeTheta},
                          {"max_position_embeddings", s.maxPositions},
                          {"tie_word_embeddings", s.tied},
                          {"vocab_size", s.vocab},
                          {"hidden_act", "silu"},
                          {"torch_dtype", dtype == DType::BF16 ? "bfloat16" : "float32"}};
    if (s.name == "llama-1b")
        cfg["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                               {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    std::ofstream(dir / "config.json") << cfg.dump(2);
    Draw draw(4001);
    const std::int64_t C = s.hidden, Q = static_cast<std::int64_t>(s.heads) * d, KV = static_cast<std::int64_t>(s.kvHeads) * d;
    const float inv = 1.0f / std::sqrt(static_cast<float>(C));
    std::vector<OutputTensor> w;
    w.push_back(draw.normal("model.embed_tokens.weight", {s.vocab, C}, 1.0f, dtype));
    if (!s.tied)
        w.push_back(draw.normal("lm_head.weight", {s.vocab, C}, inv, dtype));
    w.push_back(Draw::constant("model.norm.weight", {C}, 1, dtype));
    for (int l = 0; l < s.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        w.push_back(Draw::constant(p + "input_layernorm.weight", {C}, 1, dtype));
        w.push_back(Draw::constant(p + "post_attention_layernorm.weight", {C}, 1, dtype));
        w.push_back(draw.normal(p + "self_attn.q_proj.weight", {Q, C}, 1.5f * inv, dtype));
        w.push_back(draw.normal(p + "self_attn.k_proj.weight", {KV, C}, 1.5f * inv, dtype));
        w.push_back(draw.normal(p + "self_attn.v_proj.weight", {KV, C}, inv, dtype));
        w.push_back(draw.normal(p + "self_attn.o_proj.weight", {C, Q}, 0.8f / std::sqrt(static_cast<float>(Q)), dtype));
        w.push_back(draw.normal(p + "mlp.gate_proj.weight", {s.intermediate, C}, inv, dtype));
        w.push_back(draw.normal(p + "mlp.up_proj.weight", {s.intermediate, C}, inv, dtype));
        w.push_back(draw.normal(p + "mlp.down_proj.weight", {C, s.intermediate}, 0.8f / std::sqrt(static_cast<float>(s.intermediate)), dtype));
    }
    writeSafetensors((dir / "model.safetensors").string(), w, {{"format", "pt"}});
    if (!tokenizerJson.empty())
        fs::copy_file(tokenizerJson, dir / "tokenizer.json", fs::copy_options::overwrite_existing);
}

fs::path randomGpt2SmallFolder()
{
    const fs::path dir = fs::temp_directory_path() / "attnscope-bench-gpt2-small-f32";
    if (fs::exists(dir / "model.safetensors"))
        return dir;
    fs::create_directories(dir);
    const std::int64_t C = 768, layers = 12, heads = 12, vocab = 50257, positions = 1024;
    std::ofstream(dir / "config.json") << nlohmann::json{{"architectures", {"GPT2LMHeadModel"}}, {"model_type", "gpt2"},
                                                         {"vocab_size", vocab}, {"n_positions", positions},
                                                         {"n_embd", C}, {"n_head", heads}, {"n_layer", layers},
                                                         {"activation_function", "gelu_new"},
                                                         {"layer_norm_epsilon", 1e-5}}.dump(2);
    Draw draw(4002);
    std::vector<OutputTensor> w;
    w.push_back(draw.normal("wte.weight", {vocab, C}, 0.02f));
    w.push_back(draw.normal("wpe.weight", {positions, C}, 0.01f));
    w.push_back(Draw::constant("ln_f.weight", {C}, 1));
    w.push_back(Draw::constant("ln_f.bias", {C}, 0));
    for (int l = 0; l < layers; ++l) { // Conv1D weights: [in, out]
        const std::string p = "h." + std::to_string(l) + ".";
        w.push_back(Draw::constant(p + "ln_1.weight", {C}, 1));
        w.push_back(Draw::constant(p + "ln_1.bias", {C}, 0));
        w.push_back(draw.normal(p + "attn.c_attn.weight", {C, 3 * C}, 0.06f));
        w.push_back(Draw::constant(p + "attn.c_attn.bias", {3 * C}, 0));
        w.push_back(draw.normal(p + "attn.c_proj.weight", {C, C}, 0.02f));
        w.push_back(Draw::constant(p + "attn.c_proj.bias", {C}, 0));
        w.push_back(Draw::constant(p + "ln_2.weight", {C}, 1));
        w.push_back(Draw::constant(p + "ln_2.bias", {C}, 0));
        w.push_back(draw.normal(p + "mlp.c_fc.weight", {C, 4 * C}, 0.02f));
        w.push_back(Draw::constant(p + "mlp.c_fc.bias", {4 * C}, 0));
        w.push_back(draw.normal(p + "mlp.c_proj.weight", {4 * C, C}, 0.02f));
        w.push_back(Draw::constant(p + "mlp.c_proj.bias", {C}, 0));
    }
    writeSafetensors((dir / "model.safetensors").string(), w);
    return dir;
}

fs::path randomLlamaFolder(const std::string& shapeName)
{
    const fs::path dir = fs::temp_directory_path() / ("attnscope-bench-" + shapeName + "-f32");
    if (!fs::exists(dir / "model.safetensors"))
        writeRandomLlama(llamaShape(shapeName), dir, DType::F32);
    return dir;
}

std::unique_ptr<core::Tokenizer> textTokenizer(const core::LoadedModel& loaded)
{
    if (loaded.ggufPath.empty() && !core::hasTokenizerFiles(loaded.folder))
        return nullptr; // the app would take token ids typed as numbers
    return core::loadModelTokenizer(loaded);
}

} // namespace attnscope::bench
