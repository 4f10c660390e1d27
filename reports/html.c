/* HTML and inline SVG writing for the self-contained reports: a sticky-status
 * text buffer, escaping, paired bars, heatmaps and log-count histograms. The
 * SVG carries no xmlns (the HTML parser places it) and no URL of any kind, so
 * a page never reaches outside itself. Declared in reports/html.h; covered by
 * tests/test_html_report.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/c_locale.h"
#include "reports/bidi.h"
#include "reports/html.h"

void html_put(html_out *o, const char *fmt, ...)
{
    if (o->st != PTQ_OK)
        return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        o->st = ptq_fail(o->ctx, PTQ_ERR_INTERNAL, "html: bad format '%s'", fmt);
        return;
    }
    if ((size_t)n < sizeof small) {
        o->st = ptq_buf_append(o->ctx, &o->b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        o->st = ptq_fail(o->ctx, PTQ_ERR_NOMEM, "out of memory writing HTML");
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    o->st = ptq_buf_append(o->ctx, &o->b, big, (size_t)n);
    free(big);
}

void html_text(html_out *o, const char *s, size_t max_chars)
{
    size_t n_chars = 0;
    bidi_levels levels = BIDI_LEVELS_INIT;
    for (const unsigned char *p = (const unsigned char *)s; *p && o->st == PTQ_OK; p++) {
        if ((*p & 0xC0) != 0x80 && max_chars > 0 && n_chars++ == max_chars) {
            html_put(o, "\xE2\x80\xA6"); /* U+2026 */
            break;
        }
        bidi_step(&levels, (const char *)p);
        switch (*p) {
        case '&': html_put(o, "&amp;"); break;
        case '<': html_put(o, "&lt;"); break;
        case '>': html_put(o, "&gt;"); break;
        case '"': html_put(o, "&quot;"); break;
        case '\'': html_put(o, "&#39;"); break;
        default:
            if (*p < 0x20 || *p == 0x7F)
                html_put(o, " ");
            else
                o->st = ptq_buf_append(o->ctx, &o->b, p, 1);
        }
    }
    if (o->st == PTQ_OK) { /* what the name opened ends with it */
        bidi_close(&levels, &o->b);
        if (o->b.failed)
            o->st = ptq_fail(o->ctx, PTQ_ERR_NOMEM, "out of memory writing HTML");
    }
}

static const char page_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#222;"
    "background:#fff;max-width:1000px;margin:1.5em auto;padding:0 1em;line-height:1.4}\n"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;"
    "margin-top:1.6em}h3{font-size:1em;margin:1.2em 0 .3em;word-break:break-all}\n"
    "table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:.2em .6em;"
    "text-align:right;vertical-align:top}th{background:#f3f3f3}.l{text-align:left}\n"
    "table.kv td{text-align:left;word-break:break-all}table.kv th{text-align:left;white-space:nowrap}\n"
    "table.classes,table.thresholds{font-size:.9em}table.sens,table.trace{font-size:.8em}\n"
    "table.sens td.l:first-child,table.trace td.l{word-break:break-all;min-width:12em}\n"
    "figure.wide{overflow-x:auto}figure.wide svg{max-width:none}nav{margin-bottom:1em}\n"
    ".bad{color:#b2182b;font-weight:bold}.note{color:#555;font-size:.9em}\n"
    "svg{display:block;max-width:100%;height:auto;margin:.4em 0}svg text{font-size:11px;fill:#222}\n"
    "svg text.bad{fill:#b2182b}svg text.on-dark{fill:#fff}svg text.note{fill:#777}\n"
    "figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.2em}\n"
    ".swatch{display:inline-block;width:1.6em;height:0;border-top:3px solid;vertical-align:middle;margin-right:.3em}\n"
    "@media print{body{max-width:none;margin:0}section{break-before:page;page-break-before:always}"
    "section:first-of-type{break-before:auto;page-break-before:auto}figure,.tensor{break-inside:avoid;"
    "page-break-inside:avoid}figure.wide svg{max-width:100%}nav{display:none}"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\n";

