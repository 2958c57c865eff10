// speechTranscribe: the speech benchmark (docs/performance.md, "Speech").
#include "speech_bench.h"

#include "analysis/attention_grid.h"
#include "audio/log_mel.h"
#include "bench_clock.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "run/speech_run.h"
#include "tokenize/id_tokenizer.h"
#include "util/memory_info.h"

#include <algorithm>
#include <cmath>
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
    int layers = 6, d = 512, heads = 8, ffn = 2048, vocab = 51865, mels = 80;
};

// Writes (once) a random Whisper folder of the shape, with a 30-s recording of tones and noise beside it.
fs::path randomWhisper(const std::string& name, const Shape& s)
{
    const fs::path dir = fs::temp_directory_path() / "attnscope-bench-models" / ("speech-" + name);
    if (fs::exists(dir / "model.safetensors"))
        return dir;
    fs::create_directories(dir);
    std::mt19937 rng(11);
    std::vector<OutputTensor> w;
    auto normal = [&](const std::string& n, core::Shape shape, float sd) {
        std::normal_distribution<float> nd(0.0f, sd);
        OutputTensor t{n, shape, std::vector<float>(static_cast<std::size_t>(core::shapeNumel(shape)))};
        for (auto& v : t.data)
            v = nd(rng);
        w.push_back(std::move(t));
    };
    auto constant = [&](const std::string& n, std::int64_t len, float v) {
        w.push_back({n, {len}, std::vector<float>(static_cast<std::size_t>(len), v)});
    };
    const std::int64_t d = s.d, F = s.ffn;
    normal("model.encoder.conv1.weight", {d, s.mels, 3}, 0.06f);
    normal("model.encoder.conv1.bias", {d}, 0.05f);
    normal("model.encoder.conv2.weight", {d, d, 3}, 0.02f);
    normal("model.encoder.conv2.bias", {d}, 0.05f);
    normal("model.encoder.embed_positions.weight", {1500, d}, 0.5f);
    normal("model.decoder.embed_tokens.weight", {s.vocab, d}, 0.05f);
    normal("model.decoder.embed_positions.weight", {448, d}, 0.05f);
    for (const char* stack : {"encoder", "decoder"}) {
        const std::string st = std::string("model.") + stack;
        for (int l = 0; l < s.layers; ++l) {
            const std::string b = st + ".layers." + std::to_string(l) + ".";
            auto attention = [&](const std::string& a) {
                for (const char* p : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
                    normal(b + a + "." + p + ".weight", {d, d}, 0.05f);
                    if (std::string(p) != "k_proj")
                        normal(b + a + "." + p + ".bias", {d}, 0.01f);
                }
            };
            auto norm = [&](const std::string& n) {
                constant(b + n + ".weight", d, 1.0f);
                constant(b + n + ".bias", d, 0.0f);
            };
            attention("self_attn");
            norm("self_attn_layer_norm");
            if (std::string(stack) == "decoder") {
                attention("encoder_attn");
                norm("encoder_attn_layer_norm");
            }
            normal(b + "fc1.weight", {F, d}, 0.05f);
            normal(b + "fc1.bias", {F}, 0.01f);
            normal(b + "fc2.weight", {d, F}, 0.05f);
            normal(b + "fc2.bias", {d}, 0.01f);
            norm("final_layer_norm");
        }
        constant(st + ".layer_norm.weight", d, 1.0f);
        constant(st + ".layer_norm.bias", d, 0.0f);
    }
    core::writeSafetensors((dir / "model.safetensors").string(), w, {{"source", "attnscope-bench (random weights)"}});
    const nlohmann::json cfg = {{"model_type", "whisper"}, {"d_model", d}, {"encoder_layers", s.layers},
                                {"decoder_layers", s.layers}, {"encoder_attention_heads", s.heads},
                                {"decoder_attention_heads", s.heads}, {"encoder_ffn_dim", F}, {"decoder_ffn_dim", F},
                                {"vocab_size", s.vocab}, {"num_mel_bins", s.mels}, {"max_source_positions", 1500},
                                {"max_target_positions", 448}, {"decoder_start_token_id", 50258},
                                {"eos_token_id", 50257}, {"pad_token_id", 50257}};
    std::ofstream(dir / "config.json") << cfg.dump(2);
    // 30 s of sound: a few tones that come and go, and a little noise (16-bit PCM WAV, written by hand).
    std::vector<std::int16_t> pcm(480000);
    std::normal_distribution<double> noise(0.0, 0.02);
    for (std::size_t i = 0; i < pcm.size(); ++i) {
        const double t = static_cast<double>(i) / 16000.0;
        const double v = 0.3 * std::sin(2 * M_PI * 220 * t) * (std::fmod(t, 2.0) < 1.0) +
                         0.2 * std::sin(2 * M_PI * 660 * t) * (std::fmod(t, 3.0) < 1.5) + noise(rng);
        pcm[i] = static_cast<std::int16_t>(std::clamp(v, -1.0, 1.0) * 32767);
    }
    std::ofstream wav(dir / "audio.wav", std::ios::binary);
    auto u32 = [&](std::uint32_t v) { wav.write(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](std::uint16_t v) { wav.write(reinterpret_cast<const char*>(&v), 2); };
    wav << "RIFF";
    u32(36 + static_cast<std::uint32_t>(pcm.size() * 2));
    wav << "WAVEfmt ";
    u32(16), u16(1), u16(1), u32(16000), u32(32000), u16(2), u16(16);
    wav << "data";
    u32(static_cast<std::uint32_t>(pcm.size() * 2));
    wav.write(reinterpret_cast<const char*>(pcm.data()), static_cast<std::streamsize>(pcm.size() * 2));
    return dir;
}
} // namespace

