// Products of one or two rows: per-type row kernels over the stored bytes (see matvec.h), each taking R stored rows at
// once (R = kStreams, or 1 for what is left over), the decode-then-dot path for the other types, and the threads over
// contiguous row ranges. Block layouts as io/ggml_types.cpp describes them.
#include "linalg/matvec.h"

#include "io/weight_view.h"
#include "util/float_scratch.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <omp.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace attnscope::core::linalg_detail {

namespace {

// Products below this many weights run on one thread (starting the others costs more than they save).
constexpr double kThreadedWeights = 1 << 16;
// How far ahead of what it multiplies each of a thread's streams (kStreams) asks for the weight's bytes: the hardware
// prefetcher stops at each 4 KB page. With one stream per thread 8 KB was best (the LM head of a 1B model in F16, 2
// threads: 13.5 GB/s without, 16.5 asking for each next row at once, 21-22 asking 4-16 KB ahead); with eight, 8 KB
// each is more than the core's 48 KB L1 holds beside the activations, and 1-2 KB generated 7% faster (F16 and Q8_0).
constexpr std::int64_t kAhead = 2048;
// How many parts of its rows a thread reads side by side: one stream of reads per core stays well below the memory's
// rate here, several streams at once come close to it (2 cores summing a 2.4 GB file: 24 GB/s as one stream each,
// 31 as four, 34 as eight). With AVX2's 16 registers eight rows' sums spill: Q4_K_M generated 19% faster with four
// (F16 the same), so four there.
#if defined(__AVX512F__)
constexpr int kStreams = 8;
#else
constexpr int kStreams = 4;
#endif
// Pieces of a product per thread (rows() below).
constexpr std::int64_t kChunksPerThread = 4;

// Asks for the `bytes` stored bytes kAhead past p (whole cache lines; past the weight's end is harmless for a
// prefetch). In the row kernels, once per block: a steady stream of requests rather than a burst per row.
inline void prefetchAhead(const std::uint8_t* p, int bytes)
{
    for (int line = 0; line < bytes; line += 64)
        __builtin_prefetch(p + kAhead + line);
}

thread_local FloatScratch tPiece, tSums, tScales;
thread_local AlignedScratch<std::int8_t> tDigits;
thread_local AlignedScratch<std::int32_t> tLaneSums;

// The horizontal sum of eight floats.
#if defined(__AVX512F__) || defined(__AVX2__)
// The horizontal sum of eight floats.
inline float sum8(__m256 v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
#endif

// ---- 16 floats at a time, by build level ----
#if defined(__AVX512F__) && defined(__AVX512BW__)
#define ATTNSCOPE_ROW_KERNELS 1
struct Lanes {
    __m512 v;
};
inline Lanes lzero() { return {_mm512_setzero_ps()}; }
inline Lanes lset(float f) { return {_mm512_set1_ps(f)}; }
inline Lanes lload(const float* p) { return {_mm512_loadu_ps(p)}; }
inline Lanes lfma(Lanes a, Lanes b, Lanes c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline Lanes lmul(Lanes a, Lanes b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Lanes ladd(Lanes a, Lanes b) { return {_mm512_add_ps(a.v, b.v)}; }
inline float lsum(Lanes a) { return _mm512_reduce_add_ps(a.v); }
// 16 bytes as unsigned or signed integers, 16 halves, 16 bfloat16s.
inline Lanes fromU8(__m128i b) { return {_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b))}; }
inline Lanes fromI8(__m128i b) { return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b))}; }
inline Lanes fromHalf(const std::uint8_t* p)
{
    return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline Lanes fromBf16(const std::uint8_t* p)
{
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(wide, 16))};
}
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define ATTNSCOPE_ROW_KERNELS 1
struct Lanes {
    __m256 lo, hi;
};
inline Lanes lzero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
inline Lanes lset(float f) { return {_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
inline Lanes lload(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
inline Lanes lfma(Lanes a, Lanes b, Lanes c)
{
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
inline Lanes lmul(Lanes a, Lanes b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
inline Lanes ladd(Lanes a, Lanes b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
inline float lsum(Lanes a) { return sum8(_mm256_add_ps(a.lo, a.hi)); }
inline Lanes fromU8(__m128i b)
{
    return {_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)))};
}
inline Lanes fromI8(__m128i b)
{
    return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)))};
}
inline Lanes fromHalf(const std::uint8_t* p)
{
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)))};
}
inline Lanes fromBf16(const std::uint8_t* p)
{
    auto half = [](const std::uint8_t* q) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
    };
    return {half(p), half(p + 16)};
}
#endif

// The activation rows of one product: x[m] and, for Q4_K, the sum of each 32-element block of it.
template <int M>
struct ActivationRows {
    const float* x[M];
    const float* blockSums[M];
    // The same rows as fixed point, for the integer kernels: per 32 values a scale s and integers X with
    // x ~ rowScale s X, |X| < 2^20 (error at most 2^-21 of the block's largest |x|); s is the block's largest |x| over
    // the row's, so lane scales stay normal floats however small the activations are (a denormal operand makes every
    // FMA a microcode assist: seen, 3x slower, on a random model whose activations fell to 1e-29); blocks below 2^-60
    // of the row's largest count as zero. X = 65536 t2 + 256 t1 + t0 in signed byte digits
    // (t0, t1 in [-128, 127], t2 in [-16, 16]), and each 4 values' sum of X. The digits of each 64 values lie
    // together (t0's 64 bytes, t1's, t2's), so a group's three loads are one 192-byte run. Null without integer kernels.
    const std::int8_t* digits[M];
    const float* scales[M];
    const std::int32_t* laneSums[M];
    float rowScale[M];
};

