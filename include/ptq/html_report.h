/* The validation report as one self-contained HTML page (report.html of
 * `ptq validate`): inline CSS and SVG, no script, no font, no address of
 * anything outside the file, laid out to print one section per page. The
 * summary, per-class recall and precision as paired bars (flagged classes
 * first), the FP32, quantized and difference confusion matrices as heatmaps
 * (each cell's count in its <title>, shown on hover), and, from a
 * calibration archive, the |x| histograms of planned activations with the
 * calibrators' thresholds marked. reports/validate_html.c (page),
 * reports/html.c (escaping and SVG charts), reports/html_hists.c
 * (histograms); covered by tests/test_html_report.c and
 * tests/cli_html_test.py. */
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

/* What the page shows beyond the statistics; every field may be NULL / 0. */
typedef struct ptq_html_extra {
    const char *model, *plan, *data, *calib; /* paths as given, shown in the summary */
    const ptq_html_hist *hists;              /* [n_hists] */
    int64_t n_hists;
} ptq_html_extra;

/* The page as a malloc'd NUL-terminated string; opts and extra may be NULL.
 * Every string from outside (class names, header fields, paths, tensor
 * names) is escaped (& < > " '); the same input gives the same bytes.
 * Above 100 classes the heatmaps are left out (the JSON has the matrices)
 * and the bar charts show the flagged classes and then the first ones, 100
 * rows in all. */
PTQ_API ptq_status ptq_validate_format_html(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                                            const ptq_html_extra *extra, char **out);

#ifdef __cplusplus
}
#endif
#endif
