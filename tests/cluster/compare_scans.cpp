// Checks that two scan results agree within float rounding: the same model, shape, profiles, tokens and counts,
// and sums that differ by no more than a relative tolerance (default 1e-5: a scan on another number of threads
// blocks its matrix products differently, so probabilities differ in their last float bits). The cluster test compares the merged shards of a
// Slurm array with a single-process scan through it; exit status 0 when they agree, 1 when not, 2 on bad input.
#include "analysis/scan_result.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

using attnscope::core::ScanResult;

namespace {

// The largest |a - b| / max(|a|, |b|, floor) over two equally long arrays, the floor a millionth of the largest
// magnitude: values near zero carry the rounding of the large ones they were summed with.
double worstRelative(const std::vector<double>& a, const std::vector<double>& b)
{
    double largest = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        largest = std::max({largest, std::abs(a[i]), std::abs(b[i])});
    const double floor = std::max(largest * 1e-6, 1e-300);
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double scale = std::max({std::abs(a[i]), std::abs(b[i]), floor});
        worst = std::max(worst, std::abs(a[i] - b[i]) / scale);
    }
    return worst;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: %s A.safetensors B.safetensors [RELATIVE_TOLERANCE=1e-5]\n", argv[0]);
        return 2;
    }
    const double tolerance = argc == 4 ? std::stod(argv[3]) : 1e-5;
    try {
        const auto a = ScanResult::load(argv[1]);
        const auto b = ScanResult::load(argv[2]);
        std::string differs;
        if (a.layers != b.layers || a.heads != b.heads || a.distances != b.distances)
            differs = "shapes differ";
        else if (a.profileNames != b.profileNames)
            differs = "profiles differ";
        else if (a.tokens != b.tokens)
            differs = "tokens differ: " + std::to_string(a.tokens) + " and " + std::to_string(b.tokens);
        else if (a.count != b.count)
            differs = "pair counts differ";
        else if (a.metadata.count("model") && b.metadata.count("model") && a.metadata.at("model") != b.metadata.at("model"))
            differs = "models differ";
        if (!differs.empty()) {
            std::fprintf(stderr, "%s and %s: %s\n", argv[1], argv[2], differs.c_str());
            return 1;
        }
        double worst = 0;
        for (const auto& name : a.profileNames)
            worst = std::max(worst, worstRelative(a.sums.at(name), b.sums.at(name)));
        for (const auto& [name, means] : a.headMeans) {
            const auto other = b.headMeans.find(name);
            if (other == b.headMeans.end() || other->second.queries != means.queries) {
                std::fprintf(stderr, "%s and %s: head statistic %s differs\n", argv[1], argv[2], name.c_str());
                return 1;
            }
            worst = std::max(worst, worstRelative(means.sum, other->second.sum));
        }
        std::printf("%lld tokens, %zu profiles, %zu head statistics; largest relative difference %.3g\n",
                    static_cast<long long>(a.tokens), a.profileNames.size(), a.headMeans.size(), worst);
        return worst <= tolerance ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
