/* Fast CPU GEMM, its rows spread over the CPU pool (core/parallel.h);
 * batches of GEMMs are spread over slices. Each row of a product must be
 * the same bits whatever m, the batch size, the thread count and the row's
 * place (calibration archives must not depend on how the data was batched;
 * tests/test_calib_set.c, tests/parity_gemm.c's row test). Two paths:
 *
 * - With AVX2 and FMA (AVX-512 where there is one): the FMA tiles of
 *   kernels/cpu/fma_tile.h. A chunk of rows of op(a) is packed into blocks
 *   of MR rows, a panel of op(b)'s columns into [k][NR], and each output is
 *   one register summed over k in order, fma from 0, then alpha and beta:
 *   the same operations for every row and either vector width, so a row is
 *   the same bits whatever shares its tile, and on an AVX2 and an AVX-512
 *   CPU alike. Panels of 64 columns go to the AVX-512 kernel while more
 *   than 32 are left (the last padded with zeros), the rest (and
 *   everything on AVX2) 16 at a time; a product of 16 columns or fewer
 *   runs a row at a time on AVX-512 (narrow_rows), the same sums.
 * - Otherwise: cblas_sgemm (OpenBLAS single-threaded, see
 *   kernels/cpu/blas_threads.c) on row blocks. OpenBLAS rounds a row
 *   differently depending on the call's row count and, in some of its
 *   kernels (Haswell/Zen: rows 12-15 of a 16-row call), on the row's place
 *   in the call. So every sgemm call of a shape covers the same number of
 *   rows (the last block padded), a count at which a probe found every row
 *   rounded alike (row_block).
 *
 * Mirrors kernels/ref/gemm.c; checked against it in tests/parity_gemm.c. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/cpu/epilogue512.h"
#include "kernels/cpu/fma_tile.h"
#include "kernels/kernels.h"

enum {
    GEMM_MIN_ROW_FLOPS = 1 << 20, /* fewest flops in a row block handed to one thread */
    GEMM_ROW_BLOCK = 16,          /* most rows per sgemm call (see the top of the file) */
    ROW_SHAPES = 64               /* shapes whose row count row_block remembers */
};

typedef struct row_shape {
    int64_t n, k;
    int trans_b;
    float alpha, beta;
    int rows;
} row_shape;

static row_shape row_shapes[ROW_SHAPES];
static int n_row_shapes;
static pthread_mutex_t row_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The largest of 16, 8, 4, 2 rows at which one sgemm call of p's shape (b
 * as given) rounds every row alike, found by running GEMM_ROW_BLOCK equal
 * pseudo-random rows (and equal rows of y when beta is used); 1 when none
 * (or out of memory: one row a call is alike by construction). */
static int probe_rows(const ptq_gemm_params *p, const float *b)
{
    const int64_t k = p->k, n = p->n, ldb = p->trans_b ? k : n;
    float *a = malloc((size_t)GEMM_ROW_BLOCK * (size_t)(k + 2 * n) * sizeof *a);
    if (!a)
        return 1;
    float *y0 = a + GEMM_ROW_BLOCK * k, *y = y0 + GEMM_ROW_BLOCK * n;
    uint32_t r = 2463534242u;
    for (int64_t i = 0; i < k + n; i++) { /* xorshift32 values in [-1, 1) */
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        (i < k ? a : y0)[i < k ? i : i - k] = (float)(r >> 8) / (float)(1u << 23) - 1.0f;
    }
    for (int i = 1; i < GEMM_ROW_BLOCK; i++) {
        memcpy(a + i * k, a, (size_t)k * sizeof *a);
        memcpy(y0 + i * n, y0, (size_t)n * sizeof *y0);
    }
    int rows = 1;
    for (int cand = GEMM_ROW_BLOCK; cand > 1 && rows == 1; cand /= 2) {
        memcpy(y, y0, (size_t)(cand * n) * sizeof *y);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans, cand, (blasint)n,
                    (blasint)k, p->alpha, a, (blasint)k, b, (blasint)ldb, p->beta, y, (blasint)n);
        int alike = 1;
        for (int i = 1; i < cand && alike; i++)
            alike = memcmp(y + i * n, y, (size_t)n * sizeof *y) == 0;
        if (alike)
            rows = cand;
    }
    free(a);
    return rows;
}

