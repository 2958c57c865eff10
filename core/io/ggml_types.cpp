// ggml type table and block dequantisers. Each block type, as the public GGUF/ggml description lays it out:
//   Q8_0 (32 per 34 bytes): f16 d, 32 x int8 q;           x = d q
//   Q4_0 (32 per 18 bytes): f16 d, 16 bytes of nibbles;   x = d (nibble - 8), low nibbles are elements 0..15
//   Q4_1 (32 per 20 bytes): f16 d, f16 m, 16 bytes of nibbles;  x = d nibble + m
//   Q5_0 (32 per 22 bytes): f16 d, 32 high bits (u32, bit j for element j), 16 bytes of nibbles;  x = d (q - 16)
//   Q5_1 (32 per 24 bytes): f16 d, f16 m, 32 high bits, 16 bytes of nibbles;  x = d q + m
//   Q2_K (256 per 84 bytes): 16 bytes of scales (low nibble scale, high nibble min) for sub-blocks of 16, 64 bytes of
//        2-bit values, f16 d, f16 dmin; each 32-byte run holds four 2-bit planes of 32 elements (two sub-blocks each);
//        x = d sc q - dmin m
//   Q3_K (256 per 110 bytes): 32 bytes of high bits (a set bit adds 4 to q), 64 bytes of 2-bit values laid out as in
//        Q2_K, 12 bytes of sixteen 6-bit scales, f16 d;  x = d (sc - 32) (q - 4 + 4 h)
//   Q5_K (256 per 176 bytes): f16 d, f16 dmin, 12 bytes of scales/mins as Q4_K, 32 bytes of high bits (bit 2i and
//        2i+1 of byte l for the low/high nibble of the i-th 32-byte run), 128 bytes of nibbles;  x = d sc q - dmin m
//   Q4_K (256 per 144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
//        nibbles; each 32-byte run holds two sub-blocks (low nibbles first);  x = d sc q - dmin m
//   Q6_K (256 per 210 bytes): 128 bytes low 4 bits, 64 bytes high 2 bits, 16 x int8 scales, f16 d;  x = d sc (q - 32)
#include "io/ggml_types.h"

#include "io/dtype.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <array>
#include <cmath>
#include <cstring>

namespace attnscope::core {

namespace {
struct Entry {
    std::uint32_t id;
    GgmlTypeInfo info;
};
constexpr std::array kTypes = {
    Entry{0, {"F32", 1, 4, true}},        Entry{1, {"F16", 1, 2, true}},         Entry{2, {"Q4_0", 32, 18, true}},
    Entry{3, {"Q4_1", 32, 20, true}},     Entry{6, {"Q5_0", 32, 22, true}},      Entry{7, {"Q5_1", 32, 24, true}},
    Entry{8, {"Q8_0", 32, 34, true}},     Entry{9, {"Q8_1", 32, 36, false}},     Entry{10, {"Q2_K", 256, 84, true}},
    Entry{11, {"Q3_K", 256, 110, true}},  Entry{12, {"Q4_K", 256, 144, true}},   Entry{13, {"Q5_K", 256, 176, true}},
    Entry{14, {"Q6_K", 256, 210, true}},  Entry{15, {"Q8_K", 256, 292, false}},  Entry{16, {"IQ2_XXS", 256, 66, false}},
    Entry{17, {"IQ2_XS", 256, 74, false}}, Entry{18, {"IQ3_XXS", 256, 98, false}}, Entry{19, {"IQ1_S", 256, 50, false}},
    Entry{20, {"IQ4_NL", 32, 18, false}}, Entry{21, {"IQ3_S", 256, 110, false}}, Entry{22, {"IQ2_S", 256, 82, false}},
    Entry{23, {"IQ4_XS", 256, 136, false}}, Entry{24, {"I8", 1, 1, false}},      Entry{25, {"I16", 1, 2, false}},
    Entry{26, {"I32", 1, 4, false}},      Entry{27, {"I64", 1, 8, false}},       Entry{28, {"F64", 1, 8, true}},
    Entry{29, {"IQ1_M", 256, 56, false}}, Entry{30, {"BF16", 1, 2, true}},       Entry{34, {"TQ1_0", 256, 54, false}},
    Entry{35, {"TQ2_0", 256, 66, false}}, Entry{39, {"MXFP4", 32, 17, true}},
};

float f16(const std::uint8_t* p)
{
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return halfToFloat(h);
}

void q8_0(const std::uint8_t* b, float* y)
{
    const float d = f16(b);
    for (int j = 0; j < 32; ++j)
        y[j] = d * static_cast<float>(static_cast<std::int8_t>(b[2 + j]));
}

// The E2M1 values of the 16 codes (sign in bit 3), twice the format's, as ggml stores them.
constexpr float kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, -0.0f, -1, -2, -3, -4, -6, -8, -12};

// The codes looked up in registers (a table lookup per element was a quarter of gpt-oss's forward); the same
// products d * value as the scalar loop.
void mxfp4(const std::uint8_t* b, float* y)
{
    const float d = mxfp4Scale(b[0]);
#if defined(__AVX512F__)
    const __m512 table = _mm512_loadu_ps(kMxfp4Values), scale = _mm512_set1_ps(d);
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 1));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m512i low = _mm512_cvtepu8_epi32(_mm_and_si128(codes, nibble));
    const __m512i high = _mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(codes, 4), nibble));
    _mm512_storeu_ps(y, _mm512_mul_ps(scale, _mm512_permutexvar_ps(low, table)));
    _mm512_storeu_ps(y + 16, _mm512_mul_ps(scale, _mm512_permutexvar_ps(high, table)));
