// Rotary frequency bands (figures.md): a rotary head's score is a sum over rotation pairs, and a band is a group of
// pairs by frequency. Pair i (dimensions i and i + d/2 in the Hugging Face layout) turns with inv_freq[i], which
// falls as i grows, so band 0 holds the highest frequencies (positional) and the last band the lowest (semantic,
// Barbero et al. 2024). The softmax of the sum of all bands is the full attention.
#pragma once

#include <string>
#include <vector>

namespace attnscope::core {

// At most this many bands: band toggles share the four slots of TermSelection with Transformer-XL's terms.
inline constexpr int kMaxBands = 4;

// A band may also be a fixed, named term: DeepSeek's latent attention splits each head's score into a rotary term
// (its rotated dimensions, band 0) and a content term (band 1: no pairs, only the dimensions that never turn).
struct NamedTerm {
    std::string name;        // "rotary", shown on the toggles
    std::string description; // what the term is, for tooltips
    std::string dumpName;    // the reference data's tensor name ("score_rope"), for `attnscope dump`
    bool operator==(const NamedTerm&) const = default;
};

struct BandSplit {
    std::vector<int> starts; // first pair of each band, ascending from 0
    int pairs = 0;           // pairs per head (head size / 2)
    std::vector<NamedTerm> named; // fixed terms' names, one per band (empty: frequency bands)

    int count() const { return static_cast<int>(starts.size()); }
    int begin(int band) const { return starts[static_cast<std::size_t>(band)]; }
    int end(int band) const { return band + 1 < count() ? starts[static_cast<std::size_t>(band) + 1] : pairs; }
    bool operator==(const BandSplit&) const = default;

    // `bands` groups of (nearly) equal size; fewer when the head has fewer pairs than that.
    static BandSplit equal(int pairs, int bands = 3);
    // Split where the wavelength 2 pi / inv_freq crosses each threshold (tokens, ascending); empty bands are dropped.
    // Throws Error(BadInput) for more than kMaxBands bands.
    static BandSplit byWavelength(const std::vector<float>& invFreq, const std::vector<double>& thresholds);
    // DeepSeek's two terms: the pairs a head rotates (rotary), then the dimensions that do not turn (content).
    static BandSplit rotaryAndContent(int pairs);
    bool fixedTerms() const { return !named.empty(); }
    // "band 1: pairs 1-11, wavelengths 6.3-89 tokens" (1-based, as people read it); a named term's description.
    std::string describe(int band, const std::vector<float>& invFreq) const;
    // A named term's name; "high", "middle", "low" for three bands; "1".."n" otherwise.
    std::string shortName(int band) const;
};

} // namespace attnscope::core