/* Rows per sgemm call for p's shape: probe_rows once per shape, remembered
 * (the first ROW_SHAPES shapes; later ones are probed at each GEMM). */
static int row_block(const ptq_gemm_params *p, const float *b)
{
    pthread_mutex_lock(&row_mutex);
    for (int i = 0; i < n_row_shapes; i++) {
        const row_shape *e = &row_shapes[i];
        if (e->n == p->n && e->k == p->k && e->trans_b == p->trans_b && e->alpha == p->alpha && e->beta == p->beta) {
            const int rows = e->rows;
            pthread_mutex_unlock(&row_mutex);
            return rows;
        }
    }
    pthread_mutex_unlock(&row_mutex);
    const int rows = probe_rows(p, b);
    pthread_mutex_lock(&row_mutex);
    if (n_row_shapes < ROW_SHAPES)
        row_shapes[n_row_shapes++] = (row_shape){p->n, p->k, p->trans_b, p->alpha, p->beta, rows};
    pthread_mutex_unlock(&row_mutex);
    return rows;
}

/* Rows [m0, m0+mb) of y: [m, n] = alpha * op(a) @ op(b) + beta * y, in one
 * sgemm call of that many rows. */
static void gemm_rows(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb)
{
    const int64_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->n;
    /* row i of op(a) starts at a + i*lda, or at column i of a when transposed */
    const float *a_rows = p->trans_a ? a + m0 : a + m0 * lda;
    cblas_sgemm(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
                (blasint)mb, (blasint)p->n, (blasint)p->k, p->alpha, a_rows, (blasint)lda, b, (blasint)ldb, p->beta,
                y + m0 * p->n, (blasint)p->n);
}

/* Rows [m0, m0+mb), mb <= rb, through one sgemm call of exactly rb
 * untransposed rows: a full block of an untransposed a is used in place;
 * otherwise its rows are copied into a zero-padded block. */
static void gemm_block(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb,
                       int rb)
{
    if (mb == rb && !p->trans_a) {
        gemm_rows(p, a, b, y, m0, mb);
        return;
    }
    const int64_t k = p->k, n = p->n;
    float *ap = calloc((size_t)rb * (size_t)(k + n), sizeof *ap);
    if (!ap) { /* a void kernel cannot report NOMEM: the same rows, rounded as sgemm likes */
        gemm_rows(p, a, b, y, m0, mb);
        return;
    }
    float *yp = ap + rb * k;
    for (int64_t i = 0; i < mb; i++) {
        for (int64_t kk = 0; kk < k; kk++)
            ap[i * k + kk] = p->trans_a ? a[kk * p->m + m0 + i] : a[(m0 + i) * k + kk];
        if (p->beta != 0.0f)
            for (int64_t j = 0; j < n; j++)
                yp[i * n + j] = y[(m0 + i) * n + j];
    }
    const ptq_gemm_params q = {rb, n, k, 0, p->trans_b, p->alpha, p->beta};
    gemm_rows(&q, ap, b, yp, 0, rb);
    for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < n; j++)
            y[(m0 + i) * n + j] = yp[i * n + j];
    free(ap);
}

/* Rows [m0, m0+mb) rb rows (row_block's) at a time. */
static void gemm_blocks(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb,
                        int rb)
{
    for (int64_t r = m0; r < m0 + mb; r += rb)
        gemm_block(p, a, b, y, r, m0 + mb - r < rb ? m0 + mb - r : rb, rb);
}

#ifdef PTQ_FMA_TILE
enum {
    TILE_CHUNK = 16 * MR, /* rows of op(a) a tile_rows call keeps packed at once */
    TILE_STACK = 4096     /* floats of packing a call takes from its stack before it allocates */
};

/* Rows [i0, i0 + rows) of op(a) into blocks [ceil(rows / MR)][k][MR], zeros in a last block's missing rows. */
static void pack_rows(const ptq_gemm_params *p, const float *a, int64_t i0, int64_t rows, float *ap)
{
    const int64_t k = p->k;
    for (int64_t b0 = 0; b0 < rows; b0 += MR, ap += k * MR)
        for (int64_t r = 0; r < MR; r++) {
            const int64_t i = i0 + b0 + r;
            if (b0 + r >= rows)
                for (int64_t l = 0; l < k; l++)
                    ap[l * MR + r] = 0.0f;
            else if (p->trans_a)
                for (int64_t l = 0; l < k; l++)
                    ap[l * MR + r] = a[l * p->m + i];
            else
                for (int64_t l = 0; l < k; l++)
                    ap[l * MR + r] = a[i * k + l];
        }
}

