// Size arithmetic on numbers that files give (shapes, counts, strides): products and sums saturate at the largest
// value instead of wrapping (or, signed, overflowing), so a lying size can only come out too large, which every reader
// then refuses against its data, never small; and a message shows a saturated size as "more than ..." rather than a
// wrapped number.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace attnscope::core {

inline constexpr std::uint64_t kSaturatedSize = std::numeric_limits<std::uint64_t>::max();

inline std::uint64_t productOrMax(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kSaturatedSize : r;
}

inline std::uint64_t sumOrMax(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kSaturatedSize : r;
}

inline std::int64_t sumOrMax(std::int64_t a, std::int64_t b)
{
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::int64_t>::max() : r;
}

// "4096", or "more than 18446744073709551614" for a saturated size.
inline std::string sizeText(std::uint64_t v)
{
    return v == kSaturatedSize ? "more than " + std::to_string(kSaturatedSize - 1) : std::to_string(v);
}

} // namespace attnscope::core