void html_page_begin(html_out *o, const char *title, const char *subject)
{
    html_put(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
    html_text(o, title, 0);
    if (subject) {
        html_put(o, ": ");
        html_text(o, subject, 0);
    }
    html_put(o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", page_css);
}

void html_kv_row(html_out *o, const char *key, const char *value)
{
    if (!value)
        return;
    html_put(o, "<tr><th>");
    html_text(o, key, 0);
    html_put(o, "</th><td>");
    html_text(o, value, 0);
    html_put(o, "</td></tr>\n");
}

void html_kv_json(html_out *o, const char *json)
{
    if (!json)
        return;
    cJSON *h = cJSON_Parse(json);
    if (!cJSON_IsObject(h) && o->st == PTQ_OK)
        o->st = ptq_fail(o->ctx, PTQ_ERR_INVALID_ARG, "cannot build the HTML report: header is not a JSON object");
    for (cJSON *it = h ? h->child : NULL; it && o->st == PTQ_OK; it = it->next) {
        char num[32], *val = NULL;
        if (cJSON_IsNumber(it)) /* whole numbers as they are, others to 4 digits */
            snprintf(num, sizeof num, it->valuedouble == floor(it->valuedouble) && fabs(it->valuedouble) < 1e15
                                          ? "%.0f" : "%.4g", it->valuedouble);
        else if (!cJSON_IsString(it))
            val = cJSON_PrintUnformatted(it);
        html_kv_row(o, it->string, cJSON_IsString(it) ? it->valuestring : cJSON_IsNumber(it) ? num : val ? val : "?");
        free(val);
    }
    cJSON_Delete(h);
}

/* ---- paired bars ---- */

#define BAR_LABEL_W 170 /* px: class names, right-aligned */
#define BAR_PLOT_W 420
#define BAR_NOTE_W 190  /* values and delta */
#define BAR_H 9
#define BAR_ROW_H 24
#define BAR_TOP 34      /* legend */
#define BAR_BOTTOM 26   /* axis labels */
#define LABEL_CHARS 24

static const char *const COLOR_A = "#4e79a7", *const COLOR_B = "#f28e2b";

void html_svg_paired_bars(html_out *o, const char *what, const char *a_name, const char *b_name,
                          const html_bar_row *rows, int n)
{
    const int w = BAR_LABEL_W + BAR_PLOT_W + BAR_NOTE_W, h = BAR_TOP + n * BAR_ROW_H + BAR_BOTTOM;
    const int x0 = BAR_LABEL_W;
    html_put(o, "<svg class=\"bars\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", w, h, w, h);
    html_put(o, "<title>%s, %s against %s</title>\n", what, a_name, b_name);
    html_put(o,
             "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"17\">%s</text>\n"
             "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"17\">%s</text>\n",
             x0, COLOR_A, x0 + 16, a_name, x0 + 110, COLOR_B, x0 + 126, b_name);
    for (int t = 0; t <= 4; t++) {
        int x = x0 + t * BAR_PLOT_W / 4;
        html_put(o,
                 "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d%%</text>\n",
                 x, BAR_TOP - 4, x, BAR_TOP + n * BAR_ROW_H, x, h - 10, 25 * t);
    }
    for (int i = 0; i < n && o->st == PTQ_OK; i++) {
        const html_bar_row *r = &rows[i];
        const int y = BAR_TOP + i * BAR_ROW_H + (BAR_ROW_H - 2 * BAR_H) / 2;
        html_put(o, "<g class=\"row\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", x0 - 6, y + BAR_H + 3,
                 r->flagged ? " font-weight=\"bold\" class=\"bad\"" : "");
        html_text(o, r->label, LABEL_CHARS);
        html_put(o, "</text>\n");
        const double v[2] = {r->a, r->b};
        const char *names[2] = {a_name, b_name}, *colors[2] = {COLOR_A, COLOR_B};
        for (int side = 0; side < 2; side++) {
            double share = v[side] < 0 ? 0 : v[side] > 1 ? 1 : v[side];
            html_put(o, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>", x0,
                     y + side * BAR_H, share * BAR_PLOT_W, BAR_H - 1, colors[side]);
            html_text(o, r->label, 0);
            html_put(o, ": %s %s %.2f%%</title></rect>\n", what, names[side], 100 * v[side]);
        }
        const double delta = 100 * (r->b - r->a);
        html_put(o, "<text x=\"%d\" y=\"%d\"%s>%.1f%% / %.1f%% (%+.2f)</text></g>\n", x0 + BAR_PLOT_W + 8,
                 y + BAR_H + 3, delta < 0 && r->flagged ? " class=\"bad\"" : "", 100 * r->a, 100 * r->b, delta);
    }
    html_put(o, "</svg>\n");
}

/* ---- signed bars ---- */

#define SB_LABEL_W 300
#define SB_PLOT_W 360
#define SB_NOTE_W 110
#define SB_ROW_H 18
#define SB_BAR_H 11
#define SB_TOP 10
#define SB_BOTTOM 26
#define SB_LABEL_CHARS 46

/* A step of 1, 2 or 5 times a power of ten near span / n_ticks. */
static double nice_step(double span, int n_ticks)
{
    const double raw = span / n_ticks, mag = pow(10, floor(log10(raw)));
    return raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
}

void html_svg_signed_bars(html_out *o, const char *what, const html_sbar_row *rows, int n)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(rows[i].v)) {
            lo = fmin(lo, rows[i].v);
            hi = fmax(hi, rows[i].v);
        }
    if (hi - lo < 1e-9)
        hi = lo + 1;
    const double step = nice_step(hi - lo, 4);
    lo = floor(lo / step - 1e-9) * step;
    hi = ceil(hi / step + 1e-9) * step;
    const int w = SB_LABEL_W + SB_PLOT_W + SB_NOTE_W, h = SB_TOP + n * SB_ROW_H + SB_BOTTOM;
    const double px = SB_PLOT_W / (hi - lo);
    const double x_zero = SB_LABEL_W + (0 - lo) * px;
    html_put(o, "<svg class=\"sbars\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n<title>", w, h, w,
             h);
    html_text(o, what, 0);
    html_put(o, "</title>\n");
    for (int t = 0; lo + t * step <= hi + 1e-9 * step; t++) {
        const double v = lo + t * step, x = SB_LABEL_W + (v - lo) * px;
        html_put(o,
                 "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                 "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%+.3g</text>\n",
                 x, SB_TOP, x, SB_TOP + n * SB_ROW_H, x, h - 10, fabs(v) < 1e-12 ? 0.0 : v);
    }
    for (int i = 0; i < n && o->st == PTQ_OK; i++) {
        const html_sbar_row *r = &rows[i];
        const int y = SB_TOP + i * SB_ROW_H + (SB_ROW_H - SB_BAR_H) / 2;
        html_put(o, "<g class=\"row\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", SB_LABEL_W - 6, y + SB_BAR_H - 2);
        html_text(o, r->label, SB_LABEL_CHARS);
        html_put(o, "</text>\n");
        if (!isfinite(r->v)) {
            html_put(o, "<text x=\"%.1f\" y=\"%d\" class=\"note\">not measured</text></g>\n", x_zero + 4,
                     y + SB_BAR_H - 2);
            continue;
        }
        const double x = r->v < 0 ? x_zero + r->v * px : x_zero, bw = fabs(r->v) * px;
        html_put(o, "<rect class=\"sbar\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>", x, y,
                 bw > 0.5 ? bw : 0.5, SB_BAR_H, r->v < 0 ? "#e15759" : "#59a14f");
        html_text(o, r->label, 0);
        html_put(o, ": %s %+.2f points", what, r->v);
        if (r->note) {
            html_put(o, ", ");
            html_text(o, r->note, 0);
        }
        html_put(o, "</title></rect>\n<text x=\"%d\" y=\"%d\">%+.2f</text></g>\n", SB_LABEL_W + SB_PLOT_W + 8,
                 y + SB_BAR_H - 2, r->v);
    }
    html_put(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>\n</svg>\n", x_zero, SB_TOP - 4,
             x_zero, SB_TOP + n * SB_ROW_H);
}

