/* The sensitivity page (report of `ptq sensitivity`) and the sections the
 * validation page adds from a sensitivity report and a planner trace (`ptq
 * run`): per tensor the top-1 change with only it quantized and the top-1
 * the default plan recovers with only it in FP16 (FP32 for ort-cpu), as signed bars sorted by
 * effect, the table in harm order, and the points lost after each of the
 * planner's moves. Self-contained like the validation page (inline CSS and
 * SVG, nothing fetched). Declared in include/ptq/html_report.h and
 * reports/sens_view.h; covered by tests/test_sens_html.c,
 * tests/cli_html_test.py and tests/browser_report_test.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/c_locale.h"
#include "ptq/html_report.h"
#include "reports/html.h"
#include "reports/sens_view.h"

#define NAME_BYTES 32
#define NOTE_BYTES 256      /* a bar's note: its SQNR and worst class, that class's name cut to NOTE_NAME_CHARS */
#define NOTE_NAME_CHARS 40

/* Bytes of s's first max_chars characters: UTF-8 sequences kept whole. */
static int prefix_bytes(const char *s, int max_chars)
{
    int n = 0, chars = 0;
    for (; s[n]; n++)
        if (((unsigned char)s[n] & 0xC0) != 0x80 && chars++ == max_chars)
            break;
    return n;
}

/* Drops a UTF-8 sequence that snprintf's cut left unfinished at the end of s. */
static void trim_cut_char(char *s)
{
    size_t n = strlen(s), lead = n;
    while (lead > 0 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0 || (unsigned char)s[lead - 1] < 0xC0)
        return; /* ends in ASCII (or bytes no lead starts) */
    const unsigned char c = (unsigned char)s[lead - 1];
    const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (n - (lead - 1) < want)
        s[lead - 1] = '\0';
}

static int nomem(html_out *o)
{
    if (o->st == PTQ_OK)
        o->st = ptq_fail(o->ctx, PTQ_ERR_NOMEM, "out of memory for the HTML report");
    return 0;
}

/* The signed bars of one mode: rows in order[n] (indices into v->t) with
 * values val(row), at most PTQ_HTML_SENS_MAX_BARS of them. */
static void mode_bars(html_out *o, const sens_view *v, const int64_t *order, int64_t n, int all_but)
{
    const int64_t shown = n < PTQ_HTML_SENS_MAX_BARS ? n : PTQ_HTML_SENS_MAX_BARS;
    html_sbar_row *rows = calloc((size_t)shown + 1, sizeof *rows);
    char(*notes)[NOTE_BYTES] = calloc((size_t)shown + 1, sizeof *notes);
    if (!rows || !notes) {
        nomem(o);
        free(rows);
        free(notes);
        return;
    }
    for (int64_t i = 0; i < shown; i++) {
        const sens_row *r = &v->t[order[i]];
        char buf[NAME_BYTES];
        if (all_but) {
            snprintf(notes[i], sizeof notes[i], "%s in the default plan", r->prec_default);
        } else if (r->worst >= 0 && r->worst_drop_pts > 0) {
            /* the name cut between characters, not bytes: the page must stay UTF-8 */
            const char *worst = sens_view_class(v, r->worst, buf, sizeof buf);
            ptq_snprintf_c(notes[i], sizeof notes[i], "SQNR %.1f dB, worst class %.*s (-%.2f recall points)",
                     r->only_sqnr_db, prefix_bytes(worst, NOTE_NAME_CHARS), worst, r->worst_drop_pts);
            trim_cut_char(notes[i]);
        } else {
            ptq_snprintf_c(notes[i], sizeof notes[i], "SQNR %.1f dB", r->only_sqnr_db);
        }
        rows[i] = (html_sbar_row){r->name, all_but ? r->recovered_pts : r->only_delta_pts, notes[i]};
    }
    html_svg_signed_bars(o, all_but ? "top-1 recovered" : "top-1 change", rows, (int)shown);
    if (shown < n)
        html_put(o, "<p class=\"note\">The first %lld of %lld tensors; the table below has them all.</p>\n",
                 (long long)shown, (long long)n);
    free(rows);
    free(notes);
}