#elif defined(__AVX2__)
    // Eight magnitudes in a register; bit 3 of a code is the sign, moved to the float's sign bit.
    const __m256 magnitudes = _mm256_loadu_ps(kMxfp4Values), scale = _mm256_set1_ps(d);
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 1));
    const __m128i nibble = _mm_set1_epi8(0x0F);
    const __m128i parts[2] = {_mm_and_si128(codes, nibble), _mm_and_si128(_mm_srli_epi16(codes, 4), nibble)};
    for (int half = 0; half < 2; ++half)
        for (int eight = 0; eight < 2; ++eight) {
            const __m256i code = _mm256_cvtepu8_epi32(eight ? _mm_srli_si128(parts[half], 8) : parts[half]);
            const __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, code); // uses the low 3 bits
            const __m256 sign = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(code, 3), 31));
            _mm256_storeu_ps(y + 16 * half + 8 * eight, _mm256_mul_ps(scale, _mm256_or_ps(magnitude, sign)));
        }
#else
    for (int j = 0; j < 16; ++j) {
        y[j] = d * kMxfp4Values[b[1 + j] & 0x0F];
        y[j + 16] = d * kMxfp4Values[b[1 + j] >> 4];
    }
#endif
}

void q4_0(const std::uint8_t* b, float* y)
{
    const float d = f16(b);
    const std::uint8_t* q = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>((q[j] & 0x0F) - 8);
        y[j + 16] = d * static_cast<float>((q[j] >> 4) - 8);
    }
}

void q4_1(const std::uint8_t* b, float* y)
{
    const float d = f16(b), m = f16(b + 2);
    const std::uint8_t* q = b + 4;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>(q[j] & 0x0F) + m;
        y[j + 16] = d * static_cast<float>(q[j] >> 4) + m;
    }
}

// The 5-bit values of a Q5_0/Q5_1 block: low nibbles from `q`, bit j of the little-endian u32 at `high` on top.
void fiveBit(const std::uint8_t* high, const std::uint8_t* q, int* out)
{
    std::uint32_t h;
    std::memcpy(&h, high, 4);
    for (int j = 0; j < 16; ++j) {
        out[j] = (q[j] & 0x0F) | static_cast<int>(((h >> j) & 1u) << 4);
        out[j + 16] = (q[j] >> 4) | static_cast<int>(((h >> (j + 16)) & 1u) << 4);
    }
}

void q5_0(const std::uint8_t* b, float* y)
{
    const float d = f16(b);
    int q[32];
    fiveBit(b + 2, b + 6, q);
    for (int j = 0; j < 32; ++j)
        y[j] = d * static_cast<float>(q[j] - 16);
}

