// Random models of the sizes analysts use (Llama 3.2 1B, 3.2 3B, 3.1 8B), written as the files people download: a
// sharded BF16 Hugging Face folder, and GGUF files in F16, Q8_0 and a Q4_K_M-like mix (Q4_K, with Q6_K for the output
// and for attn_v/ffn_down in the layers llama.cpp's preset gives more bits). Weights are streamed to disk from a fast
// generator (never held in memory: the 8B BF16 folder is 16 GB); quantised blocks get random values with finite
// scales, which makes valid files without a quantiser. A real tokenizer.json, when given, is copied into the folder and
// embedded in the GGUF files as llama.cpp's converter does (gpt2-style BPE, pre-tokenizer llama-bpe). For benchmarks
// only, never for tests of correctness.
#pragma once

#include <filesystem>
#include <string>

namespace attnscope::bench {

struct BigLlamaShape {
    std::string name;
    int hidden, layers, heads, kvHeads, intermediate, vocab;
    bool tied;
    // Mixture-of-experts shapes (GGUF only): the GGUF architecture, the head size when it is not hidden / heads, the
    // experts per layer, how many each token uses and their feed-forward size, and q/k norms (over one head's
    // dimensions, or over all of a projection's with qkNormWhole: OLMoE).
    std::string arch = "llama";
    int headDim = 0, experts = 0, expertsUsed = 0, expertIntermediate = 0;
    bool qkNorm = false, qkNormWhole = false;
    // gpt-oss: biases on the attention projections, the router and the experts, a learned sink per head, every other
    // layer a sliding window of this many tokens, YaRN; its experts in MXFP4 (format "mxfp4").
    int slidingWindow = 0;
    bool gptOss = false;
};
// A shape by name, a row of the table in big_models.cpp: "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", and the
// mixtures of experts "qwen3-30b-a3b", "olmoe-1b-7b", "granite-3b-a800m" and "gpt-oss-20b"; throws for other names,
// listing the table's.
BigLlamaShape bigLlamaShape(const std::string& name);
bool isBigLlamaShape(const std::string& name);

// Formats: "bf16" (a folder with model-0000N-of-0000M.safetensors shards of at most 5 GB and their index), "f16",
// "q8_0", "q4_k_m" (a .gguf file), "mxfp4" (gpt-oss's release: experts MXFP4, the other matrices Q8_0). Returns the folder or file, written under `root` once and reused afterwards.
std::filesystem::path bigLlamaModel(const BigLlamaShape& shape, const std::string& format,
                                    const std::filesystem::path& root, const std::string& tokenizerJson);

// Speed of the block decoders the packing step runs on quantised weights: `megabytes` of random blocks of each type
// written here (Q8_0, Q4_K, Q6_K; only the one named `only` when given) decoded to float32, best of `rounds`, as
// "decode TYPE: N M elements/s" lines.
int blockDecodeSpeed(int megabytes, int rounds, const std::string& only);

} // namespace attnscope::bench