/* ---- the planner's trace ---- */

#define TR_W 760
#define TR_H 280
#define TR_X0 56
#define TR_X1 (TR_W - 20)
#define TR_Y0 34
#define TR_Y1 (TR_H - 40)

static void trace_line(html_out *o, const html_trace_point *p, int n, int worst, double lo, double hi,
                       const char *kept_in)
{
    static const char *const colors[2] = {"#4e79a7", "#f28e2b"};
    const double px = n > 1 ? (double)(TR_X1 - TR_X0) / (n - 1) : 0, py = (TR_Y1 - TR_Y0) / (hi - lo);
    html_put(o, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[worst]);
    for (int i = 0; i < n; i++) {
        const double v = worst ? p[i].worst_drop_pts : p[i].top1_drop_pts;
        if (isfinite(v))
            html_put(o, "%s%.1f,%.1f", i ? " " : "", TR_X0 + i * px, TR_Y1 - (v - lo) * py);
    }
    html_put(o, "\"/>\n");
    for (int i = 0; i < n && o->st == PTQ_OK; i++) {
        const double v = worst ? p[i].worst_drop_pts : p[i].top1_drop_pts;
        if (!isfinite(v))
            continue;
        html_put(o, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>step %d", TR_X0 + i * px,
                 TR_Y1 - (v - lo) * py, colors[worst], i);
        if (p[i].moved) {
            html_put(o, " (");
            html_text(o, p[i].moved, 0);
            html_put(o, " to %s)", kept_in);
        } else {
            html_put(o, " (the starting plan)");
        }
        if (worst) {
            html_put(o, ": worst class ");
            html_text(o, p[i].worst ? p[i].worst : "?", 0);
            html_put(o, " lost %.2f recall points</title></circle>\n", v);
        } else {
            html_put(o, ": top-1 %.2f points below FP32</title></circle>\n", v);
        }
    }
}

