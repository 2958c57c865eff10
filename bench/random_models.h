// Random models of real shapes for benchmarks and trials (never for tests of correctness): a Transformer-XL of the
// WikiText-103 base shape and Llama-family decoders shaped like SmolLM2-135M or Llama 3.2 1B, written as Hugging Face
// folders. Weights are drawn like the reference cases (queries and keys wide enough that heads are not uniform).
#pragma once

#include "io/dtype.h"
#include "model/model_loader.h"
#include "tokenize/tokenizer.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace attnscope::bench {

struct TransfoXLShape {
    int layers = 16, heads = 10, dModel = 410, dHead = 41, dInner = 2100, memLen = 640, tgtLen = 150, vocab = 1000;
    // Adaptive input (empty cutoffs: one table) and the evaluation settings of the paper's large models.
    std::vector<int> cutoffs = {};
    int divVal = 1, clampLen = -1;
    bool sameLength = false, untieR = false;
    std::string name = {};
};
// The paper's WikiText-103 model as the Hub's transfo-xl-wt103 has it: 18 layers x 16 heads, d_model 1024, d_inner
// 4096, adaptive input over 267,735 words (cutoffs 20000/40000/200000, div_val 4), mem_len 1600, clamp_len 1000,
// same_length, per-layer r biases.
TransfoXLShape wt103Shape();
// Writes (once; reused when present) config.json + model.safetensors under the system temp folder.
std::filesystem::path randomTransfoXL(const TransfoXLShape& shape);

struct LlamaShape {
    std::string name;
    int hidden, layers, heads, kvHeads, intermediate, vocab, maxPositions;
    double ropeTheta;
    bool tied;
};
// "smollm2-135m", "llama-1b", "tiny" (the shapes of ../shared/bench/torch_llama_bench.py); throws for other names.
LlamaShape llamaShape(const std::string& name);
// The model's tokenizer when it reads text (tokenizer files, a GGUF's vocabulary), for benchmarks that feed WikiText;
// null for a random folder without tokenizer files, whose benchmarks use random token ids instead.
std::unique_ptr<core::Tokenizer> textTokenizer(const core::LoadedModel& loaded);
// Writes config.json + model.safetensors (F32 or BF16) into `dir`, and copies `tokenizerJson` there when given.
void writeRandomLlama(const LlamaShape& shape, const std::filesystem::path& dir, core::DType dtype,
                      const std::string& tokenizerJson = {});

// A random F32 GPT-2 small (12 layers x 12 heads, 768 wide, 50,257 tokens) under the system temp folder, written once.
std::filesystem::path randomGpt2SmallFolder();

// A random F32 model of the named shape under the system temp folder, written once and reused.
std::filesystem::path randomLlamaFolder(const std::string& shapeName);

} // namespace attnscope::bench
