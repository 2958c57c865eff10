// visionCapture: a DINOv2-small (or ViT-base) shape, random weights, a random image of imageSide pixels.
#include "vision_bench.h"

#include "bench_clock.h"
#include "analysis/rollout.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "model/vision.h"
#include "run/image_capture.h"
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
struct Shape {
    bool dino = true;
    int layers = 12, d = 384, heads = 6, ffn = 1536, patch = 14, image = 518;
};

fs::path randomVision(const std::string& name, const Shape& s)
{
    const fs::path dir = fs::temp_directory_path() / "attnscope-bench-models" / ("vision-" + name);
    if (fs::exists(dir / "model.safetensors"))
        return dir;
    fs::create_directories(dir);
    std::mt19937 rng(11);
    std::vector<core::OutputTensor> w;
    auto normal = [&](const std::string& n, core::Shape shape, float sd) {
        std::normal_distribution<float> nd(0.0f, sd);
        core::OutputTensor t{n, shape, std::vector<float>(static_cast<std::size_t>(core::shapeNumel(shape)))};
        for (auto& v : t.data)
            v = nd(rng);
        w.push_back(std::move(t));
    };
    auto constant = [&](const std::string& n, std::int64_t len, float v) {
        w.push_back({n, {len}, std::vector<float>(static_cast<std::size_t>(len), v)});
    };
    const std::int64_t d = s.d, g = s.image / s.patch;
    normal("embeddings.cls_token", {1, 1, d}, 0.3f);
    normal("embeddings.position_embeddings", {1, 1 + g * g, d}, 0.3f);
    normal("embeddings.patch_embeddings.projection.weight", {d, 3, s.patch, s.patch}, 0.05f);
    constant("embeddings.patch_embeddings.projection.bias", d, 0.0f);
    const std::string n1 = s.dino ? "norm1" : "layernorm_before", n2 = s.dino ? "norm2" : "layernorm_after";
    const std::string f1 = s.dino ? "mlp.fc1" : "intermediate.dense", f2 = s.dino ? "mlp.fc2" : "output.dense";
    for (int l = 0; l < s.layers; ++l) {
        const std::string b = "encoder.layer." + std::to_string(l) + ".";
        for (const auto& n : {n1, n2}) {
            constant(b + n + ".weight", d, 1.0f);
            constant(b + n + ".bias", d, 0.0f);
        }
        for (const char* p : {"attention.attention.query", "attention.attention.key", "attention.attention.value",
                              "attention.output.dense"}) {
            normal(b + p + ".weight", {d, d}, 0.05f);
            constant(b + p + ".bias", d, 0.0f);
        }
        normal(b + f1 + ".weight", {s.ffn, d}, 0.05f);
        constant(b + f1 + ".bias", s.ffn, 0.0f);
        normal(b + f2 + ".weight", {d, s.ffn}, 0.05f);
        constant(b + f2 + ".bias", d, 0.0f);
        if (s.dino) {
            constant(b + "layer_scale1.lambda1", d, 1.0f);
            constant(b + "layer_scale2.lambda1", d, 1.0f);
        }
    }
    constant("layernorm.weight", d, 1.0f);
    constant("layernorm.bias", d, 0.0f);
    core::writeSafetensors((dir / "model.safetensors").string(), w, {{"source", "attnscope-bench (random weights)"}});
    nlohmann::json cfg = {{"model_type", s.dino ? "dinov2" : "vit"}, {"hidden_size", d}, {"num_hidden_layers", s.layers},
                          {"num_attention_heads", s.heads}, {"patch_size", s.patch}, {"image_size", s.image},
                          {"layer_norm_eps", 1e-6}, {"hidden_act", "gelu"}};
    if (s.dino)
        cfg["mlp_ratio"] = s.ffn / s.d;
    else
        cfg["intermediate_size"] = s.ffn;
    std::ofstream(dir / "config.json") << cfg.dump(2);
    return dir;
}
} // namespace

int visionCapture(const std::string& name, int imageSide, int threads, int rounds)
{
    Shape s;
    if (name == "vit-base") {
        s = Shape{false, 12, 768, 12, 3072, 16, 224};
    } else if (name != "dinov2-small") {
        std::fprintf(stderr, "attnscope-bench vision: --shape dinov2-small or vit-base\n");
        return 2;
    }
    if (imageSide <= 0)
        imageSide = s.image;
    omp_set_num_threads(threads);
    const auto loaded = core::loadModel(randomVision(name, s).string());
    const auto& vision = dynamic_cast<const core::VisionModel&>(*loaded.model);
    auto pixels = std::make_shared<core::PixelValues>();
    pixels->height = pixels->width = imageSide / s.patch * s.patch;
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    pixels->data.resize(static_cast<std::size_t>(3) * pixels->height * pixels->width);
    for (auto& v : pixels->data)
        v = nd(rng);
    std::vector<double> times, clicks;
    std::shared_ptr<const core::TextCapture> capture;
    for (int r = 0; r < rounds + 1; ++r) { // the first round maps the weights in: not counted
        const auto t0 = Clock::now();
        capture = core::capturePicture(vision, pixels);
        if (r > 0)
            times.push_back(seconds(t0, Clock::now()));
    }
    // A click: one query's row of one head, recomputed from the capture (what the image view draws).
    const int T = static_cast<int>(capture->tokens.size());
    std::vector<float> row(static_cast<std::size_t>(T));
    for (int r = 0; r < 21; ++r) {
        const int query[1] = {static_cast<int>(rng() % static_cast<unsigned>(T))};
        const auto t0 = Clock::now();
        const auto in = capture->inputs(0, s.layers - 1);
        core::headAttentionRows(in, r % s.heads, {}, query, row.data(), T, 0.0f);
        clicks.push_back(seconds(t0, Clock::now()));
    }
    const auto r0 = Clock::now();
    (void)core::attentionRollout(*capture, 0);
    const double rolloutSeconds = seconds(r0, Clock::now());
    std::sort(times.begin(), times.end());
    std::sort(clicks.begin(), clicks.end());
    std::printf("vision %s: %d x %d pixels, %d tokens, every head kept (%.1f MiB), %d threads\n", name.c_str(),
                pixels->width, pixels->height, T, capture->bytes() / 1048576.0, threads);
    std::printf("capture_seconds_median: %.3f (min %.3f, max %.3f over %d rounds)\n", times[times.size() / 2],
                times.front(), times.back(), rounds);
    std::printf("click_row_ms_median: %.2f (max %.2f over %zu clicks)\n", clicks[clicks.size() / 2] * 1e3,
                clicks.back() * 1e3, clicks.size());
    std::printf("rollout_seconds: %.3f (every layer, all tokens)\n", rolloutSeconds);
    std::printf("peak_resident_mib: %.0f\n", static_cast<double>(core::peakResidentBytes()) / 1048576.0);
    return 0;
}

} // namespace attnscope::bench