/* The tensors the default plan quantizes, by top-1 recovered (most first). */
static int64_t recovery_order(const sens_view *v, int64_t *order)
{
    int64_t n = 0;
    for (int64_t i = 0; i < v->n; i++) {
        if (!v->t[i].measured_b || !isfinite(v->t[i].recovered_pts))
            continue;
        int64_t j = n++;
        while (j > 0 && v->t[i].recovered_pts > v->t[order[j - 1]].recovered_pts) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    return n;
}

static void put_number(html_out *o, double x, const char *fmt)
{
    if (isnan(x))
        html_put(o, "<td>&#8212;</td>");
    else if (isinf(x))
        html_put(o, "<td>inf</td>");
    else {
        html_put(o, "<td>");
        html_put(o, fmt, x);
        html_put(o, "</td>");
    }
}

static void sens_table(html_out *o, const sens_view *v)
{
    html_put(o, "<table class=\"sens\">\n<tr><th class=\"l\">tensor</th><th>kind</th><th>default</th>"
                "<th>only: top-1 &#916; pts</th><th>only: SQNR dB</th><th>only: KL</th><th>only: agreement</th>"
                "<th class=\"l\">only: worst class (recall &#916;)</th><th>all but: recovered pts</th></tr>\n");
    for (int64_t j = 0; j < v->n && o->st == PTQ_OK; j++) {
        const sens_row *r = &v->t[v->harm[j]];
        html_put(o, "<tr><td class=\"l\">");
        html_text(o, r->name, 0);
        html_put(o, "</td><td>%s</td><td>", r->is_weight ? "weight" : "activation");
        html_text(o, r->prec_default, 0);
        html_put(o, "</td>");
        if (r->measured_a) {
            put_number(o, r->only_delta_pts, "%+.2f");
            put_number(o, r->only_sqnr_db, "%.2f");
            put_number(o, r->only_kl_nats, "%.3g");
            put_number(o, 100 * r->only_agreement, "%.2f%%");
            html_put(o, "<td class=\"l\">");
            if (r->worst >= 0 && r->worst_drop_pts > 0) {
                char buf[NAME_BYTES];
                html_text(o, sens_view_class(v, r->worst, buf, sizeof buf), 0);
                html_put(o, " (%+.2f)", -r->worst_drop_pts);
            } else {
                html_put(o, "&#8212;");
            }
            html_put(o, "</td>");
        } else {
            html_put(o, "<td colspan=\"5\" class=\"l note\">not measured (no core scale: only zeros seen, no values, "
                        "or no normal float32 one)</td>");
        }
        put_number(o, r->recovered_pts, "%+.2f");
        html_put(o, "</tr>\n");
    }
    html_put(o, "</table>\n");
}

void html_put_sensitivity(html_out *o, const sens_view *v)
{
    html_put(o, "<section id=\"sensitivity\">\n<h2>Sensitivity per tensor</h2>\n<p class=\"note\">%lld images. "
                "FP32 top-1 %.2f%%, the default plan %.2f%%. (a) <b>only</b>: one tensor quantized, everything else "
                "FP32; (b) <b>all but</b>: the default plan with one tensor in %s. Hover over a bar for the "
                "tensor's figures.</p>\n",
             (long long)v->samples, 100 * v->top1_fp32, 100 * v->top1_default, v->kept_in);
    int64_t *order = calloc((size_t)v->n + 1, sizeof *order);
    if (!order) {
        nomem(o);
        return;
    }
    html_put(o, "<figure id=\"sens-only\">\n<figcaption>(a) Only this tensor quantized: top-1 change against FP32 "
                "(points), most harmful first</figcaption>\n");
    int64_t n_a = 0;
    for (int64_t j = 0; j < v->n; j++)
        if (v->t[v->harm[j]].measured_a)
            order[n_a++] = v->harm[j];
    mode_bars(o, v, order, n_a, 0);
    html_put(o, "</figure>\n<figure id=\"sens-all-but\">\n<figcaption>(b) The default plan with only this tensor in "
                "%s: top-1 recovered (points), most first</figcaption>\n", v->kept_in);
    const int64_t n_b = recovery_order(v, order);
    if (n_b == 0)
        html_put(o, "<p>The default plan quantizes none of the tensors measured.</p>\n");
    else
        mode_bars(o, v, order, n_b, 1);
    html_put(o, "</figure>\n<h3>Every tensor, most harmful first</h3>\n");
    free(order);
    sens_table(o, v);
    html_put(o, "</section>\n");
}

void html_put_trace(html_out *o, const trace_view *t)
{
    html_put(o, "<section id=\"trace\">\n<h2>The planner's moves</h2>\n<p class=\"note\">Starting from the default "
                "plan, one tensor to %s per move, each plan validated against FP32 (top-1 %.2f%%)",
             t->kept_in, 100 * t->top1_fp32);
    if (isfinite(t->budget_pts))
        html_put(o, "; budget %.2f points", t->budget_pts);
    if (isfinite(t->class_budget_pts))
        html_put(o, ", %.2f per class", t->class_budget_pts);
    html_put(o, ": %s.</p>\n", t->met ? "met" : "<span class=\"bad\">not met</span> (the best plan found was kept)");
    html_trace_point *p = calloc((size_t)t->n + 1, sizeof *p);
    if (!p) {
        nomem(o);
        return;
    }
    for (int64_t i = 0; i < t->n; i++)
        p[i] = (html_trace_point){t->s[i].moved, t->s[i].top1_drop_pts, t->s[i].worst_drop_pts, t->s[i].worst_name};
    html_put(o, "<figure id=\"trace-chart\">\n<figcaption>Points lost against FP32 after each move</figcaption>\n");
    html_svg_trace(o, p, (int)t->n, t->budget_pts, t->class_budget_pts, t->kept_in);
    html_put(o, "</figure>\n<table class=\"trace\">\n<tr><th>step</th><th class=\"l\">moved to %s</th>"
                "<th>top-1</th><th>top-1 &#916; pts</th><th class=\"l\">worst class</th><th>recall &#916; pts</th>"
                "<th>%s tensors</th></tr>\n", t->kept_in, t->kept_in);
    free(p);
    for (int64_t i = 0; i < t->n && o->st == PTQ_OK; i++) {
        const trace_step *s = &t->s[i];
        html_put(o, "<tr><td>%lld</td><td class=\"l\">", (long long)i);
        if (s->moved)
            html_text(o, s->moved, 0);
        else
            html_put(o, "(the starting plan)");
        html_put(o, "</td>");
        put_number(o, 100 * s->top1, "%.2f%%");
        put_number(o, -s->top1_drop_pts, "%+.2f");
        html_put(o, "<td class=\"l\">");
        if (s->worst_name)
            html_text(o, s->worst_name, 0);
        else
            html_put(o, "%d", s->worst);
        html_put(o, "</td>");
        put_number(o, -s->worst_drop_pts, "%+.2f");
        html_put(o, s->n_fp16 >= 0 ? "<td>%lld</td></tr>\n" : "<td>?</td></tr>\n", (long long)s->n_fp16);
    }
    html_put(o, "</table>\n</section>\n");
}

ptq_status ptq_html_inputs_check(ptq_ctx *ctx, const char *model_sha256, const char *sens_json,
                                 const char *trace_json)
{
    if (sens_json) {
        sens_view v;
        PTQ_TRY_RET(sens_view_read(ctx, sens_json, &v));
        const int other = model_sha256 && model_sha256[0] && v.model_sha256[0] && strcmp(v.model_sha256, model_sha256);
        char theirs[65];
        snprintf(theirs, sizeof theirs, "%s", v.model_sha256);
        sens_view_free(&v);
        if (other)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "the sensitivity report was measured on another model: SHA-256 %.16s... against %.16s...",
                            theirs, model_sha256);
    }
    if (trace_json) {
        trace_view t;
        PTQ_TRY_RET(trace_view_read(ctx, trace_json, &t));
        const int other = model_sha256 && model_sha256[0] && t.model_sha256[0] && strcmp(t.model_sha256, model_sha256);
        char theirs[65];
        snprintf(theirs, sizeof theirs, "%s", t.model_sha256);
        trace_view_free(&t);
        if (other)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "the planner's trace is of another model's plan: SHA-256 %.16s... against %.16s...", theirs,
                            model_sha256);
    }
    return PTQ_OK;
}

