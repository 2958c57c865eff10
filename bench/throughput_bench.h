// Throughput of the two heavy paths against the machine's matrix-product peak, with a per-stage breakdown:
// the Transformer-XL corpus scan (WikiText-103 base shape) and a Llama-family forward pass with every head's
// probabilities (random SmolLM2-135M shape). bench/compare_*_with_torch.sh runs these beside PyTorch.
#pragma once

#include <string>

namespace attnscope::bench {

// Prints tokens/s, the achieved GFLOP/s and its share of Eigen's sgemm peak measured in the same run; with
// `breakdown`, a table of the time per stage. Returns a process exit code.
int txlScanThroughput(int tokens, int threads, bool breakdown);
// The paper's WikiText-103 model shape (random weights): open time, resident memory, Figs. 5/7 scan speed.
int txlWt103(int tokens, int threads);
// The Llama model to time: a folder or GGUF file, or a random one of a shape ("smollm2-135m", "llama-1b", "tiny" in
// F32; "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b" in `format`: bf16, f16, q8_0, q4_k_m, written under modelRoot).
struct LlamaBenchModel {
    std::string modelPath, shape = "smollm2-135m", format = "bf16", modelRoot;
};
// Also prints the time to open the model, the first (cold) forward and the peak resident memory.
int llamaForwardThroughput(const LlamaBenchModel& model, int tokens, int threads, bool breakdown);
// Token generation as llama-bench -n N measures it: N greedy tokens after a one-token prompt, one forward each;
// prints tokens/s per round and their median; with `breakdown`, where a token's time goes.
int llamaGeneration(const LlamaBenchModel& model, int tokens, int rounds, int threads, bool breakdown);

} // namespace attnscope::bench
