// Benchmark of activation patching (never a test): every head's output patched at all positions of a short prompt,
// the numbers issue #40 sets (a GPT-2-small shape, a Llama-3.2-1B Q4_K_M shape), printed as "name: value" lines.
#pragma once

#include <string>

namespace attnscope::bench {

// `which`: "gpt2-small" (random F32 folder) or "llama-1b-q4km" (random GGUF written by big_models); `tokens` random
// ids, one of them changed for the corrupted prompt; best of `rounds`.
int patchHeads(const std::string& which, int tokens, int threads, int rounds);

} // namespace attnscope::bench
