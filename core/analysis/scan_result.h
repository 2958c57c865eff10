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
};

// One relative-position profile of a scan. Its key names it in result files and on the command line:
// "full", "term_a", "term_a+b", ... Keys are made and read here only.
struct Profile {
    ProfileKind kind = ProfileKind::Full;
    TermSelection terms; // for ProfileKind::Terms: the combination (never raw)

    static Profile full() { return {}; }
    static Profile ofTerms(const TermSelection& t);
    std::string key() const;
    // nullopt when `key` names no profile.
    static std::optional<Profile> fromKey(const std::string& key);
    bool operator==(const Profile&) const = default;
};
// Parses "a,b,c,d" / "a+b,d" into profiles (full is always included first). Throws Error(BadInput).
std::vector<Profile> parseProfileList(const std::string& termsList);

struct HeadSummary {
    int layer = 0, head = 0;   // 0-based
    double entropy = 0;        // nats, of the profile normalised over distance
    double meanDistance = 0;   // tokens
    double massNear5 = 0;      // share of the normalised profile at distances 0..4
    double massNear50 = 0;     // ... at distances 0..49
    double firstKeyMass = 0;   // mean probability on the first key a query sees (queries that see two keys or more)
    double sinkRate = 0;       // share of those queries putting more than kSinkThreshold on it
};

// Gu et al. 2024's threshold for a query "sinking" into the first key.
inline constexpr float kSinkThreshold = 0.3f;

class ScanResult {
public:
    static constexpr const char* kFormat = "attnscope-relpos-scan/1"; // metadata "format" of result files
    int layers = 0, heads = 0, distances = 0; // distances = memLen + segmentLen
    std::vector<std::string> profileNames;    // "full" first
    std::map<std::string, std::vector<double>> sums; // name -> [layers, heads, distances]
    std::vector<double> count;                // [distances]: (query, key) pairs seen at each distance
    // Attention sinks, per head [layers, heads]: summed probability on the first key each query sees, and how many
    // queries put more than kSinkThreshold there, over sinkQueries queries (those that see two keys or more: from
    // a chunk's second token on). Empty in results saved before sinks were counted.
    std::vector<double> sinkMass, sinkHits;
    double sinkQueries = 0;
    std::int64_t tokens = 0;
    bool partial = false;                     // cancelled before the end
    std::map<std::string, std::string> metadata;

    // Average at each distance (sum / count; 0 where nothing was seen). [layers, heads, distances].
    std::vector<float> average(const std::string& profile) const;
    bool hasSinks() const { return !sinkMass.empty(); }
    std::vector<float> firstKeyMass() const; // [layers, heads]; zeros without sinks
    std::vector<float> sinkRate() const;     // [layers, heads]
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