void html_svg_trace(html_out *o, const html_trace_point *p, int n, double budget_pts, double class_budget_pts,
                    const char *kept_in)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        const double v[2] = {p[i].top1_drop_pts, p[i].worst_drop_pts};
        for (int j = 0; j < 2; j++)
            if (isfinite(v[j])) {
                lo = fmin(lo, v[j]);
                hi = fmax(hi, v[j]);
            }
    }
    if (isfinite(budget_pts))
        hi = fmax(hi, budget_pts);
    if (isfinite(class_budget_pts))
        hi = fmax(hi, class_budget_pts);
    if (hi - lo < 1e-9)
        hi = lo + 1;
    const double step = nice_step(hi - lo, 5);
    lo = floor(lo / step - 1e-9) * step;
    hi = ceil(hi / step + 1e-9) * step;
    const double py = (TR_Y1 - TR_Y0) / (hi - lo), px = n > 1 ? (double)(TR_X1 - TR_X0) / (n - 1) : 0;
    html_put(o, "<svg class=\"trace\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n"
                "<title>points lost against FP32 after each move to %s</title>\n",
             TR_W, TR_H, TR_W, TR_H, kept_in);
    html_put(o, "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"#4e79a7\" stroke-width=\"2\"/>"
                "<text x=\"%d\" y=\"18\">top-1</text>"
                "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"#f28e2b\" stroke-width=\"2\"/>"
                "<text x=\"%d\" y=\"18\">worst class recall</text>"
                "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"#444\" stroke-dasharray=\"5 3\"/>"
                "<text x=\"%d\" y=\"18\">budgets</text>\n",
             TR_X0, TR_X0 + 20, TR_X0 + 24, TR_X0 + 80, TR_X0 + 100, TR_X0 + 104, TR_X0 + 240, TR_X0 + 260,
             TR_X0 + 264);
    for (int t = 0; lo + t * step <= hi + 1e-9 * step; t++) {
        const double v = lo + t * step, y = TR_Y1 - (v - lo) * py;
        html_put(o,
                 "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>"
                 "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
                 TR_X0, y, TR_X1, y, fabs(v) < 1e-12 ? "#999" : "#eee", TR_X0 - 4, y + 4, fabs(v) < 1e-12 ? 0.0 : v);
    }
    const int every = n > 15 ? (n + 14) / 15 : 1;
    for (int i = 0; i < n; i += every)
        html_put(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", TR_X0 + i * px, TR_Y1 + 16, i);
    html_put(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">moves to %s</text>\n"
                "<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">points lost</text>\n",
             (TR_X0 + TR_X1) / 2, TR_H - 6, kept_in, (TR_Y0 + TR_Y1) / 2, (TR_Y0 + TR_Y1) / 2);
    const double budgets[2] = {budget_pts, class_budget_pts};
    static const char *const budget_colors[2] = {"#4e79a7", "#f28e2b"};
    for (int j = 0; j < 2; j++)
        if (isfinite(budgets[j]))
            html_put(o, "<line class=\"budget\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-dasharray=\"5 3\"><title>%s budget: %.2f points</title></line>\n",
                     TR_X0, TR_Y1 - (budgets[j] - lo) * py, TR_X1, TR_Y1 - (budgets[j] - lo) * py, budget_colors[j],
                     j ? "class" : "top-1", budgets[j]);
    trace_line(o, p, n, 1, lo, hi, kept_in);
    trace_line(o, p, n, 0, lo, hi, kept_in);
    html_put(o, "</svg>\n");
}

