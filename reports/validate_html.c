/* report.html of `ptq validate`: the validation report as one self-contained
 * page (inline CSS and SVG, nothing fetched, one section per printed page):
 * summary, per-class recall and precision as paired bars, the three
 * confusion matrices as heatmaps and, given a calibration archive, the
 * activation histograms with the calibrators' thresholds. Declared in
 * include/ptq/html_report.h; covered by tests/test_html_report.c and
 * tests/cli_html_test.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ptq/html_report.h"
#include "reports/html.h"
#include "reports/validate_view.h"

/* Above this many classes: no heatmaps, and the bar charts and class table
 * stop after this many rows (flagged classes first). */
#define HTML_MAX_CLASSES 100

static const char page_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#222;"
    "background:#fff;max-width:1000px;margin:1.5em auto;padding:0 1em;line-height:1.4}\n"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;"
    "margin-top:1.6em}h3{font-size:1em;margin:1.2em 0 .3em;word-break:break-all}\n"
    "table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:.2em .6em;"
    "text-align:right;vertical-align:top}th{background:#f3f3f3}.l{text-align:left}\n"
    "table.kv td{text-align:left;word-break:break-all}table.kv th{text-align:left;white-space:nowrap}\n"
    "table.classes,table.thresholds{font-size:.9em}\n"
    ".bad{color:#b2182b;font-weight:bold}.note{color:#555;font-size:.9em}\n"
    "svg{display:block;max-width:100%;height:auto;margin:.4em 0}svg text{font-size:11px;fill:#222}\n"
    "svg text.bad{fill:#b2182b}svg text.on-dark{fill:#fff}\n"
    "figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.2em}\n"
    ".swatch{display:inline-block;width:1.6em;height:0;border-top:3px solid;vertical-align:middle;margin-right:.3em}\n"
    "@media print{body{max-width:none;margin:0}section{break-before:page;page-break-before:always}"
    "section:first-of-type{break-before:auto;page-break-before:auto}figure,.tensor{break-inside:avoid;"
    "page-break-inside:avoid}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\n";

typedef struct page {
    html_out o;
    validate_view v;
    const ptq_html_extra *x;
    const char **labels; /* [k]: class names, or their index */
    char *index_names;   /* storage for the index labels */
} page;

static void kv_row(page *p, const char *key, const char *value)
{
    if (!value)
        return;
    html_put(&p->o, "<tr><th>");
    html_text(&p->o, key, 0);
    html_put(&p->o, "</th><td>");
    html_text(&p->o, value, 0);
    html_put(&p->o, "</td></tr>\n");
}

/* The run's description: the extra's paths, then the header's fields. */
static void put_description(page *p)
{
    html_put(&p->o, "<table class=\"kv\">\n");
    if (p->x) {
        kv_row(p, "model", p->x->model);
        kv_row(p, "plan", p->x->plan);
        kv_row(p, "data", p->x->data);
        kv_row(p, "calibration archive", p->x->calib);
    }
    cJSON *h = p->v.header_json ? cJSON_Parse(p->v.header_json) : NULL;
    if (p->v.header_json && !cJSON_IsObject(h) && p->o.st == PTQ_OK)
        p->o.st = ptq_fail(p->o.ctx, PTQ_ERR_INVALID_ARG, "cannot build the HTML report: header is not a JSON object");
    for (cJSON *it = h ? h->child : NULL; it && p->o.st == PTQ_OK; it = it->next) {
        char *val = cJSON_IsString(it) ? NULL : cJSON_PrintUnformatted(it);
        kv_row(p, it->string, cJSON_IsString(it) ? it->valuestring : val ? val : "?");
        free(val);
    }
    cJSON_Delete(h);
    html_put(&p->o, "</table>\n");
}

static double frac(int64_t num, int64_t den)
{
    return den ? (double)num / (double)den : 0.0;
}

static void pct_row(page *p, const char *metric, const char *key, int64_t f, int64_t q, int64_t n)
{
    const double a = 100 * frac(f, n), b = 100 * frac(q, n);
    html_put(&p->o,
             "<tr><th class=\"l\">%s</th><td data-key=\"%s_fp32\">%.2f%%</td><td data-key=\"%s_quant\">%.2f%%</td>"
             "<td data-key=\"%s_delta_pts\"%s>%+.2f</td></tr>\n",
             metric, key, a, key, b, key, b - a < 0 ? " class=\"bad\"" : "", b - a);
}

