// Typed weight views: row decoding for every readable type, and the lazy finiteness check.
#include "io/weight_view.h"

#include "io/dtype.h"
#include "util/error.h"

#include <cmath>
#include <cstring>
#include <limits>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace attnscope::core {

namespace {

void decodeF16(const std::uint8_t* src, std::int64_t n, float* out)
{
    std::int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
#endif
    for (; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = halfToFloat(h);
    }
}

void decodeBF16(const std::uint8_t* src, std::int64_t n, float* out)
{
    // bfloat16 is the top half of a float32: a shift, which the compiler vectorises.
    for (std::int64_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(out + i, &bits, 4);
    }
}

} // namespace

void decodeElements(GgmlType type, const std::uint8_t* row, std::int64_t first, std::int64_t n, float* out)
{
    switch (type) {
    case GgmlType::F32:
        std::memcpy(out, row + 4 * first, static_cast<std::size_t>(n) * 4);
        return;
    case GgmlType::F16:
        decodeF16(row + 2 * first, n, out);
        return;
    case GgmlType::BF16:
        decodeBF16(row + 2 * first, n, out);
        return;
    default:
        break;
    }
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(type));
    const auto decode = blockDecoder(type);
    if (!info || !decode) {
        dequantize(type, row + static_cast<std::int64_t>(info ? info->typeSize : 0) * first, out, n); // F64
        return;
    }
    const std::int64_t bs = info->blockSize;
    const std::uint8_t* block = row + (first / bs) * info->typeSize;
    for (std::int64_t done = 0; done < n; done += bs, block += info->typeSize)
        decode(block, out + done);
}

WeightView WeightView::ofFloats(const float* data, Shape shape)
{
    WeightView v;
    v.bytes = reinterpret_cast<const std::uint8_t*>(data);
    v.type = GgmlType::F32;
    v.shape = std::move(shape);
    return v;
}

std::int64_t WeightView::cols() const
{
    if (shape.empty())
        return 0;
    if (shape.size() == 1)
        return shape[0];
    std::int64_t c = 1;
    for (std::size_t i = 1; i < shape.size(); ++i)
        c *= shape[i];
    return c;
}

std::int64_t WeightView::numel() const { return rows() * cols(); }

std::int64_t WeightView::blockSize() const
{
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(type));
    return info ? info->blockSize : 1;
}

std::size_t WeightView::rowBytes() const
{
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(type));
    if (!info)
        return 0;
    return static_cast<std::size_t>(cols() / info->blockSize) * info->typeSize;
}

const std::uint8_t* WeightView::storedRow(std::int64_t r) const
{
    const std::int64_t stored = rowOrder ? (*rowOrder)[static_cast<std::size_t>(r)] : r;
    return bytes + static_cast<std::size_t>(stored) * rowBytes();
}

void WeightView::decodeRow(std::int64_t r, std::int64_t k0, std::int64_t n, float* out) const
{
    decodeElements(type, storedRow(r), k0, n, out);
}

std::string WeightView::describe() const
{
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "] " + ggmlTypeName(type);
}

namespace {

// Byte offsets of the f16 scale fields of a block type: a block's values are finite exactly when these are (the
// largest |scale x sub-scale x level| of any type, 65504 x 128 x 32, is far inside float32).
std::vector<int> scaleOffsets(GgmlType t)
{
    switch (t) {
    case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: return {0};
    case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
    case GgmlType::Q2_K: return {80, 82};
    case GgmlType::Q3_K: return {108};
    case GgmlType::Q6_K: return {208};
    default: return {};
    }
}

// Index of the first stored element of `row` (n elements) that is NaN or infinite, or -1. Reads the stored bits:
// an exponent of all ones (F32, F16, BF16, F64), or a block whose scale has one.
std::int64_t firstNonFinite(GgmlType type, const std::uint8_t* row, std::int64_t n)
{
    auto scan16 = [&](std::uint16_t mask) -> std::int64_t {
        for (std::int64_t i = 0; i < n; ++i) {
            std::uint16_t h;
            std::memcpy(&h, row + 2 * i, 2);
            if ((h & mask) == mask)
                return i;
        }
        return -1;
    };
    switch (type) {
    case GgmlType::F32:
        for (std::int64_t i = 0; i < n; ++i) {
            std::uint32_t b;
            std::memcpy(&b, row + 4 * i, 4);
            if ((b & 0x7F800000u) == 0x7F800000u)
                return i;
        }
        return -1;
    case GgmlType::F16: return scan16(0x7C00);
    case GgmlType::BF16: return scan16(0x7F80);
    case GgmlType::F64:
        for (std::int64_t i = 0; i < n; ++i) {
            std::uint64_t b;
            std::memcpy(&b, row + 8 * i, 8);
            if ((b & 0x7FF0000000000000ull) == 0x7FF0000000000000ull)
                return i;
        }
        return -1;
    case GgmlType::MXFP4: // an exponent byte per block: 2^(e - 128) times up to 12 overflows from e = 253 on
        for (std::int64_t b = 0; b < n / 32; ++b)
            if (row[b * 17] >= 253)
                return b * 32;
        return -1;
    default:
        break;
    }
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(type));
    const auto offsets = scaleOffsets(type);
    if (!info || offsets.empty())
        return -1;
    for (std::int64_t b = 0; b < n / info->blockSize; ++b)
        for (int off : offsets) {
            std::uint16_t h;
            std::memcpy(&h, row + b * info->typeSize + off, 2);
            if ((h & 0x7C00) == 0x7C00)
                return b * info->blockSize;
        }
    return -1;
}

} // namespace

void WeightView::checkFinite() const
{
    if (!source || source->m_finite.load(std::memory_order_acquire))
        return;
    std::lock_guard lock(source->m_checking);
    if (source->m_finite.load(std::memory_order_relaxed))
        return;
    // Row by row in parallel over the stored bits (no decoding): once per tensor, on first use.
    const std::int64_t R = rows(), C = cols();
    const std::size_t stride = rowBytes();
    std::int64_t firstBad = std::numeric_limits<std::int64_t>::max();
#pragma omp parallel for schedule(static) reduction(min : firstBad) if (static_cast<double>(R) * static_cast<double>(C) > 1e5)
    for (std::int64_t r = 0; r < R; ++r) {
        const std::int64_t at = firstNonFinite(type, bytes + static_cast<std::size_t>(r) * stride, C);
        if (at >= 0)
            firstBad = std::min(firstBad, r * C + at);
    }
    if (firstBad != std::numeric_limits<std::int64_t>::max())
        throw Error(ErrorCode::CorruptFile,
                    "holds NaN or infinite values (the first at element " + std::to_string(firstBad) +
                        "): the weights are damaged",
                    source->file(), source->name());
    source->m_finite.store(true, std::memory_order_release);
}

} // namespace attnscope::core
