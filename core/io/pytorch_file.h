// PyTorch checkpoints read without Python and without running anything: torch.save's zip format (`<name>/data.pkl`
// and `<name>/data/<key>` storages, memory-mapped), its legacy format (magic number, protocol, system info, the
// pickle, the storage keys, then each storage's element count and bytes) and plain pickles (a vocab.pkl). The pickle
// goes through the restricted unpickler (io/pickle.h) with PyTorch's rebuild functions and storage classes recognised
// by name. Written from the formats' public descriptions (torch.serialization's documentation, pickle's opcode table).
//
// The named tensors are found where checkpoints keep them: a state dict at the top level, or under "state_dict",
// "model", "model_state_dict" or "module"; or a whole pickled torch.nn.Module (the original Transformer-XL release's
// model.pt), walked symbolically through its _parameters, _buffers and _modules. Tensors keep their storage's bytes,
// offset and strides; two tensors on one storage (tied weights) point at the same bytes.
#pragma once

#include "io/dtype.h"
#include "io/pickle.h"
#include "util/mapped_file.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

using Shape = std::vector<std::int64_t>;

struct TorchTensor {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::vector<std::int64_t> strides;      // in elements, one per dimension
    std::int64_t offset = 0;                // elements into the storage
    const std::uint8_t* storage = nullptr;  // first byte of the storage (in the map)
    std::uint64_t storageElements = 0;
    // Row-major without gaps: the bytes from storage + offset are the tensor as safetensors would hold it.
    bool contiguous() const;
    const std::uint8_t* firstByte() const { return storage + offset * static_cast<std::int64_t>(dtypeSize(dtype)); }
};

class PytorchFile {
public:
    // Maps and parses the file. Throws Error(Unsafe) for code the pickle would run, Error(CorruptFile) for a malformed
    // file or a tensor that does not fit its storage, each naming the file.
    explicit PytorchFile(const std::string& path);

    const std::string& path() const { return m_map.path(); }
    // The pickled value (for pickles that hold no model: a tokenizer's vocab.pkl).
    const PickleNode& root() const { return *m_doc.root; }
    // The named tensors (see above). Throws Error(CorruptFile) when the file holds no state dict or module.
    std::vector<TorchTensor> stateDict() const;
    bool damaged() const { return m_map.damaged(); }

    // The file names: "pytorch_model.bin", "*.pt", "*.pth", "*.bin" are read as PyTorch checkpoints.
    static bool hasCheckpointExtension(const std::string& path);

private:
    struct Storage {
        DType dtype = DType::U8;
        std::string key;
        std::uint64_t elements = 0;
        const std::uint8_t* bytes = nullptr; // set once the data is located
        std::string rootKey;                 // legacy views: the storage they are part of
        std::uint64_t viewOffset = 0;        // legacy views: elements into the root storage
    };
    struct RawTensor {
        std::size_t storage = 0;
        std::int64_t offset = 0;
        Shape shape;
        std::vector<std::int64_t> strides;
    };
    void readZip();
    void readLegacy();
    PickleHooks hooks(bool legacy);
    TorchTensor resolve(const std::string& name, const PickleNode& tensor) const;
    void collect(const PickleNode& node, const std::string& prefix, int depth, std::vector<TorchTensor>& out) const;
    mutable std::uint64_t m_visits = 0; // modules walked by the current stateDict() (bounded)
    bool isTensor(const PickleNode* n) const;

    MappedFile m_map;
    PickleDocument m_doc;
    std::vector<Storage> m_storages;
    std::vector<RawTensor> m_tensors;
};

} // namespace attnscope::core
