// Random models of real shapes for benchmarks and trials (never for tests of correctness): a Transformer-XL of the
// WikiText-103 base shape and Llama-family decoders shaped like SmolLM2-135M or Llama 3.2 1B, written as Hugging Face
// folders. Weights are drawn like the reference cases (queries and keys wide enough that heads are not uniform).
#pragma once

#include "io/dtype.h"

#include <filesystem>
#include <string>

namespace attnscope::bench {

struct TransfoXLShape {
    int layers = 16, heads = 10, dModel = 410, dHead = 41, dInner = 2100, memLen = 640, tgtLen = 150, vocab = 1000;
};
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
// Writes config.json + model.safetensors (F32 or BF16) into `dir`, and copies `tokenizerJson` there when given.
void writeRandomLlama(const LlamaShape& shape, const std::filesystem::path& dir, core::DType dtype,
                      const std::string& tokenizerJson = {});

// A random F32 model of the named shape under the system temp folder, written once and reused.
std::filesystem::path randomLlamaFolder(const std::string& shapeName);

} // namespace attnscope::bench