ptq_status ptq_sens_format_html(ptq_ctx *ctx, const char *sens_json, const ptq_html_extra *extra, char **out)
{
    *out = NULL;
    sens_view v;
    trace_view t;
    memset(&t, 0, sizeof t);
    PTQ_TRY_RET(sens_view_read(ctx, sens_json, &v));
    html_out o = {ctx, {0}, PTQ_OK};
    if (extra && extra->trace_json)
        o.st = trace_view_read(ctx, extra->trace_json, &t);
    html_page_begin(&o, "ptq sensitivity", extra ? extra->model : NULL);
    html_put(&o, "<h1>ptq sensitivity: what each tensor costs</h1>\n<section id=\"summary\">\n<h2>Summary</h2>\n"
                 "<table class=\"kv\">\n");
    html_kv_json(&o, v.header_json);
    html_put(&o, "</table>\n<table class=\"summary\">\n<tr><th class=\"l\">plan</th><th>top-1</th>"
                 "<th>delta (points)</th></tr>\n<tr><th class=\"l\">FP32</th><td data-key=\"top1_fp32\">%.2f%%</td>"
                 "<td></td></tr>\n<tr><th class=\"l\">the default plan</th><td data-key=\"top1_default\">%.2f%%</td>"
                 "<td>%+.2f</td></tr>\n</table>\n<p><span data-key=\"samples\">%lld</span> images, %d classes, "
                 "<span data-key=\"tensors\">%lld</span> tensors.</p>\n</section>\n",
             100 * v.top1_fp32, 100 * v.top1_default, 100 * (v.top1_default - v.top1_fp32), (long long)v.samples, v.k,
             (long long)v.n);
    html_put_sensitivity(&o, &v);
    if (extra && extra->trace_json && o.st == PTQ_OK)
        html_put_trace(&o, &t);
    if (extra && (extra->calib || extra->n_hists))
        html_put_hists(&o,
                       extra->hists_ranked ? "The activations whose quantization alone cost the most top-1"
                                           : "The first activations the plan quantizes",
                       extra->hists, extra->n_hists);
    html_put(&o, "</body>\n</html>\n");
    sens_view_free(&v);
    trace_view_free(&t);
    if (o.st != PTQ_OK) {
        ptq_buf_free(&o.b);
        return o.st;
    }
    *out = o.b.data;
    return PTQ_OK;
}
