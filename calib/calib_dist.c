/* A calibration set reduced over the ranks of a job (include/ptq/calib.h,
 * include/ptq/dist.h), exactly as ptq_calib_set_merge would add the
 * ranks' sets: per tensor the largest range exponent by MAX, each rank's
 * histogram regrown to it (summing groups of bins, exact), then counts and
 * bins by integer SUM and min/max by MIN/MAX over an order-preserving
 * integer image of the floats (-0 below +0, as the observers order them).
 * Covered by tests/mpi_test.py (archives byte-identical to one process). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib_internal.h"
#include "ptq/dist.h"

/* Counts per tensor in the SUM buffer, before its bins. */
enum { N_COUNTS = 4 };

/* A float as an integer of the same order: -0 -> -1, +0 -> 0, +-inf at the ends. */
static int64_t float_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u >> 31) ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
}

static float key_float(int64_t k)
{
    uint32_t u = k < 0 ? (uint32_t)(-(k + 1)) | 0x80000000u : (uint32_t)k;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A histogram over [0, 2^e) at the wider range 2^e_to, into out[n_bins]:
 * bin i goes to i >> k, all to bin 0 from k >= log2(n_bins) on. */
static void regrow(const int64_t *hist, int64_t n_bins, int e, int e_to, int64_t *out)
{
    const int k = e_to - e;
    int log2_bins = 0;
    while (((int64_t)1 << log2_bins) < n_bins)
        log2_bins++;
    memset(out, 0, (size_t)n_bins * sizeof *out);
    for (int64_t i = 0; i < n_bins; i++)
        out[k >= log2_bins ? 0 : i >> k] += hist[i];
}

/* The SUM buffer holds the rows of this many words at most (64 MiB), or one row. */
#define SUM_WORDS_MAX ((int64_t)1 << 23)

ptq_status ptq_calib_set_allreduce(ptq_ctx *ctx, ptq_calib_set *s)
{
    if (ptq_dist_size() == 1)
        return PTQ_OK;
    ptq_status st = PTQ_OK;
    const int64_t n = s->n, nb = s->n_bins, row = N_COUNTS + nb;
    const int64_t rows_max = row >= SUM_WORDS_MAX ? 1 : SUM_WORDS_MAX / row;
    /* [n] exponents (MAX), [2n] min keys then negated max keys (MIN), [rows_max, row] counts and bins (SUM) */
    int64_t *e = malloc(((size_t)n + 1) * sizeof *e), *mm = malloc(((size_t)(2 * n) + 1) * sizeof *mm);
    int64_t *sum = malloc((size_t)((n < rows_max ? n : rows_max) * row + 1) * sizeof *sum);
    st = ptq_dist_agree(ctx, e && mm && sum ? PTQ_OK
                                             : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reducing %lld histograms",
                                                        (long long)n));
    if (st != PTQ_OK)
        goto done;
    for (int64_t i = 0; i < n; i++) {
        ptq_observer_stats os;
        ptq_observer_get_stats(s->obs[i], &os);
        e[i] = os.n_binned > 0 ? ptq_observer_exponent(s->obs[i]) : INT64_MIN;
        mm[i] = float_key(os.min);
        mm[n + i] = -float_key(os.max);
    }
    PTQ_TRY(st, ptq_dist_allreduce_i64(ctx, e, n, PTQ_DIST_MAX), done);
    PTQ_TRY(st, ptq_dist_allreduce_i64(ctx, mm, 2 * n, PTQ_DIST_MIN), done);
    for (int64_t i0 = 0; i0 < n && st == PTQ_OK; i0 += rows_max) { /* the same blocks, the same outcome on every rank */
        const int64_t i1 = n - i0 < rows_max ? n : i0 + rows_max;
        for (int64_t i = i0; i < i1; i++) {
            ptq_observer_stats os;
            ptq_observer_get_stats(s->obs[i], &os);
            int64_t *r = sum + (i - i0) * row;
            r[0] = os.count;
            r[1] = os.n_zero;
            r[2] = os.n_nan;
            r[3] = os.n_inf;
            if (os.n_binned > 0)
                regrow(ptq_observer_hist(s->obs[i]), nb, ptq_observer_exponent(s->obs[i]), (int)e[i], r + N_COUNTS);
            else
                memset(r + N_COUNTS, 0, (size_t)nb * sizeof *r);
        }
        PTQ_TRY(st, ptq_dist_allreduce_i64(ctx, sum, (i1 - i0) * row, PTQ_DIST_SUM), done);
        for (int64_t i = i0; i < i1 && st == PTQ_OK; i++) {
            const int64_t *r = sum + (i - i0) * row;
            ptq_observer_stats os = {r[0], r[1], r[2], r[3], r[0] - r[1] - r[2] - r[3], key_float(mm[i]),
                                     key_float(-mm[n + i])};
            st = ptq_observer_set_state(ctx, s->obs[i], &os, e[i] == INT64_MIN ? 0 : (int)e[i], r + N_COUNTS);
        }
    }
done:
    free(e);
    free(mm);
    free(sum);
    return st;
}
