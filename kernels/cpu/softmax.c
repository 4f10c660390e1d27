/* Fast CPU softmax over the middle dim of [outer, len, inner]: rows (inner
 * 1), SM_ROWS at a time, or tiles of SM_TILE adjacent columns, so reads stay
 * contiguous, spread over the CPU pool (core/parallel.h). The exp is
 * kernels/exp_poly.h's on the CPU's widest vectors, the max and the
 * division too; each row's double sum runs in the reference's order, the
 * SM_ROWS rows' sums abreast; rows of at most 16 values on AVX-512 16 rows a tile, transposed
 * (softmax_short_512). Same arithmetic as kernels/ref/softmax.c, so bit-exact in tests/parity_elementwise.c. */
#include <math.h>

#include "core/parallel.h"
#include "kernels/cpu/transpose16.h"
#include "kernels/exp_poly.h"
#include "kernels/kernels.h"

enum {
    SM_TILE = 64,              /* columns of one [len, inner] slab handled together */
    SM_ROWS = 8,               /* rows whose sums run abreast */
    SM_SHORT = 16,             /* rows of at most this many values: 16 rows a tile transposed (softmax_short_512) */
    SM_MAX_LANES = 16,         /* partial maxima of a row */
    SM_PARALLEL_MIN = 1 << 12  /* below this many elements stay on one thread */
};

#define SM_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math")))

/* x, y: n_rows <= SM_ROWS rows of [len]. The max as the reference's `if (x > max) max = x` finds it, in
 * SM_MAX_LANES partial maxima (NaN skipped; which of +-0 wins changes no exp(x - max)). One function, so a short
 * row's loops cost no calls. */
SM_CLONES static void softmax_rows(int64_t n_rows, int64_t len, const float *x, float *y)
{
    double sum[SM_ROWS] = {0.0};
    for (int64_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * len;
        float m[SM_MAX_LANES];
        for (int j = 0; j < SM_MAX_LANES; j++)
            m[j] = -INFINITY;
        int64_t l = 0;
        for (; l + SM_MAX_LANES <= len; l += SM_MAX_LANES)
            for (int j = 0; j < SM_MAX_LANES; j++)
                m[j] = xr[l + j] > m[j] ? xr[l + j] : m[j];
        for (int w = SM_MAX_LANES / 2; w > 0; w /= 2) /* a tree, not a chain of SM_MAX_LANES compares */
            for (int j = 0; j < w; j++)
                m[j] = m[j + w] > m[j] ? m[j + w] : m[j];
        float max = m[0];
        for (; l < len; l++)
            max = xr[l] > max ? xr[l] : max;
        for (l = 0; l < len; l++)
            y[r * len + l] = ptq_expf_poly(xr[l] - max);
    }
    if (n_rows == SM_ROWS) {
        for (int64_t l = 0; l < len; l++)
            for (int r = 0; r < SM_ROWS; r++)
                sum[r] += y[r * len + l];
    } else {
        for (int64_t r = 0; r < n_rows; r++)
            for (int64_t l = 0; l < len; l++)
                sum[r] += y[r * len + l];
    }
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t l = 0; l < len; l++)
            y[r * len + l] = (float)(y[r * len + l] / sum[r]);
}

/* x, y: [len, inner] slabs, columns [0, n_cols) of them (n_cols <= SM_TILE). */
SM_CLONES static void softmax_cols(int64_t len, int64_t inner, int64_t n_cols, const float *x, float *y)
{
    float max[SM_TILE];
    double sum[SM_TILE];
    for (int64_t j = 0; j < n_cols; j++) {
        max[j] = -INFINITY;
        sum[j] = 0.0;
    }
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++)
            max[j] = x[l * inner + j] > max[j] ? x[l * inner + j] : max[j];
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++) {
            y[l * inner + j] = ptq_expf_poly(x[l * inner + j] - max[j]);
            sum[j] += y[l * inner + j];
        }
    for (int64_t l = 0; l < len; l++)
        for (int64_t j = 0; j < n_cols; j++)
            y[l * inner + j] = (float)(y[l * inner + j] / sum[j]);
}

#ifdef PTQ_TRANSPOSE16
/* n_rows <= 16 rows of len <= 16 (attention's rows) transposed, so that each vector holds a column, one value of
 * every row: the max is the reference's `if (x > max) max = x` down the columns (MAXPS keeps max for a NaN x), the
 * double sums run in the reference's order, 16 rows abreast, and the exp is exp_poly.h's on 16 rows at once. The
 * reference's operations, so the same bits. */
