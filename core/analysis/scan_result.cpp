// ScanResult: profile keys, averages, merging, the safetensors file format, head summaries.
#include "analysis/scan_result.h"

#include "io/safetensors.h"
#include "util/error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

namespace attnscope::core {

namespace {
constexpr const char* kTermPrefix = "term_";

// A non-negative whole number from metadata; nullopt for anything else.
std::optional<long long> wholeNumber(const std::string& text)
{
    long long v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc() || ptr != end || v < 0)
        return std::nullopt;
    return v;
}
constexpr const char* kBandPrefix = "band_";

// "a+b" -> slots 0 and 1 (letters a..d), "1+3" -> slots 0 and 2 (digits 1..4); nullopt for anything else.
std::optional<TermSelection> slotsFrom(const std::string& text, char first)
{
    TermSelection t{false, false, false, false};
    bool* slots[4] = {&t.a, &t.b, &t.c, &t.d};
    for (std::size_t i = 0; i < text.size(); i += 2) {
        const int k = text[i] - first;
        if (k < 0 || k > 3 || *slots[k] || (i + 1 < text.size() && text[i + 1] != '+') || i + 1 == text.size() - 1)
            return std::nullopt;
        *slots[k] = true;
    }
    if (!t.any())
        return std::nullopt;
    return t;
}

std::string bandLabel(const TermSelection& t)
{
    std::string s;
    const bool on[4] = {t.a, t.b, t.c, t.d};
    for (int k = 0; k < 4; ++k)
        if (on[k])
            s += (s.empty() ? "" : "+") + std::to_string(k + 1);
    return s;
}
} // namespace

Profile Profile::ofTerms(const TermSelection& t)
{
    TermSelection terms = t;
    terms.raw = false;
    if (terms.isFull())
        return full();
    return {ProfileKind::Terms, terms};
}

Profile Profile::ofBands(const TermSelection& t)
{
    TermSelection bands = t;
    bands.raw = false;
    return {ProfileKind::Bands, bands}; // all bands alone is not the full profile: each band gets its own softmax
}

std::string Profile::key() const
{
    switch (kind) {
    case ProfileKind::Full: return "full";
    case ProfileKind::Terms: return kTermPrefix + terms.label();
    default: return kBandPrefix + bandLabel(terms);
    }
}

std::optional<Profile> Profile::fromKey(const std::string& key)
{
    if (key == "full")
        return full();
    if (key.rfind(kTermPrefix, 0) == 0) {
        const auto t = slotsFrom(key.substr(std::string_view(kTermPrefix).size()), 'a');
        return t ? std::optional(Profile::ofTerms(*t)) : std::nullopt;
    }
    if (key.rfind(kBandPrefix, 0) == 0) {
        const auto t = slotsFrom(key.substr(std::string_view(kBandPrefix).size()), '1');
        return t ? std::optional(Profile::ofBands(*t)) : std::nullopt;
    }
    return std::nullopt;
}

std::vector<Profile> parseProfileList(const std::string& termsList)
{
    std::vector<Profile> out{Profile::full()};
    std::size_t pos = 0;
    while (pos < termsList.size()) {
        auto comma = termsList.find(',', pos);
        if (comma == std::string::npos)
            comma = termsList.size();
        std::string item = termsList.substr(pos, comma - pos);
        item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
        pos = comma + 1;
        if (item.empty() || item == "full")
            continue;
        const bool band = item[0] >= '1' && item[0] <= '9';
        const auto t = slotsFrom(item, band ? '1' : 'a');
        if (!t)
            throw Error(ErrorCode::BadInput, "\"" + item + "\" is neither a combination of terms a, b, c, d nor of bands 1 "
                                             "to 4, joined with '+' (e.g. a+b or 1+2)");
        const Profile p = band ? Profile::ofBands(*t) : Profile::ofTerms(*t);
        if (std::find(out.begin(), out.end(), p) == out.end())
            out.push_back(p);
    }
    return out;
}

// ----------------------------------------------------------------------------------------------------------
std::vector<float> ScanResult::average(const std::string& profile) const
{
    const auto it = sums.find(profile);
    if (it == sums.end())
        throw Error(ErrorCode::BadInput, "the scan has no profile \"" + profile + "\"");
    std::vector<float> out(it->second.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double c = count[i % static_cast<std::size_t>(distances)];
        out[i] = c > 0 ? static_cast<float>(it->second[i] / c) : 0.0f;
    }
    return out;
}

std::vector<float> HeadMeans::mean() const
{
    std::vector<float> out(sum.size(), 0.0f);
    if (queries > 0)
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<float>(sum[i] / queries);
    return out;
}

