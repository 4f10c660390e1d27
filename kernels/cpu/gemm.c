/* Fast CPU GEMM: cblas_sgemm, threaded by OpenBLAS; batches of small GEMMs
 * are threaded over slices instead. Mirrors kernels/ref/gemm.c; checked
 * against it in tests/parity_gemm.c. */
#include <cblas.h>
#include <omp.h>

#include "kernels/kernels.h"

enum {
    GEMM_SMALL_FLOPS = 1 << 22, /* below this a slice is too small for OpenBLAS to thread well */
    GEMM_SLICES_PER_THREAD = 2  /* slices a thread needs before we thread over slices */
};

/* a: [m, k] ([k, m] when trans_a); b: [k, n] ([n, k] when trans_b);
 * y: [m, n], read only when beta != 0. */
void ptq_k_gemm_cpu(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    if (p->m == 0 || p->n == 0)
        return;
    if (p->k == 0) { /* sgemm rejects a zero leading dimension; the product is empty */
        for (int64_t i = 0; i < p->m * p->n; i++)
            y[i] = p->beta != 0.0f ? p->beta * y[i] : 0.0f;
        return;
    }
    const int64_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->n;
    cblas_sgemm(CblasRowMajor, p->trans_a ? CblasTrans : CblasNoTrans, p->trans_b ? CblasTrans : CblasNoTrans,
                (blasint)p->m, (blasint)p->n, (blasint)p->k, p->alpha, a, (blasint)lda, b, (blasint)ldb, p->beta, y,
                (blasint)p->n);
}

/* a + a_off[i], b + b_off[i] -> y + i*m*n for i < n_batch. */
void ptq_k_gemm_batched_cpu(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y)
{
    const int n_threads = omp_get_max_threads();
    const int over_slices = n_threads > 1 && n_batch >= (int64_t)n_threads * GEMM_SLICES_PER_THREAD &&
                            2 * p->m * p->n * p->k < GEMM_SMALL_FLOPS;
    /* inside this loop each sgemm runs on its calling thread: OpenBLAS's OpenMP
     * build does not nest (changing its thread count per call instead costs
     * milliseconds: it re-sizes per-thread buffers) */
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads) if (over_slices)
    for (int64_t i = 0; i < n_batch; i++)
        ptq_k_gemm_cpu(p, a + a_off[i], b + b_off[i], y + i * p->m * p->n);
}
