// The result of a relative-position scan (Figs. 5 and 7) and what is read from it: per (layer, head, distance)
// running sums of attention, the counts that turn them into averages, attention-sink counts, and head summaries.
// Results merge exactly (sums and counts add) and are saved as safetensors (docs/file-formats.md).
#pragma once

#include "attention/attention_math.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnscope::core {

enum class ProfileKind {
    Full,  // the model's attention
    Terms, // the softmax of a combination of Transformer-XL score terms alone (Fig. 7)
    Bands, // the softmax of a combination of a rotary model's frequency bands alone (the Fig. 7 counterpart)
};

// One relative-position profile of a scan. Its key names it in result files and on the command line:
// "full", "term_a", "term_a+b", "band_1", "band_1+3", ... Keys are made and read here only.
struct Profile {
    ProfileKind kind = ProfileKind::Full;
    TermSelection terms; // for Terms and Bands: the combination (slot t = term t or band t; never raw)

    static Profile full() { return {}; }
    static Profile ofTerms(const TermSelection& t);
    static Profile ofBands(const TermSelection& t);
    std::string key() const;
    // nullopt when `key` names no profile.
    static std::optional<Profile> fromKey(const std::string& key);
    bool operator==(const Profile&) const = default;
};
// Parses "a,b,c,d" / "a+b,d" (terms) or "1,2,3" / "1+2" (bands) into profiles, full always first. Throws
// Error(BadInput).
std::vector<Profile> parseProfileList(const std::string& termsList);

// What is known of one head from a scan (figures.md, "Head atlas" and "Attention sinks"). Statistics a result does
// not hold (saved before they were counted) are NaN.
struct HeadSummary {
    int layer = 0, head = 0;   // 0-based
    double entropy = 0;        // nats, of the profile normalised over distance
    double meanDistance = 0;   // tokens, of the normalised profile
    double span = 0;           // distances holding 90% of the normalised profile (the smallest D with mass(0..D-1) >= 0.9)
    double massNear5 = 0;      // share of the normalised profile at distances 0..4
    double massNear50 = 0;     // ... at distances 0..49
    double previousToken = 0;  // mean probability on the previous token (queries that see one)
    double queryEntropy = 0;   // mean entropy of a query's distribution, nats
    double attendedDistance = 0; // mean over queries of sum_j P[i][j] (i - j)
    double firstKeyMass = 0;   // mean probability on the first key a query sees (queries that see two keys or more)
    double sinkRate = 0;       // share of those queries putting more than kSinkThreshold on it
};

// Gu et al. 2024's threshold for a query "sinking" into the first key.
inline constexpr float kSinkThreshold = 0.3f;

// A per-query statistic of every head, summed over the queries it was measured on.
struct HeadMeans {
    std::vector<double> sum; // [layers, heads]
    double queries = 0;
    std::vector<float> mean() const; // sum / queries; 0 where nothing was counted
};
// The per-head statistics a scan keeps, by name (file tensors "head.NAME.sum" and "head.NAME.queries"):
inline constexpr const char* kFirstKeyMass = "first_key_mass"; // probability on the first visible key (queries that see >= 2 keys)
inline constexpr const char* kSinkRate = "sink_rate";          // 1 where that probability exceeds kSinkThreshold, else 0
inline constexpr const char* kQueryEntropy = "query_entropy";  // entropy of the query's distribution (every query)
inline constexpr const char* kAttendedDistance = "attended_distance"; // sum_j P[i][j] (i - j) (every query)

class ScanResult {
public:
    static constexpr const char* kFormat = "attnscope-relpos-scan/1"; // metadata "format" of result files
    int layers = 0, heads = 0, distances = 0; // distances = memLen + segmentLen
    std::vector<std::string> profileNames;    // "full" first
    std::map<std::string, std::vector<double>> sums; // name -> [layers, heads, distances]
    std::vector<double> count;                // [distances]: (query, key) pairs seen at each distance
    // Per-head statistics by name (kFirstKeyMass, ...); absent in results saved before they were counted.
    std::map<std::string, HeadMeans> headMeans;
    std::int64_t tokens = 0;
    bool partial = false;                     // cancelled before the end
    std::map<std::string, std::string> metadata;

    // Average at each distance (sum / count; 0 where nothing was seen). [layers, heads, distances].
    std::vector<float> average(const std::string& profile) const;
    bool has(const std::string& statistic) const { return headMeans.count(statistic) > 0; }
    bool hasSinks() const { return has(kFirstKeyMass) && has(kSinkRate); }
    // Adds another result of the same model shape and options. Throws Error(BadInput) if they differ.
    void merge(const ScanResult& other);

    void save(const std::string& path) const;
    static ScanResult load(const std::string& path);
};

// Summaries of every head of a profile, in layer-major order.
std::vector<HeadSummary> summariseHeads(const ScanResult& r, const std::string& profile = "full");
// Head indices (into summariseHeads' order) sorted from the widest (highest entropy) to the narrowest.
std::vector<std::size_t> rankByWidth(const std::vector<HeadSummary>& s);

} // namespace attnscope::core
