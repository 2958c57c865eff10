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

#include <array>
#include <utility>

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
constexpr int kRowsPerTile = 12; // 24 accumulators of the 32 registers: half the panel loads per FMA of 6 rows
constexpr const char* kKernelName = "AVX-512 12x32";
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
constexpr int kRowsPerTile = 6; // 12 accumulators of the 16 registers
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
constexpr int kRowsPerTile = 6;
constexpr const char* kKernelName = "portable 6x16";
#endif

constexpr int MR = kRowsPerTile; // rows of x per micro-tile
constexpr int NR = 2 * VL;   // output features per micro-tile (two vectors)
constexpr int KC = 256;      // inputs per packed tile: a whole number of every GGUF block (32 or 256)
constexpr int NC = 4 * NR;   // most output features a thread packs at a time
constexpr std::int64_t kDirectRows = 12; // rows of x up to which a float32 [K, N] weight is read in place
constexpr std::int64_t kPairedRows = 12; // ... and a block-quantised [N, K] one two rows at a time by linalg/matvec

// Per-thread scratch, grown on demand and kept (products run every layer).
thread_local FloatScratch tPanel, tRows, tZeros, tPackedRows;

// C[R, NR] (+)= A[kc, R] · B[kc, NR]: A the packed rows of x (row i of input k at a[k MR + i], R <= MR of them
// used: a tile's last rows need not pay for the padding), row k of B at b + k ldb (NR when packed), then (the last
// k-block) + bias[NR] and ReLU. Columns past the tile's real extent are handled by the caller (a scratch tile out).
template <int R = MR>
inline void microKernel(const float* a, const float* b, std::int64_t ldb, int kc, float* c, std::int64_t ldc,
                        bool accumulate, const float* bias = nullptr, bool relu = false)
{
    static_assert(R >= 1 && R <= MR);
    Vec acc[R][2];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
        acc[i][0] = vzero();
        acc[i][1] = vzero();
    }
