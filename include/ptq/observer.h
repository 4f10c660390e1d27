/* Per-tensor observers: element counts, exact zeros, NaN/Inf, min/max and
 * an exact, mergeable histogram of |x| over a power-of-two range that grows
 * by summing groups of bins (DESIGN.md "Numerics conventions"). The same
 * values give bit-identical state whatever the batch sizes, batch order,
 * thread count or split into merged shards. Covered by tests/test_observer.c. */
#ifndef PTQ_OBSERVER_H
#define PTQ_OBSERVER_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTQ_OBSERVER_DEFAULT_BINS 4096
#define PTQ_OBSERVER_MIN_BINS 2048
#define PTQ_OBSERVER_MAX_BINS (1 << 24)

/* Histogram: n_bins = B bins over [0, 2^e). A finite nonzero value v lands
 * in bin floor(|v| * 2^(log2(B) - e)), computed exactly. The first finite
 * nonzero value sets e to the smallest exponent with max|x| < 2^e; a later
 * |v| >= 2^e raises e by the smallest k that fits it and sums each group of
 * 2^k adjacent bins into one, which equals binning every value at the new
 * range directly. Zeros (+0 and -0), NaN and +/-Inf are counted, never binned. */
typedef struct ptq_observer ptq_observer;

typedef struct ptq_observer_stats {
    int64_t count;    /* every element seen */
    int64_t n_zero;   /* exact zeros, +0 and -0 */
    int64_t n_nan;
    int64_t n_inf;    /* +Inf and -Inf */
    int64_t n_binned; /* finite nonzero: count - n_zero - n_nan - n_inf = the histogram's sum */
    float min, max;   /* over finite values, -0 ordered below +0; +Inf and -Inf while none was seen */
} ptq_observer_stats;

/* n_bins: a power of two in [PTQ_OBSERVER_MIN_BINS, PTQ_OBSERVER_MAX_BINS],
 * or 0 for PTQ_OBSERVER_DEFAULT_BINS; anything else is PTQ_ERR_INVALID_ARG. */
PTQ_API ptq_status ptq_observer_init(ptq_ctx *ctx, int64_t n_bins, ptq_observer **out);
PTQ_API void ptq_observer_free(ptq_observer *obs);

/* Observes a batch. x: [n] float32 in host memory (may be NULL when n is 0).
 * On the CPU pool (kernels/cpu/observe.c), one read of x once a range is
 * held; the first batch with values takes two (its range comes from its max),
 * and a batch reaching past the range a second read for the values beyond. */
PTQ_API ptq_status ptq_observer_update(ptq_ctx *ctx, ptq_observer *obs, const float *x, int64_t n);

/* The same state as copies calls of ptq_observer_update with x (a tensor
 * that does not depend on the sample, counted once for each sample of a
 * batch), in one read of x. copies 0 observes nothing; n * copies must stay
 * below 2^61. */
PTQ_API ptq_status ptq_observer_update_copies(ptq_ctx *ctx, ptq_observer *obs, const float *x, int64_t n,
                                              int64_t copies);

/* dst += src, exactly: the histogram with the smaller range is regrown to
 * the larger one, counts add, min/max combine. Different bin counts give
 * PTQ_ERR_INVALID_ARG naming both, and dst is left as it was. */
PTQ_API ptq_status ptq_observer_merge(ptq_ctx *ctx, ptq_observer *dst, const ptq_observer *src);

PTQ_API int64_t ptq_observer_n_bins(const ptq_observer *obs);
/* e of the range [0, 2^e): in [-148, 128] once a finite nonzero value was
 * seen (stats n_binned > 0); 0 before. */
PTQ_API int ptq_observer_exponent(const ptq_observer *obs);
/* 2^e (a double: 2^128 is beyond float); 0 while nothing is binned. */
PTQ_API double ptq_observer_range_max(const ptq_observer *obs);
/* [n_bins] counts; bin i covers [i, i+1) * 2^e / n_bins. Owned by obs (valid until ptq_observer_free);
 * updates and merges into obs change the counts in place. */
PTQ_API const int64_t *ptq_observer_hist(const ptq_observer *obs);
PTQ_API void ptq_observer_get_stats(const ptq_observer *obs, ptq_observer_stats *out);

/* Replaces obs's whole state with one saved by get_stats, exponent and hist
 * (an archive read back, or a device observer's download). hist: [n_bins]
 * of obs. Checks that it is a state an observer can reach: counts >= 0 that
 * add up, the histogram summing to n_binned, e in [-148, 128] with the
 * largest |min|/|max| inside [2^(e-1), 2^e) and its bin the last non-empty
 * one when anything is binned, and an all-zero histogram otherwise;
 * PTQ_ERR_FORMAT saying which part is off, and obs is left as it was. */
PTQ_API ptq_status ptq_observer_set_state(ptq_ctx *ctx, ptq_observer *obs, const ptq_observer_stats *st, int e,
                                          const int64_t *hist);

#ifdef __cplusplus
}
#endif
#endif
