// A model's weights as stored, whatever holds them: one or more safetensors shards, a GGUF file, or PyTorch checkpoints
// (io/pytorch_file.h; a view that is not contiguous is the one case copied, in its stored type). Opening reads
// headers only; tensors stay in the memory map in their stored type (F32, F16, BF16, GGUF blocks) and are handed out
// as typed views (io/weight_view.h) that the product engine decodes tile by tile. Only small tensors (norms, biases)
// are converted to float32, on request.
#pragma once

#include "io/ggml_types.h"
#include "io/safetensors.h"
#include "io/weight_view.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

class GgufFile;
class PytorchFile;

class Checkpoint {
public:
    // `dir` holds model.safetensors, or model.safetensors.index.json naming its shards; without either,
    // pytorch_model.bin or pytorch_model.bin.index.json, or else its one .bin/.pt/.pth file.
    static std::shared_ptr<Checkpoint> openFolder(const std::string& dir);
    // A PyTorch checkpoint file (zip or legacy torch.save, a state dict or a pickled module).
    static std::shared_ptr<Checkpoint> openPytorch(const std::string& path);
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
    // Bytes of every tensor as stored (what mapping the weights costs once every page has been read).
    std::uint64_t storedBytes() const;

    // Typed view of a tensor as stored (nothing converted, nothing read). Throws MissingTensor naming the file, and
    // UnsupportedDtype for a type no product can decode (an unused tensor of such a type does not matter).
    WeightView get(const std::string& name) const;
    // As get(), and throws ShapeMismatch (expected vs actual) when the shape differs.
    WeightView get(const std::string& name, const Shape& expected) const;
    // A small tensor (a norm's scale, a bias, a few rows) as float32: used in place when stored as aligned F32,
    // otherwise converted once and kept. Its values are checked finite here.
    WeightView getFloat(const std::string& name, const Shape& expected) const;
    // The stored bytes of an unsigned 8-bit tensor (U8) of shape `expected`: the parts of packed formats that are not
    // weights themselves (gpt-oss's MXFP4 *_blocks / *_scales). Throws naming the file and tensor otherwise.
    std::span<const std::uint8_t> bytesU8(const std::string& name, const Shape& expected) const;

    // Throws Error(Io) naming the file when one of the checkpoint's files was truncated while in use and a read hit the
    // lost part (it read zeros there: util/mapped_file.h). Forward passes call it after every layer.
    void throwIfDamaged() const;

private:
    struct Entry {
        std::string file;
        Shape shape;
        const std::uint8_t* bytes = nullptr;
        std::uint64_t byteCount = 0;
        std::optional<GgmlType> type; // empty: a safetensors dtype no product reads (integers, F8, bool)
        std::string typeName;         // as the file names it ("F32", "BF16", "Q8_0", "I64")
        std::unique_ptr<WeightSource> source;
    };
    Checkpoint() = default;
    void addShard(const std::string& path);
    void addPytorch(const std::string& path);
    static std::shared_ptr<Checkpoint> openIndex(const std::string& dir, const std::string& indexFile, bool pytorch);
    const Entry& entry(const std::string& name) const;

    std::string m_source;
    std::vector<std::unique_ptr<SafetensorsFile>> m_shards;
    std::unique_ptr<GgufFile> m_gguf;
    std::vector<std::unique_ptr<PytorchFile>> m_pytorch;
    std::vector<std::vector<std::uint8_t>> m_gathered; // non-contiguous PyTorch views, made contiguous
    std::map<std::string, Entry> m_entries;
    mutable std::mutex m_convertMutex;
    mutable std::map<std::string, std::vector<float>> m_converted; // getFloat's copies (guarded by m_convertMutex)
};

} // namespace attnscope::core
