// ggml tensor types as GGUF files store them: ids, names, block sizes, and dequantisation to float32 of the types
// attnscope reads (F32, F16, BF16, F64 and the blocks of llama.cpp's Q2_K..Q8_0 presets: Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K). Layouts follow the public GGUF/ggml description; the IQ and ternary types
// are known by name and refused. Safetensors' float dtypes are stored as their ggml namesakes (F32, F16, BF16, F64),
// so one type tag describes every weight attnscope reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace attnscope::core {

enum class GgmlType : std::uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12,
    Q5_K = 13, Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
    IQ2_S = 22, IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34,
    TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeInfo {
    const char* name;
    std::uint32_t blockSize; // elements per block
    std::uint32_t typeSize;  // bytes per block
    bool readable;           // attnscope can dequantise it
};

// nullopt for an id that names no ggml type.
std::optional<GgmlTypeInfo> ggmlTypeInfo(std::uint32_t id);
std::string ggmlTypeName(GgmlType t);
// "F32, F16, Q4_0, ...": the readable types in id order.
std::string readableGgmlTypes();

// MXFP4 (gpt-oss's experts), 32 elements in 17 bytes: an E8M0 exponent byte e, then 16 bytes whose low nibble is
// element j and high nibble element j + 16, each an FP4 E2M1 code; x = code value (0, 1, 2, 3, 4, 6, 8, 12, signed)
// times 2^(e - 128). A block whose exponent makes its values NaN or infinite (e >= 253) counts as damaged.
// mxfp4Scale is that factor, exact, as float32 bits (the row kernels call it once per block).
inline float mxfp4Scale(std::uint8_t e)
{
    // e >= 2: a normal float with exponent field e - 1; e = 0 and 1 give the subnormals 2^-128 and 2^-127.
    const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
}

// Dequantises one block of a block type (Q4_0 .. Q6_K, MXFP4) from `src` into blockSize floats at `dst`; null for element
// types (F32, F16, BF16, F64) and for types attnscope cannot read.
using BlockDecoder = void (*)(const std::uint8_t* src, float* dst);
BlockDecoder blockDecoder(GgmlType type);

// Dequantises `n` consecutive elements (n a multiple of the block size) from `src` into `dst`.
void dequantize(GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n);

} // namespace attnscope::core
