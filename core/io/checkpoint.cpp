// Checkpoint: shard discovery via model.safetensors.index.json, lazy dtype conversion.
#include "io/checkpoint.h"

#include "util/error.h"
#include "util/text_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

namespace fs = std::filesystem;

namespace attnscope::core {

std::shared_ptr<Checkpoint> Checkpoint::openFile(const std::string& path)
{
    std::shared_ptr<Checkpoint> c(new Checkpoint);
    c->m_source = path;
    c->addShard(path);
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
    for (auto it = wm->begin(); it != wm->end(); ++it) {
        const auto found = c->m_where.find(it.key());
        if (found == c->m_where.end())
            throw Error(ErrorCode::MissingTensor, "listed in the index but absent from shard " + it->get<std::string>(),
                        index.string(), it.key());
    }
    return c;
}

void Checkpoint::addShard(const std::string& path)
{
    m_shards.push_back(std::make_unique<SafetensorsFile>(path));
    const auto* shard = m_shards.back().get();
    for (const auto& t : shard->tensors()) {
        if (m_where.count(t.name))
            throw Error(ErrorCode::CorruptFile, "tensor appears in two shards", path, t.name);
        m_where[t.name] = {shard, &t};
    }
}

std::vector<std::string> Checkpoint::names() const
{
    std::vector<std::string> out;
    for (const auto& [k, v] : m_where)
        out.push_back(k);
    return out;
}

std::string Checkpoint::fileOf(const std::string& name) const
{
    const auto it = m_where.find(name);
    return it == m_where.end() ? std::string() : it->second.first->path();
}

WeightView Checkpoint::get(const std::string& name) const
{
    const auto it = m_where.find(name);
    if (it == m_where.end())
        throw Error(ErrorCode::MissingTensor, "tensor not found in the checkpoint", m_source, name);
    const auto& [file, info] = it->second;
    WeightView v;
    v.shape = info->shape;
    const std::uint8_t* bytes = file->bytes(*info);
    if (info->dtype == DType::F32 && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0) {
        v.data = reinterpret_cast<const float*>(bytes); // in place, no copy
        return v;
    }
    std::lock_guard lock(m_convertMutex);
    auto cached = m_converted.find(name);
    if (cached == m_converted.end())
        cached = m_converted.emplace(name, readAsFloat(*file, *info)).first;
    v.data = cached->second.data();
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

} // namespace attnscope::core