static void put_summary(page *p)
{
    const validate_view *v = &p->v;
    const ptq_validate_totals *t = &v->t;
    html_put(&p->o, "<section id=\"summary\">\n<h2>Summary</h2>\n");
    put_description(p);
    html_put(&p->o,
             "<p><span data-key=\"samples\">%lld</span> images, %d classes.</p>\n"
             "<table class=\"summary\">\n<tr><th class=\"l\">metric</th><th>FP32</th><th>quantized</th>"
             "<th>delta (points)</th></tr>\n",
             (long long)t->n, v->k);
    pct_row(p, "top-1", "top1", t->top1_fp32, t->top1_q, t->n);
    pct_row(p, "top-5", "top5", t->top5_fp32, t->top5_q, t->n);
    html_put(&p->o, "</table>\n<table class=\"kv\">\n<tr><th>changed predictions</th><td>"
                    "<span data-key=\"changed_predictions\">%lld</span> (%.2f%%)</td></tr>\n",
             (long long)t->changed, 100 * frac(t->changed, t->n));
    if (isnan(t->sqnr_db))
        html_put(&p->o, "<tr><th>logits SQNR</th><td data-key=\"sqnr_db\">n/a</td></tr>\n");
    else if (isinf(t->sqnr_db))
        html_put(&p->o, "<tr><th>logits SQNR</th><td data-key=\"sqnr_db\">inf dB (identical logits)</td></tr>\n");
    else
        html_put(&p->o, "<tr><th>logits SQNR</th><td><span data-key=\"sqnr_db\">%.2f</span> dB</td></tr>\n",
                 t->sqnr_db);
    if (isnan(t->kl_nats))
        html_put(&p->o, "<tr><th>logits KL(FP32 || quantized)</th><td data-key=\"kl_nats\">n/a</td></tr>\n");
    else
        html_put(&p->o,
                 "<tr><th>logits KL(FP32 || quantized)</th><td><span data-key=\"kl_nats\">%.6g</span> nats per "
                 "image</td></tr>\n",
                 t->kl_nats);
    if (t->n_measured < t->n || t->nan_fp32 || t->nan_q)
        html_put(&p->o,
                 "<tr><th class=\"bad\">non-finite logits</th><td>%lld NaN in FP32, %lld NaN in quantized; %lld "
                 "images left out of SQNR and KL</td></tr>\n",
                 (long long)t->nan_fp32, (long long)t->nan_q, (long long)(t->n - t->n_measured));
    html_put(&p->o, "</table>\n<h3>Flagged classes (recall drop &gt; %.2f points)</h3>\n", v->flag_pts);
    if (v->n_flagged == 0)
        html_put(&p->o, "<p>None.</p>\n");
    else
        html_put(&p->o, "<ol class=\"flagged\">\n");
    for (int i = 0; i < v->n_flagged && p->o.st == PTQ_OK; i++) {
        const int c = v->order[i];
        html_put(&p->o, "<li><span class=\"bad\">");
        html_text(&p->o, p->labels[c], 0);
        html_put(&p->o, "</span>: recall %.2f%% &#8594; %.2f%% (%+.2f points, %lld images)</li>\n",
                 100 * v->mf[c].recall, 100 * v->mq[c].recall, -v->drop_pts[c], (long long)v->mf[c].support);
    }
    if (v->n_flagged)
        html_put(&p->o, "</ol>\n");
    html_put(&p->o, "</section>\n");
}

