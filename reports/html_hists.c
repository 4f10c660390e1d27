/* The activation histograms of the HTML reports: from a calibration
 * archive, the |x| histograms of the first planned int8/fp8 activations, or
 * of the activations a sensitivity report ranks most harmful, regrouped into
 * at most PTQ_HTML_HIST_MAX_BARS bars, with each calibrator's range on the
 * plan's grid (ptq_calib_compute, the ranges `ptq export` writes); and their
 * section of the page. Declared in include/ptq/html_report.h and
 * reports/html.h; covered by tests/test_html_report.c and
 * tests/cli_html_test.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale.h"
#include "ptq/html_report.h"
#include "reports/html.h"
#include "reports/sens_view.h"

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

/* h from obs for the plan's entry e; a tensor the plan keeps wide gets the
 * ranges of the core format and no plan threshold. */
static ptq_status hist_fill(ptq_ctx *ctx, const ptq_observer *obs, const ptq_plan_entry *e, ptq_prec core,
                            ptq_html_hist *h)
{
    const size_t n_name = strlen(e->name) + 1;
    if (!(h->name = malloc(n_name)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the histogram of %s", e->name);
    memcpy(h->name, e->name, n_name);
    h->prec = e->prec;
    const int quantized = ptq_prec_is_quantized(e->prec);
    const ptq_qformat f = h->format = qformat_of(quantized ? e->prec : core);
    /* uint8: the larger side of [(0 - zp) * scale, (255 - zp) * scale], the |x| it reaches */
    const double top = e->prec == PTQ_PREC_UINT8 ? (double)(e->zero_point > 255 - e->zero_point ? e->zero_point
                                                                                              : 255 - e->zero_point)
                                                 : ptq_qformat_max(f);
    h->plan_amax = quantized && e->n_scales > 0 ? (double)e->scales[0] * top : NAN;
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

/* Checks shared by both pickers (n_max, 0 for the default; the archive of
 * the plan's model) and room for *n_max histograms in *h. */
static ptq_status hists_begin(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan, int64_t *n_max,
                              ptq_html_hist **h)
{
    *h = NULL;
    if (*n_max < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "histogram count must be >= 0, got %lld", (long long)*n_max);
    if (*n_max == 0)
        *n_max = PTQ_HTML_HISTS_DEFAULT;
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(archive, &pv);
    if (strcmp(pv.model_sha256, plan->model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "the calibration archive was made from another model than the plan's: SHA-256 %.16s... "
                        "against %.16s...",
                        pv.model_sha256, plan->model_sha256);
    if (!(*h = calloc((size_t)*n_max, sizeof **h)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for %lld histograms", (long long)*n_max);
    return PTQ_OK;
}

/* Appends the histogram of plan entry e to h[*n] when the archive observed
 * it with a nonzero finite value; wide: entries the plan keeps in FP16/FP32
 * count too. */
static ptq_status hist_add(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan,
                           const ptq_plan_entry *e, int wide, ptq_html_hist *h, int64_t *n)
{
    if (e->is_weight || (!wide && !ptq_prec_is_quantized(e->prec)))
        return PTQ_OK;
    const int64_t t = ptq_calib_set_find(archive, e->name);
    if (t < 0)
        return PTQ_OK;
    const ptq_observer *obs = ptq_calib_set_observer(archive, t);
    ptq_observer_stats os;
    ptq_observer_get_stats(obs, &os);
    if (os.n_binned == 0)
        return PTQ_OK;
    return hist_fill(ctx, obs, e, plan->core, &h[(*n)++]);
}

ptq_status ptq_html_hists_make(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan, int64_t n_max,
                               ptq_html_hist **out, int64_t *n_out)
{
    ptq_status st = PTQ_OK;
    ptq_html_hist *h = NULL;
    int64_t n = 0;
    *out = NULL;
    *n_out = 0;
    PTQ_TRY(st, hists_begin(ctx, archive, plan, &n_max, &h), done);
    for (int64_t i = 0; i < plan->n && n < n_max; i++)
        PTQ_TRY(st, hist_add(ctx, archive, plan, &plan->e[i], 0, h, &n), done);
    *out = h;
    *n_out = n;
    h = NULL;
done:
    ptq_html_hists_free(h, n);
    return st;
}

ptq_status ptq_html_hists_ranked(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan,
                                 const char *sens_json, int64_t n_max, ptq_html_hist **out, int64_t *n_out)
{
    ptq_status st = PTQ_OK;
    ptq_html_hist *h = NULL;
    int64_t n = 0;
    sens_view v;
    memset(&v, 0, sizeof v);
    *out = NULL;
    *n_out = 0;
    PTQ_TRY(st, ptq_html_inputs_check(ctx, plan->model_sha256, sens_json, NULL), done);
    PTQ_TRY(st, sens_view_read(ctx, sens_json, &v), done);
    PTQ_TRY(st, hists_begin(ctx, archive, plan, &n_max, &h), done);
    /* its ranking was measured with the scales of its own archive: the histograms would be another archive's */
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(archive, &pv);
    if (v.archive_sample_ids_sha256[0] && pv.sample_ids_sha256[0] &&
        strcmp(v.archive_sample_ids_sha256, pv.sample_ids_sha256) != 0) {
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the sensitivity report was measured with another calibration "
                      "archive than this one: samples SHA-256 %.16s... against %.16s...",
                      v.archive_sample_ids_sha256, pv.sample_ids_sha256);
        goto done;
    }
    for (int64_t j = 0; j < v.n && n < n_max; j++) {
        const sens_row *r = &v.t[v.harm[j]];
        if (!r->measured_a || r->is_weight)
            continue;
        for (int64_t i = 0; i < plan->n; i++)
            if (strcmp(plan->e[i].name, r->name) == 0) {
                PTQ_TRY(st, hist_add(ctx, archive, plan, &plan->e[i], 1, h, &n), done);
                break;
            }
    }
    *out = h;
    *n_out = n;
    h = NULL;
done:
    sens_view_free(&v);
    ptq_html_hists_free(h, n);
    return st;
}

/* ---- drawing ---- */

static double frac(int64_t num, int64_t den)
{
    return den ? (double)num / (double)den : 0.0;
}

static void put_hist(html_out *o, const ptq_html_hist *h)
{
    static const char *const colors[] = {"#222", "#d62728", "#2ca02c", "#9467bd"};
    static const char *const dashes[] = {"", "6 3", "2 2", "8 2 2 2"};
    static const char *const border_styles[] = {"solid", "dashed", "dotted", "dashed"}; /* the dashes in CSS */
    char pct_label[64];
    ptq_snprintf_c(pct_label, sizeof pct_label, "percentile %g", h->percentile);
    const char *labels[] = {"minmax", "entropy", pct_label, "mse"};
    html_marker m[5];
    const char *swatch[5];
    int n_m = 0;
    for (int i = 0; i < 4; i++) {
        if (h->range[i].degenerate)
            continue;
        swatch[n_m] = border_styles[i];
        m[n_m++] = (html_marker){ptq_calib_method_name((ptq_calib_method)i), labels[i], h->range[i].amax,
                                 h->range[i].clipped_fraction, colors[i], dashes[i], 0};
    }
    if (isfinite(h->plan_amax)) {
        swatch[n_m] = "solid;border-top-width:7px;opacity:.45";
        m[n_m++] = (html_marker){"plan", "plan", h->plan_amax, NAN, "#ff7f0e", "", 1};
    }
    html_put(o, "<div class=\"tensor\">\n<h3>");
    html_text(o, h->name, 0);
    html_put(o, " <span class=\"note\">(%s in the plan%s%s)</span></h3>\n", ptq_prec_name(h->prec),
             ptq_prec_is_quantized(h->prec) ? "" : "; thresholds on the grid of ",
             ptq_prec_is_quantized(h->prec) ? "" : ptq_qformat_name(h->format));
    html_svg_log_hist(o, h->bars, h->n_bars, h->bar_width, m, n_m);
    const ptq_observer_stats *s = &h->stats;
    html_put(o,
             "<p class=\"note\">%lld values: %lld exact zeros (%.2f%%, not drawn), %lld NaN, %lld Inf; min %.6g, max "
             "%.6g; bars %.4g wide.</p>\n<table class=\"thresholds\">\n<tr><th class=\"l\">range</th><th>amax</th>"
             "<th>scale</th><th>clipped</th></tr>\n",
             (long long)s->count, (long long)s->n_zero, 100 * frac(s->n_zero, s->count), (long long)s->n_nan,
             (long long)s->n_inf, (double)s->min, (double)s->max, h->bar_width);
    for (int i = 0; i < n_m && o->st == PTQ_OK; i++) {
        html_put(o, "<tr><td class=\"l\"><span class=\"swatch\" style=\"border-color:%s;border-top-style:%s\">"
                 "</span>", m[i].color, swatch[i]);
        html_text(o, m[i].label, 0);
        html_put(o, "</td><td>%.6g</td><td>%.6g</td>", m[i].x, m[i].x / ptq_qformat_max(h->format));
        if (isnan(m[i].clipped))
            html_put(o, "<td></td></tr>\n");
        else
            html_put(o, "<td>%.4f%%</td></tr>\n", 100 * m[i].clipped);
    }
    html_put(o, "</table>\n</div>\n");
}


void html_put_hists(html_out *o, const char *intro, const ptq_html_hist *h, int64_t n)
{
    html_put(o, "<section id=\"tensors\">\n<h2>Activation histograms</h2>\n<p class=\"note\">%s: |x| from the "
                "calibration archive on a log count axis, with each calibrator's amax (on the plan's grid) and the "
                "plan's own marked.</p>\n",
             intro);
    if (n == 0)
        html_put(o, "<p>The plan quantizes no activation the archive observed with a nonzero value.</p>\n");
    for (int64_t i = 0; i < n && o->st == PTQ_OK; i++)
        put_hist(o, &h[i]);
    html_put(o, "</section>\n");
}