#ifdef ATTNSCOPE_ROW_KERNELS
inline float half(const std::uint8_t* p)
{
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}
inline __m128i load16(const std::uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// How many sums a kernel keeps apart per stored row and activation row: two hide the FMA's latency when few rows
// run at once; with several rows the rows' own sums do, and a second chain would only spill registers.
template <int R, int M>
constexpr int kChains = R * M >= 4 ? 1 : 2;

// F32, F16, BF16: 32 stored values per step of each of the R rows; a tail below 16 element by element.
template <GgmlType T, int R, int M>
void dotElements(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    constexpr int bytes = T == GgmlType::F32 ? 4 : 2;
    constexpr int C = kChains<R, M>;
    auto load = [](const std::uint8_t* p, std::int64_t k) {
        if constexpr (T == GgmlType::F32)
            return lload(reinterpret_cast<const float*>(p) + k); // unaligned load: any row offset works
        else if constexpr (T == GgmlType::F16)
            return fromHalf(p + bytes * k);
        else
            return fromBf16(p + bytes * k);
    };
    Lanes s[C][R][M];
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
            for (int m = 0; m < M; ++m)
                s[c][r][m] = lzero();
    std::int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        Lanes x0[M], x1[M];
        for (int m = 0; m < M; ++m) {
            x0[m] = lload(a.x[m] + k);
            x1[m] = lload(a.x[m] + k + 16);
        }
        for (int r = 0; r < R; ++r) {
            prefetchAhead(row[r] + bytes * k, 32 * bytes);
            const Lanes w0 = load(row[r], k), w1 = load(row[r], k + 16);
            for (int m = 0; m < M; ++m) {
                s[0][r][m] = lfma(w0, x0[m], s[0][r][m]);
                s[C - 1][r][m] = lfma(w1, x1[m], s[C - 1][r][m]);
            }
        }
    }
    for (; k + 16 <= K; k += 16)
        for (int r = 0; r < R; ++r) {
            const Lanes w0 = load(row[r], k);
            for (int m = 0; m < M; ++m)
                s[0][r][m] = lfma(w0, lload(a.x[m] + k), s[0][r][m]);
        }
    for (int r = 0; r < R; ++r) {
        float tail[16]; // fewer than 16 values left
        decodeElements(T, row[r], k, K - k, tail);
        for (int m = 0; m < M; ++m) {
            float sum = lsum(C == 2 ? ladd(s[0][r][m], s[C - 1][r][m]) : s[0][r][m]);
            for (std::int64_t j = k; j < K; ++j)
                sum += tail[j - k] * a.x[m][j];
            result[r * M + m] = sum;
        }
    }
}

// Blocks of 32 values, each a factor d times 32 small integers (Q8_0, MXFP4): each block's q.x, then times d; with two
// chains, by alternate blocks. `decode(block, d, w0, w1)` gives a block's factor and its values 0-15 and 16-31.
template <int R, int M, int BlockBytes, class Decode>
void dotBlocks32(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result, Decode decode)
{
    constexpr int C = kChains<R, M>;
    Lanes s[C][R][M];
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
            for (int m = 0; m < M; ++m)
                s[c][r][m] = lzero();
    const std::int64_t blocks = K / 32;
    for (std::int64_t b = 0; b < blocks; ++b) {
        Lanes x0[M], x1[M];
        for (int m = 0; m < M; ++m) {
            x0[m] = lload(a.x[m] + 32 * b);
            x1[m] = lload(a.x[m] + 32 * b + 16);
        }
        const int c = static_cast<int>(b % C);
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = row[r] + BlockBytes * b;
            prefetchAhead(blk, BlockBytes);
            Lanes d, w0, w1;
            decode(blk, d, w0, w1);
            for (int m = 0; m < M; ++m)
                s[c][r][m] = lfma(lfma(w1, x1[m], lmul(w0, x0[m])), d, s[c][r][m]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            result[r * M + m] = lsum(C == 2 ? ladd(s[0][r][m], s[C - 1][r][m]) : s[0][r][m]);
}

// Q8_0: 32 per 34 bytes, x = d q.
template <int R, int M>
void dotQ8_0(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    dotBlocks32<R, M, 34>(row, K, a, result, [](const std::uint8_t* blk, Lanes& d, Lanes& w0, Lanes& w1) {
        d = lset(half(blk));
        w0 = fromI8(load16(blk + 2));
        w1 = fromI8(load16(blk + 18));
    });
}

// MXFP4 (gpt-oss's experts): 32 per 17 bytes, x = 2^(e - 128) v[code] with v the FP4 (E2M1) values doubled: the
// codes through a byte table (io/ggml_types.h).

template <int R, int M>
void dotMxfp4(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    const __m128i table = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    dotBlocks32<R, M, 17>(row, K, a, result, [&](const std::uint8_t* blk, Lanes& d, Lanes& w0, Lanes& w1) {
        d = lset(mxfp4Scale(blk[0]));
        const __m128i codes = load16(blk + 1); // low nibbles: values 0..15, high: 16..31
        w0 = fromI8(_mm_shuffle_epi8(table, _mm_and_si128(codes, nibble)));
        w1 = fromI8(_mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(codes, 4), nibble)));
    });
}

