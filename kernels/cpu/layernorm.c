/* Fast CPU LayerNormalization: rows spread over the CPU pool, 8 rows at a
 * time one a vector lane, each with the reference's operations in its
 * order, so the same bits as kernels/ref/reduce.c's ptq_k_layernorm_ref
 * for any thread count (tests/parity_layernorm.c). */
#include <math.h>

#include "core/parallel.h"
#include "kernels/kernels.h"

enum {
    LN_PARALLEL_MIN = 1 << 14, /* elements a piece normalizes, at least */
    LN_LANES = 8               /* rows ln_block takes abreast */
};

typedef struct ln_job {
    int64_t n_cols;
    const float *x, *scale, *bias;
    float eps;
    float *y, *mean, *inv_std;
} ln_job;

/* LN_LANES rows at once, one row a vector lane: each lane sums its row in column order in double, as
 * ptq_k_layernorm_ref does one row at a time (a serial chain of adds, which one row cannot overlap), so the
 * same operations and bits, LN_LANES chains abreast. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
ln_block(int64_t n_cols, const float *x, const float *scale, const float *bias, float eps, float *y, float *mean,
         float *inv_std)
{
    double sum[LN_LANES] = {0}, sq[LN_LANES] = {0}, mu[LN_LANES], inv[LN_LANES];
    for (int64_t c = 0; c < n_cols; c++)
        for (int l = 0; l < LN_LANES; l++)
            sum[l] += x[l * n_cols + c];
    for (int l = 0; l < LN_LANES; l++)
        mu[l] = n_cols ? sum[l] / (double)n_cols : 0.0;
    for (int64_t c = 0; c < n_cols; c++)
        for (int l = 0; l < LN_LANES; l++)
            sq[l] += ((double)x[l * n_cols + c] - mu[l]) * ((double)x[l * n_cols + c] - mu[l]);
    for (int l = 0; l < LN_LANES; l++) {
        const double var = n_cols ? sq[l] / (double)n_cols : 0.0;
        inv[l] = 1.0 / sqrt(var + (double)eps);
    }
    for (int l = 0; l < LN_LANES; l++) {
        const float *xr = x + l * n_cols;
        float *yr = y + l * n_cols;
        for (int64_t c = 0; c < n_cols; c++)
            yr[c] = (float)(((double)xr[c] - mu[l]) * inv[l] * (double)scale[c] + (bias ? (double)bias[c] : 0.0));
        if (mean)
            mean[l] = (float)mu[l];
        if (inv_std)
            inv_std[l] = (float)inv[l];
    }
}

static void ln_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const ln_job *j = arg;
    int64_t r = begin;
    for (; r + LN_LANES <= end; r += LN_LANES)
        ln_block(j->n_cols, j->x + r * j->n_cols, j->scale, j->bias, j->eps, j->y + r * j->n_cols,
                 j->mean ? j->mean + r : NULL, j->inv_std ? j->inv_std + r : NULL);
    const int64_t at = r * j->n_cols;
    ptq_k_layernorm_ref(end - r, j->n_cols, j->x + at, j->scale, j->bias, j->eps, j->y + at,
                        j->mean ? j->mean + r : NULL, j->inv_std ? j->inv_std + r : NULL);
}

/* ptq_k_layernorm_ref's contract. */
void ptq_k_layernorm_cpu(int64_t n_rows, int64_t n_cols, const float *x, const float *scale, const float *bias,
                         float eps, float *y, float *mean, float *inv_std)
{
    ln_job j = {n_cols, x, scale, bias, eps, y, mean, inv_std};
    const int64_t min_rows = n_cols > 0 ? LN_PARALLEL_MIN / n_cols + 1 : n_rows + 1;
    ptq_parallel_for(n_rows, ptq_par_grain(n_rows, 4, min_rows), ln_rows, &j);
}
