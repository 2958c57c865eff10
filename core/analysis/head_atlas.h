// The head atlas (figures.md, "Head atlas"): one row per head with what a scan tells (head summaries), what the
// current text tells (duplicate-token score) and what a generated repeated sequence tells (induction score), and
// the head-similarity matrix (Jensen-Shannon distance between relative-distance profiles) ordered by clustering.
#pragma once

#include "analysis/scan_result.h"
#include "run/text_capture.h"

#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace attnscope::core {

class AttentionModel;
class StopToken;
class Tokenizer;

// Clark et al. (2019), "What does BERT look at?": the mean attention a head's queries put on [CLS] (the special token
// that starts a text: BERT's [CLS], RoBERTa's <s>, a decoder's BOS), on the other special tokens ([SEP], </s>), on
// punctuation tokens, on the token just before and just after them, and the mean entropy (nats) of their rows. NaN:
// not computed (or, for cls/sep, no such token in the text).
struct TokenAttention {
    double cls = std::numeric_limits<double>::quiet_NaN(), sep = cls, punctuation = cls, previous = cls, next = cls,
           entropy = cls;
    // gpt-oss: the mean share of a query's attention its head's learned sink takes (NaN: the head has no sink).
    double learnedSink = cls;
    // The mean share a query gives the layer's high-norm tokens: keys whose layer input is over four times the median
    // token's norm (Darcet et al. 2024's artefact tokens; NaN: none in that layer, or not computed).
    double highNorm = cls;
};

struct AtlasRow {
    HeadSummary scan;                // NaN fields where the scan lacks them; all NaN without a scan
    double duplicateToken = 0;       // NaN: no text, or no query whose token occurred before
    double induction = 0;            // NaN: not computed
    TokenAttention tokens;           // over the current text
};

struct HeadAtlas {
    int layers = 0, heads = 0;
    std::vector<AtlasRow> rows; // layer-major
    bool hasScan = false, hasText = false, hasInduction = false;
};

// Rows from a scan (summaries of `profile`, full attention by default); text scores NaN.
HeadAtlas atlasFromScan(const ScanResult& scan, const std::string& profile = "full");
// Rows of a model without a scan (scan columns NaN).
HeadAtlas emptyAtlas(int layers, int heads);

// --- Scores of one head, from its probabilities; pure, so hand-built attention checks them. ---
// Query i is the token at position rowPos[i], key j the one at colPos[j]; probs [rows, cols] (masked entries 0).
// Adds the probability each query puts on earlier occurrences of its own token id (keys at earlier positions with
// the same id) to `sum`, and counts the queries that see such a key in `queries`.
void addDuplicateToken(const float* probs, int rows, int cols, std::span<const int> rowPos, std::span<const int> colPos,
                       std::span<const std::int32_t> ids, double& sum, double& queries);
// TransformerLens' induction score on `prefix` tokens followed by R random tokens repeated twice (probs [T, T],
// T = prefix + 2R): the mean probability from position i of the second copy to position i - R + 1.
double inductionScore(const float* probs, int T, int prefix, int R);
// Jensen-Shannon distance (base 2, in [0, 1]) between two distributions given unnormalised (normalised here).
double jensenShannonDistance(std::span<const float> p, std::span<const float> q);

// --- Drivers over a capture or a model; `stop` checked between layers, progress(done, total) after each. ---
using AtlasProgress = std::function<void(int done, int total)>;
// Duplicate-token score of every head over the captured text ([layers * heads], NaN where no query counts).
std::vector<double> duplicateTokenScores(const TextCapture& capture, const StopToken* stop = nullptr,
                                         const AtlasProgress& progress = {});
// The repeated random sequence of the induction test: the tokenizer's special prefix (BOS) when given, then R ids
// drawn from the vocabulary with a fixed seed (special tokens avoided), then the same R ids again.
std::vector<std::int32_t> inductionSequence(int vocabSize, const Tokenizer* tokenizer, int R, unsigned seed = 1234);
// Induction score of every head: the sequence above run as one segment without memory.
std::vector<double> inductionScores(const AttentionModel& model, const Tokenizer* tokenizer, int R = 50,
                                    const StopToken* stop = nullptr, const AtlasProgress& progress = {});
// Clark et al.'s statistics of every head over the captured text ([layers * heads]).
std::vector<TokenAttention> tokenAttentionScores(const TextCapture& capture, const StopToken* stop = nullptr,
                                                 const AtlasProgress& progress = {});
// Per layer, the mean over its heads (Clark et al.'s Fig. 2: attention to [CLS], [SEP] and punctuation by layer).
std::vector<TokenAttention> tokenAttentionByLayer(const std::vector<TokenAttention>& heads, int layers);
// Whether a token's text is punctuation only (white space and byte-level space marks aside).
bool isPunctuationToken(const std::string& text);
void addTokenAttention(HeadAtlas& atlas, const std::vector<TokenAttention>& scores);
// Fills TokenAttention::highNorm of `scores` ([layers * heads]) from one more run of the capture's first segment (the
// layer inputs' norms are not kept with it).
void addHighNormAttention(const AttentionModel& model, const TextCapture& capture, std::vector<TokenAttention>& scores,
                          const StopToken* stop = nullptr);
void addTextScores(HeadAtlas& atlas, const std::vector<double>& duplicateToken);
void addInductionScores(HeadAtlas& atlas, const std::vector<double>& induction);

// --- The atlas as a table: one definition of its columns for the GUI, its export and `attnscope-cli heads`. ---
struct AtlasColumn {
    const char* key;   // CSV/JSON name, e.g. "sink_rate"
    const char* title; // "sink rate"
    int decimals;
};
const std::vector<AtlasColumn>& atlasColumns(); // after "layer" and "head"
double atlasValue(const AtlasRow& row, std::size_t column); // NaN where unknown
enum class TableFormat { Text, Csv, Json };
// Rows in `order` (indices into atlas.rows; empty = layer order); text aligns columns and prints "-" for NaN,
// CSV leaves such cells empty, JSON writes null. Layers and heads are 1-based.
std::string formatAtlas(const HeadAtlas& atlas, TableFormat format, const std::vector<std::size_t>& order = {});

// Jensen-Shannon distances between every two heads' normalised profiles of `profile`: [N, N], N = layers * heads.
std::vector<double> headDistances(const ScanResult& scan, const std::string& profile = "full");
// An order of the N items that puts similar ones together: the leaves of average-linkage agglomerative clustering.
std::vector<int> clusterOrder(const std::vector<double>& distances, int n);

} // namespace attnscope::core
