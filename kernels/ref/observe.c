/* Reference observer passes: min/max and special-value counts, and the |x|
 * histogram, as plain loops; the spec for kernels/cpu/observe.c and the
 * CUDA kernels. Covered by tests/parity_observe.c and tests/test_observer.c. */
#include <math.h>

#include "kernels/kernels.h"

/* a orders before b; -0 before +0, so min/max keep the same bits whichever
 * zero came first, and the combination is associative and commutative */
static int precedes(float a, float b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

void ptq_observe_stats_clear(ptq_observe_stats *s)
{
    s->count = s->n_zero = s->n_nan = s->n_inf = 0;
    s->min = INFINITY;
    s->max = -INFINITY;
}

void ptq_observe_stats_combine(ptq_observe_stats *dst, const ptq_observe_stats *src)
{
    dst->count += src->count;
    dst->n_zero += src->n_zero;
    dst->n_nan += src->n_nan;
    dst->n_inf += src->n_inf;
    if (precedes(src->min, dst->min))
        dst->min = src->min;
    if (precedes(dst->max, src->max))
        dst->max = src->max;
}

void ptq_k_observe_stats_ref(const float *x, int64_t n, ptq_observe_stats *s)
{
    ptq_observe_stats_clear(s);
    s->count = n;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (isnan(v)) {
            s->n_nan++;
        } else if (isinf(v)) {
            s->n_inf++;
        } else {
            if (v == 0.0f)
                s->n_zero++;
            if (precedes(v, s->min))
                s->min = v;
            if (precedes(s->max, v))
                s->max = v;
        }
    }
}

/* Exact: |v| has at most 24 significant bits and scale is 2^k with k in
 * [-117, 172], so |v| * scale lies in [2^-266, 2^24), inside double's
 * normal range: the product is |v| * 2^k exactly and the cast truncates it,
 * giving floor(|v| * 2^k). */
void ptq_k_observe_hist_ref(const float *x, int64_t n, double scale, int64_t n_bins, int64_t *hist)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (isfinite(v) && v != 0.0f)
            hist[(int64_t)(fabs((double)v) * scale)]++;
    }
}

void ptq_k_observe_hist_from_ref(const float *x, int64_t n, double scale, float lo, int64_t n_bins, int64_t *hist)
{
    (void)n_bins;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (isfinite(v) && fabsf(v) >= lo)
            hist[(int64_t)(fabs((double)v) * scale)]++;
    }
}

void ptq_k_observe_fused_ref(const float *x, int64_t n, double scale, float limit, int64_t n_bins, int64_t *hist,
                             ptq_observe_stats *s, int64_t *n_over)
{
    (void)n_bins;
    ptq_k_observe_stats_ref(x, n, s);
    *n_over = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        if (!isfinite(v) || v == 0.0f)
            continue;
        if (fabsf(v) < limit)
            hist[(int64_t)(fabs((double)v) * scale)]++;
        else
            (*n_over)++;
    }
}