void q5_1(const std::uint8_t* b, float* y)
{
    const float d = f16(b), m = f16(b + 2);
    int q[32];
    fiveBit(b + 4, b + 8, q);
    for (int j = 0; j < 32; ++j)
        y[j] = d * static_cast<float>(q[j]) + m;
}

void q2_k(const std::uint8_t* b, float* y)
{
    const std::uint8_t* scales = b;
    const std::uint8_t* q = b + 16;
    const float d = f16(b + 80), dmin = f16(b + 82);
    int s = 0;
    for (int half = 0; half < 2; ++half) { // 128 elements from 32 bytes: four 2-bit planes, 32 elements each
        for (int plane = 0; plane < 4; ++plane) {
            const int shift = 2 * plane;
            for (int part = 0; part < 2; ++part) { // two sub-blocks of 16 per plane, each with its scale and min
                const float dl = d * static_cast<float>(scales[s] & 0x0F), ml = dmin * static_cast<float>(scales[s] >> 4);
                ++s;
                for (int l = 0; l < 16; ++l)
                    y[l] = dl * static_cast<float>((q[part * 16 + l] >> shift) & 3) - ml;
                y += 16;
            }
        }
        q += 32;
    }
}

void q3_k(const std::uint8_t* b, float* y)
{
    const std::uint8_t* hmask = b;
    const std::uint8_t* q = b + 32;
    const std::uint8_t* packed = b + 96;
    const float d = f16(b + 108);
    // Scale i: low 4 bits from byte i (i < 8) or the high nibble of byte i - 8; top 2 bits from byte 8 + i % 4 at bit
    // 2 (i / 4); stored with an offset of 32.
    int sc[16];
    for (int i = 0; i < 16; ++i) {
        const int low = i < 8 ? (packed[i] & 0x0F) : (packed[i - 8] >> 4);
        const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
        sc[i] = (low | (high << 4)) - 32;
    }
    int s = 0;
    unsigned bit = 0;
    for (int half = 0; half < 2; ++half) {
        for (int plane = 0; plane < 4; ++plane, ++bit) {
            const int shift = 2 * plane;
            for (int part = 0; part < 2; ++part) {
                const float dl = d * static_cast<float>(sc[s++]);
                for (int l = 0; l < 16; ++l) {
                    const int idx = part * 16 + l;
                    const int hi = (hmask[idx] >> bit) & 1;
                    y[l] = dl * static_cast<float>(((q[idx] >> shift) & 3) - (hi ? 0 : 4));
                }
                y += 16;
            }
        }
        q += 32;
    }
}

