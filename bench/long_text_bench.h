// Benchmarks of long texts (never tests): peak memory of a 4,096-token capture and the latency of an edit at the end
// of a 1,000-token text, each printed as lines "name: value" that bench/run_benchmarks.sh collects.
#pragma once

#include <string>

namespace attnscope::bench {

// Peak resident memory beyond the weights while capturing `tokens` tokens of a random SmolLM2-135M-shaped model
// (float32 weights, memory-mapped) and computing one head's grid and the head overview from the capture.
int longTextMemory(int tokens, int threads);
// Median time from an edit at the end of a `tokens`-token text to the shown head's grid: tokenization, the capture
// reusing the previous one, the grid. `which`: "smollm2" (random SmolLM2-135M shape) or a model folder.
int editLatency(const std::string& which, int tokens, int edits, int threads);

} // namespace attnscope::bench
