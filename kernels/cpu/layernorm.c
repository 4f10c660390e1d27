/* Fast CPU LayerNormalization: rows spread over the CPU pool, 16 rows at a
 * time on AVX-512 (ln_block16), else 8, one a vector lane, each with the
 * reference's operations in its order, so the same bits as kernels/ref/reduce.c's ptq_k_layernorm_ref
 * for any thread count (tests/parity_layernorm.c). */
#include <math.h>

#include "core/parallel.h"
#include "kernels/cpu/transpose16.h"
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

#ifdef PTQ_TRANSPOSE16
/* 16 rows (n_cols > 0) on AVX-512: 16 columns of the 16 rows at a time transposed in registers, so each row's double
 * sums run down the columns in the reference's order, 16 rows abreast in two vectors of doubles; then ln_block's
 * normalization a row at a time. The reference's operations, so its bits. */
__attribute__((target("avx512f"))) static void ln_block16(int64_t n_cols, const float *x, const float *scale,
                                                           const float *bias, float eps, float *y, float *mean,
                                                           float *inv_std)
{
    const __m512d n = _mm512_set1_pd((double)n_cols);
    __m512d s[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()}, q[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    __m512d mu[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    __m512 v[16];
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t c0 = 0; c0 < n_cols; c0 += 16) {
            const int64_t nc = n_cols - c0 < 16 ? n_cols - c0 : 16;
            const __mmask16 m = (__mmask16)((1u << nc) - 1u);
            for (int r = 0; r < 16; r++)
                v[r] = _mm512_maskz_loadu_ps(m, x + r * n_cols + c0);
            transpose16(v);
            for (int64_t c = 0; c < nc; c++) {
                const __m512d vd = _mm512_castps_pd(v[c]); /* rows 0-7, then 8-15, as doubles */
                const __m512d xv[2] = {_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(vd, 0))),
                                       _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(vd, 1)))};
                for (int h = 0; h < 2; h++) {
                    if (pass == 0)
                        s[h] = _mm512_add_pd(s[h], xv[h]);
                    else {
                        const __m512d d = _mm512_sub_pd(xv[h], mu[h]);
                        q[h] = _mm512_add_pd(q[h], _mm512_mul_pd(d, d));
                    }
                }
            }
        }
        if (pass == 0)
            for (int h = 0; h < 2; h++)
                mu[h] = _mm512_div_pd(s[h], n);
    }
    double mus[16], invs[16];
    for (int h = 0; h < 2; h++) {
        const __m512d var = _mm512_div_pd(q[h], n);
        _mm512_storeu_pd(mus + 8 * h, mu[h]);
        _mm512_storeu_pd(invs + 8 * h,
                         _mm512_div_pd(_mm512_set1_pd(1.0), _mm512_sqrt_pd(_mm512_add_pd(var, _mm512_set1_pd(eps)))));
    }
    for (int l = 0; l < 16; l++) {
        const float *xr = x + l * n_cols;
        float *yr = y + l * n_cols;
        const double ml = mus[l], il = invs[l];
        for (int64_t c = 0; c < n_cols; c++)
            yr[c] = (float)(((double)xr[c] - ml) * il * (double)scale[c] + (bias ? (double)bias[c] : 0.0));
        if (mean)
            mean[l] = (float)ml;
        if (inv_std)
            inv_std[l] = (float)il;
    }
}
#endif

static void ln_rows(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const ln_job *j = arg;
    int64_t r = begin;
#ifdef PTQ_TRANSPOSE16
    if (j->n_cols > 0 && ptq_k_conv_cpu_isa() >= 2)
        for (; r + 16 <= end; r += 16)
            ln_block16(j->n_cols, j->x + r * j->n_cols, j->scale, j->bias, j->eps, j->y + r * j->n_cols,
                       j->mean ? j->mean + r : NULL, j->inv_std ? j->inv_std + r : NULL);
#endif
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