/* Columns [j0, j0 + nr) of op(b) into panel [k][nr], zeros past n. A row's copy is a loop on the widest vectors,
 * not a memcpy (which GCC inlines as rep movsq: some 30 cycles to start, for 64 to 256 bytes). */
__attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-tree-loop-distribute-patterns"))) static void
pack_panel(const ptq_gemm_params *p, const float *b, int64_t j0, int64_t nr, float *panel)
{
    const int64_t k = p->k, n = p->n, cols = n - j0 < nr ? n - j0 : nr;
    for (int64_t l = 0; l < k; l++) {
        float *dst = panel + l * nr;
        if (p->trans_b)
            for (int64_t c = 0; c < cols; c++)
                dst[c] = b[(j0 + c) * k + l];
        else {
            const float *src = b + l * n + j0;
            for (int64_t c = 0; c < cols; c++)
                dst[c] = src[c];
        }
        for (int64_t c = cols; c < nr; c++)
            dst[c] = 0.0f;
    }
}

/* Where a tile's last k block goes straight to y: row 0 at y (n apart), cols columns, store_tile's epilogue. */
typedef struct tile_out {
    float *y;
    int64_t n, cols;
    float alpha, beta;
    const float *bias;     /* at the tile's first column, or NULL */
    const ptq_gemm_epi *e; /* a pointwise convolution's epilogue (beta 0, no bias), or NULL */
    const float *rb, *z;   /* e's row bias at the tile's first row and residual at y (or NULL) */
} tile_out;

/* store_tile's operations on one vector t of outputs at y, lanes m: alpha t, plus the bias's lanes where bias, else
 * plus beta y where beta != 0 (beta_v: beta in every lane); with e, then plus *rb (rb: the row's bias, or NULL),
 * plus z's lanes (or NULL), then clamped to [e->lo, e->hi] (kernels/cpu/epilogue512.h). */
__attribute__((target("avx512f"), always_inline)) static inline void
store_vec(float *y, __mmask16 m, __m512 t, __m512 alpha, float beta, __m512 beta_v, const float *bias,
          const ptq_gemm_epi *e, const float *rb, const float *z)
{
    __m512 v = _mm512_mul_ps(alpha, t);
    if (bias)
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias));
    else if (beta != 0.0f)
        v = _mm512_add_ps(v, _mm512_mul_ps(beta_v, _mm512_maskz_loadu_ps(m, y)));
    if (e)
        v = ptq_epilogue_512(v, m, z, rb != NULL, _mm512_set1_ps(rb ? *rb : 0.0f), _mm512_set1_ps(e->lo),
                             _mm512_set1_ps(e->hi));
    _mm512_mask_storeu_ps(y, m, v);
}

/* kernel_512 (kernels/cpu/fma_tile.h) with MR rows of op(a) read where they are, lda apart, k contiguous, instead of
 * packed, and nv vectors of the panel a row (4: 64 columns; 1: a 16-column panel, kernel_256's width), its rows ldb
 * apart (a packed panel's or b's own): the same fmas in the same order, so the same bits. With o (the last k
 * block), the sums go to y through store_tile's operations, on vectors, instead of to the tile (nv * 16 apart). */
__attribute__((target("avx512f"), always_inline)) static inline void
rows_nv(const float *a, int64_t lda, int64_t kc, const float *panel, int64_t ldb, float *tile, int accumulate,
        const tile_out *o, const int nv)
{
    __m512 c[MR][4];
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < nv; v++)
            c[m][v] = accumulate ? _mm512_loadu_ps(tile + m * 16 * nv + 16 * v) : _mm512_setzero_ps();
    const float *ar[MR];
    for (int m = 0; m < MR; m++)
        ar[m] = a + m * lda;
    for (int64_t k = 0; k < kc; k++, panel += ldb) {
        __m512 b[4];
        for (int v = 0; v < nv; v++)
            b[v] = _mm512_loadu_ps(panel + 16 * v);
        for (int m = 0; m < MR; m++) {
            const __m512 w = _mm512_set1_ps(ar[m][k]);
            for (int v = 0; v < nv; v++)
                c[m][v] = _mm512_fmadd_ps(w, b[v], c[m][v]);
        }
    }
    if (!o) {
        for (int m = 0; m < MR; m++)
            for (int v = 0; v < nv; v++)
                _mm512_storeu_ps(tile + m * 16 * nv + 16 * v, c[m][v]);
        return;
    }
    const __m512 alpha = _mm512_set1_ps(o->alpha), beta = _mm512_set1_ps(o->beta);
    __mmask16 mk[4];
    for (int v = 0; v < nv; v++) {
        const int64_t left = o->cols - 16 * v;
        mk[v] = left >= 16 ? (__mmask16)0xffff : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1u);
    }
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < nv; v++)
            store_vec(o->y + m * o->n + 16 * v, mk[v], c[m][v], alpha, o->beta, beta,
                      o->bias ? o->bias + 16 * v : NULL, o->e, o->rb ? o->rb + m : NULL,
                      o->z ? o->z + m * o->n + 16 * v : NULL);
}