// A Q4_K block's eight 6-bit scales and mins as bytes, from its 12 packed bytes (io/ggml_types.cpp): bytes 0-3 hold
// the low 6 bits of scales 0-3, bytes 4-7 those of mins 0-3; scales 4-7 take their low 4 bits from the low nibbles of
// bytes 8-11 and their top 2 from the top bits of bytes 0-3, mins 4-7 the high nibbles and the top bits of bytes 4-7.
// Four at a time in 32-bit words.
inline void unpackScalesK4(const std::uint8_t* packed, std::uint8_t scales[8], std::uint8_t mins[8])
{
    std::uint32_t w[3];
    std::memcpy(w, packed, 12);
    const std::uint32_t sixBits = 0x3F3F3F3Fu, nibble = 0x0F0F0F0Fu, twoBits = 0x03030303u;
    const std::uint32_t s03 = w[0] & sixBits, m03 = w[1] & sixBits;
    const std::uint32_t s47 = (w[2] & nibble) | (((w[0] >> 6) & twoBits) << 4);
    const std::uint32_t m47 = ((w[2] >> 4) & nibble) | (((w[1] >> 6) & twoBits) << 4);
    std::memcpy(scales, &s03, 4);
    std::memcpy(scales + 4, &s47, 4);
    std::memcpy(mins, &m03, 4);
    std::memcpy(mins + 4, &m47, 4);
}

// Eight bytes times a factor, as floats.
inline __m256 scaledBytes(const std::uint8_t* p, float factor)
{
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), _mm256_set1_ps(factor));
}


// Q4_K: 256 per 144 bytes, x = d sc q - dmin m per sub-block of 32. The q.x of each sub-block times d sc; the
// minimums as dmin m times the sub-blocks' sums of x, eight at once.
template <int R, int M>
void dotQ4_K(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    Lanes s[2][R][M];
    __m256 mins[R][M];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) {
            s[0][r][m] = s[1][r][m] = lzero();
            mins[r][m] = _mm256_setzero_ps();
        }
    const __m128i low = _mm_set1_epi8(0x0F);
    const std::int64_t blocks = K / 256;
    alignas(32) float scale[R][8];
    for (std::int64_t b = 0; b < blocks; ++b) {
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = row[r] + 144 * b;
            prefetchAhead(blk, 144);
            std::uint8_t sc[8], mn[8];
            unpackScalesK4(blk + 4, sc, mn);
            _mm256_store_ps(scale[r], scaledBytes(sc, half(blk)));
            const __m256 minimum = scaledBytes(mn, half(blk + 2));
            for (int m = 0; m < M; ++m)
                mins[r][m] = _mm256_fmadd_ps(minimum, _mm256_loadu_ps(a.blockSums[m] + 8 * b), mins[r][m]);
        }
        for (int pair = 0; pair < 4; ++pair) {
            const std::int64_t at = 256 * b + 64 * pair;
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* q = row[r] + 144 * b + 16 + 32 * pair;
                const __m128i v0 = load16(q), v1 = load16(q + 16);
                const Lanes lo0 = fromU8(_mm_and_si128(v0, low)), lo1 = fromU8(_mm_and_si128(v1, low));
                const Lanes hi0 = fromU8(_mm_and_si128(_mm_srli_epi16(v0, 4), low));
                const Lanes hi1 = fromU8(_mm_and_si128(_mm_srli_epi16(v1, 4), low));
                const Lanes d1 = lset(scale[r][2 * pair]), d2 = lset(scale[r][2 * pair + 1]);
                for (int m = 0; m < M; ++m) {
                    const float* x = a.x[m] + at;
                    s[0][r][m] = lfma(lfma(lo1, lload(x + 16), lmul(lo0, lload(x))), d1, s[0][r][m]);
                    s[1][r][m] = lfma(lfma(hi1, lload(x + 48), lmul(hi0, lload(x + 32))), d2, s[1][r][m]);
                }
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            result[r * M + m] = lsum(ladd(s[0][r][m], s[1][r][m])) - sum8(mins[r][m]);
}

