/* Per-tensor observer state (include/ptq/observer.h): counts and min/max
 * through ptq_observe_stats, and the |x| histogram over [0, 2^e) that grows
 * by summing groups of 2^k bins. Batches run through kernels/cpu/observe.c.
 * Covered by tests/test_observer.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ptq/observer.h"

struct ptq_observer {
    int64_t n_bins;
    int log2_bins;
    int e;                 /* range [0, 2^e); set by the first finite nonzero value */
    ptq_observe_stats st;
    int64_t *hist;         /* [n_bins], in the same allocation */
};

static int64_t n_binned(const ptq_observe_stats *s)
{
    return s->count - s->n_zero - s->n_nan - s->n_inf;
}

ptq_status ptq_observer_init(ptq_ctx *ctx, int64_t n_bins, ptq_observer **out)
{
    *out = NULL;
    if (n_bins == 0)
        n_bins = PTQ_OBSERVER_DEFAULT_BINS;
    if (n_bins < PTQ_OBSERVER_MIN_BINS || n_bins > PTQ_OBSERVER_MAX_BINS || (n_bins & (n_bins - 1)) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "observer bin count must be a power of two in [%d, %d], got %lld",
                        PTQ_OBSERVER_MIN_BINS, PTQ_OBSERVER_MAX_BINS, (long long)n_bins);
    ptq_observer *obs = calloc(1, sizeof *obs + (size_t)n_bins * sizeof *obs->hist);
    if (!obs)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for an observer of %lld bins", (long long)n_bins);
    obs->n_bins = n_bins;
    while (((int64_t)1 << obs->log2_bins) < n_bins)
        obs->log2_bins++;
    obs->hist = (int64_t *)(obs + 1);
    ptq_observe_stats_clear(&obs->st);
    *out = obs;
    return PTQ_OK;
}

void ptq_observer_free(ptq_observer *obs)
{
    free(obs);
}

/* The smallest e with amax < 2^e: frexpf gives amax = m * 2^x, m in [0.5, 1). */
static int range_exponent(float amax)
{
    int x;
    frexpf(amax, &x);
    return x;
}

/* Bin j of a histogram k exponents wider holds bins [j*2^k, (j+1)*2^k) of
 * the old one: floor(floor(y) / 2^k) = floor(y / 2^k), so this equals
 * binning every value at the wider range. From k >= log2_bins on all bins
 * fall into bin 0. */
static void regrow(ptq_observer *obs, int k)
{
    const int64_t group = k >= obs->log2_bins ? obs->n_bins : (int64_t)1 << k;
    const int64_t n_new = obs->n_bins / group;
    for (int64_t j = 0; j < n_new; j++) { /* reads bins >= j, so in place */
        int64_t sum = 0;
        for (int64_t i = j * group; i < (j + 1) * group; i++)
            sum += obs->hist[i];
        obs->hist[j] = sum;
    }
    memset(obs->hist + n_new, 0, (size_t)(obs->n_bins - n_new) * sizeof *obs->hist);
    obs->e += k;
}

/* Makes the range cover values below 2^e_needed (e only grows). */
static void cover(ptq_observer *obs, int e_needed)
{
    if (n_binned(&obs->st) == 0)
        obs->e = e_needed; /* the histogram is empty: nothing to regrow */
    else if (e_needed > obs->e)
        regrow(obs, e_needed - obs->e);
}

ptq_status ptq_observer_update(ptq_ctx *ctx, ptq_observer *obs, const float *x, int64_t n)
{
    if (n < 0 || (n > 0 && !x))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "observer update: bad batch (%lld values at %p)", (long long)n,
                        (const void *)x);
    ptq_observe_stats b;
    if (n_binned(&obs->st) == 0) { /* no range yet: learn it, then bin */
        ptq_k_observe_stats_cpu(x, n, &b);
        if (n_binned(&b) > 0) {
            cover(obs, range_exponent(fmaxf(-b.min, b.max)));
            ptq_k_observe_hist_cpu(x, n, ldexp(1.0, obs->log2_bins - obs->e), obs->n_bins, obs->hist);
        }
    } else { /* one read binning at the range held; a second only for values beyond it */
        int64_t n_over = 0;
        const float limit = ldexpf(1.0f, obs->e);
        ptq_k_observe_fused_cpu(x, n, ldexp(1.0, obs->log2_bins - obs->e), limit, obs->n_bins, obs->hist, &b,
                                &n_over);
        if (n_over > 0) {
            cover(obs, range_exponent(fmaxf(-b.min, b.max)));
            ptq_k_observe_hist_from_cpu(x, n, ldexp(1.0, obs->log2_bins - obs->e), limit, obs->n_bins, obs->hist);
        }
    }
    ptq_observe_stats_combine(&obs->st, &b);
    return PTQ_OK;
}