int speechTranscribe(const std::string& name, int newTokens, int threads, int rounds)
{
    Shape s;
    if (name == "whisper-small") {
        s.layers = 12, s.d = 768, s.heads = 12, s.ffn = 3072;
    } else if (name != "whisper-base") {
        std::fprintf(stderr, "attnscope-bench speech: --shape whisper-base or whisper-small\n");
        return 2;
    }
    omp_set_num_threads(threads);
    const bool wroteModel = !fs::exists(fs::temp_directory_path() / "attnscope-bench-models" / ("speech-" + name) /
                                     "model.safetensors");
    const fs::path dir = randomWhisper(name, s);
    const auto loaded = core::loadModel(dir.string());
    const core::IdTokenizer tokenizer(s.vocab);
    std::vector<double> whole, features, grid;
    std::size_t kept = 0, tokens = 0;
    for (int r = 0; r < rounds + 1; ++r) { // the first round maps the weights in: not counted
        const auto t0 = Clock::now();
        const auto f = core::audioFeaturesOfFile(*loaded.model, dir.string(), (dir / "audio.wav").string());
        const double tf = seconds(t0, Clock::now());
        const auto capture = core::captureRecording(*loaded.model, dir.string(), tokenizer, f, "", newTokens, {});
        const double dt = seconds(t0, Clock::now());
        const auto g0 = Clock::now();
        const auto encoderHead = core::attentionGrid(*capture, 0, 0, std::vector<int>{0}, core::GridOptions{}); // 1500 x 1500
        const double dg = seconds(g0, Clock::now());
        if (r > 0) {
            whole.push_back(dt);
            features.push_back(tf);
            grid.push_back(dg);
        }
        kept = capture->bytes();
        tokens = capture->tokens.size();
        (void)encoderHead;
    }
    for (auto* v : {&whole, &features, &grid})
        std::sort(v->begin(), v->end());
    const double weights = static_cast<double>(fs::file_size(dir / "model.safetensors"));
    const double peak = static_cast<double>(core::peakResidentBytes());
    std::printf("speech %s: 30 s of audio -> %zu transcript tokens (the prompt and %d written), every site's score "
                "inputs kept (%.1f MiB), %d threads\n",
                name.c_str(), tokens, newTokens, kept / 1048576.0, threads);
    std::printf("transcribe_seconds_median: %.3f (min %.3f, max %.3f over %d rounds; features alone %.3f)\n",
                whole[whole.size() / 2], whole.front(), whole.back(), rounds, features[features.size() / 2]);
    std::printf("encoder_head_grid_seconds_median: %.3f (1500 x 1500)\n", grid[grid.size() / 2]);
    std::printf("weights_mib: %.0f peak_resident_mib: %.0f ratio: %.2f\n", weights / 1048576.0, peak / 1048576.0,
                peak / weights);
    if (wroteModel)
        std::printf("(this run wrote the random model: its peak includes the weights drawn in memory; run again)\n");
    return 0;
}

} // namespace attnscope::bench
