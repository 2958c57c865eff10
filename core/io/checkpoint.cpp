// Checkpoint: shard discovery via model.safetensors.index.json, GGUF tensors, typed views, small float copies.
#include "io/checkpoint.h"

#include "util/checked_size.h"

#include <cmath>
#include <cstring>

#include "io/gguf.h"
#include "io/pytorch_file.h"
#include "util/error.h"
#include "util/memory_info.h"
#include "util/text_file.h"

#include <filesystem>
#include <tuple>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace fs = std::filesystem;

namespace attnscope::core {

Checkpoint::~Checkpoint() = default;

namespace {
// The ggml type that stores a safetensors dtype the same way, if a product can read it.
std::optional<GgmlType> ggmlTypeOf(DType t)
{
    switch (t) {
    case DType::F32: return GgmlType::F32;
    case DType::F16: return GgmlType::F16;
    case DType::BF16: return GgmlType::BF16;
    case DType::F64: return GgmlType::F64;
    default: return std::nullopt;
    }
}
} // namespace

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
        e.byteCount = t.bytes;
        e.type = t.type;
        e.typeName = ggmlTypeName(t.type);
        e.source = std::make_unique<WeightSource>(t.name, path);
        c->m_entries[t.name] = std::move(e);
    }
    return c;
}

std::shared_ptr<Checkpoint> Checkpoint::openFolder(const std::string& dir)
{
    const fs::path folder(dir);
    if (fs::exists(folder / "model.safetensors"))
        return openFile((folder / "model.safetensors").string());
    if (fs::exists(folder / "model.safetensors.index.json"))
        return openIndex(dir, "model.safetensors.index.json", false);
    if (fs::exists(folder / "pytorch_model.bin"))
        return openPytorch((folder / "pytorch_model.bin").string());
    if (fs::exists(folder / "pytorch_model.bin.index.json"))
        return openIndex(dir, "pytorch_model.bin.index.json", true);
    // A research folder: config.json beside one checkpoint file of another name (model.pt, best.pth, ...).
    std::vector<fs::path> candidates;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_regular_file() && PytorchFile::hasCheckpointExtension(entry.path().string()) &&
            entry.path().filename() != "vocab.pkl")
            candidates.push_back(entry.path());
    if (candidates.size() == 1)
        return openPytorch(candidates.front().string());
    throw Error(ErrorCode::Io,
                candidates.empty() ? "no weights in the folder (model.safetensors, its index, pytorch_model.bin or a "
                                     ".pt/.pth file)"
                                   : "several PyTorch checkpoint files and no model.safetensors or pytorch_model.bin: "
                                     "open the one you mean",
                dir);
}

std::shared_ptr<Checkpoint> Checkpoint::openPytorch(const std::string& path)
{
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_source = path;
    c->addPytorch(path);
    return c;
}

std::shared_ptr<Checkpoint> Checkpoint::openIndex(const std::string& dir, const std::string& indexFile, bool pytorch)
{
    const fs::path index = fs::path(dir) / indexFile;
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
    for (const auto& s : shardNames) {
        const std::string shard = (fs::path(dir) / s).string();
        if (pytorch)
            c->addPytorch(shard);
        else
            c->addShard(shard);
    }
    for (auto it = wm->begin(); it != wm->end(); ++it)
        if (!c->m_entries.count(it.key()))
            throw Error(ErrorCode::MissingTensor, "listed in the index but absent from shard " + it->get<std::string>(),
                        index.string(), it.key());
    return c;
}

void Checkpoint::addPytorch(const std::string& path)
{
    m_pytorch.push_back(std::make_unique<PytorchFile>(path));
    // A non-contiguous view is gathered once however many names list it, and the copies together must fit: a
    // 4.6 MB file listing one view under 30,000 names asked for 120 GB.
    std::map<std::tuple<const std::uint8_t*, std::int64_t, Shape, Shape, int>, const std::uint8_t*> gatheredViews;
    std::uint64_t gatheredBytes = 0;
    const std::uint64_t gatherBudget = std::max<std::uint64_t>(availableMemoryBytes() / 2, std::uint64_t(1) << 30);
    for (const auto& t : m_pytorch.back()->stateDict()) {
        if (m_entries.count(t.name))
            throw Error(ErrorCode::CorruptFile, "tensor appears in two shards", path, t.name);
        Entry e;
        e.file = path;
        e.shape = t.shape;
        const std::size_t element = dtypeSize(t.dtype);
        e.byteCount = productOrMax(static_cast<std::uint64_t>(shapeNumel(t.shape)), element);
        if (t.contiguous()) {
            e.bytes = t.firstByte();
        } else if (const auto key = std::make_tuple(t.storage, t.offset, t.shape, t.strides, static_cast<int>(t.dtype));
                   gatheredViews.count(key)) {
            e.bytes = gatheredViews.at(key);
        } else { // gathered once, in the stored type, into row-major order
            gatheredBytes += e.byteCount;
            if (gatheredBytes > gatherBudget)
                throw Error(ErrorCode::CorruptFile,
                            "its non-contiguous tensors need " + formatBytes(gatheredBytes) +
                                " of copies, more than the " + formatBytes(gatherBudget) + " this machine can spare",
                            path, t.name);
            auto& out = m_gathered.emplace_back(e.byteCount);
            gatheredViews[key] = out.data();
            std::vector<std::int64_t> index(t.shape.size(), 0);
            for (std::uint64_t i = 0; i < e.byteCount / element; ++i) {
                std::int64_t at = t.offset;
                for (std::size_t d = 0; d < t.shape.size(); ++d)
                    at += index[d] * t.strides[d];
                std::memcpy(out.data() + i * element, t.storage + static_cast<std::uint64_t>(at) * element, element);
                for (std::size_t d = t.shape.size(); d-- > 0;) {
                    if (++index[d] < t.shape[d])
                        break;
                    index[d] = 0;
                }
            }
            e.bytes = out.data();
        }
        e.type = ggmlTypeOf(t.dtype);
        e.typeName = std::string(dtypeName(t.dtype));
        e.source = std::make_unique<WeightSource>(t.name, path);
        m_entries[t.name] = std::move(e);
    }
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
        e.byteCount = t.end - t.begin;
        e.type = ggmlTypeOf(t.dtype);
        e.typeName = std::string(dtypeName(t.dtype));
        e.source = std::make_unique<WeightSource>(t.name, path);
        m_entries[t.name] = std::move(e);
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
            n = sumOrMax(n, shapeNumel(e.shape)); // shapes from files: a sum past int64 stays the largest value
    return n;
}