// Q6_K: 256 per 210 bytes, x = d sc (q - 32) per sub-block of 16; q's low 4 bits in ql, its top 2 in qh. Sixteen
// values of each quarter at a time: their 6-bit codes put together in bytes, 32 taken off, then widened.
template <int R, int M>
void dotQ6_K(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    Lanes s[2][R][M];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            s[0][r][m] = s[1][r][m] = lzero();
    const __m128i low = _mm_set1_epi8(0x0F), top = _mm_set1_epi8(0x30), offset = _mm_set1_epi8(32);
    const std::int64_t blocks = K / 256;
    alignas(32) float scale[R][8]; // d sc for a half's eight sub-blocks of 16
    for (std::int64_t b = 0; b < blocks; ++b) {
        for (int r = 0; r < R; ++r)
            prefetchAhead(row[r] + 210 * b, 210);
        for (int h = 0; h < 2; ++h) {
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* blk = row[r] + 210 * b;
                const __m128i sc8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 192 + 8 * h));
                _mm256_store_ps(scale[r], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)),
                                                        _mm256_set1_ps(half(blk + 208))));
            }
            for (int part = 0; part < 2; ++part)
                for (int r = 0; r < R; ++r) {
                    const std::uint8_t* ql = row[r] + 210 * b + 64 * h;
                    const std::uint8_t* qh = row[r] + 210 * b + 128 + 32 * h;
                    const __m128i A = load16(ql + 16 * part), B = load16(ql + 32 + 16 * part), H = load16(qh + 16 * part);
                    const __m128i codes[4] = {
                        _mm_or_si128(_mm_and_si128(A, low), _mm_and_si128(_mm_slli_epi16(H, 4), top)),
                        _mm_or_si128(_mm_and_si128(B, low), _mm_and_si128(_mm_slli_epi16(H, 2), top)),
                        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(A, 4), low), _mm_and_si128(H, top)),
                        _mm_or_si128(_mm_and_si128(_mm_srli_epi16(B, 4), low), _mm_and_si128(_mm_srli_epi16(H, 2), top)),
                    };
                    for (int q = 0; q < 4; ++q) { // quarter q: elements 32 q + 16 part .. of this half, scale sc[part + 2 q]
                        const Lanes w = fromI8(_mm_sub_epi8(codes[q], offset));
                        const Lanes dsc = lset(scale[r][part + 2 * q]);
                        const std::int64_t at = 256 * b + 128 * h + 32 * q + 16 * part;
                        for (int m = 0; m < M; ++m)
                            s[q & 1][r][m] = lfma(lmul(w, lload(a.x[m] + at)), dsc, s[q & 1][r][m]);
                    }
                }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            result[r * M + m] = lsum(ladd(s[0][r][m], s[1][r][m]));
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__)
// ---- integer kernels: the stored integers times the activations' fixed-point digits (AVX-512 VNNI) ----
//
// vpdpbusd multiplies 64 unsigned bytes by 64 signed bytes and adds each four products into one of 16 int32 lanes: a
// lane is 4 consecutive values. The weight's integer codes are the unsigned side (Q4_K's nibbles, Q6_K's 6-bit codes,
// Q8_0's q + 128), the activations' digits the signed side; the digits' products are put together exactly in int32
// (t2, then times 256 plus t1, then times 256 plus t0), so each lane holds sum q X exactly, and one conversion to float
// times the lane's scale (the block's d and sub-block scale times the activations' block scale) adds it up. Everything
// before the conversion is exact; the result differs from the float32 product by the activations' fixed point (at most
// 2^-21 of a block's largest value) and one rounding per lane.
#define ATTNSCOPE_INT_KERNELS 1
#define ATTNSCOPE_VNNI __attribute__((target("avx512vnni")))

std::atomic<bool> gIntegerKernels{true}; // setIntegerKernels

bool hasVnni()
{
    static const bool yes = __builtin_cpu_supports("avx512vnni");
    return yes && gIntegerKernels.load(std::memory_order_relaxed);
}

// The three digit vectors of 64 activation values from `at` (a multiple of 64): t0, t1, t2.
struct Digits {
    __m512i t[3];
};
inline Digits loadDigits(const std::int8_t* digits, std::int64_t at)
{
    const std::int8_t* p = digits + 3 * at;
    return {{_mm512_load_si512(p), _mm512_load_si512(p + 64), _mm512_load_si512(p + 128)}};
}

// sum over each lane's 4 values of codes X, exactly, from X's three digits.
ATTNSCOPE_VNNI inline __m512i lanesTimesDigits(__m512i codes, const Digits& x)
{
    __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), codes, x.t[2]);
    l = _mm512_dpbusd_epi32(_mm512_slli_epi32(l, 8), codes, x.t[1]);
    return _mm512_dpbusd_epi32(_mm512_slli_epi32(l, 8), codes, x.t[0]);
}

// Lanes 0-7 take element `first` of `v`, lanes 8-15 element first + 1: a pair of 32-value blocks' scales.
inline __m512i pairIndex(int first)
{
    return _mm512_inserti64x4(_mm512_set1_epi32(first), _mm256_set1_epi32(first + 1), 1);
}

