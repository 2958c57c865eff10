// A head over a corpus (Anthropic's HeadVis, 2026: "a head's behaviour on the full distribution rarely matches what a
// narrow task suggests"): one statistic per head and query position over every window of a text, each head's
// contexts at the top and sampled from every decile of that statistic, with the head's attention row there, and a
// table of per-head metrics for a scatter of all heads. Decoders and encoders alike (whatever runs one stream).
#pragma once

#include "tokenize/tokenizer.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace attnscope::core {

class AttentionModel;
class StopToken;

// What ranks a head's query positions.
enum class ContextStatistic {
    MaxAway,       // the largest attention weight on a key other than the window's first token
    OutputNorm,    // the L2 norm of the head's output (its softmax-weighted values) at the position
    PreviousToken, // the attention weight on the key just before the query
    Induction,     // the attention on keys that follow an earlier occurrence of the query's token (positions whose
                   // token occurred earlier in the window only)
};
ContextStatistic contextStatisticNamed(const std::string& name); // max-away, output-norm, prev-token, induction
const char* contextStatisticName(ContextStatistic s);

struct HeadContextOptions {
    ContextStatistic statistic = ContextStatistic::MaxAway;
    int window = 64;         // tokens per run (each window runs alone, from an empty state)
    int top = 8;             // contexts with the largest values
    int perDecile = 2;       // contexts from each tenth of the sorted values (lowest tenth first)
    int contextBefore = 24;  // tokens shown before the query (and whose attention is kept)
    int contextAfter = 4;    // tokens shown after it
    std::int64_t maxTokens = 20000; // of the text (<= 0: all)
    // The ablation effect (HeadCorpusMetrics) over the text's first this many tokens, in windows; 0: not measured. One
    // run of those tokens per head, so it costs heads x tokens (opt-in: a 1B model's 512 heads over 256 tokens is
    // minutes). Needs a model that predicts the next token.
    std::int64_t ablationTokens = 0;
};

// One context of one head: where it is and what the head did there.
struct HeadContext {
    double value = 0;
    int decile = -1;            // 0..9 (lowest values first); -1: one of the top contexts
    std::int64_t position = 0;  // the query's position in the text (from 0)
    int window = 0;             // its window
    int firstToken = 0;         // tokens[firstToken ..) of the text are shown; query at position
    std::vector<std::string> tokens;
    std::vector<float> attention; // the query's attention over tokens[firstToken .. position] (keys shown before it)
    // The head's grid over the shown tokens: [n x n], n = tokens.size(), row i the attention of shown token i to each
    // shown token (keys before the shown ones left out; above the diagonal 0 for a causal head).
    std::vector<float> grid;
};

// Per head, means over the positions where each is defined (NaN where none is).
struct HeadCorpusMetrics {
    double statistic = 0;      // the chosen statistic's mean
    double entropy = 0;        // of the query's distribution (nats)
    double meanDistance = 0;   // sum_j p_j (i - j), causal heads; |i - j| otherwise
    double previousToken = 0;  // weight on the key just before
    double induction = 0;      // as the Induction statistic
    double firstToken = 0;     // weight on the window's first token (the usual sink)
    double outputNorm = 0;
    double sinkRate = 0;       // share of queries (from a window's second token on) putting more than 0.3 on its first
    // The mean next-token loss (nats) with the head's output zeroed less the intact model's (head_ablation.h), over the
    // first HeadContextOptions::ablationTokens tokens in windows; NaN when not measured.
    double ablationEffect = std::numeric_limits<double>::quiet_NaN();
};

// The per-head metrics as one table, in this order wherever they are listed (scatter.json, the window's axes): a
// metric added here reaches both.
struct HeadMetricColumn {
    const char* key;   // scatter.json's name
    const char* label; // for people, with its unit
    double HeadCorpusMetrics::*value;
};
const std::vector<HeadMetricColumn>& headMetricColumns();

struct HeadContexts {
    int layers = 0, heads = 0;
    std::int64_t tokens = 0; // scored
    std::int64_t ablationTokens = 0; // the ablation effect's tokens (0: not measured)
    ContextStatistic statistic = ContextStatistic::MaxAway;
    std::vector<HeadCorpusMetrics> metrics;         // [layers * heads]
    std::vector<std::vector<HeadContext>> contexts; // [layers * heads]: top ones first, then deciles low to high
};

// Two passes over `tokens` in windows: every position's statistic for every head, then the chosen contexts' attention
// rows and grids. progress(done, total) counts windows over both passes; `stop` between windows (Error(Cancelled)).
HeadContexts headContexts(const AttentionModel& model, const std::vector<Token>& tokens, const HeadContextOptions& options,
                          const StopToken* stop = nullptr, const std::function<void(int, int)>& progress = {});

// A corpus on a cluster: the first pass split by windows into shards (one array task each), then one merge that
// picks the contexts from all of them and runs the second pass on their windows only. The result equals
// headContexts on the whole text (the contexts exactly; the metrics up to the order their sums are added in).
struct HeadMetricSums { // one head's sums and counts of the eight metrics (HeadCorpusMetrics' order, no ablation)
    double sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double count[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    void add(int slot, double v);
    double mean(int slot) const;
};
struct HeadContextValues {
    int layers = 0, heads = 0, window = 0;
    std::int64_t tokens = 0;       // of the whole text
    std::uint64_t fingerprint = 0; // of the whole text's ids: a merge refuses shards of another text
    ContextStatistic statistic = ContextStatistic::MaxAway;
    int shard = 1, shards = 1, firstWindow = 0, endWindow = 0; // windows [firstWindow, endWindow)
    std::vector<std::vector<float>> values; // [layers * heads][the shard's positions]: the statistic
    std::vector<HeadMetricSums> means;       // [layers * heads]
    void save(const std::string& path) const; // safetensors, written atomically
    static HeadContextValues load(const std::string& path); // throws naming the file and the problem
};
// Shard `shard` of `shards` (from 1) of the first pass: windows shards-th part by part, in order.
HeadContextValues headContextValues(const AttentionModel& model, const std::vector<Token>& tokens,
                                    const HeadContextOptions& options, int shard, int shards,
                                    const StopToken* stop = nullptr, const std::function<void(int, int)>& progress = {});
// Every shard of the same text and options (any order); throws naming missing, repeated or foreign shards.
HeadContexts mergeHeadContexts(const AttentionModel& model, const std::vector<Token>& tokens,
                               const HeadContextOptions& options, std::vector<HeadContextValues> shards,
                               const StopToken* stop = nullptr, const std::function<void(int, int)>& progress = {});

// The documented layout for a static viewer (docs/file-formats.md): DIR/index.json (model, statistic, tokens, the
// metric names), DIR/scatter.json (one entry per head: layer and head from 1, every metric), DIR/heads/L{l}-H{h}.json
// (that head's contexts). Written atomically file by file; returns the files written.
std::vector<std::string> writeHeadContexts(const HeadContexts& result, const std::string& modelName, const std::string& dir);

} // namespace attnscope::core
