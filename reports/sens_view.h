/* What the HTML pages show of a sensitivity report (sens.json of `ptq
 * sensitivity`) and of the budgeted planner's trace (PLAN.trace.json of
 * `ptq plan --budget`), read back from their JSON: every field checked for
 * its type, missing figures as NAN. reports/sens_view.c; not public API;
 * covered by tests/test_sens_html.c. */
#ifndef PTQ_REPORTS_SENS_VIEW_H
#define PTQ_REPORTS_SENS_VIEW_H

#include <stdint.h>

#include "ptq/status.h"
#include "reports/html.h"

typedef struct sens_row {
    char *name;
    int is_weight;
    char prec_default[16];
    int measured_a;         /* "only" was measured */
    double only_delta_pts;  /* top-1 change with only this tensor quantized */
    double only_sqnr_db;    /* INFINITY when identical, NAN when unknown */
    double only_kl_nats, only_agreement;
    int worst;              /* the class the "only" run hurt most, -1 if none */
    double worst_drop_pts;
    int measured_b;         /* "all but" was measured (the tensor is quantized in the default plan) */
    double recovered_pts;   /* the default plan with this tensor in FP16 (FP32: ort-cpu) against the default plan */
} sens_row;

typedef struct sens_view {
    char model_sha256[65];  /* "" when the report has none */
    char archive_sample_ids_sha256[65]; /* the calibration archive's samples, "" when the report has none */
    char *header_json;      /* the report's own fields (model, archive, data, core, method...), for the summary */
    int64_t samples;
    int k;
    char **class_names;     /* [k], NULL entries where the report has none */
    double top1_fp32, top1_default;
    const char *kept_in;    /* "FP16", or "FP32" for target ort-cpu: where an "all but" run keeps its tensor */
    int64_t n;
    sens_row *t;            /* [n] in the report's (plan) order */
    int64_t *harm;          /* [n] row indices, most harmful first: only top-1 lost, then SQNR, unmeasured last */
} sens_view;

ptq_status sens_view_read(ptq_ctx *ctx, const char *json, sens_view *v);
void sens_view_free(sens_view *v);
/* The class's name, or its index printed into buf. */
const char *sens_view_class(const sens_view *v, int c, char *buf, int n_bytes);

typedef struct trace_step {
    char *moved;            /* NULL at step 0 (the starting plan) */
    double top1, top1_drop_pts;
    int worst;
    char *worst_name;       /* may be NULL */
    double worst_drop_pts;
    int64_t n_fp16;         /* tensors in kept_in (FP16 or FP32) after the step */
} trace_step;

typedef struct trace_view {
    char model_sha256[65];  /* the model of the plan traced; "" for a trace from before ptq recorded it */
    double budget_pts, class_budget_pts; /* NAN when absent */
    int met;
    double top1_fp32;
    const char *kept_in;    /* "FP16", or "FP32" for target ort-cpu: where a move puts a tensor */
    int64_t n;
    trace_step *s;          /* [n] */
} trace_view;

ptq_status trace_view_read(ptq_ctx *ctx, const char *json, trace_view *v);
void trace_view_free(trace_view *v);

/* The page sections (reports/sens_html.c): <section id="sensitivity"> with
 * the two bar charts and the table, <section id="trace"> with the trace's
 * chart and table. */
void html_put_sensitivity(html_out *o, const sens_view *v);
void html_put_trace(html_out *o, const trace_view *t);

#endif