__attribute__((target("avx512f"))) static void kernel_512_rows(const float *a, int64_t lda, int64_t kc,
                                                                const float *panel, int64_t ldb, float *tile,
                                                                int accumulate, const tile_out *o)
{
    rows_nv(a, lda, kc, panel, ldb, tile, accumulate, o, 4);
}

__attribute__((target("avx512f"))) static void kernel_512_rows16(const float *a, int64_t lda, int64_t kc,
                                                                  const float *panel, float *tile, int accumulate,
                                                                  const tile_out *o)
{
    rows_nv(a, lda, kc, panel, NR_256, tile, accumulate, o, 1);
}

/* kernel_256 (kernels/cpu/fma_tile.h) with MR rows of op(a) read where they are, lda apart, k contiguous, and the
 * packed 16-column panel: the same fmas in the same order, so the same bits; the sums go to the tile. */
__attribute__((target("avx2,fma"))) static void kernel_256_rows(const float *a, int64_t lda, int64_t kc,
                                                                 const float *panel, float *tile, int accumulate)
{
    __m256 c[MR][2];
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < 2; v++)
            c[m][v] = accumulate ? _mm256_loadu_ps(tile + m * NR_256 + 8 * v) : _mm256_setzero_ps();
    const float *ar[MR];
    for (int m = 0; m < MR; m++)
        ar[m] = a + m * lda;
    for (int64_t k = 0; k < kc; k++, panel += NR_256) {
        const __m256 b0 = _mm256_loadu_ps(panel), b1 = _mm256_loadu_ps(panel + 8);
        for (int m = 0; m < MR; m++) {
            const __m256 w = _mm256_broadcast_ss(ar[m] + k);
            c[m][0] = _mm256_fmadd_ps(w, b0, c[m][0]);
            c[m][1] = _mm256_fmadd_ps(w, b1, c[m][1]);
        }
    }
    for (int m = 0; m < MR; m++)
        for (int v = 0; v < 2; v++)
            _mm256_storeu_ps(tile + m * NR_256 + 8 * v, c[m][v]);
}

/* A tile's rows x cols outputs (nr apart in t) into y (n apart) at row i0, column j0: alpha t, plus beta y where
 * beta != 0, or plus bias[c] where bias (beta 0; bias at j0: an Add node's rounding after the product's); or, with
 * e (beta 0, no bias), alpha t plus the row's bias, plus z, clamped (ptq_k_gemm_rows_epi_cpu). To the CPU's widest
 * vectors (the same bits: each result the same IEEE operations). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
store_tile(const float *t, int64_t nr, float *y, int64_t n, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
           float alpha, float beta, const float *bias, const ptq_gemm_epi *e)
{
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + (i0 + r) * n + j0;
        const float *tr = t + r * nr;
        if (e) {
            const float *z = e->z ? e->z + (i0 + r) * n + j0 : NULL, rb = e->row_bias ? e->row_bias[i0 + r] : 0.0f;
            for (int64_t c = 0; c < cols; c++) {
                float v = alpha * tr[c];
                if (e->row_bias)
                    v = v + rb;
                if (z)
                    v = v + z[c];
                v = v < e->lo ? e->lo : v;
                yr[c] = v > e->hi ? e->hi : v;
            }
        } else if (bias)
            for (int64_t c = 0; c < cols; c++) {
                const float v = alpha * tr[c];
                yr[c] = v + bias[c];
            }
        else if (beta != 0.0f)
            for (int64_t c = 0; c < cols; c++)
                yr[c] = alpha * tr[c] + beta * yr[c];
        else
            for (int64_t c = 0; c < cols; c++)
                yr[c] = alpha * tr[c];
    }
}

/* Rows [m0, m0 + mb) of y in FMA tiles (see the top of the file); buf holds a chunk's packed rows, a panel, the
 * panels' row offsets and the chunk's tiles (tile_floats). A panel's KC rows at a time go to every block of the
 * chunk (each tile keeping its partial sums) while they are in the cache: a long k reads the panel once a chunk. */