ptq_status ptq_observer_update_copies(ptq_ctx *ctx, ptq_observer *obs, const float *x, int64_t n, int64_t copies)
{
    if (copies < 0 || (n > 0 && copies > INT64_MAX / 4 / n))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "observer update: %lld copies of %lld values is out of range",
                        (long long)copies, (long long)n);
    if (copies <= 1)
        return copies ? ptq_observer_update(ctx, obs, x, n) : PTQ_OK;
    /* one copy into an empty observer, its counts times copies, merged: each copy after the first bins at the
     * range the first one set, and a merge rebins exactly (ptq_observer_merge) */
    ptq_observer *one = NULL;
    PTQ_TRY_RET(ptq_observer_init(ctx, obs->n_bins, &one));
    ptq_status st = ptq_observer_update(ctx, one, x, n);
    if (st == PTQ_OK) {
        for (int64_t i = 0; i < one->n_bins; i++)
            one->hist[i] *= copies;
        one->st.count *= copies;
        one->st.n_zero *= copies;
        one->st.n_nan *= copies;
        one->st.n_inf *= copies;
        st = ptq_observer_merge(ctx, obs, one);
    }
    ptq_observer_free(one);
    return st;
}

ptq_status ptq_observer_merge(ptq_ctx *ctx, ptq_observer *dst, const ptq_observer *src)
{
    if (dst->n_bins != src->n_bins)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "cannot merge observers with different bin counts: destination %lld, source %lld",
                        (long long)dst->n_bins, (long long)src->n_bins);
    if (n_binned(&src->st) > 0) {
        cover(dst, src->e);
        /* src's bins at dst's range: bin i >> k, as in regrow() */
        const int k = dst->e - src->e;
        for (int64_t i = 0; i < src->n_bins; i++)
            dst->hist[k >= dst->log2_bins ? 0 : i >> k] += src->hist[i];
    }
    ptq_observe_stats_combine(&dst->st, &src->st);
    return PTQ_OK;
}

int64_t ptq_observer_n_bins(const ptq_observer *obs)
{
    return obs->n_bins;
}

int ptq_observer_exponent(const ptq_observer *obs)
{
    return n_binned(&obs->st) > 0 ? obs->e : 0;
}

double ptq_observer_range_max(const ptq_observer *obs)
{
    return n_binned(&obs->st) > 0 ? ldexp(1.0, obs->e) : 0.0;
}

const int64_t *ptq_observer_hist(const ptq_observer *obs)
{
    return obs->hist;
}

void ptq_observer_get_stats(const ptq_observer *obs, ptq_observer_stats *out)
{
    out->count = obs->st.count;
    out->n_zero = obs->st.n_zero;
    out->n_nan = obs->st.n_nan;
    out->n_inf = obs->st.n_inf;
    out->n_binned = n_binned(&obs->st);
    out->min = obs->st.min;
    out->max = obs->st.max;
}

ptq_status ptq_observer_set_state(ptq_ctx *ctx, ptq_observer *obs, const ptq_observer_stats *st, int e,
                                  const int64_t *hist)
{
    if (st->count < 0 || st->n_zero < 0 || st->n_nan < 0 || st->n_inf < 0 || st->n_binned < 0 ||
        st->n_zero > st->count || st->n_nan > st->count - st->n_zero ||
        st->n_inf > st->count - st->n_zero - st->n_nan ||
        st->n_binned != st->count - st->n_zero - st->n_nan - st->n_inf)
        return ptq_fail(ctx, PTQ_ERR_FORMAT,
                        "observer state: counts do not add up (count %lld, zeros %lld, NaN %lld, Inf %lld, binned %lld)",
                        (long long)st->count, (long long)st->n_zero, (long long)st->n_nan, (long long)st->n_inf,
                        (long long)st->n_binned);
    int64_t sum = 0;
    for (int64_t i = 0; i < obs->n_bins; i++) {
        if (hist[i] < 0 || hist[i] > st->n_binned - sum)
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: histogram bin %lld holds %lld, beyond the %lld binned values",
                            (long long)i, (long long)hist[i], (long long)st->n_binned);
        sum += hist[i];
    }
    if (sum != st->n_binned)
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: the histogram sums to %lld, not the %lld binned values",
                        (long long)sum, (long long)st->n_binned);
    const int finite = st->count - st->n_nan - st->n_inf > 0;
    if (finite ? !(isfinite(st->min) && isfinite(st->max) && st->min <= st->max)
               : !(st->min == INFINITY && st->max == -INFINITY))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: min %g and max %g do not fit %lld finite values",
                        (double)st->min, (double)st->max, (long long)(st->count - st->n_nan - st->n_inf));
    const float amax = fmaxf(-st->min, st->max);
    if (st->n_binned > 0 && !(amax > 0.0f && e == range_exponent(amax)))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: range 2^%d does not match max|x| %g", e, (double)amax);
    if (st->n_binned > 0) { /* max|x| is binned, nothing above it: its bin (exact, as in the ref) is the last */
        const int64_t top = (int64_t)((double)amax * ldexp(1.0, obs->log2_bins - e));
        for (int64_t i = top + 1; i < obs->n_bins; i++)
            if (hist[i])
                return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: histogram bin %lld holds %lld, above max|x| %g",
                                (long long)i, (long long)hist[i], (double)amax);
        if (!hist[top])
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "observer state: the bin of max|x| %g (%lld) is empty", (double)amax,
                            (long long)top);
    }
    obs->e = st->n_binned > 0 ? e : 0;
    obs->st.count = st->count;
    obs->st.n_zero = st->n_zero;
    obs->st.n_nan = st->n_nan;
    obs->st.n_inf = st->n_inf;
    obs->st.min = st->min;
    obs->st.max = st->max;
    memcpy(obs->hist, hist, (size_t)obs->n_bins * sizeof *hist);
    return PTQ_OK;
}
