// Checkpoint: shard discovery via model.safetensors.index.json, GGUF tensors, conversion on first use.
#include "io/checkpoint.h"

#include <cmath>

#include "io/gguf.h"
#include "util/error.h"
#include "util/text_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

namespace fs = std::filesystem;

namespace attnscope::core {

Checkpoint::~Checkpoint() = default;

bool Checkpoint::Entry::inPlace() const
{
    const bool f32 = ggml ? ggmlType == GgmlType::F32 : dtype == DType::F32;
    return f32 && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0;
}

std::shared_ptr<Checkpoint> Checkpoint::openFile(const std::string& path)
{
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_source = path;
    c->addShard(path);
    return c;
}

std::shared_ptr<Checkpoint> Checkpoint::openGguf(const std::string& path)
{
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_source = path;
    c->m_gguf = std::make_unique<GgufFile>(path);
    for (const auto& t : c->m_gguf->tensors()) {
        Entry e;
        e.file = path;
        e.shape = t.shape();
        e.bytes = c->m_gguf->bytes(t);
        e.ggml = true;
        e.ggmlType = t.type;
        c->m_entries[t.name] = e;
    }
    return c;
}

std::shared_ptr<Checkpoint> Checkpoint::openFolder(const std::string& dir)
{
    const fs::path single = fs::path(dir) / "model.safetensors";
    const fs::path index = fs::path(dir) / "model.safetensors.index.json";
    if (fs::exists(single))
        return openFile(single.string());
    if (!fs::exists(index))
        throw Error(ErrorCode::Io, "no model.safetensors or model.safetensors.index.json in the folder", dir);

    const auto json = readJsonFile(index.string());
    const auto wm = json.find("weight_map");
    if (wm == json.end() || !wm->is_object())
        throw Error(ErrorCode::BadJson, "no \"weight_map\" object", index.string());
    std::set<std::string> shardNames;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
        if (!it->is_string())
            throw Error(ErrorCode::BadJson, "weight_map value is not a file name", index.string(), it.key());
        const auto name = it->get<std::string>();
        if (name.find('/') != std::string::npos || name.find("..") != std::string::npos)
            throw Error(ErrorCode::BadJson, "shard name \"" + name + "\" must be a plain file name", index.string(),
                        it.key());
        shardNames.insert(name);
    }
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_source = dir;
    for (const auto& s : shardNames)
        c->addShard((fs::path(dir) / s).string());
    for (auto it = wm->begin(); it != wm->end(); ++it)
        if (!c->m_entries.count(it.key()))
            throw Error(ErrorCode::MissingTensor, "listed in the index but absent from shard " + it->get<std::string>(),
                        index.string(), it.key());
    return c;
}

void Checkpoint::addShard(const std::string& path)
{
    m_shards.push_back(std::make_unique<SafetensorsFile>(path));
    const auto* shard = m_shards.back().get();
    for (const auto& t : shard->tensors()) {
        if (m_entries.count(t.name))
            throw Error(ErrorCode::CorruptFile, "tensor appears in two shards", path, t.name);
        Entry e;
        e.file = path;
        e.shape = t.shape;
        e.bytes = shard->bytes(t);
        e.dtype = t.dtype;
        e.shard = shard;
        e.info = &t;
        m_entries[t.name] = e;
    }
}

std::vector<std::string> Checkpoint::names() const
{
    std::vector<std::string> out;
    for (const auto& [k, v] : m_entries)
        out.push_back(k);
    return out;
}

std::string Checkpoint::fileOf(const std::string& name) const
{
    const auto it = m_entries.find(name);
    return it == m_entries.end() ? std::string() : it->second.file;
}

Shape Checkpoint::shape(const std::string& name) const
{
    const auto it = m_entries.find(name);
    return it == m_entries.end() ? Shape{} : it->second.shape;
}

std::int64_t Checkpoint::countElements(const std::function<bool(const std::string&)>& keep) const
{
    std::int64_t n = 0;
    for (const auto& [name, e] : m_entries)
        if (keep(name))
            n += shapeNumel(e.shape);
    return n;
}

std::string Checkpoint::storageType(const std::string& name) const
{
    const auto it = m_entries.find(name);
    if (it == m_entries.end())
        return {};
    return it->second.ggml ? ggmlTypeName(it->second.ggmlType) : std::string(dtypeName(it->second.dtype));
}

std::string Checkpoint::describeStorage() const
{
    std::map<std::string, int> counts;
    for (const auto& [name, e] : m_entries)
        ++counts[storageType(name)];
    std::string s;
    for (const auto& [type, n] : counts)
        s += (s.empty() ? "" : ", ") + type + (counts.size() > 1 ? " (" + std::to_string(n) + ")" : "");
    if (m_shards.size() > 1)
        s += ", " + std::to_string(m_shards.size()) + " shards";
    return s;
}

std::uint64_t Checkpoint::conversionBytes() const
{
    std::uint64_t total = 0;
    for (const auto& [name, e] : m_entries)
        if (!e.inPlace())
            total += static_cast<std::uint64_t>(shapeNumel(e.shape)) * sizeof(float);
    return total;
}

WeightView Checkpoint::get(const std::string& name) const
{
    const auto it = m_entries.find(name);
    if (it == m_entries.end())
        throw Error(ErrorCode::MissingTensor, "tensor not found in the checkpoint", m_source, name);
    const Entry& e = it->second;
    WeightView v;
    v.shape = e.shape;
    if (e.inPlace()) {
        v.data = reinterpret_cast<const float*>(e.bytes); // in place, no copy
        std::lock_guard lock(m_convertMutex);
        checkFinite(name, v);
        return v;
    }
    std::lock_guard lock(m_convertMutex);
    auto cached = m_converted.find(name);
    if (cached == m_converted.end()) {
        std::vector<float> out;
        if (e.ggml) {
            out.resize(static_cast<std::size_t>(shapeNumel(e.shape)));
            dequantize(e.ggmlType, e.bytes, out.data(), shapeNumel(e.shape));
        } else {
            out = readAsFloat(*e.shard, *e.info);
        }
        m_convertedBytes += out.size() * sizeof(float);
        cached = m_converted.emplace(name, std::move(out)).first;
        if (m_progress)
            m_progress(m_convertedBytes, conversionBytes());
    }
    v.data = cached->second.data();
    checkFinite(name, v);
    return v;
}

void Checkpoint::checkFinite(const std::string& name, const WeightView& v) const
{
    if (!m_checked.insert(name).second)
        return;
    // A damaged file: NaN or infinite weights would run to NaN attention without a word.
    const std::int64_t n = v.numel();
    bool bad = false;
#pragma omp parallel for reduction(|| : bad) if (n > (1 << 20))
    for (std::int64_t i = 0; i < n; ++i)
        bad = bad || !std::isfinite(v.data[i]);
    if (!bad)
        return;
    std::int64_t first = 0;
    while (std::isfinite(v.data[first]))
        ++first;
    throw Error(ErrorCode::CorruptFile,
                "holds NaN or infinite values (the first at element " + std::to_string(first) + "): the weights are damaged",
                fileOf(name), name);
}

WeightView Checkpoint::get(const std::string& name, const Shape& expected) const
{
    WeightView v = get(name);
    if (v.shape != expected)
        throw Error(ErrorCode::ShapeMismatch,
                    "shape " + shapeToString(v.shape) + " disagrees with the config, which implies " +
                        shapeToString(expected),
                    fileOf(name), name);
    return v;
}

} // namespace attnscope::core