template <int R, int M>
ATTNSCOPE_VNNI void intQ4_K(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    __m512 acc[R][M];
    __m256 mins[R][M];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) {
            acc[r][m] = _mm512_setzero_ps();
            mins[r][m] = _mm256_setzero_ps();
        }
    const __m512i low = _mm512_set1_epi8(0x0F);
    // The 32 bytes of a pair of sub-blocks in both halves: the low half keeps its low nibbles, the high half is
    // shifted to its high nibbles.
    const __m512i halves = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    const std::int64_t blocks = K / 256;
    for (std::int64_t b = 0; b < blocks; ++b) {
        __m512 laneScale[R][M];
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = row[r] + 144 * b;
            prefetchAhead(blk, 144);
            std::uint8_t sc[8], mn[8];
            unpackScalesK4(blk + 4, sc, mn);
            const __m256 scale = scaledBytes(sc, half(blk));
            const __m256 minimum = scaledBytes(mn, half(blk + 2));
            for (int m = 0; m < M; ++m) {
                mins[r][m] = _mm256_fmadd_ps(minimum, _mm256_loadu_ps(a.blockSums[m] + 8 * b), mins[r][m]);
                laneScale[r][m] = _mm512_castps256_ps512(_mm256_mul_ps(scale, _mm256_loadu_ps(a.scales[m] + 8 * b)));
            }
        }
        for (int pair = 0; pair < 4; ++pair) {
            const __m512i index = pairIndex(2 * pair);
            Digits x[M];
            for (int m = 0; m < M; ++m)
                x[m] = loadDigits(a.digits[m], 256 * b + 64 * pair);
            for (int r = 0; r < R; ++r) {
                const std::uint8_t* q = row[r] + 144 * b + 16 + 32 * pair;
                const __m512i bytes = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
                const __m512i codes = _mm512_and_si512(_mm512_srlv_epi16(bytes, halves), low);
                for (int m = 0; m < M; ++m)
                    acc[r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lanesTimesDigits(codes, x[m])),
                                                _mm512_permutexvar_ps(index, laneScale[r][m]), acc[r][m]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            result[r * M + m] = a.rowScale[m] * _mm512_reduce_add_ps(acc[r][m]) - sum8(mins[r][m]);
}

template <int R, int M>
ATTNSCOPE_VNNI void intQ6_K(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    __m512 acc[R][M];
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            acc[r][m] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
    // qh's bits for each quarter, moved to bits 4-5: values 0-31 bits 0-1 (<< 4), 32-63 bits 2-3 (<< 2), 64-95 bits
    // 4-5 (as they are), 96-127 bits 6-7 (>> 2).
    const __m512i upFirst = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i downSecond = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    // Sub-blocks of 16 take the scale of their 32-value activation block: element i / 2.
    const __m512i activationBlock = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    const std::int64_t blocks = K / 256;
    for (std::int64_t b = 0; b < blocks; ++b) {
        __m512 activationScale[M];
        for (int m = 0; m < M; ++m)
            activationScale[m] = _mm512_permutexvar_ps(activationBlock,
                                                       _mm512_castps256_ps512(_mm256_loadu_ps(a.scales[m] + 8 * b)));
        __m512 subScale[R][M];
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* blk = row[r] + 210 * b;
            prefetchAhead(blk, 210);
            const __m512 scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load16(blk + 192))),
                                               _mm512_set1_ps(half(blk + 208)));
            for (int m = 0; m < M; ++m)
                subScale[r][m] = _mm512_mul_ps(scale, activationScale[m]);
        }
        for (int h = 0; h < 2; ++h)
            for (int g = 0; g < 2; ++g) {
                const std::int64_t at = 256 * b + 128 * h + 64 * g;
                // Lane l holds values 4 l.. of the group: sub-block 8 h + 4 g + l / 4.
                const int first = 8 * h + 4 * g;
                const __m512i index = _mm512_set_epi32(first + 3, first + 3, first + 3, first + 3, first + 2, first + 2,
                                                       first + 2, first + 2, first + 1, first + 1, first + 1, first + 1,
                                                       first, first, first, first);
                Digits x[M];
                __m512i offset[M]; // the codes are q + 32: 32 times each lane's sum of X comes off
                for (int m = 0; m < M; ++m) {
                    x[m] = loadDigits(a.digits[m], at);
                    offset[m] = _mm512_slli_epi32(_mm512_loadu_si512(a.laneSums[m] + at / 4), 5);
                }
                for (int r = 0; r < R; ++r) {
                    const std::uint8_t* blk = row[r] + 210 * b;
                    const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
                    const __m512i qh = _mm512_broadcast_i64x4(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 128 + 32 * h)));
                    const __m512i codes =
                        g == 0 ? _mm512_or_si512(_mm512_and_si512(ql, low), _mm512_and_si512(_mm512_sllv_epi16(qh, upFirst), top))
                               : _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low),
                                                 _mm512_and_si512(_mm512_srlv_epi16(qh, downSecond), top));
                    for (int m = 0; m < M; ++m) {
                        const __m512i l = _mm512_sub_epi32(lanesTimesDigits(codes, x[m]), offset[m]);
                        acc[r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), _mm512_permutexvar_ps(index, subScale[r][m]),
                                                    acc[r][m]);
                    }
                }
            }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m)
            result[r * M + m] = a.rowScale[m] * _mm512_reduce_add_ps(acc[r][m]);
}

