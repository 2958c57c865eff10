// ggml type table and block dequantisers.
//   Q8_0 (32 per 34 bytes): f16 d, 32 x int8 q;           x = d q
//   Q4_0 (32 per 18 bytes): f16 d, 16 bytes of nibbles;   x = d (nibble - 8), low nibbles are elements 0..15
//   Q4_K (256 per 144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, 128 bytes of
//        nibbles; each 32-byte run holds two sub-blocks (low nibbles first);  x = d sc q - dmin m
//   Q6_K (256 per 210 bytes): 128 bytes low 4 bits, 64 bytes high 2 bits, 16 x int8 scales, f16 d;  x = d sc (q - 32)
#include "io/ggml_types.h"

#include "io/dtype.h"

#include <array>
#include <cstring>

namespace attnscope::core {

namespace {
struct Entry {
    std::uint32_t id;
    GgmlTypeInfo info;
};
constexpr std::array kTypes = {
    Entry{0, {"F32", 1, 4, true}},        Entry{1, {"F16", 1, 2, true}},         Entry{2, {"Q4_0", 32, 18, true}},
    Entry{3, {"Q4_1", 32, 20, false}},    Entry{6, {"Q5_0", 32, 22, false}},     Entry{7, {"Q5_1", 32, 24, false}},
    Entry{8, {"Q8_0", 32, 34, true}},     Entry{9, {"Q8_1", 32, 36, false}},     Entry{10, {"Q2_K", 256, 84, false}},
    Entry{11, {"Q3_K", 256, 110, false}}, Entry{12, {"Q4_K", 256, 144, true}},   Entry{13, {"Q5_K", 256, 176, false}},
    Entry{14, {"Q6_K", 256, 210, true}},  Entry{15, {"Q8_K", 256, 292, false}},  Entry{16, {"IQ2_XXS", 256, 66, false}},
    Entry{17, {"IQ2_XS", 256, 74, false}}, Entry{18, {"IQ3_XXS", 256, 98, false}}, Entry{19, {"IQ1_S", 256, 50, false}},
    Entry{20, {"IQ4_NL", 32, 18, false}}, Entry{21, {"IQ3_S", 256, 110, false}}, Entry{22, {"IQ2_S", 256, 82, false}},
    Entry{23, {"IQ4_XS", 256, 136, false}}, Entry{24, {"I8", 1, 1, false}},      Entry{25, {"I16", 1, 2, false}},
    Entry{26, {"I32", 1, 4, false}},      Entry{27, {"I64", 1, 8, false}},       Entry{28, {"F64", 1, 8, false}},
    Entry{29, {"IQ1_M", 256, 56, false}}, Entry{30, {"BF16", 1, 2, true}},       Entry{34, {"TQ1_0", 256, 54, false}},
    Entry{35, {"TQ2_0", 256, 66, false}},
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

void q4_0(const std::uint8_t* b, float* y)
{
    const float d = f16(b);
    const std::uint8_t* q = b + 2;
    for (int j = 0; j < 16; ++j) {
        y[j] = d * static_cast<float>((q[j] & 0x0F) - 8);
        y[j + 16] = d * static_cast<float>((q[j] >> 4) - 8);
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

void q4_k(const std::uint8_t* b, float* y)
{
    const float d = f16(b), dmin = f16(b + 2);
    const std::uint8_t* scales = b + 4;
    const std::uint8_t* q = b + 16;
    for (int pair = 0; pair < 4; ++pair) { // 64 elements: the low nibbles of 32 bytes, then their high nibbles
        int sc1, m1, sc2, m2;
        scaleMinK4(2 * pair, scales, sc1, m1);
        scaleMinK4(2 * pair + 1, scales, sc2, m2);
        const float d1 = d * static_cast<float>(sc1), min1 = dmin * static_cast<float>(m1);
        const float d2 = d * static_cast<float>(sc2), min2 = dmin * static_cast<float>(m2);
        for (int l = 0; l < 32; ++l)
            y[l] = d1 * static_cast<float>(q[l] & 0x0F) - min1;
        for (int l = 0; l < 32; ++l)
            y[32 + l] = d2 * static_cast<float>(q[l] >> 4) - min2;
        y += 64;
        q += 32;
    }
}

void q6_k(const std::uint8_t* b, float* y)
{
    const std::uint8_t* ql = b;
    const std::uint8_t* qh = b + 128;
    const auto* sc = reinterpret_cast<const std::int8_t*>(b + 192);
    const float d = f16(b + 208);
    for (int half = 0; half < 2; ++half) { // 128 elements from 64 bytes of ql and 32 of qh
        for (int l = 0; l < 32; ++l) {
            const int s = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * static_cast<float>(sc[s]) * static_cast<float>(q1);
            y[l + 32] = d * static_cast<float>(sc[s + 2]) * static_cast<float>(q2);
            y[l + 64] = d * static_cast<float>(sc[s + 4]) * static_cast<float>(q3);
            y[l + 96] = d * static_cast<float>(sc[s + 6]) * static_cast<float>(q4);
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
    for (const auto& e : kTypes)
        if (e.id == id)
            return e.info;
    return std::nullopt;
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
    case GgmlType::Q8_0:
        for (std::int64_t b = 0; b < n / 32; ++b)
            q8_0(src + 34 * b, dst + 32 * b);
        return;
    case GgmlType::Q4_0:
        for (std::int64_t b = 0; b < n / 32; ++b)
            q4_0(src + 18 * b, dst + 32 * b);
        return;
    case GgmlType::Q4_K:
        for (std::int64_t b = 0; b < n / 256; ++b)
            q4_k(src + 144 * b, dst + 256 * b);
        return;
    case GgmlType::Q6_K:
        for (std::int64_t b = 0; b < n / 256; ++b)
            q6_k(src + 210 * b, dst + 256 * b);
        return;
    default:
        break;
    }
    // Callers check readability first (GgufFile refuses other types when it opens the file).
}

} // namespace attnscope::core
