/* The validation report as one self-contained HTML page (report.html of
 * `ptq validate`): inline CSS and SVG, no script, no font, no address of
 * anything outside the file, laid out to print one section per page. The
 * summary, per-class recall and precision as paired bars (flagged classes
 * first), the FP32, quantized and difference confusion matrices as heatmaps
 * (each cell's count in its <title>, shown on hover), and, from a
 * calibration archive, the |x| histograms of planned activations with the
 * calibrators' thresholds marked; with a sensitivity report and a planner
 * trace, their charts too. The sensitivity page, and the heatmaps as PNG.
 * reports/validate_html.c (page), reports/sens_html.c (sensitivity page and
 * sections), reports/html.c (escaping and SVG charts), reports/html_hists.c
 * (histograms), reports/heatmap_png.c (PNG); covered by
 * tests/test_html_report.c, tests/test_sens_html.c, tests/test_heatmap_png.c,
 * tests/cli_html_test.py and tests/browser_report_test.py. */
#ifndef PTQ_HTML_REPORT_H
#define PTQ_HTML_REPORT_H

#include <stdint.h>

#include "ptq/export_api.h"
#include "ptq/calib.h"
#include "ptq/calibrator.h"
#include "ptq/observer.h"
#include "ptq/plan.h"
#include "ptq/status.h"
#include "ptq/validate_report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTQ_HTML_HISTS_DEFAULT 8    /* tensors shown when n_max is 0 */
#define PTQ_HTML_HIST_MAX_BARS 128  /* bars a histogram is drawn with, at most */

/* One activation's |x| histogram, regrouped for drawing, and its ranges. */
typedef struct ptq_html_hist {
    char *name;                 /* the tensor */
    ptq_prec prec;              /* its precision in the plan (int8, fp8-e4m3, fp8-e5m2) */
    ptq_qformat format;         /* the grid of prec the ranges are for */
    double plan_amax;           /* the plan's scale x the format's largest level */
    double percentile;          /* the percentile range's p (99.99) */
    ptq_calib_range range[4];   /* indexed by ptq_calib_method, each on prec's grid */
    ptq_observer_stats stats;   /* the archive's counts (zeros, NaN and Inf are not in the bars) */
    int64_t n_bars;             /* <= PTQ_HTML_HIST_MAX_BARS */
    double bar_width;           /* |x| per bar: a whole number of the observer's bins */
    int64_t *bars;              /* [n_bars]: bar j holds |x| in [j, j + 1) * bar_width */
} ptq_html_hist;

/* The histograms of the first n_max (0: PTQ_HTML_HISTS_DEFAULT) activations
 * the plan quantizes (int8 or fp8), in plan order (graph order for a plan of
 * `ptq plan`), that the archive observed with a nonzero finite value; their
 * minmax, entropy, percentile (99.99) and mse ranges by ptq_calib_compute on
 * the plan's grid. The archive must come from the plan's model (SHA-256;
 * PTQ_ERR_INVALID_ARG otherwise). *out: [*n_out], freed by ptq_html_hists_free. */
PTQ_API ptq_status ptq_html_hists_make(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan, int64_t n_max,
                                       ptq_html_hist **out, int64_t *n_out);
PTQ_API void ptq_html_hists_free(ptq_html_hist *h, int64_t n); /* NULL is a no-op */

/* The histograms of the first n_max (0: PTQ_HTML_HISTS_DEFAULT) activations
 * of the sensitivity report sens_json (ptq_sens_format_json) in harm order
 * (top-1 lost when only the tensor is quantized, then SQNR) that the plan
 * covers and the archive observed with a nonzero finite value. A tensor the
 * plan keeps in FP16 or FP32 gets its ranges on the grid of the plan's core
 * format and no plan threshold (plan_amax NAN). The archive and the report
 * must come from the plan's model, and the report from the archive (its
 * archive_sample_ids_sha256, when it has one) (PTQ_ERR_INVALID_ARG); a
 * malformed report is PTQ_ERR_FORMAT. Freed by ptq_html_hists_free. */