void ScanResult::merge(const ScanResult& o)
{
    auto mismatch = [](const std::string& what) {
        throw Error(ErrorCode::BadInput, "cannot merge scans with different " + what);
    };
    if (o.layers != layers || o.heads != heads)
        mismatch("model shapes");
    if (o.distances != distances)
        mismatch("memory or segment lengths");
    if (o.profileNames != profileNames)
        mismatch("term profiles");
    for (const char* key : {"model", "mode", "mem_len", "segment_length", "same_length", "clamp_len", "bands"})
        if (metadata.count(key) && o.metadata.count(key) && metadata.at(key) != o.metadata.at(key))
            mismatch(std::string(key) + " (" + metadata.at(key) + " vs " + o.metadata.at(key) + ")");
    for (auto& [name, s] : sums) {
        const auto& t = o.sums.at(name);
        for (std::size_t i = 0; i < s.size(); ++i)
            s[i] += t[i];
    }
    for (std::size_t i = 0; i < count.size(); ++i)
        count[i] += o.count[i];
    // A statistic one part lacks is unknown for the whole.
    for (auto it = headMeans.begin(); it != headMeans.end();) {
        const auto other = o.headMeans.find(it->first);
        if (other == o.headMeans.end()) {
            it = headMeans.erase(it);
            continue;
        }
        for (std::size_t i = 0; i < it->second.sum.size(); ++i)
            it->second.sum[i] += other->second.sum[i];
        it->second.queries += other->second.queries;
        ++it;
    }
    tokens += o.tokens;
    partial = partial || o.partial;
    metadata["tokens"] = std::to_string(tokens);
    metadata["partial"] = partial ? "true" : "false";
    auto partsOf = [](const std::map<std::string, std::string>& md) {
        const auto it = md.find("merged_parts");
        return it == md.end() ? 1LL : wholeNumber(it->second).value_or(1);
    };
    const long long parts = partsOf(metadata) + partsOf(o.metadata);
    metadata["merged_parts"] = std::to_string(parts);
    if (metadata.count("text") && o.metadata.count("text") && metadata["text"] != o.metadata.at("text"))
        metadata["text"] += " + " + o.metadata.at("text");
}

void ScanResult::save(const std::string& path) const
{
    std::vector<OutputTensor> out;
    const Shape shape{layers, heads, distances};
    for (const auto& name : profileNames) {
        out.push_back({"relpos." + name, shape, average(name)});
        OutputTensor s{"relpos." + name + ".sum", shape, {}, DType::F64, sums.at(name)};
        out.push_back(std::move(s));
    }
    out.push_back({"relpos.count", {distances}, {}, DType::F64, count});
    for (const auto& [name, m] : headMeans) {
        const Shape heads2{layers, heads};
        out.push_back({"head." + name, heads2, m.mean()});
        out.push_back({"head." + name + ".sum", heads2, {}, DType::F64, m.sum});
        out.push_back({"head." + name + ".queries", {1}, {}, DType::F64, {m.queries}});
    }
    auto md = metadata;
    md["format"] = kFormat;
    md["profiles"] = "";
    for (const auto& n : profileNames)
        md["profiles"] += (md["profiles"].empty() ? "" : ",") + n;
    writeSafetensors(path, out, md);
}

