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
#include "ptq/report.h" /* PTQ_JSON_DENSE_MAX_CLASSES */
#include "reports/html.h"
#include "reports/sens_view.h"
#include "reports/validate_view.h"

typedef struct page {
    html_out o;
    validate_view v;
    const ptq_html_extra *x;
    const char **labels; /* [k]: class names, or their index */
    char *index_names;   /* storage for the index labels */
} page;

/* The run's description: the extra's paths, then the header's fields. */
static void put_description(page *p)
{
    html_put(&p->o, "<table class=\"kv\">\n");
    /* a header that names the model, plan or data (with their hashes) shows them itself */
    cJSON *h = p->v.header_json ? cJSON_Parse(p->v.header_json) : NULL;
    if (p->x) {
        if (!cJSON_GetObjectItemCaseSensitive(h, "model"))
            html_kv_row(&p->o, "model", p->x->model);
        if (!cJSON_GetObjectItemCaseSensitive(h, "plan"))
            html_kv_row(&p->o, "plan", p->x->plan);
        if (!cJSON_GetObjectItemCaseSensitive(h, "data"))
            html_kv_row(&p->o, "data", p->x->data);
        html_kv_row(&p->o, "calibration archive", p->x->calib);
    }
    cJSON_Delete(h);
    html_kv_json(&p->o, p->v.header_json);
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
    html_put(&p->o, "</table>\n");
    if (t->collapsed) {
        char why[160];
        html_put(&p->o, "<p class=\"bad\" data-key=\"collapsed\"><strong>Collapsed</strong>: the quantized outputs "
                        "carry no information (");
        html_text(&p->o, ptq_validate_collapse_text(t->collapsed, why, sizeof why), 0);
        html_put(&p->o, "); the accuracy deltas mean nothing.</p>\n");
    }
    html_put(&p->o, "<table class=\"kv\">\n<tr><th>changed predictions</th><td>"
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
    const int n = v->k < PTQ_HTML_MAX_CLASSES ? v->k : PTQ_HTML_MAX_CLASSES;
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
    if (k > PTQ_HTML_MAX_CLASSES) {
        const char *sparse = k > PTQ_JSON_DENSE_MAX_CLASSES ? "_sparse" : ""; /* the keys validate.json has */
        html_put(&p->o, "<p>%d classes: the FP32, quantized and difference matrices are in validate.json "
                        "(<code>fp32.confusion%s</code>, <code>quant.confusion%s</code>, <code>confusion_delta%s"
                        "</code>).</p>\n</section>\n",
                 k, sparse, sparse, sparse);
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
        html_put(&p->o, "<figure id=\"%s\"%s>\n<figcaption>%s</figcaption>\n", ids[which],
                 k > 50 ? " class=\"wide\"" : "", titles[which]);
        html_svg_heatmap(&p->o, k, p->labels, cells, which == 2);
        html_put(&p->o, "</figure>\n");
    }
    free(cells);
    html_put(&p->o, "</section>\n");
}

static void put_tensors(page *p)
{
    const ptq_html_extra *x = p->x;
    if (!x || (!x->calib && x->n_hists == 0))
        return;
    char intro[256];
    snprintf(intro, sizeof intro,
             x->hists_ranked ? "The %lld activations whose quantization alone cost the most top-1 (the sensitivity "
                               "order above)"
                             : "The first %lld activations the plan quantizes, in plan order",
             (long long)x->n_hists);
    html_put_hists(&p->o, intro, x->hists, x->n_hists);
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
    sens_view sv;
    trace_view tv;
    memset(&sv, 0, sizeof sv);
    memset(&tv, 0, sizeof tv);
    const int with_sens = extra && extra->sens_json, with_trace = extra && extra->trace_json;
    if (with_sens && p.o.st == PTQ_OK)
        p.o.st = sens_view_read(ctx, extra->sens_json, &sv);
    if (with_trace && p.o.st == PTQ_OK)
        p.o.st = trace_view_read(ctx, extra->trace_json, &tv);
    html_page_begin(&p.o, "ptq validate", extra ? extra->model : NULL);
    html_put(&p.o, "<h1>ptq validate: FP32 against quantized</h1>\n<nav class=\"note\"><a href=\"#summary\">summary"
                   "</a> &#183; <a href=\"#classes\">classes</a> &#183; <a href=\"#confusion\">confusion</a>");
    if (with_sens)
        html_put(&p.o, " &#183; <a href=\"#sensitivity\">sensitivity</a>");
    if (with_trace)
        html_put(&p.o, " &#183; <a href=\"#trace\">planner</a>");
    if (extra && (extra->calib || extra->n_hists))
        html_put(&p.o, " &#183; <a href=\"#tensors\">histograms</a>");
    html_put(&p.o, "</nav>\n");
    put_summary(&p);
    put_classes(&p);
    put_confusion(&p);
    if (with_sens && p.o.st == PTQ_OK)
        html_put_sensitivity(&p.o, &sv);
    if (with_trace && p.o.st == PTQ_OK)
        html_put_trace(&p.o, &tv);
    put_tensors(&p);
    sens_view_free(&sv);
    trace_view_free(&tv);
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

ptq_status ptq_validate_format_png(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                   int which, void **png, size_t *n_bytes)
{
    static const char *const titles[] = {"Confusion, FP32", "Confusion, quantized",
                                         "Confusion, quantized - FP32 (red: gained, blue: lost)"};
    *png = NULL;
    *n_bytes = 0;
    if (which < 0 || which > 2)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "confusion matrix %d: want 0 (FP32), 1 (quantized) or 2 (difference)",
                        which);
    page p;
    memset(&p, 0, sizeof p);
    PTQ_TRY_RET(validate_view_make(ctx, s, opts, &p.v));
    const int k = p.v.k;
    int64_t *cells = NULL;
    ptq_status st = PTQ_OK;
    if (k > PTQ_HTML_MAX_CLASSES)
        st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "%d classes: PNG heatmaps stop at %d (the JSON has the matrices)", k,
                      PTQ_HTML_MAX_CLASSES);
    if (st == PTQ_OK)
        st = labels_make(ctx, &p);
    if (st == PTQ_OK && !(cells = calloc((size_t)k * (size_t)k, sizeof *cells)))
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for a %d-class heatmap", k);
    for (int64_t i = 0; st == PTQ_OK && i < (int64_t)k * k; i++)
        cells[i] = validate_view_cell(&p.v, which, i);
    if (st == PTQ_OK)
        st = ptq_heatmap_png(ctx, k, p.labels, cells, which == 2, titles[which], png, n_bytes);
    free(cells);
    validate_view_free(&p.v);
    free(p.labels);
    free(p.index_names);
    return st;
}
