// Tensor element types of the safetensors format, and float conversion of the half types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace attnscope::core {

enum class DType { F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U64, U32, U16, U8, Bool };

// nullopt for a name that is not a safetensors dtype.
std::optional<DType> parseDType(std::string_view name);
std::string_view dtypeName(DType t);
std::size_t dtypeSize(DType t);

float halfToFloat(std::uint16_t h);
float bfloat16ToFloat(std::uint16_t b);
std::uint16_t floatToHalf(float f); // round to nearest even; used to store built-in models

} // namespace attnscope::core
