/* Writing self-contained HTML: a text buffer whose first failure sticks
 * (so a page is written without a check per line), HTML escaping, and three
 * inline SVG charts (paired bars, a heatmap, a histogram with log counts).
 * Used by reports/validate_html.c; covered by tests/test_html_report.c.
 * Not public API. */
#ifndef PTQ_REPORTS_HTML_H
#define PTQ_REPORTS_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/export.h" /* ptq_buf */
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
 * characters (UTF-8 sequences kept whole) and adds an ellipsis. */
void html_text(html_out *o, const char *s, size_t max_chars);

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

/* A k x k heatmap of cells [k * k] (row-major; rows true class, columns
 * prediction) labelled with labels [k]. Sequential white-to-blue (square
 * root of count / max), or with diverging set blue (negative) - white (0) -
 * red (positive). Every cell is a <rect class="cell"> whose <title> holds
 * "true A, predicted B: count"; the count is also printed when cells are
 * large enough. */
void html_svg_heatmap(html_out *o, int k, const char *const *labels, const int64_t *cells, int diverging);

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

#endif
