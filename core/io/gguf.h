// GGUF reader (llama.cpp's single-file model format, versions 2 and 3), written from the format's public description.
// The file is memory-mapped and treated as hostile: every count, string length, array length, type, dimension,
// offset and alignment is checked against the file size before it is used, with a message naming the file and the
// field (the metadata key or the tensor).
#pragma once

#include "io/ggml_types.h"
#include "util/mapped_file.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace attnscope::core {

// One metadata value. Integers of every width are widened; arrays keep their element kind.
struct GgufValue {
    enum class Kind { UInt, Int, Float, Bool, String, Array };
    Kind kind = Kind::UInt;
    std::uint64_t u = 0;
    std::int64_t i = 0;
    double f = 0;
    bool b = false;
    std::string s;
    // Arrays: one of these is filled, by element kind; nested arrays are refused.
    Kind elementKind = Kind::UInt;
    std::vector<std::string> strings;
    std::vector<double> numbers;     // float and integer elements (integers exact up to 2^53)
    std::vector<std::int64_t> ints;  // integer elements, exactly
    std::size_t arraySize() const;
};

struct GgufTensor {
    std::string name;
    GgmlType type = GgmlType::F32;
    std::vector<std::int64_t> dims; // ggml order: dims[0] = ne0, the contiguous one
    std::uint64_t offset = 0;       // from the start of the data section
    std::uint64_t bytes = 0;
    // Row-major shape, outermost first: [ne_{n-1}, ..., ne1, ne0] (a 2-D weight {in, out} becomes [out, in]).
    std::vector<std::int64_t> shape() const;
    std::int64_t numel() const;
};

class GgufFile {
public:
    // Limits that keep a hostile header from allocating: counts above these are refused.
    static constexpr std::uint64_t kMaxTensors = 1'000'000;
    static constexpr std::uint64_t kMaxMetadata = 1'000'000;
    static constexpr std::uint64_t kMaxStringBytes = 64u << 20;
    static constexpr std::uint64_t kMaxArrayElements = 64u << 20;

    // Opens and validates the whole header and tensor table; throws Error(CorruptFile / UnsupportedDtype).
    explicit GgufFile(const std::string& path);

    const std::string& path() const { return m_map.path(); }
    std::uint32_t version() const { return m_version; }
    std::uint64_t alignment() const { return m_alignment; }
    const std::map<std::string, GgufValue>& metadata() const { return m_metadata; }
    const std::vector<GgufTensor>& tensors() const { return m_tensors; }
    const GgufTensor* find(const std::string& name) const;
    const std::uint8_t* bytes(const GgufTensor& t) const { return m_dataStart + t.offset; }
    // The file was truncated while mapped and a read hit the lost part (util/mapped_file.h).
    bool damaged() const { return m_map.damaged(); }

    // Typed metadata access; throws Error(BadConfig) naming the file and key when missing or of another kind.
    const GgufValue* value(const std::string& key) const;
    std::string string(const std::string& key) const;
    std::uint64_t uint(const std::string& key) const; // any non-negative integer
    double number(const std::string& key) const;      // any integer or float
    std::optional<std::uint64_t> uintOr(const std::string& key) const;
    std::optional<double> numberOr(const std::string& key) const;
    std::optional<std::string> stringOr(const std::string& key) const;
    std::optional<bool> boolOr(const std::string& key) const;

private:
    MappedFile m_map;
    std::uint32_t m_version = 0;
    std::uint64_t m_alignment = 32;
    std::map<std::string, GgufValue> m_metadata;
    std::vector<GgufTensor> m_tensors;
    std::map<std::string, std::size_t> m_index;
    const std::uint8_t* m_dataStart = nullptr;
};

// True when the file starts with the GGUF magic (for choosing a reader by content, not by extension).
bool looksLikeGguf(const std::string& path);

} // namespace attnscope::core
