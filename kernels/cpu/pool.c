/* Fast CPU MaxPool / AveragePool / GlobalAveragePool: the CPU pool over
 * output rows, each window walking only its in-bounds taps (no per-tap tests);
 * 2x2 windows at stride 2 a row of 16 outputs at a time on AVX-512.
 * Same taps, order and double sums as kernels/ref/pool.c, so results are
 * bit-identical; checked in tests/parity_pool.c. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/cpu/epilogue512.h"
#include "kernels/kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define POOL_X86 1
#endif

enum { POOL_PARALLEL_MIN = 1 << 14 /* output elements below which one thread is faster */ };

typedef enum { POOL_MAX, POOL_AVG } pool_kind;

/* Taps t in [*lo, *hi) of a k-tap window with dilation d starting at
 * `start` that land in [0, lim). */
static inline void tap_range(int64_t start, int64_t lim, int64_t k, int64_t d, int64_t *lo, int64_t *hi)
{
    int64_t a = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t b = lim - 1 - start < 0 ? 0 : (lim - 1 - start) / d + 1;
    b = b > k ? k : b;
    *lo = a > b ? b : a;
    *hi = b;
}

typedef struct pool_job {
    pool_kind kind;
    const ptq_pool_params *p;
    const float *x;
    float *y;
    int64_t n_cols; /* global average pool */
} pool_job;

enum { MAX_TAPS_ROWS = 64 /* window rows (taps of dims 0 and 1) max_row_interior takes */ };

/* MaxPool outputs [0, n) of a row whose windows lie inside the image along dim 2 (undilated there): y[o] =
 * the max of base[off[r] + o * st + t] over the rows r, then t < k, in that order, each tap replacing the
 * running max only when greater, as pool_rows takes them, so the same bits (the first of equal values, -0 or
 * +0, stays). Taps outer, outputs inner, to the CPU's widest vectors. Returns whether a tap was NaN: then the
 * caller takes the row again tap by tap, for the window's first NaN. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static int
max_row_interior(const float *base, const int64_t *off, int64_t n_off, int64_t k, int64_t st, float *y, int64_t n)
{
    int nan = 0;
    for (int64_t o = 0; o < n; o++)
        y[o] = -INFINITY;
    for (int64_t r = 0; r < n_off; r++)
        for (int64_t t = 0; t < k; t++) {
            const float *x = base + off[r] + t;
            for (int64_t o = 0; o < n; o++) {
                const float v = x[o * st];
                nan |= v != v;
                y[o] = v > y[o] ? v : y[o];
            }
        }
    return nan;
}

/* A 2-D MaxPool of 2x2 windows at stride 2 without padding or dilation whose windows all lie inside the image: the
 * most common pooling, which max_row_interior can only take a strided tap at a time. */
static int pool_2x2(const ptq_pool_params *p)
{
    return p->k[0] == 1 && p->stride[0] == 1 && p->dil[0] == 1 && p->pad_lo[0] == 0 && p->pad_hi[0] == 0 &&
           p->k[1] == 2 && p->k[2] == 2 && p->stride[1] == 2 && p->stride[2] == 2 && p->dil[1] == 1 &&
           p->dil[2] == 1 && p->pad_lo[1] == 0 && p->pad_lo[2] == 0 && p->out[0] == p->in[0] &&
           2 * p->out[1] <= p->in[1] && 2 * p->out[2] <= p->in[2];
}

#ifdef POOL_X86
/* n outputs of a pool_2x2 row from its two input rows r0 and r1, 16 at a time: the max over (r0, even column),
 * (r0, odd), (r1, even), (r1, odd) from -inf, each v > m ? v : m (MAXPS), as max_row_interior takes the taps, so the
 * same bits. Returns 1, leaving the row to the caller, when one of its taps is NaN. */