/* ---- heatmap ---- */

#define MAP_LABEL_W 150 /* row labels */
#define MAP_TOP 120     /* rotated column labels */
#define MAP_RIGHT 110   /* room for the last rotated label */
#define MAP_LEGEND_H 40
#define MAP_LEGEND_STEPS 9

static int map_cell_px(int k)
{
    return k <= 10 ? 40 : k <= 20 ? 28 : k <= 50 ? 16 : k <= 100 ? 12 : 8;
}

void html_heat_rgb(double x, double x_max, int diverging, uint8_t rgb[3])
{
    static const int ends[3][3] = {{8, 69, 148}, {178, 24, 43}, {33, 102, 172}}; /* blue; red, blue (diverging) */
    const int *e = ends[diverging ? (x > 0 ? 1 : 2) : 0];
    double t = x_max > 0 ? sqrt(fabs(x) / x_max) : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    for (int i = 0; i < 3; i++)
        rgb[i] = (uint8_t)lround(255 + t * (e[i] - 255));
}

/* Writes the fill of x as "rgb(...)" and returns its intensity in [0, 1]. */
static double cell_color(char *buf, size_t n_bytes, double x, double x_max, int diverging)
{
    uint8_t rgb[3];
    html_heat_rgb(x, x_max, diverging, rgb);
    snprintf(buf, n_bytes, "rgb(%d,%d,%d)", rgb[0], rgb[1], rgb[2]);
    const double t = x_max > 0 ? sqrt(fabs(x) / x_max) : 0;
    return t > 1 ? 1 : t;
}

static void heatmap_legend(html_out *o, int y, int64_t x_max, int diverging)
{
    const int step_px = 22;
    for (int i = 0; i < MAP_LEGEND_STEPS; i++) {
        const double f = (double)i / (MAP_LEGEND_STEPS - 1); /* 0 .. 1 along the bar */
        char fill[32];
        cell_color(fill, sizeof fill, (double)x_max * (diverging ? 2 * f - 1 : f), (double)x_max, diverging);
        html_put(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"%s\"/>\n", MAP_LABEL_W + step_px * i,
                 y, step_px, fill);
    }
    const int x1 = MAP_LABEL_W + step_px * MAP_LEGEND_STEPS;
    html_put(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"none\" stroke=\"#aaa\"/>\n", MAP_LABEL_W, y,
             x1 - MAP_LABEL_W);
    if (diverging)
        html_put(o,
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"start\">-%lld</text>"
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">0</text>"
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">+%lld</text>\n",
                 MAP_LABEL_W, y + 25, (long long)x_max, (MAP_LABEL_W + x1) / 2, y + 25, x1, y + 25, (long long)x_max);
    else
        html_put(o,
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"start\">0</text>"
                 "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n",
                 MAP_LABEL_W, y + 25, x1, y + 25, (long long)x_max);
}