// The d of blocks b and b + 1 of R <= 8 Q8_0 rows as floats: lane r holds row r's first, lane 8 + r its second. Eight
// rows take two gathers (their d lie 34 bytes apart in rows far apart) instead of eight pairs of scalar loads.
template <int R>
ATTNSCOPE_VNNI inline __m512 pairScales(const std::uint8_t* const* row, std::int64_t b)
{
    static_assert(R <= 8);
    __m256i halves; // 16 halves, lanes r and 8 + r
    if constexpr (R == 8) {
        __m512i at = _mm512_set_epi64(
            reinterpret_cast<std::int64_t>(row[7]), reinterpret_cast<std::int64_t>(row[6]),
            reinterpret_cast<std::int64_t>(row[5]), reinterpret_cast<std::int64_t>(row[4]),
            reinterpret_cast<std::int64_t>(row[3]), reinterpret_cast<std::int64_t>(row[2]),
            reinterpret_cast<std::int64_t>(row[1]), reinterpret_cast<std::int64_t>(row[0]));
        at = _mm512_add_epi64(at, _mm512_set1_epi64(34 * b));
        // Absolute addresses as the indices (base 0); each lane reads 4 bytes, d in the low two.
        const __m256i first = _mm512_i64gather_epi32(at, nullptr, 1);
        const __m256i second = _mm512_i64gather_epi32(_mm512_add_epi64(at, _mm512_set1_epi64(34)), nullptr, 1);
        halves = _mm512_cvtepi32_epi16(_mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1));
    } else {
        alignas(32) std::uint16_t h[16] = {};
        for (int r = 0; r < R; ++r) {
            std::memcpy(&h[r], row[r] + 34 * b, 2);
            std::memcpy(&h[8 + r], row[r] + 34 * b + 34, 2);
        }
        halves = _mm256_load_si256(reinterpret_cast<const __m256i*>(h));
    }
    return _mm512_cvtph_ps(halves);
}

template <int R, int M>
ATTNSCOPE_VNNI void intQ8_0(const std::uint8_t* const* row, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    constexpr int C = kChains<R, M>;
    __m512 acc[C][R][M]; // with two chains, by alternate pairs of blocks
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
            for (int m = 0; m < M; ++m)
                acc[c][r][m] = _mm512_setzero_ps();
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    const std::int64_t blocks = K / 32;
    std::int64_t b = 0;
    for (; b + 2 <= blocks; b += 2) { // two blocks of 32 per 64 lanes' worth
        // Per activation row: its digits, 128 times its lane sums, and the rows' d times its two block scales (lane
        // r: row r's first block, 8 + r its second).
        const __m512 d = pairScales<R>(row, b);
        Digits x[M];
        __m512i offset[M];
        __m512 scale[M];
        for (int m = 0; m < M; ++m) {
            x[m] = loadDigits(a.digits[m], 32 * b);
            offset[m] = _mm512_slli_epi32(_mm512_loadu_si512(a.laneSums[m] + 8 * b), 7);
            const __m512 blockScales = _mm512_castps128_ps512(
                _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(a.scales[m] + b))));
            scale[m] = _mm512_mul_ps(d, _mm512_permutexvar_ps(pairIndex(0), blockScales));
        }
        const int c = static_cast<int>((b >> 1) % C);
        for (int r = 0; r < R; ++r) {
            const std::uint8_t* b0 = row[r] + 34 * b;
            prefetchAhead(b0, 68);
            const __m512i q = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 36)), 1);
            const __m512i codes = _mm512_xor_si512(q, flip); // q + 128, unsigned
            // Row r's two scales over their lanes: lanes 0-7 take lane r, 8-15 lane 8 + r.
            const __m512i spread = _mm512_inserti64x4(_mm512_set1_epi32(r), _mm256_set1_epi32(8 + r), 1);
            for (int m = 0; m < M; ++m) {
                // sum (q + 128) X less 128 sum X: the lane's sum of q X.
                const __m512i l = _mm512_sub_epi32(lanesTimesDigits(codes, x[m]), offset[m]);
                acc[c][r][m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), _mm512_permutexvar_ps(spread, scale[m]),
                                               acc[c][r][m]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int m = 0; m < M; ++m) {
            const __m512 sum = C == 2 ? _mm512_add_ps(acc[0][r][m], acc[C - 1][r][m]) : acc[0][r][m];
            float v = a.rowScale[m] * _mm512_reduce_add_ps(sum);
            if (b < blocks) { // an odd last block, in float
                const std::uint8_t* blk = row[r] + 34 * b;
                const float d = half(blk);
                float t = 0;
                for (int i = 0; i < 32; ++i)
                    t += static_cast<float>(static_cast<std::int8_t>(blk[2 + i])) * a.x[m][32 * b + i];
                v += d * t;
            }
            result[r * M + m] = v;
        }
}

