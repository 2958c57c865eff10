// safetensors reader (hostile-file safe, memory-mapped) and a float32 writer.
#pragma once

#include "io/dtype.h"
#include "util/mapped_file.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

using Shape = std::vector<std::int64_t>;
std::string shapeToString(const Shape& s);
std::int64_t shapeNumel(const Shape& s);

struct TensorInfo {
    std::string name;
    DType dtype;
    Shape shape;
    std::size_t begin = 0; // byte offsets relative to the start of the data section
    std::size_t end = 0;
};

// Opens and fully validates a .safetensors file: header length bounded and inside the file, valid JSON,
// known dtypes, shape x dtype size equal to the byte range, ranges inside the data and not overlapping.
// Any violation throws Error(CorruptFile / BadJson / UnsupportedDtype) naming the file and the tensor.
// Thread-safe for concurrent reads after construction.
class SafetensorsFile {
public:
    static constexpr std::uint64_t kMaxHeaderBytes = 100u * 1024u * 1024u;

    explicit SafetensorsFile(const std::string& path);

    const std::string& path() const { return m_map.path(); }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; }
    const TensorInfo* find(const std::string& name) const;
    // Pointer to the tensor's first byte inside the map (lifetime = this object).
    const std::uint8_t* bytes(const TensorInfo& t) const { return m_dataStart + t.begin; }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    // attnscope's own files say what they are in the metadata key "format": throws CorruptFile ("not `what`", naming
    // the expected format and the file) unless it is `format`.
    void requireFormat(const std::string& format, const std::string& what) const;
    // The file was truncated while mapped and a read hit the lost part (util/mapped_file.h).
    bool damaged() const { return m_map.damaged(); }

private:
    MappedFile m_map;
    const std::uint8_t* m_dataStart = nullptr;
    std::vector<TensorInfo> m_tensors;
    std::map<std::string, std::size_t> m_index;
    std::map<std::string, std::string> m_metadata;
};

// A float32 tensor to write; `data` must hold shapeNumel(shape) values. `storeAs` may be F32, F16 or BF16
// (converted on write: F16 rounded to nearest even, BF16 truncated).
struct OutputTensor {
    std::string name;
    Shape shape;
    std::vector<float> data;
    DType storeAs = DType::F32;
    std::vector<double> data64 = {}; // used instead of `data` when storeAs is F64 (exact sums and counts)
};

// Writes tensors (any order in; stored sorted by name, header padded to 8 bytes) with metadata.
void writeSafetensors(const std::string& path, const std::vector<OutputTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Any float tensor as float64 (F64 exact; F32/F16/BF16 widened); throws for other dtypes.
std::vector<double> readAsDouble(const SafetensorsFile& file, const TensorInfo& t);

// Converts any float tensor of a file to float32 (F32 copied, F16/BF16/F64 converted); throws for others.
std::vector<float> readAsFloat(const SafetensorsFile& file, const TensorInfo& t);

} // namespace attnscope::core
