// seq2seqTranslate: the encoder-decoder benchmark (docs/performance.md, "Encoder-decoder models").
#include "seq2seq_bench.h"

#include "bench_clock.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "model/seq2seq.h"
#include "run/text_capture.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/memory_info.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>

namespace fs = std::filesystem;

namespace attnscope::bench {

namespace {
using core::OutputTensor;

struct Shape {
    bool t5 = false;
    int layers = 6, d = 512, heads = 8, dHead = 64, ffn = 2048, vocab = 58101;
};

// Writes (once) a random model folder of the shape under the system temp folder.
fs::path randomSeq2Seq(const std::string& name, const Shape& s)
{
    const fs::path dir = fs::temp_directory_path() / "attnscope-bench-models" / ("seq2seq-" + name);
    if (fs::exists(dir / "model.safetensors"))
        return dir;
    fs::create_directories(dir);
    std::mt19937 rng(7);
    std::vector<OutputTensor> w;
    auto normal = [&](const std::string& n, core::Shape shape, float sd) {
        std::normal_distribution<float> nd(0.0f, sd);
        OutputTensor t{n, shape, std::vector<float>(static_cast<std::size_t>(core::shapeNumel(shape)))};
        for (auto& v : t.data)
            v = nd(rng);
        w.push_back(std::move(t));
    };
    auto ones = [&](const std::string& n, std::int64_t len) {
        w.push_back({n, {len}, std::vector<float>(static_cast<std::size_t>(len), 1.0f)});
    };
    const std::int64_t d = s.d, A = static_cast<std::int64_t>(s.heads) * s.dHead, F = s.ffn;
    nlohmann::json cfg;
    if (s.t5) {
        normal("shared.weight", {s.vocab, d}, 1.0f);
        for (const char* stack : {"encoder", "decoder"}) {
            const std::string st = stack;
            const bool dec = st == "decoder";
            normal(st + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight", {32, s.heads}, 0.5f);
            for (int l = 0; l < s.layers; ++l) {
                const std::string b = st + ".block." + std::to_string(l) + ".layer.";
                for (const char* p : {"q", "k", "v"})
                    normal(b + "0.SelfAttention." + p + ".weight", {A, d}, 0.05f);
                normal(b + "0.SelfAttention.o.weight", {d, A}, 0.05f);
                ones(b + "0.layer_norm.weight", d);
                const std::string ff = dec ? "2" : "1";
                if (dec) {
                    for (const char* p : {"q", "k", "v"})
                        normal(b + "1.EncDecAttention." + p + ".weight", {A, d}, 0.05f);
                    normal(b + "1.EncDecAttention.o.weight", {d, A}, 0.05f);
                    ones(b + "1.layer_norm.weight", d);
                }
                normal(b + ff + ".DenseReluDense.wi.weight", {F, d}, 0.05f);
                normal(b + ff + ".DenseReluDense.wo.weight", {d, F}, 0.05f);
                ones(b + ff + ".layer_norm.weight", d);
            }
            ones(st + ".final_layer_norm.weight", d);
        }
        cfg = {{"model_type", "t5"}, {"d_model", d}, {"d_kv", s.dHead}, {"d_ff", F}, {"num_heads", s.heads},
               {"num_layers", s.layers}, {"num_decoder_layers", s.layers}, {"vocab_size", s.vocab},
               {"feed_forward_proj", "relu"}, {"decoder_start_token_id", 0}, {"eos_token_id", 1}, {"pad_token_id", 0}};
    } else {
        normal("model.shared.weight", {s.vocab, d}, 0.05f);
        w.push_back({"final_logits_bias", {1, s.vocab}, std::vector<float>(static_cast<std::size_t>(s.vocab), 0.0f)});
        for (const char* stack : {"encoder", "decoder"}) {
            const std::string st = std::string("model.") + stack;
            const bool dec = std::string(stack) == "decoder";
            for (int l = 0; l < s.layers; ++l) {
                const std::string b = st + ".layers." + std::to_string(l) + ".";
                auto attention = [&](const std::string& a) {
                    for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
                        normal(b + a + "." + p + ".weight", {d, d}, 0.05f);
                        normal(b + a + "." + p + ".bias", {d}, 0.01f);
                    }
                };
                auto norm = [&](const std::string& n) {
                    ones(b + n + ".weight", d);
                    w.push_back({b + n + ".bias", {d}, std::vector<float>(static_cast<std::size_t>(d), 0.0f)});
                };
                attention("self_attn");
                norm("self_attn_layer_norm");
                if (dec) {
                    attention("encoder_attn");
                    norm("encoder_attn_layer_norm");
                }
                normal(b + "fc1.weight", {F, d}, 0.05f);
                normal(b + "fc1.bias", {F}, 0.01f);
                normal(b + "fc2.weight", {d, F}, 0.05f);
                normal(b + "fc2.bias", {d}, 0.01f);
                norm("final_layer_norm");
            }
        }
        cfg = {{"model_type", "marian"}, {"d_model", d}, {"encoder_layers", s.layers}, {"decoder_layers", s.layers},
               {"encoder_attention_heads", s.heads}, {"decoder_attention_heads", s.heads}, {"encoder_ffn_dim", F},
               {"decoder_ffn_dim", F}, {"vocab_size", s.vocab}, {"max_position_embeddings", 512},
               {"activation_function", "swish"}, {"scale_embedding", true}, {"pad_token_id", s.vocab - 1},
               {"eos_token_id", 0}, {"decoder_start_token_id", s.vocab - 1}};
    }
    core::writeSafetensors((dir / "model.safetensors").string(), w, {{"source", "attnscope-bench (random weights)"}});
    std::ofstream(dir / "config.json") << cfg.dump(2);
    return dir;
}
} // namespace

int seq2seqTranslate(const std::string& name, int sourceTokens, int newTokens, int threads, int rounds)
{
    Shape s;
    if (name == "t5-small") {
        s.t5 = true;
        s.vocab = 32128;
    } else if (name != "marian") {
        std::fprintf(stderr, "attnscope-bench seq2seq: --shape marian or t5-small\n");
        return 2;
    }
    omp_set_num_threads(threads);
    const bool wroteModel = !fs::exists(fs::temp_directory_path() / "attnscope-bench-models" / ("seq2seq-" + name) /
                                     "model.safetensors");
    const fs::path dir = randomSeq2Seq(name, s);
    const auto loaded = core::loadModel(dir.string());
    const auto& info = loaded.model->info();
    const auto tokenizer = core::loadModelTokenizer(loaded); // the folder has none: ids spelled as themselves
    std::mt19937 rng(1);
    core::CaptureOptions options;
    options.streams.resize(info.streams.size());
    for (int t = 0; t < sourceTokens; ++t) {
        const auto id = static_cast<std::int32_t>(rng() % static_cast<unsigned>(s.vocab - 2)) + 1;
        options.streams[static_cast<std::size_t>(info.typedReadStream())].tokens.push_back({id, std::to_string(id), 0, 0});
    }
    const auto& target = info.streams[static_cast<std::size_t>(info.segmentStream())];
    const std::vector<core::Token> start{{target.startToken, tokenizer->pieceOf(target.startToken), 0, 0}};
    std::vector<double> times;
    std::size_t kept = 0, written = 0;
    for (int r = 0; r < rounds + 1; ++r) { // the first round maps the weights in: not counted
        const auto t0 = Clock::now();
        // The app's translation: every written token continues the capture through the decoder's cache.
        const auto capture = core::writeGreedily(*loaded.model, start, newTokens, *tokenizer, options);
        const double dt = seconds(t0, Clock::now());
        if (r > 0)
            times.push_back(dt);
        kept = capture->bytes();
        written = capture->tokens.size() - start.size();
    }
    std::sort(times.begin(), times.end());
    const double weights = static_cast<double>(fs::file_size(dir / "model.safetensors"));
    const double peak = static_cast<double>(core::peakResidentBytes());
    std::printf("seq2seq %s: %d source tokens -> %zu target tokens (at most %d), every site's score inputs kept (%.2f MiB), "
                "%d threads\n",
                name.c_str(), sourceTokens, written, newTokens, kept / 1048576.0, threads);
    std::printf("translate_seconds_median: %.3f (min %.3f, max %.3f over %d rounds)\n", times[times.size() / 2],
                times.front(), times.back(), rounds);
    std::printf("weights_mib: %.0f peak_resident_mib: %.0f ratio: %.2f\n", weights / 1048576.0, peak / 1048576.0,
                peak / weights);
    if (wroteModel)
        std::printf("(this run wrote the random model: its peak includes the weights drawn in memory; run again)\n");
    return 0;
}

} // namespace attnscope::bench