// The fixed-point copy of one activation row (ActivationRows); false when a value is not finite (the float kernels
// take such a product). 16 values at a time: it runs once per product on one thread while the other waits.
ATTNSCOPE_VNNI bool toFixedPoint(const float* x, std::int64_t K, std::int8_t* digits, float* scales,
                                 std::int32_t* laneSums, float& rowScale)
{
    constexpr float kLargest = (1 << 20) - 1;
    const float kNegligible = std::ldexp(1.0f, -60);
    __m512 top = _mm512_setzero_ps();
    for (std::int64_t i = 0; i < K; i += 16)
        top = _mm512_max_ps(top, _mm512_abs_ps(_mm512_loadu_ps(x + i)));
    const float rowLargest = _mm512_reduce_max_ps(top);
    if (!std::isfinite(rowLargest))
        return false;
    rowScale = rowLargest / kLargest;
    const __m512 bound = _mm512_set1_ps(kLargest);
    const __m512i half = _mm512_set1_epi32(128), byte = _mm512_set1_epi32(255);
    // ((v + 128) & 255) - 128: the balanced low byte of each integer.
    auto lowDigit = [&](__m512i v) { return _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, half), byte), half); };
    for (std::int64_t j = 0; j < K / 32; ++j) {
        const __m512 v[2] = {_mm512_loadu_ps(x + 32 * j), _mm512_loadu_ps(x + 32 * j + 16)};
        const float largest = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v[0]), _mm512_abs_ps(v[1])));
        const float relative = rowLargest > 0 ? largest / rowLargest : 0.0f;
        const bool counts = relative >= kNegligible;
        scales[j] = counts ? relative : 0.0f;
        const __m512 inverse = _mm512_set1_ps(counts ? kLargest / largest : 0.0f);
        const std::int64_t at = 32 * j;
        std::int8_t* group = digits + 3 * (at - at % 64) + at % 64;
        for (int h = 0; h < 2; ++h) {
            // Rounded to the nearest integer as lrint does (the default rounding mode), within +-(2^20 - 1).
            const __m512 scaled = _mm512_min_ps(bound, _mm512_max_ps(-bound, _mm512_mul_ps(v[h], inverse)));
            const __m512i X = _mm512_cvtps_epi32(scaled);
            const __m512i d0 = lowDigit(X);
            const __m512i rest = _mm512_srai_epi32(_mm512_sub_epi32(X, d0), 8);
            const __m512i d1 = lowDigit(rest);
            const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(rest, d1), 8);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(group + 16 * h), _mm512_cvtepi32_epi8(d0));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(group + 64 + 16 * h), _mm512_cvtepi32_epi8(d1));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(group + 128 + 16 * h), _mm512_cvtepi32_epi8(d2));
            // Each 4 values' sum: pairs, then pairs of pairs within each 128-bit lane; the first of each four kept.
            __m512i sum = _mm512_add_epi32(X, _mm512_shuffle_epi32(X, _MM_PERM_CDAB));
            sum = _mm512_add_epi32(sum, _mm512_shuffle_epi32(sum, _MM_PERM_BADC));
            _mm_storeu_si128(reinterpret_cast<__m128i*>(laneSums + 8 * j + 4 * h),
                             _mm512_castsi512_si128(_mm512_maskz_compress_epi32(0x1111, sum)));
        }
    }
    return true;
}
#endif

// Any readable type: the row decoded into float32 pieces, each dotted with the activation rows.
template <int M>
void dotDecoded(const WeightView& w, std::int64_t n, std::int64_t K, const ActivationRows<M>& a, float* result)
{
    constexpr std::int64_t piece = 256 * 8;
    float* buf = tPiece.resize(piece);
    double sums[M] = {};
    for (std::int64_t k0 = 0; k0 < K; k0 += piece) {
        const std::int64_t kc = std::min(piece, K - k0);
        w.decodeRow(n, k0, kc, buf);
        for (int m = 0; m < M; ++m) {
            float s = 0;
            for (std::int64_t k = 0; k < kc; ++k)
                s += buf[k] * a.x[m][k0 + k];
            sums[m] += s;
        }
    }
    for (int m = 0; m < M; ++m)
        result[m] = static_cast<float>(sums[m]);
}

template <int R, int M>
using RowKernel = void (*)(const std::uint8_t* const* rows, std::int64_t K, const ActivationRows<M>& a, float* result);

// The integer kernel for a type, where the CPU has one (null otherwise).
template <int R, int M>
RowKernel<R, M> intKernel(GgmlType type)
{
#ifdef ATTNSCOPE_INT_KERNELS
    if (hasVnni())
        switch (type) {
        case GgmlType::Q8_0: return intQ8_0<R, M>;
        case GgmlType::Q4_K: return intQ4_K<R, M>;
        case GgmlType::Q6_K: return intQ6_K<R, M>;
        default: break;
        }
#else
    (void)type;
#endif
    return nullptr;
}

template <int R, int M>
RowKernel<R, M> rowKernel(GgmlType type)
{
#ifdef ATTNSCOPE_ROW_KERNELS
    switch (type) {
    case GgmlType::F32: return dotElements<GgmlType::F32, R, M>;
    case GgmlType::F16: return dotElements<GgmlType::F16, R, M>;
    case GgmlType::BF16: return dotElements<GgmlType::BF16, R, M>;
    case GgmlType::Q8_0: return dotQ8_0<R, M>;
    case GgmlType::Q4_K: return dotQ4_K<R, M>;
    case GgmlType::Q6_K: return dotQ6_K<R, M>;
    case GgmlType::MXFP4: return dotMxfp4<R, M>;
    default: return nullptr;
    }
#else
    (void)type;
    return nullptr;
#endif
}