__attribute__((target("avx512f"))) static int max_2x2_row(const float *r0, const float *r1, float *y, int64_t n)
{
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 lowest = _mm512_set1_ps(-INFINITY);
    for (int64_t o = 0; o < n; o += 16) {
        const int64_t cols = 2 * (n - o < 16 ? n - o : 16);
        const __mmask16 lo = ptq_lanes16(cols), hi = ptq_lanes16(cols - 16);
        const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + 2 * o), a1 = _mm512_maskz_loadu_ps(hi, r0 + 2 * o + 16);
        const __m512 b0 = _mm512_maskz_loadu_ps(lo, r1 + 2 * o), b1 = _mm512_maskz_loadu_ps(hi, r1 + 2 * o + 16);
        if (_mm512_cmp_ps_mask(a0, a0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(a1, a1, _CMP_UNORD_Q) |
            _mm512_cmp_ps_mask(b0, b0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(b1, b1, _CMP_UNORD_Q))
            return 1; /* masked-off lanes load as zeros */
        __m512 m = _mm512_max_ps(_mm512_permutex2var_ps(a0, even, a1), lowest);
        m = _mm512_max_ps(_mm512_permutex2var_ps(a0, odd, a1), m);
        m = _mm512_max_ps(_mm512_permutex2var_ps(b0, even, b1), m);
        m = _mm512_max_ps(_mm512_permutex2var_ps(b0, odd, b1), m);
        _mm512_mask_storeu_ps(y + o, ptq_lanes16(n - o), m);
    }
    return 0;
}
#endif

/* Output rows [begin, end) (n*c*out0*out1 rows of out2 outputs).
 * x: [n, c, in0, in1, in2]; y: [n, c, out0, out1, out2]. */
static void pool_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    const pool_job *j = arg;
    const pool_kind kind = j->kind;
    const ptq_pool_params *p = j->p;
    const float *x = j->x;
    float *y = j->y;
    const int64_t in_size = p->in[0] * p->in[1] * p->in[2];
    /* MaxPool outputs whose windows lie inside the image along dim 2: [fast_lo, fast_hi), max_row_interior */
    int64_t fast_lo = 0, fast_hi = 0;
    if (kind == POOL_MAX && p->dil[2] == 1 && p->in[2] >= p->k[2]) {
        fast_lo = (p->pad_lo[2] + p->stride[2] - 1) / p->stride[2];
        fast_hi = (p->in[2] - p->k[2] + p->pad_lo[2]) / p->stride[2] + 1;
        fast_hi = fast_hi < p->out[2] ? fast_hi : p->out[2];
        fast_lo = fast_lo < fast_hi ? fast_lo : fast_hi;
    }
    int64_t off[MAX_TAPS_ROWS];
#ifdef POOL_X86
    const int two_by_two = kind == POOL_MAX && pool_2x2(p) && ptq_k_conv_cpu_isa() == 2;
#endif
    for (int64_t row = begin; row < end; row++) {
        const int64_t o1 = row % p->out[1], o0 = row / p->out[1] % p->out[0], nc = row / p->out[1] / p->out[0];
        const float *xp = x + nc * in_size;
        float *yr = y + row * p->out[2];
#ifdef POOL_X86
        if (two_by_two) {
            const float *r0 = xp + (o0 * p->in[1] + 2 * o1) * p->in[2];
            if (!max_2x2_row(r0, r0 + p->in[2], yr, p->out[2]))
                continue;
        }
#endif
        const int64_t s0 = o0 * p->stride[0] - p->pad_lo[0], s1 = o1 * p->stride[1] - p->pad_lo[1];
        int64_t lo0, hi0, lo1, hi1, plo, n_pad0, n_pad1;
        tap_range(s0, p->in[0], p->k[0], p->dil[0], &lo0, &hi0);
        tap_range(s1, p->in[1], p->k[1], p->dil[1], &lo1, &hi1);
        tap_range(s0 + p->pad_lo[0], p->in[0] + p->pad_lo[0] + p->pad_hi[0], p->k[0], p->dil[0], &plo, &n_pad0);
        tap_range(s1 + p->pad_lo[1], p->in[1] + p->pad_lo[1] + p->pad_hi[1], p->k[1], p->dil[1], &plo, &n_pad1);
        int64_t skip_lo = 0, skip_hi = 0; /* outputs max_row_interior gave */
        const int64_t n_off = (hi0 - lo0) * (hi1 - lo1);
        if (fast_hi > fast_lo && n_off > 0 && n_off <= MAX_TAPS_ROWS) {
            int64_t r = 0;
            for (int64_t t0 = lo0; t0 < hi0; t0++)
                for (int64_t t1 = lo1; t1 < hi1; t1++)
                    off[r++] = ((s0 + t0 * p->dil[0]) * p->in[1] + s1 + t1 * p->dil[1]) * p->in[2];
            const float *base = xp + fast_lo * p->stride[2] - p->pad_lo[2];
            if (!max_row_interior(base, off, n_off, p->k[2], p->stride[2], yr + fast_lo, fast_hi - fast_lo))
                skip_lo = fast_lo, skip_hi = fast_hi;
        }
        for (int64_t o2 = 0; o2 < p->out[2]; o2++) {
            if (o2 == skip_lo && skip_hi > skip_lo) {
                o2 = skip_hi - 1;
                continue;
            }
            const int64_t s2 = o2 * p->stride[2] - p->pad_lo[2];
            int64_t lo2, hi2, n_pad2;
            tap_range(s2, p->in[2], p->k[2], p->dil[2], &lo2, &hi2);
            float m = -INFINITY;
            double sum = 0.0;
            int nan = 0; /* the window's first NaN is its max, as the ref gives it */
            for (int64_t t0 = lo0; !nan && t0 < hi0; t0++)
                for (int64_t t1 = lo1; !nan && t1 < hi1; t1++) {
                    /* element of tap t2 is xp[at + t2*dil2]; at itself may lie before the plane */
                    const int64_t at = ((s0 + t0 * p->dil[0]) * p->in[1] + s1 + t1 * p->dil[1]) * p->in[2] + s2;
                    if (kind == POOL_MAX) {
                        for (int64_t t2 = lo2; t2 < hi2; t2++) { /* the max without a branch; a NaN is rare */
                            const float v = xp[at + t2 * p->dil[2]];
                            if (v != v) {
                                m = v, nan = 1;
                                break;
                            }
                            m = v > m ? v : m;
                        }
                    } else {
                        for (int64_t t2 = lo2; t2 < hi2; t2++)
                            sum += xp[at + t2 * p->dil[2]];
                    }
                }
            if (kind == POOL_MAX) {
                yr[o2] = m;
                continue;
            }
            int64_t count = (hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2);
            if (p->count_include_pad) {
                tap_range(s2 + p->pad_lo[2], p->in[2] + p->pad_lo[2] + p->pad_hi[2], p->k[2], p->dil[2], &plo,
                          &n_pad2);
                count = n_pad0 * n_pad1 * n_pad2;
            }
            yr[o2] = count ? (float)(sum / (double)count) : 0.0f;
        }
    }
}

