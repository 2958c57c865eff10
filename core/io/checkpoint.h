// A model's weights as float32 views, whatever holds them: one or more safetensors shards, or a GGUF file.
// F32 data is used in place from the memory map; every other type (F16, BF16, F64, GGUF quantisations) is converted
// to float32 once, on first use, and kept.
#pragma once

#include "io/ggml_types.h"
#include "io/safetensors.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace attnscope::core {

class GgufFile;

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
    // A GGUF file: tensors under their GGUF names, shapes row-major (a weight {ne0 = in, ne1 = out} is [out, in]).
    static std::shared_ptr<Checkpoint> openGguf(const std::string& path);
    ~Checkpoint();

    bool has(const std::string& name) const { return m_entries.count(name) != 0; }
    std::vector<std::string> names() const;
    // File that holds `name` (for messages); empty if absent.
    std::string fileOf(const std::string& name) const;
    // The file or folder the checkpoint was opened from.
    const std::string& source() const { return m_source; }
    // The GGUF file behind this checkpoint (its metadata and tokenizer), or null.
    const GgufFile* gguf() const { return m_gguf.get(); }
    // Shape of a tensor without converting it (empty if absent).
    Shape shape(const std::string& name) const;
    // Number of elements of every tensor whose name passes `keep` (parameter counts: nothing is converted).
    std::int64_t countElements(const std::function<bool(const std::string&)>& keep) const;
    // Storage type of a tensor as the file names it ("F32", "BF16", "Q8_0", ...).
    std::string storageType(const std::string& name) const;
    // "BF16 (2 shards)", "Q8_0 (22), F32 (8)": the storage types and how many tensors use each.
    std::string describeStorage() const;
    // Bytes of float32 copies that converting every tensor not stored as aligned F32 would take.
    std::uint64_t conversionBytes() const;

    // Float32 view of a tensor; converted once and cached. Throws MissingTensor naming the file.
    WeightView get(const std::string& name) const;
    // As get(), and throws ShapeMismatch (expected vs actual) when the shape differs.
    WeightView get(const std::string& name, const Shape& expected) const;
    // Called after each conversion with the bytes converted so far and conversionBytes() (for progress bars).
    void setConversionProgress(std::function<void(std::uint64_t, std::uint64_t)> progress) { m_progress = std::move(progress); }

private:
    struct Entry {
        std::string file;
        Shape shape;
        const std::uint8_t* bytes = nullptr;
        bool ggml = false;
        DType dtype = DType::F32;      // safetensors
        GgmlType ggmlType = GgmlType::F32;
        const SafetensorsFile* shard = nullptr;
        const TensorInfo* info = nullptr;
        bool inPlace() const;
    };
    Checkpoint() = default;
    void addShard(const std::string& path);
    // Refuses (Error(CorruptFile) naming the tensor) weights with NaN or infinite values; each tensor is checked once.
    void checkFinite(const std::string& name, const WeightView& v) const;

    std::string m_source;
    std::vector<std::unique_ptr<SafetensorsFile>> m_shards;
    std::unique_ptr<GgufFile> m_gguf;
    std::map<std::string, Entry> m_entries;
    mutable std::mutex m_convertMutex;
    mutable std::map<std::string, std::vector<float>> m_converted;
    mutable std::set<std::string> m_checked; // tensors found finite (guarded by m_convertMutex)
    mutable std::uint64_t m_convertedBytes = 0;
    std::function<void(std::uint64_t, std::uint64_t)> m_progress;
};

} // namespace attnscope::core