std::string Checkpoint::storageType(const std::string& name) const
{
    const auto it = m_entries.find(name);
    if (it == m_entries.end())
        return {};
    return it->second.typeName;
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
    if (!m_pytorch.empty())
        s += m_pytorch.size() > 1 ? ", " + std::to_string(m_pytorch.size()) + " PyTorch shards" : ", PyTorch checkpoint";
    return s;
}

void Checkpoint::throwIfDamaged() const
{
    auto refuse = [](const std::string& path) {
        throw Error(ErrorCode::Io,
                    "the file was truncated or written over while in use; what was computed from it is discarded. Open the "
                    "model again once the file is complete",
                    path);
    };
    for (const auto& shard : m_shards)
        if (shard->damaged())
            refuse(shard->path());
    if (m_gguf && m_gguf->damaged())
        refuse(m_gguf->path());
    for (const auto& file : m_pytorch)
        if (file->damaged())
            refuse(file->path());
}

std::uint64_t Checkpoint::storedBytes() const
{
    std::uint64_t total = 0;
    for (const auto& [name, e] : m_entries)
        total += e.byteCount;
    return total;
}

const Checkpoint::Entry& Checkpoint::entry(const std::string& name) const
{
    const auto it = m_entries.find(name);
    if (it == m_entries.end())
        throw Error(ErrorCode::MissingTensor, "tensor not found in the checkpoint", m_source, name);
    return it->second;
}

WeightView Checkpoint::get(const std::string& name) const
{
    const Entry& e = entry(name);
    const auto info = e.type ? ggmlTypeInfo(static_cast<std::uint32_t>(*e.type)) : std::nullopt;
    if (!info || !info->readable)
        throw Error(ErrorCode::UnsupportedDtype,
                    "stored as " + e.typeName + ", which attnscope cannot use as a weight (it reads " +
                        readableGgmlTypes() + ")",
                    e.file, name);
    WeightView v;
    v.bytes = e.bytes;
    v.type = *e.type;
    v.shape = e.shape;
    v.source = e.source.get();
    return v;
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

std::span<const std::uint8_t> Checkpoint::bytesU8(const std::string& name, const Shape& expected) const
{
    const Entry& e = entry(name);
    if (e.typeName != "U8")
        throw Error(ErrorCode::UnsupportedDtype, "stored as " + e.typeName + ", expected U8", e.file, name);
    if (e.shape != expected)
        throw Error(ErrorCode::ShapeMismatch,
                    "shape " + shapeToString(e.shape) + " disagrees with the config, which implies " + shapeToString(expected),
                    e.file, name);
    if (e.byteCount != static_cast<std::uint64_t>(shapeNumel(expected)))
        throw Error(ErrorCode::CorruptFile, "holds " + std::to_string(e.byteCount) + " bytes for its shape", e.file, name);
    return {e.bytes, static_cast<std::size_t>(e.byteCount)};
}

WeightView Checkpoint::getFloat(const std::string& name, const Shape& expected) const
{
    const WeightView stored = get(name, expected);
    stored.checkFinite();
    if (stored.isFloat32())
        return stored;
    std::lock_guard lock(m_convertMutex);
    auto cached = m_converted.find(name);
    if (cached == m_converted.end()) {
        std::vector<float> out(static_cast<std::size_t>(stored.numel()));
        for (std::int64_t r = 0; r < stored.rows(); ++r)
            stored.decodeRow(r, 0, stored.cols(), out.data() + r * stored.cols());
        cached = m_converted.emplace(name, std::move(out)).first;
    }
    return WeightView::ofFloats(cached->second.data(), stored.shape);
}

} // namespace attnscope::core
