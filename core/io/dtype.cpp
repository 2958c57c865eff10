// dtype table and IEEE half / bfloat16 conversions.
#include "io/dtype.h"

#include <array>
#include <bit>
#include <cmath>
#include <utility>

namespace attnscope::core {
namespace {
struct DTypeEntry {
    DType type;
    std::string_view name;
    std::size_t size;
};
constexpr std::array<DTypeEntry, 15> kDTypes{{
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2}, {DType::BF16, "BF16", 2},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E5M2, "F8_E5M2", 1}, {DType::I64, "I64", 8},
    {DType::I32, "I32", 4}, {DType::I16, "I16", 2}, {DType::I8, "I8", 1}, {DType::U64, "U64", 8},
    {DType::U32, "U32", 4}, {DType::U16, "U16", 2}, {DType::U8, "U8", 1}, {DType::Bool, "BOOL", 1},
}};
} // namespace

std::optional<DType> parseDType(std::string_view name)
{
    for (const auto& e : kDTypes)
        if (e.name == name)
            return e.type;
    return std::nullopt;
}

std::string_view dtypeName(DType t)
{
    for (const auto& e : kDTypes)
        if (e.type == t)
            return e.name;
    return "?";
}

std::size_t dtypeSize(DType t)
{
    for (const auto& e : kDTypes)
        if (e.type == t)
            return e.size;
    return 0;
}

float halfToFloat(std::uint16_t h)
{
    const std::uint32_t sign = (h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1Fu;
    std::uint32_t mant = h & 0x3FFu;
    std::uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { // subnormal: renormalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3FFu;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    return std::bit_cast<float>(bits);
}

float bfloat16ToFloat(std::uint16_t b)
{
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t floatToHalf(float f)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t absx = x & 0x7FFFFFFFu;
    if (absx >= 0x7F800000u) // inf or nan
        return sign | 0x7C00u | (absx > 0x7F800000u ? 0x200u : 0u);
    if (absx >= 0x477FF000u) // rounds to >= 65520: overflow to inf
        return sign | 0x7C00u;
    if (absx < 0x38800000u) { // below the smallest normal half: subnormal or zero
        if (absx < 0x33000000u)
            return sign;
        const std::uint32_t e = absx >> 23;
        const std::uint32_t m = (absx & 0x7FFFFFu) | 0x800000u;
        const int shift = static_cast<int>(126 - e); // value = m * 2^(e-150) = h * 2^-24
        std::uint32_t half = m >> shift;
        const std::uint32_t rem = m & ((1u << shift) - 1);
        const std::uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            ++half;
        return sign | static_cast<std::uint16_t>(half);
    }
    std::uint32_t h = ((absx - 0x38000000u) >> 13);
    const std::uint32_t rem = absx & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        ++h;
    return sign | static_cast<std::uint16_t>(h);
}

} // namespace attnscope::core