__attribute__((target("avx512f"), optimize("no-trapping-math"))) static void
softmax_short_512(int64_t n_rows, int64_t len, const float *x, float *y)
{
    __m512 v[16];
    float e[SM_SHORT * 16]; /* x - max, then its exp in place */
    const __mmask16 lm = (__mmask16)((1u << len) - 1u);
    for (int r = 0; r < 16; r++)
        v[r] = r < n_rows ? _mm512_maskz_loadu_ps(lm, x + r * len) : _mm512_setzero_ps();
    transpose16(v);
    __m512 max = _mm512_set1_ps(-INFINITY);
    for (int64_t l = 0; l < len; l++)
        max = _mm512_max_ps(v[l], max);
    for (int64_t l = 0; l < len; l++)
        _mm512_storeu_ps(e + l * 16, _mm512_sub_ps(v[l], max));
    for (int64_t i = 0; i < len * 16; i++)
        e[i] = ptq_expf_poly(e[i]);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t l = 0; l < len; l++) {
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm256_loadu_ps(e + l * 16)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm256_loadu_ps(e + l * 16 + 8)));
    }
    for (int64_t l = 0; l < 16; l++) {
        if (l >= len) {
            v[l] = _mm512_setzero_ps();
            continue;
        }
        const __m256 lo = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm256_loadu_ps(e + l * 16)), s0));
        const __m256 hi = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_cvtps_pd(_mm256_loadu_ps(e + l * 16 + 8)), s1));
        v[l] = _mm512_castpd_ps(
            _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    }
    transpose16(v);
    for (int r = 0; r < n_rows; r++)
        _mm512_mask_storeu_ps(y + r * len, lm, v[r]);
}
#endif

typedef struct sm_job {
    int64_t outer, len, inner, n_tiles_slab;
    int64_t tile_rows; /* inner 1: rows a tile, SM_ROWS or SM_SHORT (softmax_short_512) */
    const float *x;
    float *y;
} sm_job;

/* Tiles [begin, end): SM_ROWS rows (fewer at the end) when inner is 1, else SM_TILE columns of one slab. */
static void sm_tiles(void *arg, int64_t begin, int64_t end, int worker)
{
    const sm_job *j = arg;
    const int64_t len = j->len, inner = j->inner;
    for (int64_t t = begin; t < end; t++) {
        if (inner == 1) {
            const int64_t r0 = t * j->tile_rows, n_rows = j->outer - r0 < j->tile_rows ? j->outer - r0 : j->tile_rows;
#ifdef PTQ_TRANSPOSE16
            if (j->tile_rows == SM_SHORT) {
                softmax_short_512(n_rows, len, j->x + r0 * len, j->y + r0 * len);
                continue;
            }
#endif
            softmax_rows(n_rows, len, j->x + r0 * len, j->y + r0 * len);
            continue;
        }
        int64_t o = t / j->n_tiles_slab, lo = (t % j->n_tiles_slab) * SM_TILE;
        int64_t n_cols = inner - lo < SM_TILE ? inner - lo : SM_TILE;
        softmax_cols(len, inner, n_cols, j->x + o * len * inner + lo, j->y + o * len * inner + lo);
    }
}

/* x, y: [outer, len, inner], row-major. */
void ptq_k_softmax_cpu(int64_t outer, int64_t len, int64_t inner, const float *x, float *y)
{
    const int64_t n_tiles_slab = (inner + SM_TILE - 1) / SM_TILE;
    int64_t tile_rows = SM_ROWS;
#ifdef PTQ_TRANSPOSE16
    if (inner == 1 && len >= 1 && len <= SM_SHORT && ptq_k_conv_cpu_isa() >= 2)
        tile_rows = SM_SHORT;
#endif
    const int64_t n_tiles = inner == 1 ? (outer + tile_rows - 1) / tile_rows : outer * n_tiles_slab;
    sm_job job = {outer, len, inner, n_tiles_slab, tile_rows, x, y};
    int64_t grain = outer * len * inner >= SM_PARALLEL_MIN ? ptq_par_grain(n_tiles, 4, 1) : n_tiles;
    ptq_parallel_for(n_tiles, grain, sm_tiles, &job);
}