// Scale and min of sub-block j (0..7) from the 12 packed bytes: bytes 0-3 hold the low 6 bits of scales 0-3, bytes
// 4-7 those of mins 0-3; scales and mins 4-7 take their low 4 bits from bytes 8-11 and their top 2 bits from the
// top bits of bytes 0-3 (scales) and 4-7 (mins).
void scaleMinK4(int j, const std::uint8_t* s, int& sc, int& m)
{
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scales and mins; each 32-byte run of nibbles holds two sub-blocks
// (low nibbles first). Q5_K adds 16 where bit 2 pair (low nibbles) or 2 pair + 1 (high) of qh[l] is set; Q4_K has no
// qh. A template on that, so each inner loop is branch-free and the compiler vectorises it (the packing step decodes
// every weight tile of a quantised model through here).
template <bool HighBits>
void kQuant(const std::uint8_t* b, const std::uint8_t* qh, const std::uint8_t* q, float* y)
{
    const float d = f16(b), dmin = f16(b + 2);
    const std::uint8_t* scales = b + 4;
    for (int pair = 0; pair < 4; ++pair) {
        int sc1, m1, sc2, m2;
        scaleMinK4(2 * pair, scales, sc1, m1);
        scaleMinK4(2 * pair + 1, scales, sc2, m2);
        const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
        const float d2 = d * static_cast<float>(sc2), min2 = dmin * static_cast<float>(m2);
        for (int l = 0; l < 32; ++l) {
            int low = q[l] & 0x0F, high = q[l] >> 4;
            if constexpr (HighBits) {
                low += ((qh[l] >> (2 * pair)) & 1) << 4;
                high += ((qh[l] >> (2 * pair + 1)) & 1) << 4;
            }
            y[l] = d1 * static_cast<float>(low) - min1;
            y[32 + l] = d2 * static_cast<float>(high) - min2;
        }
        y += 64;
        q += 32;
    }
}

void q4_k(const std::uint8_t* b, float* y) { kQuant<false>(b, nullptr, b + 16, y); }
void q5_k(const std::uint8_t* b, float* y) { kQuant<true>(b, b + 16, b + 48, y); }

void q6_k(const std::uint8_t* b, float* y)
{
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = f16(b + 208);
    for (int half = 0; half < 2; ++half) { // 128 elements from 64 bytes of ql and 32 of qh
        for (int s = 0; s < 2; ++s) {      // 16 elements of each quarter share a scale: loops of 16 the compiler vectorises
            const float d1 = d * static_cast<float>(sc[s]), d2 = d * static_cast<float>(sc[s + 2]);
            const float d3 = d * static_cast<float>(sc[s + 4]), d4 = d * static_cast<float>(sc[s + 6]);
            for (int i = 0; i < 16; ++i) {
                const int l = 16 * s + i;
                const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d1 * static_cast<float>(q1);
                y[l + 32] = d2 * static_cast<float>(q2);
                y[l + 64] = d3 * static_cast<float>(q3);
                y[l + 96] = d4 * static_cast<float>(q4);
            }
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}
} // namespace

std::optional<GgmlTypeInfo> ggmlTypeInfo(std::uint32_t id)
{
    // Indexed by id: every row a weight decodes asks for its type's sizes (a search of the list was 4% of a forward).
    static const auto byId = [] {
        std::array<std::optional<GgmlTypeInfo>, 64> table{};
        for (const auto& e : kTypes)
            table.at(e.id) = e.info;
        return table;
    }();
    return id < byId.size() ? byId[id] : std::nullopt;
}

std::string ggmlTypeName(GgmlType t)
{
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(t));
    return info ? info->name : "type " + std::to_string(static_cast<std::uint32_t>(t));
}

std::string readableGgmlTypes()
{
    std::string s;
    for (const auto& e : kTypes)
        if (e.info.readable)
            s += (s.empty() ? "" : ", ") + std::string(e.info.name);
    return s;
}

BlockDecoder blockDecoder(GgmlType type)
{
    switch (type) {
    case GgmlType::Q8_0: return q8_0;
    case GgmlType::Q4_0: return q4_0;
    case GgmlType::Q4_1: return q4_1;
    case GgmlType::Q5_0: return q5_0;
    case GgmlType::Q5_1: return q5_1;
    case GgmlType::Q2_K: return q2_k;
    case GgmlType::Q3_K: return q3_k;
    case GgmlType::Q4_K: return q4_k;
    case GgmlType::Q5_K: return q5_k;
    case GgmlType::Q6_K: return q6_k;
    case GgmlType::MXFP4: return mxfp4;
    default: return nullptr;
    }
}

void dequantize(GgmlType type, const std::uint8_t* src, float* dst, std::int64_t n)
{
    switch (type) {
    case GgmlType::F32:
        if (n > 0)
            std::memcpy(dst, src, static_cast<std::size_t>(n) * 4);
        return;
    case GgmlType::F16:
        for (std::int64_t i = 0; i < n; ++i)
            dst[i] = f16(src + 2 * i);
        return;
    case GgmlType::BF16:
        for (std::int64_t i = 0; i < n; ++i) {
            std::uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            dst[i] = bfloat16ToFloat(h);
        }
        return;
    case GgmlType::F64:
        for (std::int64_t i = 0; i < n; ++i) {
            double v;
            std::memcpy(&v, src + 8 * i, 8);
            dst[i] = static_cast<float>(v);
        }
        return;
    default:
        break;
    }
    const auto decode = blockDecoder(type);
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(type));
    if (!decode || !info) // callers check readability first; nothing is written for a type nobody can read
        return;
    for (std::int64_t b = 0; b < n / info->blockSize; ++b)
        decode(src + static_cast<std::int64_t>(info->typeSize) * b, dst + static_cast<std::int64_t>(info->blockSize) * b);
}

} // namespace attnscope::core