void html_svg_heatmap(html_out *o, int k, const char *const *labels, const int64_t *cells, int diverging)
{
    /* small cells: labels 3 px shorter than a row (style beats the page's CSS), and the column labels
     * upright so that neighbours never overlap */
    const int c = map_cell_px(k), show_counts = c >= 28, upright = c < 28, font_px = c < 14 ? c - 3 : 11;
    char label_style[48] = "";
    if (c < 14)
        snprintf(label_style, sizeof label_style, " style=\"font-size:%dpx\"", font_px);
    const int w = MAP_LABEL_W + k * c + MAP_RIGHT, h = MAP_TOP + k * c + MAP_LEGEND_H;
    int64_t x_max = 0;
    for (int64_t i = 0; i < (int64_t)k * k; i++)
        if (llabs((long long)cells[i]) > x_max)
            x_max = llabs((long long)cells[i]);
    html_put(o, "<svg class=\"heatmap\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", w, h, w,
             h);
    for (int j = 0; j < k && o->st == PTQ_OK; j++) {
        const int x = MAP_LABEL_W + j * c + c / 2 + (upright ? font_px * 7 / 20 : 0); /* centre the glyphs */
        html_put(o, "<text class=\"cl\" x=\"%d\" y=\"%d\" transform=\"rotate(%d %d %d)\"%s>", x, MAP_TOP - 6,
                 upright ? -90 : -50, x, MAP_TOP - 6, label_style);
        html_text(o, labels[j], 18);
        html_put(o, "</text>\n");
    }
    for (int r = 0; r < k && o->st == PTQ_OK; r++) {
        const int y = MAP_TOP + r * c;
        html_put(o, "<text class=\"rl\" x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", MAP_LABEL_W - 6,
                 y + c / 2 + font_px * 7 / 20, label_style);
        html_text(o, labels[r], 22);
        html_put(o, "</text>\n");
        for (int j = 0; j < k && o->st == PTQ_OK; j++) {
            const int64_t x = cells[(int64_t)r * k + j];
            char fill[32];
            const double t = cell_color(fill, sizeof fill, (double)x, (double)x_max, diverging);
            html_put(o, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>true ",
                     MAP_LABEL_W + j * c, y, c, c, fill);
            html_text(o, labels[r], 0);
            html_put(o, ", predicted ");
            html_text(o, labels[j], 0);
            html_put(o, diverging && x > 0 ? ": +%lld</title></rect>\n" : ": %lld</title></rect>\n", (long long)x);
            if (show_counts && x != 0)
                html_put(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\"%s pointer-events=\"none\">%s%lld</text>\n",
                         MAP_LABEL_W + j * c + c / 2, y + c / 2 + 4, t > 0.6 ? " class=\"on-dark\"" : "",
                         diverging && x > 0 ? "+" : "", (long long)x);
        }
    }
    /* the diagonal outlined over the cells, and the grid's border */
    for (int r = 0; r < k; r++)
        html_put(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\" "
                    "pointer-events=\"none\"/>\n",
                 MAP_LABEL_W + r * c, MAP_TOP + r * c, c, c);
    html_put(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#ccc\"/>\n", MAP_LABEL_W,
             MAP_TOP, k * c, k * c);
    heatmap_legend(o, MAP_TOP + k * c + 10, x_max, diverging);
    html_put(o, "</svg>\n");
}

/* ---- log-count histogram ---- */

#define HIST_W 760
#define HIST_H 250
#define HIST_X0 56
#define HIST_X1 (HIST_W - 16)
#define HIST_Y0 12
#define HIST_Y1 (HIST_H - 34)

