// A model's weights across one or more safetensors shards, handed out as float32 views.
#pragma once

#include "io/safetensors.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attnscope::core {

// A read-only float32 tensor. `data` points into the memory map (F32, aligned) or into a converted copy
// owned by the Checkpoint; valid as long as the Checkpoint lives.
struct WeightView {
    const float* data = nullptr;
    Shape shape;
    std::int64_t numel() const { return shapeNumel(shape); }
};

class Checkpoint {
public:
    // `dir` holds model.safetensors, or model.safetensors.index.json naming its shards.
    static std::shared_ptr<Checkpoint> openFolder(const std::string& dir);
    // A single .safetensors file.
    static std::shared_ptr<Checkpoint> openFile(const std::string& path);

    bool has(const std::string& name) const { return m_where.count(name) != 0; }
    std::vector<std::string> names() const;
    // File that holds `name` (for messages); empty if absent.
    std::string fileOf(const std::string& name) const;
    // The file or folder the checkpoint was opened from.
    const std::string& source() const { return m_source; }

    // Float32 view of a tensor; F16/BF16 converted once and cached. Throws MissingTensor naming the file.
    WeightView get(const std::string& name) const;
    // As get(), and throws ShapeMismatch (expected vs actual) when the shape differs.
    WeightView get(const std::string& name, const Shape& expected) const;

private:
    Checkpoint() = default;
    void addShard(const std::string& path);

    std::string m_source;
    std::vector<std::unique_ptr<SafetensorsFile>> m_shards;
    std::map<std::string, std::pair<const SafetensorsFile*, const TensorInfo*>> m_where;
    mutable std::mutex m_convertMutex;
    mutable std::map<std::string, std::vector<float>> m_converted;
};

} // namespace attnscope::core
