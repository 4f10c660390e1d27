/* Entropy (KL) calibration: ModelOpt's _compute_amax_entropy (REFERENCE.md)
 * reproduced operation for operation in double, including numpy's summation
 * order and scipy's rel_entr, so near-ties resolve as there; plus its FP8
 * variant (ptq/calibrator.h). Covered by tests/test_calibrators.c and the
 * numpy oracle tests/calibrators_test.py. */
#include <math.h>
#include <stdlib.h>

#include "calib/calibrator_internal.h"
#include "kernels/kernels.h"

#define NP_BUFSIZE 8192 /* numpy's default ufunc buffer: np.sum adds blocks of this many in turn */
#define NP_PW_BLOCK 128 /* numpy's pairwise-summation leaf size */

/* numpy's pairwise_sum for doubles: 8 accumulators up to 128 elements,
 * halving (at a multiple of 8) above. */
static double pairwise(const double *a, int64_t n)
{
    if (n < 8) {
        double res = 0.;
        for (int64_t i = 0; i < n; i++)
            res += a[i];
        return res;
    }
    if (n <= NP_PW_BLOCK) {
        double r[8];
        for (int k = 0; k < 8; k++)
            r[k] = a[k];
        int64_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++)
                r[k] += a[i + k];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

double ptq_calib_np_sum(const double *x, int64_t n)
{
    double res = 0.;
    for (int64_t i = 0; i < n; i += NP_BUFSIZE)
        res += pairwise(x + i, n - i < NP_BUFSIZE ? n - i : NP_BUFSIZE);
    return res;
}

/* scipy.special.rel_entr */
static double rel_entr(double x, double y)
{
    if (isnan(x) || isnan(y))
        return NAN;
    if (x > 0 && y > 0)
        return x * log(x / y);
    if (x == 0 && y >= 0)
        return 0;
    return INFINITY;
}

/* Level of bin j (of the first i) for candidate i. INT8: ModelOpt's
 * digitize(range(i), linspace(0, i, 129)) - 1, which is floor(128 j / i)
 * because the edges k * (i / 128) are exact. FP8: the code of the bin
 * centre scaled so that i maps to the format's max. */
static int level_of(ptq_qformat f, int64_t j, int64_t i)
{
    switch (f) {
    case PTQ_QFORMAT_FP8_E4M3:
        return ptq_k_fp8_e4m3_from_double_ref(((double)j + 0.5) * ptq_qformat_max(f) / (double)i);
    case PTQ_QFORMAT_FP8_E5M2:
        return ptq_k_fp8_e5m2_from_double_ref(((double)j + 0.5) * ptq_qformat_max(f) / (double)i);
    case PTQ_QFORMAT_INT8:
    default:
        return (int)(j * PTQ_CALIB_KL_START / i);
    }
}

#define N_LEVELS 128 /* INT8 levels 0..127; FP8 codes 0..0x7E */

ptq_status ptq_calib_kl_choose(ptq_ctx *ctx, const int64_t *hist, int64_t n, ptq_qformat f, int64_t *out_i)
{
    *out_i = n;
    if (n < PTQ_CALIB_KL_START)
        return PTQ_OK;
    ptq_status st = PTQ_OK;
    const int64_t n_cand = n - PTQ_CALIB_KL_START + 1;
    int64_t *bins = malloc((size_t)n * sizeof *bins);
    int64_t *outliers = malloc((size_t)(n + 1) * sizeof *outliers); /* [i]: sum of bins[i:] */
    int *level = malloc((size_t)n * sizeof *level);
    double *q = malloc((size_t)n * sizeof *q);
    double *terms = malloc((size_t)n * sizeof *terms);
    double *div = malloc((size_t)n_cand * sizeof *div);
    if (!bins || !outliers || !level || !q || !terms || !div) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "entropy calibration: no memory for %lld bins", (long long)n);
        goto done;
    }
    for (int64_t j = 0; j < n; j++)
        bins[j] = hist[j];
    bins[0] = bins[1]; /* hides the spike of (near-)zeros, as ModelOpt does */
    outliers[n] = 0;
    for (int64_t j = n - 1; j >= 0; j--)
        outliers[j] = outliers[j + 1] + bins[j];
    const int64_t total = outliers[0];
    if (total == 0)
        goto done;
    for (int64_t i = PTQ_CALIB_KL_START; i <= n; i++) {
        int64_t level_sum[N_LEVELS] = {0}, level_nonzero[N_LEVELS] = {0};
        double level_mean[N_LEVELS];
        for (int64_t j = 0; j < i; j++) {
            if (!bins[j])
                continue;
            level[j] = level_of(f, j, i);
            level_sum[level[j]] += bins[j];
            level_nonzero[level[j]]++;
        }
        for (int k = 0; k < N_LEVELS; k++)
            level_mean[k] = level_nonzero[k] ? (double)level_sum[k] / (double)level_nonzero[k] : 0.0;
        /* Q: each level's count spread over its non-zero bins; empty bins and outliers stay out */
        for (int64_t j = 0; j < i; j++)
            q[j] = bins[j] ? level_mean[level[j]] : 0.0;
        const double q_total = ptq_calib_np_sum(q, i);
        if (q_total == 0) { /* no count below i: P > 0 where Q = 0, infinity (REFERENCE.md), not ModelOpt's 0/0 NaN */
            div[i - PTQ_CALIB_KL_START] = INFINITY;
            continue;
        }
        /* P: the first i bins with the outliers folded into the last; scipy's entropy normalises both */
        for (int64_t j = 0; j < i; j++) {
            const int64_t p = bins[j] + (j == i - 1 ? outliers[i] : 0);
            terms[j] = rel_entr((double)p / (double)total, q[j] / q_total);
        }
        div[i - PTQ_CALIB_KL_START] = ptq_calib_np_sum(terms, i);
    }
    /* numpy's argmin over the divergences reversed: the first minimum */
    int64_t best = n_cand - 1;
    double best_div = div[best];
    for (int64_t c = n_cand - 2; c >= 0; c--) {
        if (!(div[c] >= best_div)) {
            best_div = div[c];
            best = c;
        }
    }
    *out_i = best + PTQ_CALIB_KL_START;
done:
    free(bins);
    free(outliers);
    free(level);
    free(q);
    free(terms);
    free(div);
    return st;
}
