// Query-key space (AttentionViz, Yeh et al. 2023): one head's query and key vectors for a text, embedded jointly in
// 2-D so that near means a high dot product. Keys are first translated so their mean is the queries' mean and the two
// sets scaled so their mean norms match (neither changes any softmax: a shift adds a constant to each query's scores,
// q/a and k*a keep every dot product); then PCA (exact), t-SNE or UMAP (core/embed). The achieved correlation between closeness in the
// picture and the dot product is reported, so a reader knows how far to trust it.
#pragma once

#include "embed/tsne.h"
#include "embed/umap.h"
#include "run/text_capture.h"

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

class StopToken;

// A head's vectors as the scores use them (rotated, after q/k norms where the family has them). Rows: queries of the
// segment, then its keys (memory first); Transformer-XL: the content keys (term (a)).
struct QkVectors {
    int dim = 0;
    // Keys are Transformer-XL's relative encodings R (position part): keyPositions hold distances, not tokens.
    bool keysAreDistances = false;
    std::vector<float> queries, keys;        // [nq, dim], [nk, dim]
    std::vector<std::int64_t> queryPositions; // absolute token positions, in their streams
    std::vector<std::int64_t> keyPositions;
    int queryStream = 0, keyStream = 0;       // ModelInfo::streams (a cross-attention site's keys are the source's)
    int nq() const { return dim ? static_cast<int>(queries.size()) / dim : 0; }
    int nk() const { return dim ? static_cast<int>(keys.size()) / dim : 0; }
};
// `site`: a single-stream model's layer, or any site.
QkVectors headQkVectors(const TextCapture& capture, int segment, int site, int head);

// Transformer-XL's position part of the same head: queries q_i + v (what multiplies R in terms (b) and (d)) and the
// projected relative encodings R_d for every distance d a query of the segment sees (0 .. klen - 1). Throws
// Error(BadInput) for a model without relative terms.
QkVectors headPositionVectors(const TextCapture& capture, int segment, int layer, int head);

// The same head over a corpus: `tokens` run through the model in segments of its default length, carrying memory as a
// capture does, without keeping any attention; each token's query and its key once (as its own segment's key).
// Positions index `tokens`. `progress` gets the fraction done after each segment. Cancels through `stop`.
constexpr int kMaxCorpusQkTokens = 20000;
QkVectors corpusQkVectors(const AttentionModel& model, std::span<const Token> tokens, int layer, int head,
                          const StopToken* stop = nullptr, const std::function<void(double)>& progress = {});

// For each query of `v` (as headQkVectors gives them for segment `seg`), the keys it sees with the highest dot
// products, strongest first, as indices into the embedding's points (queries first, so key j is v.nq() + j); -1 where
// a query sees fewer than three. The order of its attention.
std::vector<std::array<int, 3>> strongestKeys(const QkVectors& v, const SegmentCapture& seg);

// AttentionViz's normalisation, in place: keys shifted to the queries' mean, then q / a and k * a with
// a = sqrt(mean |q| / mean |k|).
void normaliseQk(QkVectors& v);

enum class QkMethod { Pca, Tsne, Umap };
// "pca", "tsne", "umap" (command lines, sessions); nullopt for another word.
std::optional<QkMethod> qkMethodNamed(const std::string& name);
const char* qkMethodName(QkMethod method);
struct QkEmbedding {
    std::vector<float> x, y; // queries first, then keys
    int queries = 0, keys = 0;
    // How far closeness in the picture stands for the dot product: per query, the Pearson correlation over its keys
    // of q.k with minus the distance (a softmax compares one query's keys only), averaged over the queries.
    double correlation = 0;
    double klDivergence = 0; // t-SNE's final KL(P || Q); 0 for PCA
};
// Embeds the normalised vectors (call normaliseQk first for AttentionViz's picture); t-SNE and UMAP report their
// picture through `progress` as they converge. Cancels through `stop`.
QkEmbedding embedQk(const QkVectors& v, QkMethod method, const TsneOptions& tsne = {}, const StopToken* stop = nullptr,
                    const EmbeddingProgress& progress = {});

// `kind,position,token,x,y` rows (kind q or k, positions 1-based; Transformer-XL's position part: kind r, position
// the distance from 0, no token), for exports.
std::string qkCsv(const QkVectors& v, const QkEmbedding& e, const std::vector<Token>& tokens);
// The same points as JSON: {"correlation", "kl_divergence", "points": [{"kind", "position", "token", "x", "y"}, ...]}
// (token bytes that are not UTF-8 replaced).
std::string qkJson(const QkVectors& v, const QkEmbedding& e, const std::vector<Token>& tokens);

} // namespace attnscope::core