void html_svg_log_hist(html_out *o, const int64_t *bars, int64_t n, double bar_width, const html_marker *m,
                       int n_markers)
{
    double x_max = (double)n * bar_width;
    int64_t c_max = 0;
    for (int i = 0; i < n_markers; i++)
        if (isfinite(m[i].x) && m[i].x > x_max)
            x_max = m[i].x;
    for (int64_t j = 0; j < n; j++)
        if (bars[j] > c_max)
            c_max = bars[j];
    x_max *= 1.02;
    if (!(x_max > 0))
        x_max = 1;
    const double y_top = log10(1.0 + (double)(c_max > 0 ? c_max : 1));
    const double px = (HIST_X1 - HIST_X0) / x_max, py = (HIST_Y1 - HIST_Y0) / y_top;
    html_put(o, "<svg class=\"hist\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n", HIST_W, HIST_H,
             HIST_W, HIST_H);
    /* count axis: powers of ten */
    for (int e = 0; e <= (int)floor(log10((double)(c_max > 0 ? c_max : 1))); e++) {
        double y = HIST_Y1 - log10(1.0 + pow(10, e)) * py;
        char label[16];
        ptq_snprintf_c(label, sizeof label, e < 3 ? "%.0f" : "1e%.0f", e < 3 ? pow(10, e) : (double)e);
        html_put(o,
                 "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                 "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                 HIST_X0, y, HIST_X1, y, HIST_X0 - 4, y + 4, label);
    }
    for (int64_t j = 0; j < n && o->st == PTQ_OK; j++) {
        if (!bars[j])
            continue;
        double hgt = log10(1.0 + (double)bars[j]) * py;
        html_put(o,
                 "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#8da0cb\">"
                 "<title>|x| in [%.4g, %.4g): %lld</title></rect>\n",
                 HIST_X0 + (double)j * bar_width * px, HIST_Y1 - hgt, fmax(bar_width * px - 0.3, 0.5), hgt,
                 (double)j * bar_width, (double)(j + 1) * bar_width, (long long)bars[j]);
    }
    html_put(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", HIST_X0, HIST_Y1, HIST_X1,
             HIST_Y1);
    /* |x| ticks at 1, 2 or 5 times a power of ten */
    const double step = nice_step(x_max, 5);
    for (int t = 0; t * step <= x_max; t++) {
        double x = t * step;
        html_put(o,
                 "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>"
                 "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.3g</text>\n",
                 HIST_X0 + x * px, HIST_Y1, HIST_X0 + x * px, HIST_Y1 + 4, HIST_X0 + x * px, HIST_Y1 + 16, x);
    }
    html_put(o, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">|x|</text>\n", (HIST_X0 + HIST_X1) / 2, HIST_H - 4);
    html_put(o, "<text x=\"12\" y=\"%d\" transform=\"rotate(-90 12 %d)\" text-anchor=\"middle\">count (log)</text>\n",
             (HIST_Y0 + HIST_Y1) / 2, (HIST_Y0 + HIST_Y1) / 2);
    for (int pass = 1; pass >= 0; pass--)
        for (int i = 0; i < n_markers && o->st == PTQ_OK; i++) {
            if (!isfinite(m[i].x) || (m[i].wide != 0) != pass)
                continue;
            double x = HIST_X0 + m[i].x * px;
            html_put(o,
                     "<line class=\"thr\" data-method=\"%s\" data-amax=\"%.9g\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" "
                     "y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"%s%s%s><title>",
                     m[i].key, m[i].x, x, HIST_Y0, x, HIST_Y1, m[i].color, pass ? "7\" stroke-opacity=\"0.45" : "2",
                     *m[i].dash ? " stroke-dasharray=\"" : "", m[i].dash, *m[i].dash ? "\"" : "");
            html_text(o, m[i].label, 0);
            html_put(o, ": amax %.6g", m[i].x);
            if (!isnan(m[i].clipped))
                html_put(o, ", %.4f%% clipped", 100 * m[i].clipped);
            html_put(o, "</title></line>\n");
        }
    html_put(o, "</svg>\n");
}
