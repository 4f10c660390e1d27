/* Reference GEMM (ONNX Gemm / MatMul core): y = alpha*op(a)@op(b) + beta*y
 * with plain loops, each dot product summed in double. The spec
 * kernels/cpu/gemm.c is checked against in tests/parity_gemm.c. */
#include "kernels/kernels.h"

/* a: [m, k] ([k, m] when trans_a); b: [k, n] ([n, k] when trans_b);
 * y: [m, n], read only when beta != 0. */
void ptq_k_gemm_ref(const ptq_gemm_params *p, const float *a, const float *b, float *y)
{
    for (int64_t i = 0; i < p->m; i++)
        for (int64_t j = 0; j < p->n; j++) {
            double acc = 0.0;
            for (int64_t l = 0; l < p->k; l++) {
                const float av = p->trans_a ? a[l * p->m + i] : a[i * p->k + l];
                const float bv = p->trans_b ? b[j * p->k + l] : b[l * p->n + j];
                acc += (double)av * (double)bv;
            }
            acc *= p->alpha;
            if (p->beta != 0.0f)
                acc += (double)p->beta * (double)y[i * p->n + j];
            y[i * p->n + j] = (float)acc;
        }
}

/* a + a_off[i], b + b_off[i] -> y + i*m*n for i < n_batch. */
void ptq_k_gemm_batched_ref(const ptq_gemm_params *p, int64_t n_batch, const int64_t *a_off, const int64_t *b_off,
                            const float *a, const float *b, float *y)
{
    for (int64_t i = 0; i < n_batch; i++)
        ptq_k_gemm_ref(p, a + a_off[i], b + b_off[i], y + i * p->m * p->n);
}