static void tile_chunks(const ptq_gemm_params *p, const float *a, const float *b, const float *bias,
                        const ptq_gemm_epi *e, float *y, int64_t m0, int64_t mb, int isa, float *buf, int64_t chunk)
{
    const int64_t k = p->k;
    float *ap = buf, *panel = ap + chunk * k, *tiles = panel + k * NR_512;
    int64_t *off64 = (int64_t *)(void *)(tiles + chunk * NR_512), *off16 = off64 + k, *off_n = off16 + k;
    for (int64_t l = 0; l < k; l++) {
        off64[l] = l * NR_512;
        off16[l] = l * NR_256;
        off_n[l] = l * p->n; /* b's own rows (a panel read in place) */
    }
    /* op(a) read in place (kernel_512_rows, kernel_512_rows16, kernel_256_rows) where a is not transposed: only a
       chunk's last block of fewer than MR rows is packed */
    const int in_place = (isa == ISA_AVX512 || isa == ISA_AVX2) && !p->trans_a && k > 0;
    for (int64_t c0 = m0; c0 < m0 + mb; c0 += chunk) {
        const int64_t rows = m0 + mb - c0 < chunk ? m0 + mb - c0 : chunk, full = rows / MR * MR;
        if (!in_place)
            pack_rows(p, a, c0, rows, ap);
        else if (full < rows)
            pack_rows(p, a, c0 + full, rows - full, ap + full * k);
        for (int64_t j0 = 0; j0 < p->n;) {
            /* 64 columns cost about two 16-column panels of half-width vectors: past 32 left, one of 64 */
            const int wide = isa == ISA_AVX512 && p->n - j0 > 2 * NR_256;
            const int64_t nr = wide ? NR_512 : NR_256, cols = p->n - j0 < nr ? p->n - j0 : nr;
            /* a whole 64-column panel of an untransposed b is read where it is, its rows n apart, where they are few
               and near (rows KB apart share the L1's sets: [4096, 1024] ran 12% slower) */
            const int b_in_place = in_place && wide && !p->trans_b && p->n - j0 >= NR_512 && k <= KC && p->n <= 512;
            if (!b_in_place)
                pack_panel(p, b, j0, nr, panel);
            const float *bp = b_in_place ? b + j0 : panel;
            const int64_t ldb = b_in_place ? p->n : NR_512;
            for (int64_t k0 = 0; k0 < k; k0 += KC) {
                const int64_t kc = k - k0 < KC ? k - k0 : KC;
                for (int64_t r0 = 0; r0 < rows; r0 += MR) {
                    const float *ab = ap + r0 * k + k0 * MR; /* block r0 / MR, from k0 */
                    float *tile = tiles + r0 * nr;
                    if (in_place && r0 < full && isa == ISA_AVX2) {
                        kernel_256_rows(a + (c0 + r0) * k + k0, k, kc, panel + k0 * NR_256, tile, k0 > 0);
                    } else if (in_place && r0 < full) {
                        const int64_t at = (c0 + r0) * p->n + j0;
                        const tile_out o = {y + at,
                                            p->n,
                                            cols,
                                            p->alpha,
                                            p->beta,
                                            bias ? bias + j0 : NULL,
                                            e,
                                            e && e->row_bias ? e->row_bias + c0 + r0 : NULL,
                                            e && e->z ? e->z + at : NULL};
                        const float *ar = a + (c0 + r0) * k + k0;
                        if (wide)
                            kernel_512_rows(ar, k, kc, bp + k0 * ldb, ldb, tile, k0 > 0, k0 + kc >= k ? &o : NULL);
                        else
                            kernel_512_rows16(ar, k, kc, panel + k0 * NR_256, tile, k0 > 0, k0 + kc >= k ? &o : NULL);
                    } else if (wide)
                        kernel_512(ab, (b_in_place ? off_n : off64) + k0, kc, bp, tile, k0 > 0);
                    else
                        kernel_256(ab, off16 + k0, kc, panel, tile, k0 > 0);
                }
            }
            /* AVX-512 in place: stored by kernel_512_rows(16) */
            for (int64_t r0 = in_place && isa == ISA_AVX512 ? full : 0; r0 < rows; r0 += MR)
                store_tile(tiles + r0 * nr, nr, y, p->n, c0 + r0, rows - r0 < MR ? rows - r0 : MR, j0, cols, p->alpha,
                           p->beta, bias ? bias + j0 : NULL, e);
            j0 += nr;
        }
    }
}

