// Product engine: packing (decode a weight tile into float32 panels), the register-blocked micro-kernel, threads over
// column tiles, and the row-by-row path for one or two rows. Shapes: x [M, K], W [N, K] (or [K, N]), out [M, N].
#include "linalg/matmul.h"

#include "util/error.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace attnscope::core {

namespace {

// ---- one SIMD vector of floats, by build level ----
#if defined(__AVX512F__)
constexpr int VL = 16;
using Vec = __m512;
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vbroadcast(float f) { return _mm512_set1_ps(f); }
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline float vsum(Vec v) { return _mm512_reduce_add_ps(v); }
constexpr const char* kKernelName = "AVX-512 6x32";
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int VL = 8;
using Vec = __m256;
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vbroadcast(float f) { return _mm256_set1_ps(f); }
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec vadd(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline float vsum(Vec v)
{
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}
constexpr const char* kKernelName = "AVX2/FMA 6x16";
#else
constexpr int VL = 8;
struct Vec {
    float v[VL];
};
inline Vec vload(const float* p)
{
    Vec r;
    std::memcpy(r.v, p, sizeof r.v);
    return r;
}
inline void vstore(float* p, Vec v) { std::memcpy(p, v.v, sizeof v.v); }
inline Vec vbroadcast(float f)
{
    Vec r;
    std::fill(r.v, r.v + VL, f);
    return r;
}
inline Vec vzero() { return vbroadcast(0.0f); }
inline Vec vfma(Vec a, Vec b, Vec c)
{
    for (int i = 0; i < VL; ++i)
        c.v[i] += a.v[i] * b.v[i];
    return c;
}
inline Vec vadd(Vec a, Vec b)
{
    for (int i = 0; i < VL; ++i)
        a.v[i] += b.v[i];
    return a;
}
inline float vsum(Vec v)
{
    float s = 0;
    for (float f : v.v)
        s += f;
    return s;
}
constexpr const char* kKernelName = "portable 6x16";
#endif

constexpr int MR = 6;        // rows of x per micro-tile
constexpr int NR = 2 * VL;   // output features per micro-tile (two vectors)
constexpr int KC = 256;      // inputs per packed tile: a whole number of every GGUF block (32 or 256)
constexpr int NC = 4 * NR;   // output features a thread packs at a time
constexpr std::int64_t kRowByRow = 2; // up to this many rows of x: the weight-bound row-by-row path

// Per-thread scratch, 64-byte aligned, grown on demand and kept (products run every layer).
struct Scratch {
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data;
    std::size_t size = 0;
    float* get(std::size_t n)
    {
        if (n > size) {
            const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
            data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
            if (!data)
                throw std::bad_alloc();
            size = n;
        }
        return data.get();
    }
};
thread_local Scratch tPanel, tRow, tZeros;

// C[MR, NR] (+)= A[MR rows at a[i], kc] · B[kc, NR] (B packed: row k at b + k NR). Rows and columns past the tile's
// real extent are handled by the caller (zero rows in, a scratch tile out).
inline void microKernel(const float* const* a, const float* b, int kc, float* c, std::int64_t ldc, bool accumulate)
{
    Vec acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        acc[i][0] = vzero();
        acc[i][1] = vzero();
    }
    for (int k = 0; k < kc; ++k) {
        const Vec b0 = vload(b + k * NR), b1 = vload(b + k * NR + VL);
#pragma GCC unroll 6
        for (int i = 0; i < MR; ++i) {
            const Vec ai = vbroadcast(a[i][k]);
            acc[i][0] = vfma(ai, b0, acc[i][0]);
            acc[i][1] = vfma(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        float* ci = c + i * ldc;
        if (accumulate) {
            acc[i][0] = vadd(acc[i][0], vload(ci));
            acc[i][1] = vadd(acc[i][1], vload(ci + VL));
        }
        vstore(ci, acc[i][0]);
        vstore(ci + VL, acc[i][1]);
    }
}

// How a packed tile is read from the weight.
enum class Layout { RowsAreOutputs, RowsAreInputs };

// Packs output features [n0, n0 + nc) x inputs [k0, k0 + kc) into panels of NR: panel p holds feature n0 + p NR + j
// at dst[p KC NR + k NR + j]; features past N are zeros.
void packTile(const WeightView& w, Layout layout, std::int64_t N, std::int64_t n0, int nc, std::int64_t k0, int kc,
              float* dst, float* row)
{
    const int panels = (nc + NR - 1) / NR;
    if (layout == Layout::RowsAreOutputs) {
        for (int p = 0; p < panels; ++p) {
            float* panel = dst + static_cast<std::ptrdiff_t>(p) * KC * NR;
            for (int j = 0; j < NR; ++j) {
                const std::int64_t n = n0 + p * NR + j;
                if (n >= N) {
                    for (int k = 0; k < kc; ++k)
                        panel[k * NR + j] = 0.0f;
                    continue;
                }
                const float* src = row;
                if (w.isFloat32())
                    src = w.floats() + n * w.cols() + k0; // in place: no decode
                else
                    w.decodeRow(n, k0, kc, row);
                for (int k = 0; k < kc; ++k)
                    panel[k * NR + j] = src[k];
            }
        }
        return;
    }
    // W [K, N]: each stored row is one input; a panel's NR features are contiguous in it.
    for (int p = 0; p < panels; ++p) {
        float* panel = dst + static_cast<std::ptrdiff_t>(p) * KC * NR;
        const std::int64_t first = n0 + p * NR;
        const int width = static_cast<int>(std::min<std::int64_t>(NR, N - first));
        for (int k = 0; k < kc; ++k) {
            float* out = panel + k * NR;
            w.decodeRow(k0 + k, first, width, out);
            std::fill(out + width, out + NR, 0.0f);
        }
    }
}

void checkWeight(const WeightView& w, Layout layout, std::int64_t K)
{
    const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(w.type));
    if (!info || !info->readable)
        throw Error(ErrorCode::UnsupportedDtype,
                    "weights of type " + ggmlTypeName(w.type) + " cannot be multiplied (readable: " + readableGgmlTypes() + ")",
                    w.source ? w.source->file() : "", w.source ? w.source->name() : "");
    if (layout == Layout::RowsAreInputs && info->blockSize != 1)
        throw Error(ErrorCode::UnsupportedDtype,
                    "a block-quantised weight must store one row per output feature, not per input",
                    w.source ? w.source->file() : "", w.source ? w.source->name() : "");
    const std::int64_t wk = layout == Layout::RowsAreOutputs ? w.cols() : w.rows();
    if (wk != K)
        throw Error(ErrorCode::ShapeMismatch,
                    "a product needs " + std::to_string(K) + " inputs but the weight " + w.describe() + " has " +
                        std::to_string(wk),
                    w.source ? w.source->file() : "", w.source ? w.source->name() : "");
    w.checkFinite();
}

float dot(const float* a, const float* b, int n)
{
    Vec s0 = vzero(), s1 = vzero();
    int k = 0;
    for (; k + 2 * VL <= n; k += 2 * VL) {
        s0 = vfma(vload(a + k), vload(b + k), s0);
        s1 = vfma(vload(a + k + VL), vload(b + k + VL), s1);
    }
    float s = vsum(vadd(s0, s1));
    for (; k < n; ++k)
        s += a[k] * b[k];
    return s;
}

// One or two rows: each output feature's weight row is decoded in KC pieces and dotted with every row of x.
void rowByRow(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, std::int64_t K, std::int64_t N,
              float* out, std::int64_t ldo, bool accumulate)
{
    const double work = static_cast<double>(N) * static_cast<double>(K);
#pragma omp parallel for schedule(static, 64) if (work > 1e5)
    for (std::int64_t n = 0; n < N; ++n) {
        float* piece = tRow.get(KC);
        float sums[kRowByRow] = {};
        for (std::int64_t k0 = 0; k0 < K; k0 += KC) {
            const int kc = static_cast<int>(std::min<std::int64_t>(KC, K - k0));
            const float* src = piece;
            if (w.isFloat32())
                src = w.floats() + n * K + k0;
            else
                w.decodeRow(n, k0, kc, piece);
            for (std::int64_t m = 0; m < M; ++m)
                sums[m] += dot(x + m * ldx + k0, src, kc);
        }
        for (std::int64_t m = 0; m < M; ++m)
            out[m * ldo + n] = accumulate ? out[m * ldo + n] + sums[m] : sums[m];
    }
}

void product(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, Layout layout, float* out,
             std::int64_t ldo, bool accumulate)
{
    const std::int64_t K = layout == Layout::RowsAreOutputs ? w.cols() : w.rows();
    const std::int64_t N = layout == Layout::RowsAreOutputs ? w.rows() : w.cols();
    checkWeight(w, layout, K);
    if (M <= 0 || N <= 0)
        return;
    if (K == 0) {
        if (!accumulate)
            for (std::int64_t m = 0; m < M; ++m)
                std::fill(out + m * ldo, out + m * ldo + N, 0.0f);
        return;
    }
    if (M <= kRowByRow && layout == Layout::RowsAreOutputs) {
        rowByRow(x, ldx, M, w, K, N, out, ldo, accumulate);
        return;
    }
    const std::int64_t chunks = (N + NC - 1) / NC;
    const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
#pragma omp parallel for schedule(dynamic, 1) if (work > 2e5 && chunks > 1)
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
        const std::int64_t n0 = chunk * NC;
        const int nc = static_cast<int>(std::min<std::int64_t>(NC, N - n0));
        const int panels = (nc + NR - 1) / NR;
        float* packed = tPanel.get(static_cast<std::size_t>(NC) * KC);
        float* row = tRow.get(KC);
        float* zeros = tZeros.get(KC);
        std::fill(zeros, zeros + KC, 0.0f);
        alignas(64) float edge[MR * NR];
        for (std::int64_t k0 = 0; k0 < K; k0 += KC) {
            const int kc = static_cast<int>(std::min<std::int64_t>(KC, K - k0));
            const bool add = accumulate || k0 > 0;
            packTile(w, layout, N, n0, nc, k0, kc, packed, row);
            for (std::int64_t m0 = 0; m0 < M; m0 += MR) {
                const int mr = static_cast<int>(std::min<std::int64_t>(MR, M - m0));
                const float* a[MR];
                for (int i = 0; i < MR; ++i)
                    a[i] = i < mr ? x + (m0 + i) * ldx + k0 : zeros;
                for (int p = 0; p < panels; ++p) {
                    const float* b = packed + static_cast<std::ptrdiff_t>(p) * KC * NR;
                    float* c = out + m0 * ldo + n0 + p * NR;
                    const int width = std::min(NR, nc - p * NR);
                    if (mr == MR && width == NR) {
                        microKernel(a, b, kc, c, ldo, add);
                        continue;
                    }
                    // A partial tile: through a scratch tile, so nothing outside out[M, N] is read or written.
                    if (add)
                        for (int i = 0; i < mr; ++i)
                            std::copy_n(c + i * ldo, width, edge + i * NR);
                    microKernel(a, b, kc, edge, NR, add);
                    for (int i = 0; i < mr; ++i)
                        std::copy_n(edge + i * NR, width, c + i * ldo);
                }
            }
        }
    }
}

} // namespace

void matmulTransposed(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out,
                      std::int64_t ldo, bool accumulate)
{
    product(x, ldx, M, w, Layout::RowsAreOutputs, out, ldo, accumulate);
}

void matmul(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out, std::int64_t ldo,
            bool accumulate)
{
    product(x, ldx, M, w, Layout::RowsAreInputs, out, ldo, accumulate);
}

const char* matmulKernelName() { return kKernelName; }

} // namespace attnscope::core
