/* Writing self-contained HTML: a text buffer whose first failure sticks
 * (so a page is written without a check per line), HTML escaping, the
 * page's head and style, and inline SVG charts (paired bars, signed bars, a
 * heatmap, a histogram with log counts, the planner's trace). Used by
 * reports/validate_html.c and reports/sens_html.c; covered by
 * tests/test_html_report.c and tests/test_sens_html.c. Not public API. */
#ifndef PTQ_REPORTS_HTML_H
#define PTQ_REPORTS_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export.h" /* ptq_buf */
#include "ptq/html_report.h"
#include "ptq/status.h"

typedef struct html_out {
    ptq_ctx *ctx;
    ptq_buf b;
    ptq_status st; /* the first failure; later writes do nothing */
} html_out;

/* Appends printf-formatted text as it is (markup, numbers). */
void html_put(html_out *o, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s escaped for text and attribute values: & < > " ' as entities,
 * other control characters as spaces. max_chars > 0 cuts s after that many
 * characters (UTF-8 sequences kept whole) and adds an ellipsis. Bidi
 * embeddings, overrides and isolates s opens are closed after it (PDF, PDI),
 * so that they do not reorder the text that follows. */
void html_text(html_out *o, const char *s, size_t max_chars);

/* "<!DOCTYPE html>" to "<body>" with the shared style; the <title> is title
 * and, when given, ": " and subject (escaped). */
void html_page_begin(html_out *o, const char *title, const char *subject);
/* A table of key/value rows from a JSON object's fields (strings as they
 * are, other values as JSON), each escaped; NULL adds nothing. */
void html_kv_json(html_out *o, const char *json);
/* One escaped key/value row of such a table; a NULL value adds nothing. */
void html_kv_row(html_out *o, const char *key, const char *value);

/* One row of a paired bar chart: two shares in [0, 1]. */
typedef struct html_bar_row {
    const char *label;
    double a, b;
    int flagged; /* drawn in the alarm colour */
} html_bar_row;

/* Horizontal bars, two per row (a_name and b_name, e.g. FP32 and
 * quantized), 0-100% axis, each bar's value in its <title>, the delta (b - a,
 * points) written at the right. what names the metric ("recall"). */
void html_svg_paired_bars(html_out *o, const char *what, const char *a_name, const char *b_name,
                          const html_bar_row *rows, int n);

/* One row of a signed bar chart: a value in points, NAN when not measured. */
typedef struct html_sbar_row {
    const char *label;
    double v;
    const char *note; /* after the value in its <title>, may be NULL */
} html_sbar_row;

/* Horizontal bars from a zero line, negative ones red and positive ones
 * green, each a <rect class="sbar"> whose <title> holds the label and the
 * value; the value is written at the right, "not measured" for NAN. what
 * names the quantity ("top-1 change"). */
void html_svg_signed_bars(html_out *o, const char *what, const html_sbar_row *rows, int n);

/* One point of the planner's trace. */
typedef struct html_trace_point {
    const char *moved;        /* NULL at the start */
    double top1_drop_pts;     /* top-1 lost against FP32 */
    double worst_drop_pts;    /* recall lost by the worst class */
    const char *worst;        /* that class */
} html_trace_point;

/* The points lost after each move (top-1 and the worst class's recall) as
 * two lines of <circle class="pt"> marks (each with a <title>), with the
 * budget and class budget (NAN: none) as dashed lines; kept_in ("FP16",
 * "FP32") names where a move puts a tensor. */
void html_svg_trace(html_out *o, const html_trace_point *p, int n, double budget_pts, double class_budget_pts,
                    const char *kept_in);

/* A k x k heatmap of cells [k * k] (row-major; rows true class, columns
 * prediction) labelled with labels [k]. Sequential white-to-blue (square
 * root of count / max), or with diverging set blue (negative) - white (0) -
 * red (positive). Every cell is a <rect class="cell"> whose <title> holds
 * "true A, predicted B: count"; the count is also printed when cells are
 * large enough. */
void html_svg_heatmap(html_out *o, int k, const char *const *labels, const int64_t *cells, int diverging);

/* The heatmap colour of x on a scale whose extreme is x_max (> 0): from
 * white by the square root of |x| / x_max (so that small off-diagonal counts
 * still show) to blue, or with diverging to red (x > 0) and blue (x < 0).
 * Shared by the SVG heatmaps and the PNG ones (reports/heatmap_png.c). */
void html_heat_rgb(double x, double x_max, int diverging, uint8_t rgb[3]);

/* A vertical line drawn over a histogram at |x| = x. */
typedef struct html_marker {
    const char *key;   /* data-method attribute: "minmax", "entropy", ... */
    const char *label; /* shown in its <title> */
    double x;
    double clipped;    /* share clipped at x, for the <title> */
    const char *color; /* CSS colour */
    const char *dash;  /* stroke-dasharray, "" for solid */
    int wide;          /* a wide translucent band (drawn first: lines on the same x stay visible) */
} html_marker;

/* bars [n] of width bar_width, counts on a log10(1 + count) axis, the x
 * axis from 0 to past the last bar or marker; markers as vertical lines
 * <line class="thr" data-method=key data-amax=x>, the wide ones first;
 * clipped NaN leaves the share out of the title. */
void html_svg_log_hist(html_out *o, const int64_t *bars, int64_t n, double bar_width, const html_marker *m,
                       int n_markers);

/* The section of activation histograms: intro (markup) as its first
 * paragraph, then each tensor's histogram with the calibrators' thresholds
 * and the plan's, and a table of them. */
void html_put_hists(html_out *o, const char *intro, const ptq_html_hist *h, int64_t n);

#endif
