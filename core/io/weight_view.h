// A weight as it is stored: bytes in the memory map, the ggml type tag, the row-major shape. No float32 copy of a
// matrix exists anywhere: the product engine (linalg/matmul.h) and row lookups decode tiles of it on the fly.
#pragma once

#include "io/ggml_types.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attnscope::core {

using Shape = std::vector<std::int64_t>;

// Where a view's bytes come from, for messages and the once-per-tensor check of its values. Owned by the Checkpoint
// (stable address for its lifetime).
class WeightSource {
public:
    WeightSource(std::string name, std::string file)
        : m_name(std::move(name))
        , m_file(std::move(file))
    {
    }
    const std::string& name() const { return m_name; }
    const std::string& file() const { return m_file; }

private:
    friend struct WeightView;
    std::string m_name, m_file;
    mutable std::atomic<bool> m_finite{false};
    mutable std::mutex m_checking;
};

// Rows are the outermost dimension (shape[0]; a vector is one row). Each row holds cols() elements in rowBytes() bytes:
// whole blocks for block types (GGUF guarantees a row is a whole number of blocks). Copyable and cheap; valid while the
// Checkpoint (or whoever owns `bytes`) lives. Any thread may read a view concurrently.
struct WeightView {
    const std::uint8_t* bytes = nullptr;
    GgmlType type = GgmlType::F32;
    Shape shape;
    const WeightSource* source = nullptr;
    // Logical row r is stored row (*rowOrder)[r] (GGUF's interleaved q/k rows put back into Hugging Face order without
    // copying the weight); null for the stored order.
    std::shared_ptr<const std::vector<std::int32_t>> rowOrder;

    // A float32 matrix or vector someone else owns, as a view (activations multiplied like weights, tests).
    static WeightView ofFloats(const float* data, Shape shape);

    explicit operator bool() const { return bytes != nullptr; }
    std::int64_t rows() const { return shape.empty() ? 0 : (shape.size() == 1 ? 1 : shape[0]); }
    std::int64_t cols() const;
    std::int64_t numel() const;
    std::size_t rowBytes() const;
    // Elements per block of the type (1 for F32/F16/BF16/F64): decodeRow's k0 and n come in whole blocks.
    std::int64_t blockSize() const;
    // Float32, in stored order and aligned: usable in place as floats.
    bool isFloat32() const
    {
        return type == GgmlType::F32 && !rowOrder && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0;
    }
    // Float32 data of such a view (null otherwise).
    const float* floats() const { return isFloat32() ? reinterpret_cast<const float*>(bytes) : nullptr; }
    const std::uint8_t* storedRow(std::int64_t r) const;

    // Elements [k0, k0 + n) of logical row r as float32. k0 is a multiple of blockSize(); n is too, or runs to cols().
    void decodeRow(std::int64_t r, std::int64_t k0, std::int64_t n, float* out) const;
    // Throws Error(CorruptFile) naming the file and tensor when a stored value is NaN or infinite (for block types: a
    // scale). Scans the stored bits the first time it is called (in parallel); later calls cost an atomic load.
    // Products call it, so opening a model reads headers only and a damaged tensor is still refused before use.
    void checkFinite() const;
    // "[out, in] Q4_K": for messages.
    std::string describe() const;
};

// Decodes `n` consecutive elements of an element or block type starting at element `first` of `row` (a stored row).
// For block types `first` and `n` are multiples of the block size (or n runs to the row's end).
void decodeElements(GgmlType type, const std::uint8_t* row, std::int64_t first, std::int64_t n, float* out);

} // namespace attnscope::core