static void pool_cpu(pool_kind kind, const ptq_pool_params *p, const float *x, float *y)
{
    const int64_t n_rows = p->n * p->c * p->out[0] * p->out[1];
    pool_job job = {kind, p, x, y, 0};
    int64_t grain = n_rows * p->out[2] >= POOL_PARALLEL_MIN ? ptq_par_grain(n_rows, 4, 1) : n_rows;
    ptq_parallel_for(n_rows, grain, pool_rows, &job);
}

void ptq_k_maxpool_cpu(const ptq_pool_params *p, const float *x, float *y)
{
    pool_cpu(POOL_MAX, p, x, y);
}

void ptq_k_avgpool_cpu(const ptq_pool_params *p, const float *x, float *y)
{
    pool_cpu(POOL_AVG, p, x, y);
}

/* Rows [begin, end) of x: [n_rows, n_cols] -> y: [n_rows]. */
static void gap_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    const pool_job *j = arg;
    const int64_t n_cols = j->n_cols;
    for (int64_t r = begin; r < end; r++) {
        double sum = 0.0;
        const float *xr = j->x + r * n_cols;
        for (int64_t c = 0; c < n_cols; c++)
            sum += xr[c];
        j->y[r] = n_cols ? (float)(sum / (double)n_cols) : 0.0f;
    }
}

/* x: [n_rows, n_cols]; y: [n_rows]. */
void ptq_k_global_avgpool_cpu(int64_t n_rows, int64_t n_cols, const float *x, float *y)
{
    pool_job job = {POOL_AVG, NULL, x, y, n_cols};
    int64_t grain = n_rows * n_cols >= POOL_PARALLEL_MIN ? ptq_par_grain(n_rows, 4, 1) : n_rows;
    ptq_parallel_for(n_rows, grain, gap_rows, &job);
}

enum { MID_TILE = 256 /* outputs mean_mid_tile sums abreast */ };

/* Outputs [i0, i0 + n) of row o of ptq_k_mean_mid_cpu: each summed in double over r in order, as the ref sums it,
 * the n sums abreast, to the widest vectors. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
mean_mid_tile(int64_t n_red, int64_t inner, const float *x, float *y, int64_t n)
{
    double acc[MID_TILE];
    for (int64_t i = 0; i < n; i++)
        acc[i] = 0.0;
    for (int64_t r = 0; r < n_red; r++)
        for (int64_t i = 0; i < n; i++)
            acc[i] += x[r * inner + i];
    for (int64_t i = 0; i < n; i++)
        if (acc[i] != acc[i]) { /* which of several NaNs a sum keeps follows its adds' operands, which the vector
                                   loop swaps: the sum again as the ref adds it (its first NaN) */
            double sum = 0.0;
            for (int64_t r = 0; r < n_red && sum == sum; r++) /* stopping at the first NaN, whatever the order */
                sum += x[r * inner + i];
            acc[i] = sum;
        }
    for (int64_t i = 0; i < n; i++)
        y[i] = (float)(acc[i] / (double)n_red);
}

typedef struct mid_job {
    int64_t n_red, inner, n_tiles;
    const float *x;
    float *y;
} mid_job;

static void mean_mid_items(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const mid_job *j = arg;
    for (int64_t it = begin; it < end; it++) {
        const int64_t o = it / j->n_tiles, i0 = it % j->n_tiles * MID_TILE;
        const int64_t n = j->inner - i0 < MID_TILE ? j->inner - i0 : MID_TILE;
        mean_mid_tile(j->n_red, j->inner, j->x + o * j->n_red * j->inner + i0, j->y + o * j->inner + i0, n);
    }
}

/* x: [outer, n_red, inner] -> y: [outer, inner], the mean over the middle axis (ReduceMean over a block of axes
 * with more after it): the same sums in the same order as ptq_k_reduce_mean_ref, so the same bits. */
void ptq_k_mean_mid_cpu(int64_t outer, int64_t n_red, int64_t inner, const float *x, float *y)
{
    const int64_t n_tiles = (inner + MID_TILE - 1) / MID_TILE, n_items = outer * n_tiles;
    mid_job job = {n_red, inner, n_tiles, x, y};
    const int64_t per_item = (n_red + 1) * (inner < MID_TILE ? inner : MID_TILE);
    ptq_parallel_for(n_items, ptq_par_grain(n_items, 4, POOL_PARALLEL_MIN / (per_item + 1) + 1), mean_mid_items, &job);
}
