/* The activation histograms of the HTML report: from a calibration archive,
 * the first planned int8/fp8 activations' |x| histograms regrouped into at
 * most PTQ_HTML_HIST_MAX_BARS bars, with each calibrator's range on the
 * plan's grid (ptq_calib_compute, the ranges `ptq export` writes). Declared
 * in include/ptq/html_report.h; covered by tests/test_html_report.c and
 * tests/cli_html_test.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/html_report.h"

#define HIST_PERCENTILE 99.99

static ptq_qformat qformat_of(ptq_prec p)
{
    return p == PTQ_PREC_FP8_E4M3 ? PTQ_QFORMAT_FP8_E4M3 : p == PTQ_PREC_FP8_E5M2 ? PTQ_QFORMAT_FP8_E5M2
                                                                                  : PTQ_QFORMAT_INT8;
}

void ptq_html_hists_free(ptq_html_hist *h, int64_t n)
{
    for (int64_t i = 0; h && i < n; i++) {
        free(h[i].name);
        free(h[i].bars);
    }
    free(h);
}

/* h's bars from obs: its bins up to the last non-empty one, summed in groups
 * of the fewest bins that make at most PTQ_HTML_HIST_MAX_BARS bars. */
static ptq_status regroup(ptq_ctx *ctx, const ptq_observer *obs, ptq_html_hist *h)
{
    const int64_t n_bins = ptq_observer_n_bins(obs), *bins = ptq_observer_hist(obs);
    int64_t len = n_bins;
    while (len > 0 && bins[len - 1] == 0)
        len--;
    const int64_t group = len > PTQ_HTML_HIST_MAX_BARS ? (len + PTQ_HTML_HIST_MAX_BARS - 1) / PTQ_HTML_HIST_MAX_BARS
                                                       : 1;
    h->n_bars = (len + group - 1) / group;
    h->bar_width = ptq_observer_range_max(obs) / (double)n_bins * (double)group;
    if (!(h->bars = calloc((size_t)h->n_bars + 1, sizeof *h->bars)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the histogram of %s", h->name);
    for (int64_t i = 0; i < len; i++)
        h->bars[i / group] += bins[i];
    return PTQ_OK;
}

static ptq_status hist_fill(ptq_ctx *ctx, const ptq_observer *obs, const ptq_plan_entry *e, ptq_html_hist *h)
{
    const size_t n_name = strlen(e->name) + 1;
    if (!(h->name = malloc(n_name)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the histogram of %s", e->name);
    memcpy(h->name, e->name, n_name);
    h->prec = e->prec;
    const ptq_qformat f = h->format = qformat_of(e->prec);
    /* uint8: the larger side of [(0 - zp) * scale, (255 - zp) * scale], the |x| it reaches */
    const double top = e->prec == PTQ_PREC_UINT8 ? (double)(e->zero_point > 255 - e->zero_point ? e->zero_point
                                                                                              : 255 - e->zero_point)
                                                 : ptq_qformat_max(f);
    h->plan_amax = e->n_scales > 0 ? (double)e->scales[0] * top : NAN;
    h->percentile = HIST_PERCENTILE;
    ptq_observer_get_stats(obs, &h->stats);
    for (int m = PTQ_CALIB_MINMAX; m <= PTQ_CALIB_MSE; m++) {
        ptq_calib_params p = {(ptq_calib_method)m, f, HIST_PERCENTILE};
        ptq_status st = ptq_calib_compute(ctx, &p, obs, &h->range[m]);
        if (st != PTQ_OK) {
            char why[PTQ_MSG_BYTES];
            snprintf(why, sizeof why, "%s", ctx->msg);
            return ptq_fail(ctx, st, "%s range of %s: %s", ptq_calib_method_name((ptq_calib_method)m), e->name, why);
        }
    }
    return regroup(ctx, obs, h);
}

ptq_status ptq_html_hists_make(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan, int64_t n_max,
                               ptq_html_hist **out, int64_t *n_out)
{
    ptq_status st = PTQ_OK;
    *out = NULL;
    *n_out = 0;
    if (n_max < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "histogram count must be >= 0, got %lld", (long long)n_max);
    if (n_max == 0)
        n_max = PTQ_HTML_HISTS_DEFAULT;
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(archive, &pv);
    if (strcmp(pv.model_sha256, plan->model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "the calibration archive was made from another model than the plan's: SHA-256 %.16s... "
                        "against %.16s...",
                        pv.model_sha256, plan->model_sha256);
    ptq_html_hist *h = calloc((size_t)n_max, sizeof *h);
    int64_t n = 0;
    if (!h)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld histograms", (long long)n_max);
    for (int64_t i = 0; i < plan->n && n < n_max; i++) {
        const ptq_plan_entry *e = &plan->e[i];
        const int64_t t = e->is_weight || !ptq_prec_is_quantized(e->prec) ? -1 : ptq_calib_set_find(archive, e->name);
        if (t < 0)
            continue;
        const ptq_observer *obs = ptq_calib_set_observer(archive, t);
        ptq_observer_stats os;
        ptq_observer_get_stats(obs, &os);
        if (os.n_binned == 0)
            continue;
        PTQ_TRY(st, hist_fill(ctx, obs, e, &h[n++]), done);
    }
    *out = h;
    *n_out = n;
    h = NULL;
done:
    ptq_html_hists_free(h, n);
    return st;
}
