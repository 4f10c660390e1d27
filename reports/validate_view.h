/* What every rendering of the validation report needs (JSON, Markdown,
 * summary in reports/validate_report.c; HTML in reports/validate_html.c):
 * per-class metrics of both sides and the class order, flagged classes by
 * drop first, then the rest by index. Not public API. */
#ifndef PTQ_VALIDATE_VIEW_H
#define PTQ_VALIDATE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "ptq/report.h"
#include "ptq/validate_report.h"

typedef struct validate_view {
    int k;
    double flag_pts;
    const char *const *names;
    const char *header_json;
    ptq_validate_totals t;
    ptq_class_metrics *mf, *mq; /* [k] */
    double *drop_pts;           /* [k]: recall fp32 - quant, points */
    int *order;                 /* [k] */
    int n_flagged;
    const ptq_validate_stats *s;
} validate_view;

ptq_status validate_view_make(ptq_ctx *ctx, const ptq_validate_stats *s, const ptq_validate_opts *opts,
                              validate_view *v);
void validate_view_free(validate_view *v);
/* The class's name, or its index printed into buf. */
const char *validate_view_class_name(const validate_view *v, int c, char *buf, size_t n_bytes);
/* Confusion cell (row-major index) of which: 0 fp32, 1 quantized, 2 quantized - fp32. */
int64_t validate_view_cell(const validate_view *v, int which, int64_t cell);

#endif
