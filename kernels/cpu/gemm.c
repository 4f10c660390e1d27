/* Fast CPU GEMM: cblas_sgemm on row blocks of the output spread over the
 * CPU pool (core/parallel.h; OpenBLAS itself runs single-threaded, see
 * kernels/cpu/blas_threads.c); batches of GEMMs are spread over slices.
 * Mirrors kernels/ref/gemm.c; checked against it in tests/parity_gemm.c. */
#include <cblas.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    GEMM_MIN_ROW_FLOPS = 1 << 20 /* fewest flops in a row block handed to one thread */
};

/* Rows [m0, m0+mb) of y: [m, n] = alpha * op(a) @ op(b) + beta * y. */
static void gemm_rows(const ptq_gemm_params *p, const float *a, const float *b, float *y, int64_t m0, int64_t mb)
{
    const int64_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->n;
    /* row i of op(a) starts at a + i*lda, or at column i of a when transposed */
    const float *a_rows = p->trans_a ? a + m0 : a + m0 * lda;
    cblas_sgemm(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
                (blasint)mb, (blasint)p->n, (blasint)p->k, p->alpha, a_rows, (blasint)lda, b, (blasint)ldb, p->beta,
                y + m0 * p->n, (blasint)p->n);
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
            gemm_rows(p, j->a, j->b, j->y, m0, p->m - m0 < j->rows ? p->m - m0 : j->rows);
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
    gemm_rows(p, a, b, y, 0, p->m);
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
