// ScanResult: profile keys, averages, merging, the safetensors file format, head summaries.
#include "analysis/scan_result.h"

#include "io/safetensors.h"
#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope::core {

namespace {
constexpr const char* kTermPrefix = "term_";

// "a+b" -> terms (a) and (b); nullopt for anything else.
std::optional<TermSelection> termsFromLetters(const std::string& letters)
{
    TermSelection t{false, false, false, false};
    for (std::size_t i = 0; i < letters.size(); i += 2) {
        bool* slot = letters[i] == 'a' ? &t.a : letters[i] == 'b' ? &t.b : letters[i] == 'c' ? &t.c : letters[i] == 'd' ? &t.d : nullptr;
        if (!slot || *slot || (i + 1 < letters.size() && letters[i + 1] != '+') || i + 1 == letters.size() - 1)
            return std::nullopt;
        *slot = true;
    }
    if (!t.any())
        return std::nullopt;
    return t;
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

std::string Profile::key() const
{
    return kind == ProfileKind::Full ? "full" : kTermPrefix + terms.label();
}

std::optional<Profile> Profile::fromKey(const std::string& key)
{
    if (key == "full")
        return full();
    if (key.rfind(kTermPrefix, 0) != 0)
        return std::nullopt;
    const auto t = termsFromLetters(key.substr(std::string_view(kTermPrefix).size()));
    if (!t)
        return std::nullopt;
    return Profile::ofTerms(*t);
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
        const auto t = termsFromLetters(item);
        if (!t)
            throw Error(ErrorCode::BadInput, "term \"" + item + "\" is not a combination of a, b, c, d joined with '+' (e.g. a+b)");
        const Profile p = Profile::ofTerms(*t);
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

std::vector<float> ScanResult::firstKeyMass() const
{
    std::vector<float> out(static_cast<std::size_t>(layers) * heads, 0.0f);
    if (hasSinks() && sinkQueries > 0)
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<float>(sinkMass[i] / sinkQueries);
    return out;
}

std::vector<float> ScanResult::sinkRate() const
{
    std::vector<float> out(static_cast<std::size_t>(layers) * heads, 0.0f);
    if (hasSinks() && sinkQueries > 0)
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i] = static_cast<float>(sinkHits[i] / sinkQueries);
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
    for (const char* key : {"model", "mode", "mem_len", "segment_length", "same_length", "clamp_len"})
        if (metadata.count(key) && o.metadata.count(key) && metadata.at(key) != o.metadata.at(key))
            mismatch(std::string(key) + " (" + metadata.at(key) + " vs " + o.metadata.at(key) + ")");
    for (auto& [name, s] : sums) {
        const auto& t = o.sums.at(name);
        for (std::size_t i = 0; i < s.size(); ++i)
            s[i] += t[i];
    }
    for (std::size_t i = 0; i < count.size(); ++i)
        count[i] += o.count[i];
    if (hasSinks() && o.hasSinks()) {
        for (std::size_t i = 0; i < sinkMass.size(); ++i) {
            sinkMass[i] += o.sinkMass[i];
            sinkHits[i] += o.sinkHits[i];
        }
        sinkQueries += o.sinkQueries;
    } else { // a part without sink counts makes the sum's sinks unknown
        sinkMass.clear();
        sinkHits.clear();
        sinkQueries = 0;
    }
    tokens += o.tokens;
    partial = partial || o.partial;
    metadata["tokens"] = std::to_string(tokens);
    metadata["partial"] = partial ? "true" : "false";
    const int parts = (metadata.count("merged_parts") ? std::stoi(metadata["merged_parts"]) : 1) +
                      (o.metadata.count("merged_parts") ? std::stoi(o.metadata.at("merged_parts")) : 1);
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
    if (hasSinks()) {
        const Shape heads2{layers, heads};
        out.push_back({"sink.first_key_mass", heads2, firstKeyMass()});
        out.push_back({"sink.rate", heads2, sinkRate()});
        out.push_back({"sink.first_key_mass.sum", heads2, {}, DType::F64, sinkMass});
        out.push_back({"sink.hits", heads2, {}, DType::F64, sinkHits});
        out.push_back({"sink.queries", {1}, {}, DType::F64, {sinkQueries}});
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
    const auto& md = f.metadata();
    const auto fmt = md.find("format");
    if (fmt == md.end() || fmt->second != kFormat)
        throw Error(ErrorCode::CorruptFile, "not an attnscope scan result (metadata format is not " +
                                                std::string(kFormat) + ")", path);
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
        r.layers = static_cast<int>(s->shape[0]);
        r.heads = static_cast<int>(s->shape[1]);
        r.profileNames.push_back(name);
        r.sums[name] = readAsDouble(f, *s);
    }
    if (r.profileNames.empty() || r.profileNames.front() != "full")
        throw Error(ErrorCode::CorruptFile, "scan result has no full-attention profile", path);
    const Shape heads2{r.layers, r.heads};
    const auto* mass = f.find("sink.first_key_mass.sum");
    const auto* hits = f.find("sink.hits");
    const auto* queries = f.find("sink.queries");
    if (mass || hits || queries) {
        if (!mass || !hits || !queries || mass->shape != heads2 || hits->shape != heads2 || queries->shape != Shape{1})
            throw Error(ErrorCode::CorruptFile, "incomplete or misshaped attention-sink counts (sink.first_key_mass.sum, "
                                                "sink.hits [layers, heads], sink.queries [1])", path);
        r.sinkMass = readAsDouble(f, *mass);
        r.sinkHits = readAsDouble(f, *hits);
        r.sinkQueries = readAsDouble(f, *queries).at(0);
    }
    r.tokens = md.count("tokens") ? std::stoll(md.at("tokens")) : 0;
    r.partial = md.count("partial") && md.at("partial") == "true";
    return r;
}

// ----------------------------------------------------------------------------------------------------------
std::vector<HeadSummary> summariseHeads(const ScanResult& r, const std::string& profile)
{
    const auto avg = r.average(profile);
    std::vector<HeadSummary> out;
    const auto D = static_cast<std::size_t>(r.distances);
    for (int l = 0; l < r.layers; ++l)
        for (int h = 0; h < r.heads; ++h) {
            const float* p = avg.data() + (static_cast<std::size_t>(l) * r.heads + h) * D;
            double total = 0;
            for (std::size_t d = 0; d < D; ++d)
                total += p[d];
            HeadSummary s;
            s.layer = l;
            s.head = h;
            if (total > 0)
                for (std::size_t d = 0; d < D; ++d) {
                    const double q = p[d] / total;
                    if (q > 0)
                        s.entropy -= q * std::log(q);
                    s.meanDistance += q * static_cast<double>(d);
                    if (d < 5)
                        s.massNear5 += q;
                    if (d < 50)
                        s.massNear50 += q;
                }
            if (r.hasSinks() && r.sinkQueries > 0) {
                const std::size_t head = static_cast<std::size_t>(l) * r.heads + h;
                s.firstKeyMass = r.sinkMass[head] / r.sinkQueries;
                s.sinkRate = r.sinkHits[head] / r.sinkQueries;
            }
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
