/* Fast CPU GEMM: cblas_sgemm on row blocks of the output spread over the
 * CPU pool (core/parallel.h; OpenBLAS itself runs single-threaded, see
 * kernels/cpu/blas_threads.c); batches of GEMMs are spread over slices.
 * Every sgemm call covers exactly GEMM_ROW_BLOCK rows (the last block
 * padded), because OpenBLAS rounds a row differently depending on the
 * call's row count: so each row's result is independent of m, the batch
 * size, the thread count and the row's position (calibration archives must
 * not depend on how the data was batched; tests/test_calib_set.c).
 * Mirrors kernels/ref/gemm.c; checked against it in tests/parity_gemm.c. */
#include <cblas.h>
#include <stdlib.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    GEMM_MIN_ROW_FLOPS = 1 << 20, /* fewest flops in a row block handed to one thread */
    GEMM_ROW_BLOCK = 16           /* rows per sgemm call (see the top of the file) */
};

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

/* Rows [m0, m0+mb), mb <= GEMM_ROW_BLOCK, through one sgemm call of exactly
 * GEMM_ROW_BLOCK untransposed rows: a full block of an untransposed a is
 * used in place; otherwise its rows are copied into a zero-padded block. */
static void gemm_block(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb)
{
    if (mb == GEMM_ROW_BLOCK && !p->trans_a) {
        gemm_rows(p, a, b, y, m0, mb);
        return;
    }
    const int64_t k = p->k, n = p->n;
    float *ap = calloc((size_t)GEMM_ROW_BLOCK * (size_t)(k + n), sizeof *ap);
    if (!ap) { /* a void kernel cannot report NOMEM: the same rows, rounded as sgemm likes */
        gemm_rows(p, a, b, y, m0, mb);
        return;
    }
    float *yp = ap + GEMM_ROW_BLOCK * k;
    for (int64_t i = 0; i < mb; i++) {
        for (int64_t kk = 0; kk < k; kk++)
            ap[i * k + kk] = p->trans_a ? a[kk * p->m + m0 + i] : a[(m0 + i) * k + kk];
        if (p->beta != 0.0f)
            for (int64_t j = 0; j < n; j++)
                yp[i * n + j] = y[(m0 + i) * n + j];
    }
    const ptq_gemm_params q = {GEMM_ROW_BLOCK, n, k, 0, p->trans_b, p->alpha, p->beta};
    gemm_rows(&q, ap, b, yp, 0, GEMM_ROW_BLOCK);
    for (int64_t i = 0; i < mb; i++)
        for (int64_t j = 0; j < n; j++)
            y[(m0 + i) * n + j] = yp[i * n + j];
    free(ap);
}

/* Rows [m0, m0+mb) one GEMM_ROW_BLOCK at a time. */
static void gemm_blocks(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb)
{
    for (int64_t r = m0; r < m0 + mb; r += GEMM_ROW_BLOCK)
        gemm_block(p, a, b, y, r, m0 + mb - r < GEMM_ROW_BLOCK ? m0 + mb - r : GEMM_ROW_BLOCK);
}

typedef struct gemm_job {
    const ptq_gemm_params *p;
    const float *a, *b;
    float *y;
    int64_t rows; /* rows per piece (row split) */
    const int64_t *a_off, *b_off; /* batched: per-slice offsets, else NULL */
} gemm_job;

static void gemm_pieces(void *arg, int64_t begin, int64_t end, int worker)
{
    const gemm_job *j = arg;
    const ptq_gemm_params *p = j->p;
    for (int64_t i = begin; i < end; i++) {
        if (j->a_off) {
            ptq_k_gemm_rows_cpu(p, j->a + j->a_off[i], j->b + j->b_off[i], j->y + i * p->m * p->n);
        } else {
            int64_t m0 = i * j->rows;
            gemm_blocks(p, j->a, j->b, j->y, m0, p->m - m0 < j->rows ? p->m - m0 : j->rows);
        }
    }
}

/* One GEMM on the calling thread (no pool). */
void ptq_k_gemm_rows_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    if (p->m == 0 || p->n == 0)
        return;
    if (p->k == 0) { /* sgemm rejects a zero leading dimension; the product is empty */
        for (int64_t i = 0; i < p->m * p->n; i++)
            y[i] = p->beta != 0.0f ? p->beta * y[i] : 0.0f;
        return;
    }
    ptq_k_blas_single_thread();
    gemm_blocks(p, a, b, y, 0, p->m);
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
    gemm_job job = {p, a, b, y, rows, NULL, NULL};
    ptq_parallel_for((p->m + rows - 1) / rows, 1, gemm_pieces, &job);
}

/* a + a_off[i], b + b_off[i] -> y + i*m*n for i < n_batch. */
void ptq_k_gemm_batched_cpu(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y)
{
    ptq_k_blas_single_thread();
    gemm_job job = {p, a, b, y, 0, a_off, b_off};
    ptq_parallel_for(n_batch, 1, gemm_pieces, &job);
}