#pragma GCC unroll 4
    for (int k = 0; k < kc; ++k) {
        const Vec b0 = vload(b + k * ldb), b1 = vload(b + k * ldb + VL);
#pragma GCC unroll 16
        for (int i = 0; i < R; ++i) {
            const Vec ai = vbroadcast(a[k * MR + i]);
            acc[i][0] = vfma(ai, b0, acc[i][0]);
            acc[i][1] = vfma(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
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

// One product's operands and what happens to its outputs.
struct ProductJob {
    const float* x;
    std::int64_t ldx;
    const WeightView& w;
    Layout layout;
    std::int64_t K, N;
    float* out;
    std::int64_t ldo;
    bool accumulate;
    const ProductEpilogue& then;
    // A float32 weight stored [K, N] already holds a panel's NR features side by side in each row: for a few rows of
    // x the micro-kernel reads it in place (copying each weight into a panel cost more than its few multiplications:
    // half of an activation-patching run, whose products have about ten rows); many rows reuse a packed panel better.
    bool direct;
};

// Most floats of x packed at once (16 MiB): a group of rows x every input.
constexpr std::int64_t kPackedRowFloats = std::int64_t{1} << 22;

// Rows [0, rows) (at most MR) of x x inputs [k0, k0 + kc), packed as the micro-kernel reads them: input k of row i at
// dst[k MR + i], rows past `rows` zeros. Contiguous broadcasts, where MR rows read in place sat 4 KiB apart (rows of
// 1024 floats or more) and evicted each other and the panel from the L1 cache.
void packRowBlock(const float* x, std::int64_t ldx, std::int64_t rows, std::int64_t k0, int kc, float* dst)
{
    for (int i = 0; i < MR; ++i) {
        if (i < rows) {
            const float* src = x + i * ldx + k0;
            for (int k = 0; k < kc; ++k)
                dst[k * MR + i] = src[k];
        } else {
            for (int k = 0; k < kc; ++k)
                dst[k * MR + i] = 0.0f;
        }
    }
}

// A thread's task: rows [mBegin, mEnd) of a group x output features [n0, n0 + nc).
struct TileTask {
    std::int64_t mBegin, mEnd, n0;
    int nc;
};

// How a group's work is cut into tasks.
struct TaskPlan {
    int tile;                  // output features per task
    std::int64_t rowParts = 1; // row ranges per column tile
    std::int64_t rowsPerPart, columnChunks, tasks;
    std::int64_t M, N;

    TileTask at(std::int64_t task) const
    {
        const std::int64_t chunk = task / rowParts, part = task % rowParts;
        return {part * rowsPerPart, std::min(M, part * rowsPerPart + rowsPerPart), chunk * tile,
                static_cast<int>(std::min<std::int64_t>(tile, N - chunk * tile))};
    }
};

TaskPlan planTasks(std::int64_t M, std::int64_t N, std::int64_t threads)
{
    TaskPlan plan;
    plan.M = M;
    plan.N = N;
    // Column tiles of up to NC features, narrower when N is small so every thread gets several (N = 410 in tiles of
    // 128 left one of two threads idle a quarter of the time).
    const std::int64_t wanted = (N + 4 * threads - 1) / (4 * threads);
    plan.tile = static_cast<int>(std::clamp<std::int64_t>((wanted + NR - 1) / NR * NR, NR, NC));
    plan.columnChunks = (N + plan.tile - 1) / plan.tile;
    // Few column tiles that do not share out evenly (N = 410: 7 tiles, the last narrow, on 2 threads) leave a thread
    // idle at the end; then the rows are split too, so tasks are smaller. Each part packs its tiles again, which costs
    // little beside the products of its rows.
    if (plan.columnChunks % threads != 0 && plan.columnChunks < 8 * threads && M >= 8 * MR * threads)
        plan.rowParts = 2;
    plan.rowsPerPart = (M + plan.rowParts * MR - 1) / (plan.rowParts * MR) * MR;
    plan.tasks = plan.columnChunks * plan.rowParts;
    return plan;
}

// Per-thread buffers of a product.
struct TileScratch {
    float* packed; // the current weight tile's panels
    float* rows;   // decoded weight rows
    float* zeros;
    alignas(64) float edge[MR * NR];
    alignas(64) float edgeBias[NR];
};

// One panel's operand in a k-block: where its weight columns are read and what the last k-block adds.
struct PanelOperand {
    const float* b;
    std::int64_t ldb;
    int width;
    const float* bias;
    bool add, relu;
};

PanelOperand panelOperand(const ProductJob& job, const TileTask& t, std::int64_t k0, int p, TileScratch& s)
{
    const bool last = k0 + KC >= job.K;
    PanelOperand o;
    o.width = std::min(NR, t.nc - p * NR);
    const bool inPlace = job.direct && o.width == NR;
    o.b = inPlace ? job.w.floats() + k0 * job.N + t.n0 + p * NR : s.packed + static_cast<std::ptrdiff_t>(p) * KC * NR;
    o.ldb = inPlace ? job.N : NR;
    o.bias = last && job.then.bias ? job.then.bias + t.n0 + p * NR : nullptr;
    o.add = job.accumulate || k0 > 0;
    o.relu = last && job.then.relu;
    if (o.bias && o.width < NR) { // a partial tile's bias, padded: nothing past the bias is read
        std::copy_n(o.bias, o.width, s.edgeBias);
        std::fill(s.edgeBias + o.width, s.edgeBias + NR, 0.0f);
        o.bias = s.edgeBias;
    }
    return o;
}

using KernelOfRows = void (*)(const float*, const float*, std::int64_t, int, float*, std::int64_t, bool, const float*, bool);

// The micro-kernel of each row count 1 .. MR (a tile's last rows: 64 rows of an expert are 5 tiles and 4 rows, not
// 6 tiles of which 8 rows are padding).
template <std::size_t... I>
constexpr std::array<KernelOfRows, sizeof...(I)> kernelsOfRows(std::index_sequence<I...>)
{
    return {&microKernel<static_cast<int>(I) + 1>...};
}
constexpr auto kKernelOfRows = kernelsOfRows(std::make_index_sequence<MR>{});

// One micro-tile: rows [m0, m0 + mr) of the group (packed at `a`) x one panel, into out at `c`.
void microTile(const PanelOperand& o, const float* a, int kc, int mr, float* c, std::int64_t ldo, TileScratch& s)
{
    const KernelOfRows kernel = kKernelOfRows[static_cast<std::size_t>(mr - 1)];
    if (o.width == NR) {
        kernel(a, o.b, o.ldb, kc, c, ldo, o.add, o.bias, o.relu);
        return;
    }
    // A partial panel: through a scratch tile, so nothing outside out[M, N] is read or written.
    if (o.add)
        for (int i = 0; i < mr; ++i)
            std::copy_n(c + i * ldo, o.width, s.edge + i * NR);
    kernel(a, o.b, o.ldb, kc, s.edge, NR, o.add, o.bias, o.relu);
    for (int i = 0; i < mr; ++i)
        std::copy_n(s.edge + i * NR, o.width, c + i * ldo);
}

// One k-block of a task, panel by panel: one panel (KC x NR floats, 32 KiB with AVX-512) stays in the L1 cache while
// the task's packed row blocks (row r at packedRows + r / MR * KC MR) stream past it from L2.
void multiplyKBlock(const ProductJob& job, std::int64_t g0, const TileTask& t, std::int64_t k0, int kc,
                    const float* packedRows, TileScratch& s, TilePrefetch& prefetch)
{
    const int panels = (t.nc + NR - 1) / NR;
    for (int p = 0; p < panels; ++p) {
        const PanelOperand o = panelOperand(job, t, k0, p, s);
        for (std::int64_t m0 = t.mBegin; m0 < t.mEnd; m0 += MR) {
            prefetch.step();
            const int mr = static_cast<int>(std::min<std::int64_t>(MR, t.mEnd - m0));
            microTile(o, packedRows + m0 / MR * KC * MR, kc, mr, job.out + (g0 + m0) * job.ldo + t.n0 + p * NR,
                      job.ldo, s);
        }
    }
}

// Rows [g0, g0 + M) of the product: packed once (shared by the threads), then column tiles taken by the threads.
void multiplyRowGroup(const ProductJob& job, std::int64_t g0, std::int64_t M)
{
    const std::int64_t threads = omp_get_max_threads();
    const TaskPlan plan = planTasks(M, job.N, threads);
    const std::int64_t mBlocks = (M + MR - 1) / MR, kBlocks = (job.K + KC - 1) / KC;
    // Block (kb, mb) of the packed rows at ((kb mBlocks + mb) KC MR).
    float* packedRows = tPackedRows.resize(static_cast<std::size_t>(kBlocks * mBlocks * KC * MR));
    const double work = static_cast<double>(M) * static_cast<double>(job.N) * static_cast<double>(job.K);
    // Threads take tasks from a shared counter. Each claims its next task when it starts the last k-block of the
    // current one, so the next task's first tile is prefetched while this one is multiplied.
    std::atomic<std::int64_t> nextTask{0};
#pragma omp parallel if (work > 2e5 && plan.tasks > 1)
    {
#pragma omp for schedule(static)
        for (std::int64_t block = 0; block < kBlocks * mBlocks; ++block) {
            const std::int64_t kb = block / mBlocks, mb = block % mBlocks;
            packRowBlock(job.x + (g0 + mb * MR) * job.ldx, job.ldx, std::min<std::int64_t>(MR, M - mb * MR), kb * KC,
                         static_cast<int>(std::min<std::int64_t>(KC, job.K - kb * KC)), packedRows + block * KC * MR);
        }
        TileScratch s;
        s.packed = tPanel.resize(static_cast<std::size_t>(NC) * KC);
        s.rows = tRows.resize(static_cast<std::size_t>(NR) * KC);
        s.zeros = tZeros.resize(KC);
        std::fill(s.zeros, s.zeros + KC, 0.0f);
        TilePrefetch prefetch(job.w, job.layout, job.N, job.K);
        for (std::int64_t task = nextTask.fetch_add(1, std::memory_order_relaxed); task < plan.tasks;) {
            const TileTask t = plan.at(task);
            const std::int64_t microTiles = (t.mEnd - t.mBegin + MR - 1) / MR * ((t.nc + NR - 1) / NR);
            for (std::int64_t k0 = 0; k0 < job.K; k0 += KC) {
                const int kc = static_cast<int>(std::min<std::int64_t>(KC, job.K - k0));
                packTile(job.w, job.layout, job.N, t.n0, t.nc, k0, kc, s.packed, s.rows, s.zeros, job.direct);
                if (k0 + KC < job.K) {
                    prefetch.start(t.n0, t.nc, k0 + KC, KC, microTiles);
                } else {
                    task = nextTask.fetch_add(1, std::memory_order_relaxed);
                    if (task < plan.tasks) {
                        const TileTask following = plan.at(task);
                        prefetch.start(following.n0, following.nc, 0, KC, microTiles);
                    } else {
                        prefetch.start(0, 0, 0, 0, 1);
                    }
                }
                multiplyKBlock(job, g0, t, k0, kc, packedRows + k0 / KC * mBlocks * KC * MR, s, prefetch);
            }
        }
    }
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
    // Rows of x are packed for the micro-kernel in groups of a bounded size (a long text's rows x K would not fit a
    // scratch kept between products); each group is one pass over the weight.
    const ProductJob job{x, ldx, w, layout, K, N, out, ldo, accumulate, then,
                         layout == Layout::RowsAreInputs && w.isFloat32() && M <= kDirectRows};
    const std::int64_t kBlocks = (K + KC - 1) / KC;
    const std::int64_t groupRows = std::max<std::int64_t>(1, kPackedRowFloats / (kBlocks * KC * MR)) * MR;
    for (std::int64_t g0 = 0; g0 < M; g0 += groupRows)
        multiplyRowGroup(job, g0, std::min(groupRows, M - g0));
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