template <int M>
void rows(const float* x, std::int64_t ldx, const WeightView& w, float* out, std::int64_t ldo, bool accumulate,
          const ProductEpilogue& then)
{
    const std::int64_t N = w.rows(), K = w.cols();
    RowKernel<1, M> kernel = rowKernel<1, M>(w.type);
    RowKernel<kStreams, M> streams = rowKernel<kStreams, M>(w.type);
    ActivationRows<M> a{};
    for (int m = 0; m < M; ++m)
        a.x[m] = x + m * ldx;
#ifdef ATTNSCOPE_INT_KERNELS
    if (const RowKernel<1, M> integer = intKernel<1, M>(w.type)) {
        // Each row's fixed-point copy: three digit rows, a scale per 32 values, a sum per 4 (see ActivationRows).
        const std::size_t k = static_cast<std::size_t>(K);
        // Three digits for every group of 64 values, a last partial group too (K = 96: 3 x 128 bytes), so each row's
        // digits start on a 64-byte line.
        const std::size_t rowDigits = 3 * ((k + 63) / 64 * 64);
        std::int8_t* digits = tDigits.resize(rowDigits * M);
        float* scales = tScales.resize(k / 32 * M);
        std::int32_t* laneSums = tLaneSums.resize(k / 4 * M);
        bool finite = true;
        for (int m = 0; m < M && finite; ++m) {
            std::int8_t* d = digits + rowDigits * static_cast<std::size_t>(m);
            a.digits[m] = d;
            a.scales[m] = scales + k / 32 * static_cast<std::size_t>(m);
            a.laneSums[m] = laneSums + k / 4 * static_cast<std::size_t>(m);
            finite = toFixedPoint(a.x[m], K, d, scales + k / 32 * static_cast<std::size_t>(m),
                                  laneSums + k / 4 * static_cast<std::size_t>(m), a.rowScale[m]);
        }
        if (finite) {
            kernel = integer;
            streams = intKernel<kStreams, M>(w.type);
        }
    }
#endif
    float* sums = nullptr;
    if (kernel && w.type == GgmlType::Q4_K)
        sums = tSums.resize(static_cast<std::size_t>(M * (K / 32)));
    for (int m = 0; m < M; ++m) {
        if (sums) {
            float* s = sums + m * (K / 32);
            for (std::int64_t j = 0; j < K / 32; ++j) {
                float t = 0;
                for (int i = 0; i < 32; ++i)
                    t += a.x[m][32 * j + i];
                s[j] = t;
            }
            a.blockSums[m] = s;
        }
    }
    const int threads = static_cast<double>(N) * static_cast<double>(K) >= kThreadedWeights ? omp_get_max_threads() : 1;
    // Stored row n, without WeightView::storedRow's call and type lookup per row (5% of a Q8_0 token's time).
    const std::size_t rowBytes = w.rowBytes();
    const std::int32_t* order = w.rowOrder ? w.rowOrder->data() : nullptr;
    auto storedRow = [&](std::int64_t n) { return w.bytes + static_cast<std::size_t>(order ? order[n] : n) * rowBytes; };
    auto store = [&](std::int64_t n, const float* r) {
        for (int m = 0; m < M; ++m) {
            float v = accumulate ? out[m * ldo + n] + r[m] : r[m];
            if (then.bias)
                v += then.bias[n];
            out[m * ldo + n] = then.relu && !(v > 0.0f) ? 0.0f : v;
        }
    };
    // Rows [begin, end) as kStreams equal parts read side by side (row i of each part together), the rest one by one.
    auto multiply = [&](std::int64_t begin, std::int64_t end) {
        const std::int64_t part = kernel ? (end - begin) / kStreams : 0;
        for (std::int64_t i = 0; i < part; ++i) {
            const std::uint8_t* stored[kStreams];
            for (int s = 0; s < kStreams; ++s)
                stored[s] = storedRow(begin + s * part + i);
            float r[kStreams * M];
            streams(stored, K, a, r);
            for (int s = 0; s < kStreams; ++s)
                store(begin + s * part + i, r + s * M);
        }
        for (std::int64_t n = begin + kStreams * part; n < end; ++n) {
            float r[M];
            if (kernel) {
                const std::uint8_t* stored = storedRow(n);
                kernel(&stored, K, a, r);
            } else {
                dotDecoded<M>(w, n, K, a, r);
            }
            store(n, r);
        }
    };
    // The rows in kChunksPerThread pieces per thread, taken as threads come free: a thread the machine slows down
    // leaves its last pieces to the other instead of keeping it waiting at the end.
    const std::int64_t chunks = std::clamp<std::int64_t>(N / (kStreams * 8), 1, kChunksPerThread * threads);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (std::int64_t c = 0; c < chunks; ++c)
        multiply(N * c / chunks, N * (c + 1) / chunks);
}

} // namespace

void matvecTransposed(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out,
                      std::int64_t ldo, bool accumulate, const ProductEpilogue& then)
{
    if (M == 1)
        rows<1>(x, ldx, w, out, ldo, accumulate, then);
    else
        rows<2>(x, ldx, w, out, ldo, accumulate, then);
}

bool hasRowKernel(GgmlType type) { return rowKernel<1, 1>(type) != nullptr || intKernel<1, 1>(type) != nullptr; }

bool hasIntegerKernel(GgmlType type) { return intKernel<1, 1>(type) != nullptr; }

void setIntegerKernels(bool on)
{
#ifdef ATTNSCOPE_INT_KERNELS
    gIntegerKernels = on;
#else
    (void)on;
#endif
}

} // namespace attnscope::core::linalg_detail