ScanResult ScanResult::load(const std::string& path)
{
    SafetensorsFile f(path);
    f.requireFormat(kFormat, "an attnscope scan result");
    const auto& md = f.metadata();
    ScanResult r;
    r.metadata = md;
    const auto* count = f.find("relpos.count");
    if (!count || count->shape.size() != 1)
        throw Error(ErrorCode::MissingTensor, "scan result has no relpos.count [distances]", path, "relpos.count");
    r.count = readAsDouble(f, *count);
    r.distances = static_cast<int>(count->shape[0]);
    std::string profiles = md.count("profiles") ? md.at("profiles") : "full";
    std::size_t pos = 0;
    while (pos <= profiles.size()) {
        auto comma = profiles.find(',', pos);
        if (comma == std::string::npos)
            comma = profiles.size();
        const std::string name = profiles.substr(pos, comma - pos);
        pos = comma + 1;
        if (name.empty())
            continue;
        if (!Profile::fromKey(name))
            throw Error(ErrorCode::CorruptFile, "metadata names an unknown profile \"" + name + "\"", path, "profiles");
        const auto* s = f.find("relpos." + name + ".sum");
        if (!s || s->shape.size() != 3 || s->shape[2] != r.distances)
            throw Error(ErrorCode::MissingTensor, "missing or misshaped sums", path, "relpos." + name + ".sum");
        if (!r.profileNames.empty() && (s->shape[0] != r.layers || s->shape[1] != r.heads))
            throw Error(ErrorCode::CorruptFile, "profiles of different shapes: " + shapeToString(s->shape) + " after [" +
                                                    std::to_string(r.layers) + ", " + std::to_string(r.heads) + ", ...]",
                        path, "relpos." + name + ".sum");
        r.layers = static_cast<int>(s->shape[0]);
        r.heads = static_cast<int>(s->shape[1]);
        r.profileNames.push_back(name);
        r.sums[name] = readAsDouble(f, *s);
    }
    if (r.profileNames.empty() || r.profileNames.front() != "full")
        throw Error(ErrorCode::CorruptFile, "scan result has no full-attention profile", path);
    const Shape heads2{r.layers, r.heads};
    for (const char* name : {kFirstKeyMass, kSinkRate, kQueryEntropy, kAttendedDistance}) {
        const std::string base = std::string("head.") + name;
        const auto* sum = f.find(base + ".sum");
        const auto* queries = f.find(base + ".queries");
        if (!sum && !queries)
            continue; // saved before this statistic was counted
        if (!sum || !queries || sum->shape != heads2 || queries->shape != Shape{1})
            throw Error(ErrorCode::CorruptFile, "incomplete or misshaped per-head statistic (" + base + ".sum [" +
                                                    std::to_string(r.layers) + ", " + std::to_string(r.heads) + "], " +
                                                    base + ".queries [1])", path, base);
        HeadMeans m;
        m.sum = readAsDouble(f, *sum);
        m.queries = readAsDouble(f, *queries).at(0);
        r.headMeans[name] = std::move(m);
    }
    if (md.count("tokens")) {
        const auto t = wholeNumber(md.at("tokens"));
        if (!t)
            throw Error(ErrorCode::CorruptFile, "metadata \"tokens\" is not a whole number: \"" + md.at("tokens") + "\"", path, "tokens");
        r.tokens = *t;
    }
    // Sums and counts are finite and counts not negative, or every average drawn from them would be garbage. Within
    // 1e150 too: no scan of a real corpus comes near, and two sums of 1e308 merged or averaged printed as inf.
    auto checkFinite = [&](const std::vector<double>& v, const std::string& name, bool counts) {
        for (double x : v)
            if (!std::isfinite(x) || std::abs(x) > 1e150 || (counts && x < 0))
                throw Error(ErrorCode::CorruptFile,
                            counts ? "holds a negative, non-finite or impossibly large count"
                                   : "holds a non-finite or impossibly large sum",
                            path, name);
    };
    checkFinite(r.count, "relpos.count", true);
    for (const auto& [name, sum] : r.sums)
        checkFinite(sum, "relpos." + name + ".sum", false);
    for (const auto& [name, m] : r.headMeans) {
        checkFinite(m.sum, "head." + name + ".sum", false);
        checkFinite({m.queries}, "head." + name + ".queries", true);
    }
    r.partial = md.count("partial") && md.at("partial") == "true";
    return r;
}

// ----------------------------------------------------------------------------------------------------------
std::vector<HeadSummary> summariseHeads(const ScanResult& r, const std::string& profile)
{
    const auto avg = r.average(profile);
    const auto D = static_cast<std::size_t>(r.distances);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    auto meanOf = [&](const char* name) {
        const auto it = r.headMeans.find(name);
        return it == r.headMeans.end() ? std::vector<float>() : it->second.mean();
    };
    const auto firstKey = meanOf(kFirstKeyMass), sink = meanOf(kSinkRate), qEntropy = meanOf(kQueryEntropy),
               attended = meanOf(kAttendedDistance);
    std::vector<HeadSummary> out;
    for (int l = 0; l < r.layers; ++l)
        for (int h = 0; h < r.heads; ++h) {
            const std::size_t head = static_cast<std::size_t>(l) * r.heads + h;
            const float* p = avg.data() + head * D;
            double total = 0;
            for (std::size_t d = 0; d < D; ++d)
                total += p[d];
            HeadSummary s;
            s.layer = l;
            s.head = h;
            if (total > 0) {
                double cumulative = 0;
                bool spanned = false;
                for (std::size_t d = 0; d < D; ++d) {
                    const double q = p[d] / total;
                    if (q > 0)
                        s.entropy -= q * std::log(q);
                    s.meanDistance += q * static_cast<double>(d);
                    if (d < 5)
                        s.massNear5 += q;
                    if (d < 50)
                        s.massNear50 += q;
                    cumulative += q;
                    if (!spanned && cumulative >= 0.9 - 1e-12) {
                        s.span = static_cast<double>(d + 1);
                        spanned = true;
                    }
                }
            }
            s.previousToken = D > 1 ? p[1] : nan;
            auto pick = [&](const std::vector<float>& v) { return v.empty() ? nan : static_cast<double>(v[head]); };
            s.firstKeyMass = pick(firstKey);
            s.sinkRate = pick(sink);
            s.queryEntropy = pick(qEntropy);
            s.attendedDistance = pick(attended);
            out.push_back(s);
        }
    return out;
}

std::vector<std::size_t> rankByWidth(const std::vector<HeadSummary>& s)
{
    std::vector<std::size_t> idx(s.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return s[a].entropy > s[b].entropy; });
    return idx;
}

} // namespace attnscope::core
