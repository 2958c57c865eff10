// Throughput of the two heavy paths against the machine's matrix-product peak, with a per-stage breakdown:
// the Transformer-XL corpus scan (WikiText-103 base shape) and a Llama-family forward pass with every head's
// probabilities (random SmolLM2-135M shape). bench/compare_*_with_torch.sh runs these beside PyTorch.
#pragma once

#include <string>

namespace attnscope::bench {

// Prints tokens/s, the achieved GFLOP/s and its share of Eigen's sgemm peak measured in the same run; with
// `breakdown`, a table of the time per stage. Returns a process exit code.
int txlScanThroughput(int tokens, int threads, bool breakdown);
int llamaForwardThroughput(const std::string& shape, int tokens, int threads, bool breakdown);

} // namespace attnscope::bench
