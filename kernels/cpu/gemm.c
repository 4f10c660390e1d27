/* Fast CPU GEMM: cblas_sgemm on row blocks of the output spread over the
 * CPU pool (core/parallel.h; OpenBLAS itself runs single-threaded, see
 * kernels/cpu/blas_threads.c); batches of GEMMs are spread over slices.
 * OpenBLAS rounds a row differently depending on the call's row count and,
 * in some of its kernels (Haswell/Zen: rows 12-15 of a 16-row call), on
 * the row's place in the call. So every sgemm call of a shape covers the
 * same number of rows (the last block padded), a count at which a probe
 * found every row rounded alike (row_block): each row's result is then
 * independent of m, the batch size, the thread count and the row's
 * position (calibration archives must not depend on how the data was
 * batched; tests/test_calib_set.c, tests/parity_gemm.c's row test).
 * Mirrors kernels/ref/gemm.c; checked against it in tests/parity_gemm.c. */
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
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

/* row_block of p's shape, or 1 for an empty product (no sgemm call to probe). */
static int rows_for(const ptq_gemm_params *p, const float *b)
{
    return p->m > 0 && p->n > 0 && p->k > 0 ? row_block(p, b) : 1;
}

/* One whole GEMM in sgemm calls of rb rows. */
static void gemm_slice(const ptq_gemm_params *p, const float *a, const float *b, float *y, int rb)
{
    if (p->m == 0 || p->n == 0)
        return;
    if (p->k == 0) { /* sgemm rejects a zero leading dimension; the product is empty */
        for (int64_t i = 0; i < p->m * p->n; i++)
            y[i] = p->beta != 0.0f ? p->beta * y[i] : 0.0f;
        return;
    }
    gemm_blocks(p, a, b, y, 0, p->m, rb);
}

typedef struct gemm_job {
    const ptq_gemm_params *p;
    const float *a, *b;
    float *y;
    int64_t rows; /* rows per piece (row split) */
    const int64_t *a_off, *b_off; /* batched: per-slice offsets, else NULL */
    int rb;                       /* rows per sgemm call, row_block's for the shape (found once per GEMM) */
} gemm_job;

static void gemm_pieces(void *arg, int64_t begin, int64_t end, int worker)
{
    const gemm_job *j = arg;
    const ptq_gemm_params *p = j->p;
    for (int64_t i = begin; i < end; i++) {
        if (j->a_off) {
            gemm_slice(p, j->a + j->a_off[i], j->b + j->b_off[i], j->y + i * p->m * p->n, j->rb);
        } else {
            int64_t m0 = i * j->rows;
            gemm_blocks(p, j->a, j->b, j->y, m0, p->m - m0 < j->rows ? p->m - m0 : j->rows, j->rb);
        }
    }
}

/* One GEMM on the calling thread (no pool). */
void ptq_k_gemm_rows_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    ptq_k_blas_single_thread();
    gemm_slice(p, a, b, y, rows_for(p, b));
}

/* a: [m, k] ([k, m] when trans_a); b: [k, n] ([n, k] when trans_b);
 * y: [m, n], read only when beta != 0. */
void ptq_k_gemm_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    if (p->m == 0 || p->n == 0 || p->k == 0) {
        ptq_k_gemm_rows_cpu(p, a, b, y);
        return;
    }
    ptq_k_blas_single_thread();
    /* row blocks big enough to keep sgemm efficient, a few per worker */
    int64_t row_flops = 2 * p->n * p->k;
    int64_t min_rows = row_flops > 0 ? (GEMM_MIN_ROW_FLOPS + row_flops - 1) / row_flops : p->m;
    int64_t rows = ptq_par_grain(p->m, 2, min_rows < 1 ? 1 : min_rows);
    rows = (rows + GEMM_ROW_BLOCK - 1) / GEMM_ROW_BLOCK * GEMM_ROW_BLOCK; /* pieces of whole blocks */
    gemm_job job = {p, a, b, y, rows, NULL, NULL, row_block(p, b)};
    ptq_parallel_for((p->m + rows - 1) / rows, 1, gemm_pieces, &job);
}

/* a + a_off[i], b + b_off[i] -> y + i*m*n for i < n_batch. */
void ptq_k_gemm_batched_cpu(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y)
{
    ptq_k_blas_single_thread();
    gemm_job job = {p, a, b, y, 0, a_off, b_off, n_batch > 0 ? rows_for(p, b + b_off[0]) : 1};
    ptq_parallel_for(n_batch, 1, gemm_pieces, &job);
}