/* Rows [m0, m0 + mb) of y with the same sums as the tiles, one output at a time (fmaf from 0 in k order, then
 * alpha and beta): when packing memory is short. */
static void fma_rows(const ptq_gemm_params *p, const float *a, const float *b, const float *bias,
                     const ptq_gemm_epi *e, float *y, int64_t m0, int64_t mb)
{
    const int64_t k = p->k, n = p->n;
    for (int64_t i = m0; i < m0 + mb; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t l = 0; l < k; l++)
                acc = fmaf(p->trans_a ? a[l * p->m + i] : a[i * k + l], p->trans_b ? b[j * k + l] : b[l * n + j], acc);
            store_tile(&acc, 1, y, n, i, 1, j, 1, p->alpha, p->beta, bias ? bias + j : NULL, e);
        }
}

/* Rows [m0, m0 + mb) of a product at most 16 columns wide (attention's [16, 16] slices), on AVX-512: op(b) packed
 * into bp [k][16] (zeros past n; an untransposed b of 16 columns is that already), then each row one register
 * summed over k as the tiles sum it, four rows abreast, and store_tile's epilogue in vectors: the tiles' bits
 * without their packing of a and 16-column waste. */
__attribute__((target("avx512f"))) static void narrow_rows(const ptq_gemm_params *p, const float *a, const float *bp,
                                                            const float *bias, const ptq_gemm_epi *e, float *y,
                                                            int64_t m0, int64_t mb)
{
    const int64_t k = p->k, n = p->n, sa = p->trans_a ? 1 : k, sk = p->trans_a ? p->m : 1;
    const __mmask16 mask = (__mmask16)((1u << n) - 1u);
    const __m512 alpha = _mm512_set1_ps(p->alpha), beta = _mm512_set1_ps(p->beta);
    for (int64_t i = m0; i < m0 + mb; i += 4) {
        const int64_t rows = m0 + mb - i < 4 ? m0 + mb - i : 4;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        if (rows == 4) {
            const float *a0 = a + i * sa, *a1 = a0 + sa, *a2 = a1 + sa, *a3 = a2 + sa;
            for (int64_t l = 0; l < k; l++) {
                const __m512 bl = _mm512_loadu_ps(bp + 16 * l);
                acc[0] = _mm512_fmadd_ps(_mm512_set1_ps(a0[l * sk]), bl, acc[0]);
                acc[1] = _mm512_fmadd_ps(_mm512_set1_ps(a1[l * sk]), bl, acc[1]);
                acc[2] = _mm512_fmadd_ps(_mm512_set1_ps(a2[l * sk]), bl, acc[2]);
                acc[3] = _mm512_fmadd_ps(_mm512_set1_ps(a3[l * sk]), bl, acc[3]);
            }
        } else {
            for (int64_t r = 0; r < rows; r++)
                for (int64_t l = 0; l < k; l++)
                    acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[(i + r) * sa + l * sk]), _mm512_loadu_ps(bp + 16 * l),
                                             acc[r]);
        }
        for (int64_t r = 0; r < rows; r++)
            store_vec(y + (i + r) * n, mask, acc[r], alpha, p->beta, beta, bias, e,
                      e && e->row_bias ? e->row_bias + i + r : NULL, e && e->z ? e->z + (i + r) * n : NULL);
    }
}

