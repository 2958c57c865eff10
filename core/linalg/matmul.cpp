// Product engine: packing (decode a weight tile into float32 panels), the register-blocked micro-kernel, threads over
// column tiles; one or two rows go to linalg/matvec. Shapes: x [M, K], W [N, K] (or [K, N]), out [M, N].
#include "linalg/matmul.h"
#include "linalg/matvec.h"

#include "util/error.h"
#include "util/float_scratch.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <omp.h>

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
inline Vec vmax(Vec a, Vec b) { return _mm512_max_ps(a, b); }
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
inline Vec vmax(Vec a, Vec b) { return _mm256_max_ps(a, b); }
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
inline Vec vmax(Vec a, Vec b)
{
    for (int i = 0; i < VL; ++i)
        a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
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
constexpr int NC = 4 * NR;   // most output features a thread packs at a time
constexpr std::int64_t kDirectRows = 2 * MR; // rows of x up to which a float32 [K, N] weight is read in place
constexpr std::int64_t kPairedRows = 2 * MR; // ... and a block-quantised [N, K] one two rows at a time by linalg/matvec

// Per-thread scratch, grown on demand and kept (products run every layer).
thread_local FloatScratch tPanel, tRows, tZeros;

// C[MR, NR] (+)= A[MR rows at a[i], kc] · B[kc, NR] (row k of B at b + k ldb: NR when packed), then (the last
// k-block) + bias[NR] and ReLU. Rows and columns past the tile's real extent are handled by the caller (zero rows in, a
// scratch tile out).
inline void microKernel(const float* const* a, const float* b, std::int64_t ldb, int kc, float* c, std::int64_t ldc,
                        bool accumulate, const float* bias = nullptr, bool relu = false)
{
    Vec acc[MR][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
        acc[i][0] = vzero();
        acc[i][1] = vzero();
    }
    for (int k = 0; k < kc; ++k) {
        const Vec b0 = vload(b + k * ldb), b1 = vload(b + k * ldb + VL);
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
        if (bias) {
            acc[i][0] = vadd(acc[i][0], vload(bias));
            acc[i][1] = vadd(acc[i][1], vload(bias + VL));
        }
        if (relu) {
            acc[i][0] = vmax(acc[i][0], vzero());
            acc[i][1] = vmax(acc[i][1], vzero());
        }
        vstore(ci, acc[i][0]);
        vstore(ci + VL, acc[i][1]);
    }
}

// How a packed tile is read from the weight.
enum class Layout { RowsAreOutputs, RowsAreInputs };

// dst[k * ldd + j] = rows[j][k] for j < 8, k < 8: one 8 x 8 block of a transpose.
inline void transpose8(const float* const* rows, std::int64_t k, float* dst, int ldd)
{
#if defined(__AVX2__)
    const __m256 r0 = _mm256_loadu_ps(rows[0] + k), r1 = _mm256_loadu_ps(rows[1] + k);
    const __m256 r2 = _mm256_loadu_ps(rows[2] + k), r3 = _mm256_loadu_ps(rows[3] + k);
    const __m256 r4 = _mm256_loadu_ps(rows[4] + k), r5 = _mm256_loadu_ps(rows[5] + k);
    const __m256 r6 = _mm256_loadu_ps(rows[6] + k), r7 = _mm256_loadu_ps(rows[7] + k);
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(dst + 0 * ldd, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(dst + 1 * ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(dst + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(dst + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(dst + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(dst + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(dst + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(dst + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
#else
    for (int kk = 0; kk < 8; ++kk)
        for (int j = 0; j < 8; ++j)
            dst[kk * ldd + j] = rows[j][k + kk];
#endif
}

// Packs output features [n0, n0 + nc) x inputs [k0, k0 + kc) into panels of NR: panel p holds feature n0 + p NR + j
// at dst[p KC NR + k NR + j]; features past N are zeros. `rows` is scratch for NR decoded rows of KC floats. With
// `direct`, whole panels the micro-kernel reads from the weight itself are left out.
void packTile(const WeightView& w, Layout layout, std::int64_t N, std::int64_t n0, int nc, std::int64_t k0, int kc,
              float* dst, float* rows, const float* zeros, bool direct)
{
    const int panels = (nc + NR - 1) / NR;
    if (layout == Layout::RowsAreOutputs) {
        for (int p = 0; p < panels; ++p) {
            float* panel = dst + static_cast<std::ptrdiff_t>(p) * KC * NR;
            // The panel's NR rows as float32: in place for F32 weights, else decoded into scratch.
            const float* src[NR];
            for (int j = 0; j < NR; ++j) {
                const std::int64_t n = n0 + p * NR + j;
                // src[j][k] is input k0 + k of the feature.
                if (n >= N) {
                    src[j] = zeros;
                } else if (w.isFloat32()) {
                    src[j] = w.floats() + n * w.cols() + k0;
                } else {
                    float* row = rows + static_cast<std::ptrdiff_t>(j) * KC;
                    w.decodeRow(n, k0, kc, row);
                    src[j] = row;
                }
            }
            // Transposed into the panel eight rows and eight inputs at a time.
            const int k8 = kc / 8 * 8;
            for (int j = 0; j < NR; j += 8) {
                for (int k = 0; k < k8; k += 8)
                    transpose8(src + j, k, panel + k * NR + j, NR);
                for (int k = k8; k < kc; ++k)
                    for (int jj = 0; jj < 8; ++jj)
                        panel[k * NR + j + jj] = src[j + jj][k];
            }
        }
        return;
    }
    // W [K, N]: each stored row is one input; a panel's NR features are contiguous in it.
    for (int p = 0; p < panels; ++p) {
        float* panel = dst + static_cast<std::ptrdiff_t>(p) * KC * NR;
        const std::int64_t first = n0 + p * NR;
        const int width = static_cast<int>(std::min<std::int64_t>(NR, N - first));
        if (direct && width == NR)
            continue;
        for (int k = 0; k < kc; ++k) {
            float* out = panel + k * NR;
            w.decodeRow(k0 + k, first, width, out);
            std::fill(out + width, out + NR, 0.0f);
        }
    }
}

// The stored bytes the next tile's packing will read, prefetched a few cache lines per micro-tile while the current
// tile is multiplied. A model's weights do not stay in the cache from one segment to the next (Transformer-XL's are
// 150 MB), and packing a tile straight from memory made the feed-forward products of a corpus scan 4% slower.
class TilePrefetch {
public:
    TilePrefetch(const WeightView& w, Layout layout, std::int64_t N, std::int64_t K)
        : m_w(w)
        , m_layout(layout)
        , m_N(N)
        , m_K(K)
    {
        const auto info = ggmlTypeInfo(static_cast<std::uint32_t>(w.type));
        m_blockSize = info ? info->blockSize : 1;
        m_blockBytes = info ? info->typeSize : sizeof(float);
        m_rowBytes = w.rowBytes();
    }

    // The tile of features [n0, n0 + nc) x inputs [k0, k0 + kc) (nothing when empty), spread over `steps` calls of
    // step().
    void start(std::int64_t n0, std::int64_t nc, std::int64_t k0, std::int64_t kc, std::int64_t steps)
    {
        // Stored rows [m_row, m_rowEnd), bytes [m_begin, m_end) of each.
        const bool outputs = m_layout == Layout::RowsAreOutputs;
        const std::int64_t r0 = outputs ? n0 : k0, rn = outputs ? nc : kc, rows = outputs ? m_N : m_K;
        const std::int64_t e0 = outputs ? k0 : n0, en = outputs ? kc : nc, elements = outputs ? m_K : m_N;
        m_row = r0;
        m_rowEnd = std::min(rows, r0 + rn);
        m_begin = e0 / m_blockSize * m_blockBytes;
        m_end = (std::min(elements, e0 + en) + m_blockSize - 1) / m_blockSize * m_blockBytes;
        const std::int64_t lines = std::max<std::int64_t>(0, m_rowEnd - m_row) * ((m_end - m_begin) / 64 + 2);
        m_perStep = std::max<std::int64_t>(1, (lines + steps - 1) / std::max<std::int64_t>(1, steps));
        if (m_row < m_rowEnd && m_begin < m_end)
            startRow();
        else
            m_row = m_rowEnd;
    }

    void step()
    {
        for (std::int64_t i = 0; i < m_perStep && m_row < m_rowEnd; ++i) {
            __builtin_prefetch(reinterpret_cast<const void*>(m_line), 0, 2); // to L2: packing reads it next
            m_line += 64;
            if (m_line > m_last && ++m_row < m_rowEnd)
                startRow();
        }
    }

private:
    const WeightView& m_w;
    Layout m_layout;
    std::int64_t m_N, m_K, m_blockSize, m_blockBytes;
    std::size_t m_rowBytes;
    std::int64_t m_row = 0, m_rowEnd = 0, m_begin = 0, m_end = 0, m_perStep = 1;
    std::uintptr_t m_line = 0, m_last = 0; // the next cache line to fetch, the current row's last byte

    void startRow()
    {
        const std::int64_t stored = m_w.rowOrder ? (*m_w.rowOrder)[static_cast<std::size_t>(m_row)] : m_row;
        const auto row = reinterpret_cast<std::uintptr_t>(m_w.bytes + static_cast<std::size_t>(stored) * m_rowBytes);
        m_line = (row + m_begin) & ~std::uintptr_t{63};
        m_last = row + m_end - 1;
    }
};

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

void product(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, Layout layout, float* out,
             std::int64_t ldo, bool accumulate, const ProductEpilogue& then)
{
    const std::int64_t K = layout == Layout::RowsAreOutputs ? w.cols() : w.rows();
    const std::int64_t N = layout == Layout::RowsAreOutputs ? w.rows() : w.cols();
    checkWeight(w, layout, K);
    if (M <= 0 || N <= 0)
        return;
    if (K == 0) {
        for (std::int64_t m = 0; m < M; ++m)
            for (std::int64_t n = 0; n < N; ++n) {
                float v = (accumulate ? out[m * ldo + n] : 0.0f) + (then.bias ? then.bias[n] : 0.0f);
                out[m * ldo + n] = then.relu && !(v > 0.0f) ? 0.0f : v;
            }
        return;
    }
    if (M <= linalg_detail::kMatvecRows && layout == Layout::RowsAreOutputs) {
        linalg_detail::matvecTransposed(x, ldx, M, w, out, ldo, accumulate, then);
        return;
    }
    // A block-quantised weight is costly to decode into panels that a few rows then use (F16 and BF16 are cheap).
    if (M <= kPairedRows && layout == Layout::RowsAreOutputs && ggmlTypeInfo(static_cast<std::uint32_t>(w.type))->blockSize > 1 &&
        linalg_detail::hasRowKernel(w.type)) {
        for (std::int64_t m0 = 0; m0 < M; m0 += linalg_detail::kMatvecRows)
            linalg_detail::matvecTransposed(x + m0 * ldx, ldx, std::min(linalg_detail::kMatvecRows, M - m0), w,
                                            out + m0 * ldo, ldo, accumulate, then);
        return;
    }
    // Column tiles of up to NC features, narrower when N is small so every thread gets several (N = 410 in tiles of
    // 128 left one of two threads idle a quarter of the time).
    const std::int64_t threads = omp_get_max_threads();
    const std::int64_t wanted = (N + 4 * threads - 1) / (4 * threads);
    const int tile = static_cast<int>(std::clamp<std::int64_t>((wanted + NR - 1) / NR * NR, NR, NC));
    const std::int64_t columnChunks = (N + tile - 1) / tile;
    // Few column tiles that do not share out evenly (N = 410: 7 tiles, the last narrow, on 2 threads) leave a thread
    // idle at the end; then the rows are split too, so tasks are smaller. Each part packs its tiles again, which costs
    // little beside the products of its rows.
    const std::int64_t rowParts = columnChunks % threads != 0 && columnChunks < 8 * threads && M >= 8 * MR * threads ? 2 : 1;
    const std::int64_t rowsPerPart = (M + rowParts * MR - 1) / (rowParts * MR) * MR;
    const std::int64_t chunks = columnChunks * rowParts;
    auto taskTile = [&](std::int64_t task) {
        const std::int64_t chunk = task / rowParts, part = task % rowParts;
        struct {
            std::int64_t mBegin, mEnd, n0;
            int nc;
        } t{part * rowsPerPart, std::min(M, part * rowsPerPart + rowsPerPart), chunk * tile,
            static_cast<int>(std::min<std::int64_t>(tile, N - chunk * tile))};
        return t;
    };
    const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    // A float32 weight stored [K, N] already holds a panel's NR features side by side in each row: for a few rows of x
    // the micro-kernel reads it in place (copying each weight into a panel cost more than its few multiplications:
    // half of an activation-patching run, whose products have about ten rows); many rows reuse a packed panel better.
    const bool direct = layout == Layout::RowsAreInputs && w.isFloat32() && M <= kDirectRows;
    // Threads take tasks from a shared counter. Each claims its next task when it starts the last k-block of the
    // current one, so the next task's first tile is prefetched while this one is multiplied.
    std::atomic<std::int64_t> nextTask{0};
#pragma omp parallel if (work > 2e5 && chunks > 1)
    {
        float* packed = tPanel.resize(static_cast<std::size_t>(NC) * KC);
        float* rows = tRows.resize(static_cast<std::size_t>(NR) * KC);
        float* zeros = tZeros.resize(KC);
        std::fill(zeros, zeros + KC, 0.0f);
        alignas(64) float edge[MR * NR], edgeBias[NR];
        TilePrefetch prefetch(w, layout, N, K);
        for (std::int64_t task = nextTask.fetch_add(1, std::memory_order_relaxed); task < chunks;) {
            const auto [mBegin, mEnd, n0, nc] = taskTile(task);
            const int panels = (nc + NR - 1) / NR;
            const std::int64_t microTiles = (mEnd - mBegin + MR - 1) / MR * panels;
            for (std::int64_t k0 = 0; k0 < K; k0 += KC) {
                const int kc = static_cast<int>(std::min<std::int64_t>(KC, K - k0));
                const bool add = accumulate || k0 > 0, last = k0 + KC >= K;
                packTile(w, layout, N, n0, nc, k0, kc, packed, rows, zeros, direct);
                if (!last) {
                    prefetch.start(n0, nc, k0 + KC, KC, microTiles);
                } else {
                    task = nextTask.fetch_add(1, std::memory_order_relaxed);
                    if (task < chunks) {
                        const auto following = taskTile(task);
                        prefetch.start(following.n0, following.nc, 0, KC, microTiles);
                    } else {
                        prefetch.start(0, 0, 0, 0, 1);
                    }
                }
                for (std::int64_t m0 = mBegin; m0 < mEnd; m0 += MR) {
                    const int mr = static_cast<int>(std::min<std::int64_t>(MR, mEnd - m0));
                    const float* a[MR];
                    for (int i = 0; i < MR; ++i)
                        a[i] = i < mr ? x + (m0 + i) * ldx + k0 : zeros;
                    for (int p = 0; p < panels; ++p) {
                        prefetch.step();
                        float* c = out + m0 * ldo + n0 + p * NR;
                        const int width = std::min(NR, nc - p * NR);
                        const bool inPlace = direct && width == NR;
                        const float* b = inPlace ? w.floats() + k0 * N + n0 + p * NR
                                                 : packed + static_cast<std::ptrdiff_t>(p) * KC * NR;
                        const std::int64_t ldb = inPlace ? N : NR;
                        const float* bias = last && then.bias ? then.bias + n0 + p * NR : nullptr;
                        const bool relu = last && then.relu;
                        if (mr == MR && width == NR) {
                            microKernel(a, b, ldb, kc, c, ldo, add, bias, relu);
                            continue;
                        }
                        // A partial tile: through a scratch tile (and a padded bias), so nothing outside out[M, N]
                        // or the bias is read or written.
                        if (add)
                            for (int i = 0; i < mr; ++i)
                                std::copy_n(c + i * ldo, width, edge + i * NR);
                        if (bias) {
                            std::copy_n(bias, width, edgeBias);
                            std::fill(edgeBias + width, edgeBias + NR, 0.0f);
                            bias = edgeBias;
                        }
                        microKernel(a, b, ldb, kc, edge, NR, add, bias, relu);
                        for (int i = 0; i < mr; ++i)
                            std::copy_n(edge + i * NR, width, c + i * ldo);
                    }
                }
            }
        }
    }
}

} // namespace

void matmulTransposed(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out,
                      std::int64_t ldo, bool accumulate, const ProductEpilogue& then)
{
    product(x, ldx, M, w, Layout::RowsAreOutputs, out, ldo, accumulate, then);
}

void matmul(const float* x, std::int64_t ldx, std::int64_t M, const WeightView& w, float* out, std::int64_t ldo,
            bool accumulate, const ProductEpilogue& then)
{
    product(x, ldx, M, w, Layout::RowsAreInputs, out, ldo, accumulate, then);
}

const char* matmulKernelName() { return kKernelName; }

} // namespace attnscope::core
