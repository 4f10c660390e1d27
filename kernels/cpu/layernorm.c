/* Fast CPU LayerNormalization: rows spread over the CPU pool, each piece
 * the reference's loops on its rows, so the same bits as
 * kernels/ref/reduce.c's ptq_k_layernorm_ref for any thread count
 * (tests/parity_layernorm.c). */
#include "core/parallel.h"
#include "kernels/kernels.h"

enum { LN_PARALLEL_MIN = 1 << 14 }; /* elements a piece normalizes, at least */

typedef struct ln_job {
    int64_t n_cols;
    const float *x, *scale, *bias;
    float eps;
    float *y, *mean, *inv_std;
} ln_job;

static void ln_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const ln_job *j = arg;
    const int64_t at = begin * j->n_cols;
    ptq_k_layernorm_ref(end - begin, j->n_cols, j->x + at, j->scale, j->bias, j->eps, j->y + at,
                        j->mean ? j->mean + begin : NULL, j->inv_std ? j->inv_std + begin : NULL);
}

/* ptq_k_layernorm_ref's contract. */
void ptq_k_layernorm_cpu(int64_t n_rows, int64_t n_cols, const float *x, const float *scale, const float *bias,
                         float eps, float *y, float *mean, float *inv_std)
{
    ln_job j = {n_cols, x, scale, bias, eps, y, mean, inv_std};
    const int64_t min_rows = n_cols > 0 ? LN_PARALLEL_MIN / n_cols + 1 : n_rows + 1;
    ptq_parallel_for(n_rows, ptq_par_grain(n_rows, 4, min_rows), ln_rows, &j);
}