PTQ_API ptq_status ptq_html_hists_ranked(ptq_ctx *ctx, const ptq_calib_set *archive, const ptq_plan *plan,
                                         const char *sens_json, int64_t n_max, ptq_html_hist **out, int64_t *n_out);

/* Checks, before any work, what a page will read back: a sensitivity report
 * and a planner trace (PLAN.trace.json of `ptq plan --budget`), each of the
 * model whose SHA-256 is model_sha256 when both have one (a trace written
 * before traces recorded their plan's model has none and passes). NULL skips
 * one. PTQ_ERR_FORMAT naming what is off; PTQ_ERR_INVALID_ARG for another
 * model. */
PTQ_API ptq_status ptq_html_inputs_check(ptq_ctx *ctx, const char *model_sha256, const char *sens_json,
                                         const char *trace_json);

/* What the page shows beyond the statistics; every field may be NULL / 0. */
typedef struct ptq_html_extra {
    const char *model, *plan, *data, *calib; /* paths as given, shown in the summary */
    const ptq_html_hist *hists;              /* [n_hists] */
    int64_t n_hists;
    const char *sens_json;  /* a sensitivity report: per-tensor bars of both modes and its table */
    const char *trace_json; /* the budgeted planner's trace: the points lost after each move */
    int hists_ranked;       /* the hists are in sensitivity order (ptq_html_hists_ranked), not plan order */
} ptq_html_extra;

/* The page as a malloc'd NUL-terminated string; opts and extra may be NULL.
 * Every string from outside (class names, header fields, paths, tensor
 * names) is escaped (& < > " '); the same input gives the same bytes.
 * Above 100 classes the heatmaps are left out (the JSON has the matrices)
 * and the bar charts show the flagged classes and then the first ones, 100
 * rows in all. */
PTQ_API ptq_status ptq_validate_format_html(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                            const ptq_html_extra *extra, char **out);

/* The sensitivity page (report of `ptq sensitivity`) from its JSON report
 * (ptq_sens_format_json): the summary, per tensor the top-1 change with only
 * it quantized and the top-1 the default plan recovers with only it in
 * FP16, each as bars sorted from the largest effect (at most
 * PTQ_HTML_SENS_MAX_BARS), the full table in harm order, and from extra (may
 * be NULL; model, plan and data unused) the planner's trace and the
 * histograms. Malformed JSON is PTQ_ERR_FORMAT. */
#define PTQ_HTML_SENS_MAX_BARS 40
PTQ_API ptq_status ptq_sens_format_html(ptq_ctx *ctx, const char *sens_json, const ptq_html_extra *extra, char **out);

/* A k x k heatmap of cells [k * k] (row-major, rows true class) labelled
 * with labels [k] (NULL entries: the index) as the bytes of an RGB PNG file,
 * *png malloc'd: title on top, the colours of the HTML heatmaps (diverging:
 * blue - white - red), labels in a 5x7 bitmap font (non-ASCII characters as
 * '?', cut after 18 characters), counts in cells large enough, a colour bar
 * with its ends' values. 1 <= k <= 256. */
PTQ_API ptq_status ptq_heatmap_png(ptq_ctx *ctx, int k, const char *const *labels, const int64_t *cells,
                                   int diverging, const char *title, void **png, size_t *n_bytes);

/* The validation's confusion matrix `which` (0 FP32, 1 quantized, 2 the
 * difference quantized - FP32, diverging) by ptq_heatmap_png, titled and
 * labelled with the class names. At most PTQ_HTML_MAX_CLASSES classes
 * (PTQ_ERR_INVALID_ARG above: the JSON has the matrices). */
#define PTQ_HTML_MAX_CLASSES 100
PTQ_API ptq_status ptq_validate_format_png(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                           int which, void **png, size_t *n_bytes);

#ifdef __cplusplus
}
#endif
#endif