/* Rows [m0, m0 + mb) of y through the FMA tiles (isa: ISA_AVX2 or ISA_AVX512). */
static void tile_rows(const ptq_gemm_params *p, const float *a, const float *b, const float *bias,
                      const ptq_gemm_epi *e, float *y, int64_t m0, int64_t mb, int isa)
{
    _Alignas(64) float small[TILE_STACK];
    if (isa == ISA_AVX512 && p->n <= NR_256 && p->k * NR_256 <= TILE_STACK) {
        if (!p->trans_b && p->n == NR_256) { /* b is [k][16] already: a packed panel's layout */
            narrow_rows(p, a, b, bias, e, y, m0, mb);
            return;
        }
        pack_panel(p, b, 0, NR_256, small);
        narrow_rows(p, a, small, bias, e, y, m0, mb);
        return;
    }
    const int64_t chunk = mb < TILE_CHUNK ? (mb + MR - 1) / MR * MR : TILE_CHUNK;
    /* a chunk's rows, a panel, the chunk's tiles, and three offsets a row of k (int64_t: two floats each) */
    const double need = ((double)chunk + NR_512 + 6.0) * (double)p->k + (double)chunk * NR_512;
    float *buf = need <= TILE_STACK ? small : NULL;
    if (!buf && need < (double)(SIZE_MAX / sizeof(float) / 2))
        buf = aligned_alloc(64, ((size_t)need * sizeof(float) + 63) / 64 * 64);
    if (!buf) {
        fma_rows(p, a, b, bias, e, y, m0, mb);
        return;
    }
    tile_chunks(p, a, b, bias, e, y, m0, mb, isa, buf, chunk);
    if (buf != small)
        free(buf);
}

/* The FMA tiles' vector width on this CPU (ptq_k_conv_cpu_isa, which tests may narrow), or ISA_NONE: sgemm. */
static int tile_isa(void)
{
    return ptq_k_conv_cpu_isa();
}
#else
static int tile_isa(void)
{
    return 0;
}

static void tile_rows(const ptq_gemm_params *p, const float *a, const float *b, const float *bias,
                      const ptq_gemm_epi *e, float *y, int64_t m0, int64_t mb, int isa)
{
    (void)p, (void)a, (void)b, (void)bias, (void)e, (void)y, (void)m0, (void)mb, (void)isa;
}
#endif

/* Rows [m0, m0 + mb) of y: through the FMA tiles when isa says so, else sgemm calls of rb rows; then bias (NULL:
 * none; beta 0) added to each row, as an Add node after the product rounds it. */
static void run_rows(const ptq_gemm_params *p, const float *a, const float *b, const float *bias, float *y,
                     int64_t m0, int64_t mb, int rb, int isa)
{
    if (isa) {
        tile_rows(p, a, b, bias, NULL, y, m0, mb, isa);
        return;
    }
    gemm_blocks(p, a, b, y, m0, mb, rb);
    for (int64_t i = m0; bias && i < m0 + mb; i++)
        for (int64_t j = 0; j < p->n; j++)
            y[i * p->n + j] = y[i * p->n + j] + bias[j];
}

/* row_block of p's shape, or 1 for an empty product (no sgemm call to probe) or one the FMA tiles run. */
static int rows_for(const ptq_gemm_params *p, const float *b, int isa)
{
    return !isa && p->m > 0 && p->n > 0 && p->k > 0 ? row_block(p, b) : 1;
}

/* One whole GEMM in sgemm calls of rb rows. */
static void gemm_slice(const ptq_gemm_params *p, const float *a, const float *b, float *y, int rb, int isa)
{
    if (p->m == 0 || p->n == 0)
        return;
    if (p->k == 0) { /* sgemm rejects a zero leading dimension; the product is empty */
        for (int64_t i = 0; i < p->m * p->n; i++)
            y[i] = p->beta != 0.0f ? p->beta * y[i] : 0.0f;
        return;
    }
    run_rows(p, a, b, NULL, y, 0, p->m, rb, isa);
}

typedef struct gemm_job {
    const ptq_gemm_params *p;
    const float *a, *b;
    float *y;
    int64_t rows; /* rows per piece (row split) */
    const int64_t *a_off, *b_off; /* batched: per-slice offsets, else NULL */
    int rb;                       /* rows per sgemm call, row_block's for the shape (found once per GEMM) */
    int isa;                      /* tile_isa's, or ISA_NONE: sgemm */
    const float *bias;            /* [n] added to every row (ptq_k_gemm_bias_cpu), or NULL */
} gemm_job;

