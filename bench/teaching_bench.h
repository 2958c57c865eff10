// Benchmarks of the teaching and query-key views (never tests): one generated token, the logit lens of a long text,
// and the query-key embeddings, each printed as "name: value" lines that bench/run_benchmarks.sh collects.
#pragma once

#include <string>

namespace attnscope::bench {

// Median time of one generation step as the app takes it: the next-token logits after the text, a greedy choice, the
// text captured again with the token appended (the key/value cache reused) and the shown head's grid. `which`:
// "smollm2" (random SmolLM2-135M shape, token ids) or a model folder (its tokenizer when it has one).
int generationStep(const std::string& which, int context, int steps, int threads);
// Time of the logit lens of a `tokens`-token text (the capture excluded).
int logitLensTime(const std::string& which, int tokens, int threads);
// Query-key space on a `tokens`-token text: PCA of every head one by one, and t-SNE (Barnes-Hut) and UMAP of one
// head's `tsnePoints` queries and keys.
int qkSpaceTimes(const std::string& which, int tokens, int tsnePoints, int threads);

} // namespace attnscope::bench