static void put_classes(page *p)
{
    const validate_view *v = &p->v;
    const int n = v->k < HTML_MAX_CLASSES ? v->k : HTML_MAX_CLASSES;
    html_bar_row *rows = calloc((size_t)n, sizeof *rows);
    if (!rows) {
        if (p->o.st == PTQ_OK)
            p->o.st = ptq_fail(p->o.ctx, PTQ_ERR_NOMEM, "out of memory for the HTML report");
        return;
    }
    html_put(&p->o, "<section id=\"classes\">\n<h2>Per-class recall and precision</h2>\n<p class=\"note\">FP32 "
                    "against quantized, flagged classes (in red) first, then by class index.");
    if (n < v->k)
        html_put(&p->o, " The first %d of %d classes; validate.json has them all.", n, v->k);
    html_put(&p->o, "</p>\n");
    for (int metric = 0; metric < 2; metric++) {
        for (int i = 0; i < n; i++) {
            const int c = v->order[i];
            rows[i] = (html_bar_row){p->labels[c], metric ? v->mf[c].precision : v->mf[c].recall,
                                     metric ? v->mq[c].precision : v->mq[c].recall, i < v->n_flagged};
        }
        html_put(&p->o, "<figure>\n<figcaption>%s</figcaption>\n", metric ? "Precision" : "Recall");
        html_svg_paired_bars(&p->o, metric ? "precision" : "recall", "FP32", "quantized", rows, n);
        html_put(&p->o, "</figure>\n");
    }
    free(rows);
    html_put(&p->o, "<table class=\"classes\">\n<tr><th>#</th><th class=\"l\">class</th><th>support</th>"
                    "<th>recall FP32</th><th>recall quant</th><th>delta</th><th>precision FP32</th>"
                    "<th>precision quant</th><th>delta</th><th>F1 FP32</th><th>F1 quant</th><th>delta</th></tr>\n");
    for (int i = 0; i < n && p->o.st == PTQ_OK; i++) {
        const int c = v->order[i];
        const ptq_class_metrics *f = &v->mf[c], *q = &v->mq[c];
        html_put(&p->o, "<tr><td>%d</td><td class=\"l%s\">", c, i < v->n_flagged ? " bad" : "");
        html_text(&p->o, p->labels[c], 0);
        html_put(&p->o,
                 "</td><td>%lld</td><td>%.2f</td><td>%.2f</td><td>%+.2f</td><td>%.2f</td><td>%.2f</td><td>%+.2f</td>"
                 "<td>%.2f</td><td>%.2f</td><td>%+.2f</td></tr>\n",
                 (long long)f->support, 100 * f->recall, 100 * q->recall, 100 * (q->recall - f->recall),
                 100 * f->precision, 100 * q->precision, 100 * (q->precision - f->precision), 100 * f->f1,
                 100 * q->f1, 100 * (q->f1 - f->f1));
    }
    html_put(&p->o, "</table>\n</section>\n");
}

static void put_confusion(page *p)
{
    static const char *const titles[] = {"FP32", "Quantized", "Difference (quantized - FP32)"};
    static const char *const ids[] = {"confusion-fp32", "confusion-quant", "confusion-delta"};
    const validate_view *v = &p->v;
    const int k = v->k;
    html_put(&p->o, "<section id=\"confusion\">\n<h2>Confusion matrices</h2>\n");
    if (k > HTML_MAX_CLASSES) {
        html_put(&p->o, "<p>%d classes: the FP32, quantized and difference matrices are in validate.json "
                        "(<code>fp32.confusion</code>, <code>quant.confusion</code>, <code>confusion_delta</code>)."
                        "</p>\n</section>\n",
                 k);
        return;
    }
    html_put(&p->o, "<p class=\"note\">Rows: true class; columns: predicted class. Hover over a cell for its count. "
                    "In the difference, red cells gained images under quantization and blue cells lost them.</p>\n");
    int64_t *cells = calloc((size_t)k * (size_t)k, sizeof *cells);
    if (!cells) {
        if (p->o.st == PTQ_OK)
            p->o.st = ptq_fail(p->o.ctx, PTQ_ERR_NOMEM, "out of memory for the HTML report");
        return;
    }
    for (int which = 0; which < 3 && p->o.st == PTQ_OK; which++) {
        for (int64_t i = 0; i < (int64_t)k * k; i++)
            cells[i] = validate_view_cell(v, which, i);
        html_put(&p->o, "<figure id=\"%s\">\n<figcaption>%s</figcaption>\n", ids[which], titles[which]);
        html_svg_heatmap(&p->o, k, p->labels, cells, which == 2);
        html_put(&p->o, "</figure>\n");
    }
    free(cells);
    html_put(&p->o, "</section>\n");
}