static void gemm_pieces(void *arg, int64_t begin, int64_t end, int worker)
{
    const gemm_job *j = arg;
    const ptq_gemm_params *p = j->p;
    for (int64_t i = begin; i < end; i++) {
        if (j->a_off) {
            gemm_slice(p, j->a + j->a_off[i], j->b + j->b_off[i], j->y + i * p->m * p->n, j->rb, j->isa);
        } else {
            int64_t m0 = i * j->rows;
            run_rows(p, j->a, j->b, j->bias, j->y, m0, p->m - m0 < j->rows ? p->m - m0 : j->rows, j->rb, j->isa);
        }
    }
}

/* One GEMM on the calling thread (no pool). */
void ptq_k_gemm_rows_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    ptq_k_blas_single_thread();
    const int isa = tile_isa();
    gemm_slice(p, a, b, y, rows_for(p, b, isa), isa);
}

/* One GEMM on the calling thread (beta 0), then e's row bias, residual and clamp, each output a pass's rounding. */
void ptq_k_gemm_rows_epi_cpu(const ptq_gemm_params *p, const float *a, const float *b, const ptq_gemm_epi *e,
                             float *y)
{
    ptq_gemm_params q = *p;
    q.beta = 0.0f;
    const int isa = tile_isa();
    if (isa && q.m > 0 && q.n > 0 && q.k > 0) {
        tile_rows(&q, a, b, NULL, e, y, 0, q.m, isa);
        return;
    }
    ptq_k_gemm_rows_cpu(&q, a, b, y);
    for (int64_t i = 0; i < q.m; i++)
        for (int64_t j = 0; j < q.n; j++) {
            float v = y[i * q.n + j];
            if (e->row_bias)
                v = v + e->row_bias[i];
            if (e->z)
                v = v + e->z[i * q.n + j];
            v = v < e->lo ? e->lo : v;
            y[i * q.n + j] = v > e->hi ? e->hi : v;
        }
}

/* ptq_k_gemm_cpu, bias (or NULL) added to every row. */
static void gemm_pool(const ptq_gemm_params *p, const float *a, const float *b, const float *bias, float *y)
{
    ptq_k_blas_single_thread();
    /* row blocks big enough to keep sgemm efficient, a few per worker */
    int64_t row_flops = 2 * p->n * p->k;
    int64_t min_rows = row_flops > 0 ? (GEMM_MIN_ROW_FLOPS + row_flops - 1) / row_flops : p->m;
    int64_t rows = ptq_par_grain(p->m, 2, min_rows < 1 ? 1 : min_rows);
    rows = (rows + GEMM_ROW_BLOCK - 1) / GEMM_ROW_BLOCK * GEMM_ROW_BLOCK; /* pieces of whole blocks */
    const int isa = tile_isa();
    gemm_job job = {p, a, b, y, rows, NULL, NULL, rows_for(p, b, isa), isa, bias};
    ptq_parallel_for((p->m + rows - 1) / rows, 1, gemm_pieces, &job);
}

/* a: [m, k] ([k, m] when trans_a); b: [k, n] ([n, k] when trans_b);
 * y: [m, n], read only when beta != 0. */
void ptq_k_gemm_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    if (p->m == 0 || p->n == 0 || p->k == 0) {
        ptq_k_gemm_rows_cpu(p, a, b, y);
        return;
    }
    gemm_pool(p, a, b, NULL, y);
}

/* y = op(a) @ op(b) (alpha and beta ignored: 1 and 0), each row then plus bias [n]: the MatMul's product rounded
 * as ptq_k_gemm_cpu rounds it, then the Add node's rounding (kernels/cpu/binary.c), the same bits. */
void ptq_k_gemm_bias_cpu(const ptq_gemm_params *p, const float *a, const float *b, const float *bias, float *y)
{
    ptq_gemm_params q = *p;
    q.alpha = 1.0f;
    q.beta = 0.0f;
    if (q.m == 0 || q.n == 0)
        return;
    if (q.k == 0) { /* the product is zeros */
        for (int64_t i = 0; i < q.m * q.n; i++)
            y[i] = 0.0f + bias[i % q.n];
        return;
    }
    gemm_pool(&q, a, b, bias, y);
}

/* a + a_off[i], b + b_off[i] -> y + i*m*n for i < n_batch. */
void ptq_k_gemm_batched_cpu(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y)
{
    ptq_k_blas_single_thread();
    const int isa = tile_isa();
    gemm_job job = {p, a, b, y, 0, a_off, b_off, n_batch > 0 ? rows_for(p, b + b_off[0], isa) : 1, isa, NULL};
    ptq_parallel_for(n_batch, 1, gemm_pieces, &job);
}
