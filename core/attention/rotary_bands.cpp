// BandSplit: equal groups or wavelength thresholds.
#include "attention/rotary_bands.h"

#include <algorithm>

#include "util/error.h"

#include <cmath>
#include <cstdio>

namespace attnscope::core {

BandSplit BandSplit::equal(int pairs, int bands)
{
    if (pairs < 1 || bands < 1 || bands > kMaxBands)
        throw Error(ErrorCode::BadInput, "a head of " + std::to_string(pairs) + " rotation pairs cannot form " +
                                             std::to_string(bands) + " bands (1 to " + std::to_string(kMaxBands) + ")");
    bands = std::min(bands, pairs); // a head of two pairs has two bands, not an error
    BandSplit s;
    s.pairs = pairs;
    for (int b = 0; b < bands; ++b)
        s.starts.push_back(b * pairs / bands);
    return s;
}

BandSplit BandSplit::byWavelength(const std::vector<float>& invFreq, const std::vector<double>& thresholds)
{
    BandSplit s;
    s.pairs = static_cast<int>(invFreq.size());
    s.starts.push_back(0);
    for (double t : thresholds) {
        int first = 0; // the first pair whose wavelength reaches t
        while (first < s.pairs && 2 * M_PI / invFreq[static_cast<std::size_t>(first)] < t)
            ++first;
        if (first > s.starts.back() && first < s.pairs)
            s.starts.push_back(first);
    }
    if (s.count() > kMaxBands)
        throw Error(ErrorCode::BadInput, "at most " + std::to_string(kMaxBands) + " bands (" +
                                             std::to_string(kMaxBands - 1) + " wavelength thresholds)");
    return s;
}

BandSplit BandSplit::rotaryAndContent(int pairs)
{
    BandSplit s;
    s.pairs = pairs;
    s.starts = {0, pairs};
    s.named = {{"rotary", "the rotary term: queries and the one key all heads share, both rotated, q_rope·k_rope", "score_rope"},
               {"content", "the content term: queries and keys from the latent, without positions, q_nope·k_nope",
                "score_nope"}};
    return s;
}

std::string BandSplit::describe(int band, const std::vector<float>& invFreq) const
{
    if (fixedTerms())
        return named[static_cast<std::size_t>(band)].description;
    const int a = begin(band), b = end(band) - 1;
    char buf[160];
    if (invFreq.size() >= static_cast<std::size_t>(pairs) && pairs > 0)
        std::snprintf(buf, sizeof buf, "band %d: pairs %d-%d, wavelengths %.3g-%.3g tokens", band + 1, a + 1, b + 1,
                      2 * M_PI / invFreq[static_cast<std::size_t>(a)], 2 * M_PI / invFreq[static_cast<std::size_t>(b)]);
    else
        std::snprintf(buf, sizeof buf, "band %d: pairs %d-%d", band + 1, a + 1, b + 1);
    return buf;
}

std::string BandSplit::shortName(int band) const
{
    if (fixedTerms())
        return named[static_cast<std::size_t>(band)].name;
    if (count() == 3)
        return band == 0 ? "high" : band == 1 ? "middle" : "low";
    return std::to_string(band + 1);
}

} // namespace attnscope::core