static void put_hist(page *p, const ptq_html_hist *h)
{
    static const char *const colors[] = {"#222", "#d62728", "#2ca02c", "#9467bd"};
    static const char *const dashes[] = {"", "6 3", "2 2", "8 2 2 2"};
    static const char *const border_styles[] = {"solid", "dashed", "dotted", "dashed"}; /* the dashes in CSS */
    char pct_label[64];
    snprintf(pct_label, sizeof pct_label, "percentile %g", h->percentile);
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
    html_put(&p->o, "<div class=\"tensor\">\n<h3>");
    html_text(&p->o, h->name, 0);
    html_put(&p->o, " <span class=\"note\">(%s in the plan)</span></h3>\n", ptq_prec_name(h->prec));
    html_svg_log_hist(&p->o, h->bars, h->n_bars, h->bar_width, m, n_m);
    const ptq_observer_stats *s = &h->stats;
    html_put(&p->o,
             "<p class=\"note\">%lld values: %lld exact zeros (%.2f%%, not drawn), %lld NaN, %lld Inf; min %.6g, max "
             "%.6g; bars %.4g wide.</p>\n<table class=\"thresholds\">\n<tr><th class=\"l\">range</th><th>amax</th>"
             "<th>scale</th><th>clipped</th></tr>\n",
             (long long)s->count, (long long)s->n_zero, 100 * frac(s->n_zero, s->count), (long long)s->n_nan,
             (long long)s->n_inf, (double)s->min, (double)s->max, h->bar_width);
    for (int i = 0; i < n_m && p->o.st == PTQ_OK; i++) {
        html_put(&p->o, "<tr><td class=\"l\"><span class=\"swatch\" style=\"border-color:%s;border-top-style:%s\">"
                 "</span>", m[i].color, swatch[i]);
        html_text(&p->o, m[i].label, 0);
        html_put(&p->o, "</td><td>%.6g</td><td>%.6g</td>", m[i].x, m[i].x / ptq_qformat_max(h->format));
        if (isnan(m[i].clipped))
            html_put(&p->o, "<td></td></tr>\n");
        else
            html_put(&p->o, "<td>%.4f%%</td></tr>\n", 100 * m[i].clipped);
    }
    html_put(&p->o, "</table>\n</div>\n");
}

static void put_tensors(page *p)
{
    const ptq_html_extra *x = p->x;
    if (!x || (!x->calib && x->n_hists == 0))
        return;
    html_put(&p->o, "<section id=\"tensors\">\n<h2>Activation histograms</h2>\n<p class=\"note\">The first %lld "
                    "activations the plan quantizes, in plan order: |x| from the calibration archive on a log count "
                    "axis, with each calibrator's amax (on the plan's grid) and the plan's own marked.</p>\n",
             (long long)x->n_hists);
    if (x->n_hists == 0)
        html_put(&p->o, "<p>The plan quantizes no activation the archive observed with a nonzero value.</p>\n");
    for (int64_t i = 0; i < x->n_hists && p->o.st == PTQ_OK; i++)
        put_hist(p, &x->hists[i]);
    html_put(&p->o, "</section>\n");
}

static ptq_status labels_make(ptq_ctx *ctx, page *p)
{
    const int k = p->v.k;
    enum { INDEX_BYTES = 16 };
    p->labels = calloc((size_t)k, sizeof *p->labels);
    p->index_names = calloc((size_t)k, INDEX_BYTES);
    if (!p->labels || !p->index_names)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %d-class HTML report", k);
    for (int c = 0; c < k; c++)
        p->labels[c] = validate_view_class_name(&p->v, c, p->index_names + (size_t)c * INDEX_BYTES, INDEX_BYTES);
    return PTQ_OK;
}

ptq_status ptq_validate_format_html(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                    const ptq_html_extra *extra, char **out)
{
    page p;
    memset(&p, 0, sizeof p);
    *out = NULL;
    PTQ_TRY_RET(validate_view_make(ctx, s, opts, &p.v));
    p.o.ctx = ctx;
    p.x = extra;
    p.o.st = labels_make(ctx, &p);
    html_put(&p.o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>ptq validate");
    if (extra && extra->model) {
        html_put(&p.o, ": ");
        html_text(&p.o, extra->model, 0);
    }
    html_put(&p.o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>ptq validate: FP32 against quantized</h1>\n",
             page_css);
    put_summary(&p);
    put_classes(&p);
    put_confusion(&p);
    put_tensors(&p);
    html_put(&p.o, "</body>\n</html>\n");
    validate_view_free(&p.v);
    free(p.labels);
    free(p.index_names);
    if (p.o.st != PTQ_OK) {
        ptq_buf_free(&p.o.b);
        return p.o.st;
    }
    *out = p.o.b.data;
    return PTQ_OK;
}
