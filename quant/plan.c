/* Precision plans (include/ptq/plan.h): the default plan from a calibration
 * archive (FP16 edges, INT8/FP8 core, per-channel weight scales) and the
 * checks of a plan against its model. The JSON form is quant/plan_json.c.
 * Covered by tests/test_plan.c and tests/cli_plan_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/plan.h"
#include "quant/quant_internal.h"

static const char *const prec_names[] = {"fp32", "fp16", "int8", "fp8-e4m3", "fp8-e5m2"};

const char *ptq_prec_name(ptq_prec p)
{
    return (unsigned)p <= PTQ_PREC_FP8_E5M2 ? prec_names[p] : "?";
}

ptq_status ptq_prec_parse(ptq_ctx *ctx, const char *s, ptq_prec *out)
{
    for (int i = 0; i <= PTQ_PREC_FP8_E5M2; i++)
        if (strcmp(s, prec_names[i]) == 0) {
            *out = (ptq_prec)i;
            return PTQ_OK;
        }
    if (strcmp(s, "fp8") == 0) {
        *out = PTQ_PREC_FP8_E4M3;
        return PTQ_OK;
    }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown precision '%s' (choices: fp32, fp16, int8, fp8-e4m3, fp8-e5m2)",
                    s);
}

void ptq_plan_free(ptq_plan *p)
{
    if (!p)
        return;
    for (int64_t i = 0; i < p->n; i++) {
        free(p->e[i].name);
        free(p->e[i].scales);
        free(p->e[i].source);
    }
    free(p->e);
    free(p->model_name);
    free(p->archive);
    free(p->method);
    free(p);
}

int ptq_prec_is_quantized(ptq_prec p)
{
    return p == PTQ_PREC_INT8 || p == PTQ_PREC_FP8_E4M3 || p == PTQ_PREC_FP8_E5M2;
}

static ptq_qformat qformat_of(ptq_prec p)
{
    return p == PTQ_PREC_FP8_E4M3 ? PTQ_QFORMAT_FP8_E4M3 : p == PTQ_PREC_FP8_E5M2 ? PTQ_QFORMAT_FP8_E5M2
                                                                                  : PTQ_QFORMAT_INT8;
}

/* The channel axis of weight value v as input `input` of node n: Conv's
 * output channels (0), Gemm's output axis (0 with transB, else 1), MatMul's
 * last axis; -1 (one scale) for a constant first input. */
static int weight_axis(const ptq_node *n, const ptq_value *v, int input)
{
    if (input != 1 || v->ndim < 1)
        return -1;
    if (strcmp(n->op_type, "Conv") == 0)
        return 0;
    if (strcmp(n->op_type, "Gemm") == 0)
        return ptq_node_attr_int(n, "transB", 0) ? 0 : (v->ndim >= 2 ? 1 : 0);
    return v->ndim - 1;
}

/* The node and input slot that make value v a weight, or NULL. */
static const ptq_node *weight_user(const ptq_graph *g, int v, int *input)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if (!ptq_op_is_weighted(n->op_type))
            continue;
        for (int i = 0; i < n->n_inputs && i < 2; i++)
            if (n->inputs[i] == v) {
                *input = i;
                return n;
            }
    }
    return NULL;
}

static int64_t channels_along(const ptq_value *v, int axis)
{
    return axis < 0 ? 1 : v->dims[axis];
}

/* scales[c] = max|w| over channel c along axis / qmax (1 for a channel of zeros). */
static ptq_status weight_scales(ptq_ctx *ctx, const ptq_value *v, int axis, double qmax, float **out, int64_t *n_out)
{
    *out = NULL;
    if (v->dtype != PTQ_DT_FLOAT || !v->data || v->ndim < 0)
        return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "weight '%s' is not a float32 constant with data", v->name);
    const weight_runs wr = weight_runs_of(v, axis);
    const int64_t n_ch = wr.n_ch;
    double *amax = calloc((size_t)n_ch + 1, sizeof *amax);
    float *scales = malloc(((size_t)n_ch + 1) * sizeof *scales);
    if (!amax || !scales) {
        free(amax);
        free(scales);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the scales of '%s'", v->name);
    }
    const float *w = v->data;
    for (int64_t r = 0; r < wr.n_runs; r++)
        for (int64_t k = 0; k < wr.inner; k++) {
            const double a = fabs((double)w[r * wr.inner + k]);
            if (a > amax[r % n_ch])
                amax[r % n_ch] = a;
        }
    for (int64_t c = 0; c < n_ch; c++) {
        if (!isfinite(amax[c])) {
            free(amax);
            free(scales);
            return ptq_fail(ctx, PTQ_ERR_DATA, "weight '%s' holds a non-finite value in channel %lld", v->name,
                            (long long)c);
        }
        scales[c] = amax[c] > 0 ? (float)(amax[c] / qmax) : 1.0f;
    }
    free(amax);
    *out = scales;
    *n_out = n_ch;
    return PTQ_OK;
}

/* Marks the activations and weights of the first and last compute layers, and their outputs. */
static void mark_edges(const ptq_graph *g, unsigned char *edge)
{
    int first = -1, last = -1;
    for (int k = 0; k < g->n_nodes; k++)
        if (ptq_op_is_weighted(g->nodes[k].op_type)) {
            if (first < 0)
                first = k;
            last = k;
        }
    for (int j = 0; j < 2 && first >= 0; j++) {
        const ptq_node *n = &g->nodes[j == 0 ? first : last];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0)
                edge[n->inputs[i]] = 1;
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i] >= 0)
                edge[n->outputs[i]] = 1;
    }
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static ptq_status entry_set(ptq_ctx *ctx, ptq_plan_entry *e, const char *name, int is_weight, ptq_prec prec, int axis,
                            const char *source)
{
    e->name = dup_str(name);
    e->source = dup_str(source);
    e->is_weight = is_weight;
    e->prec = prec;
    e->axis = axis;
    return e->name && e->source ? PTQ_OK : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
}

ptq_status ptq_plan_default(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                            const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                            ptq_prec core, ptq_plan **out)
{
    ptq_status st = PTQ_OK;
    ptq_plan *p = NULL;
    unsigned char *edge = NULL, *wt = NULL;
    ptq_calib_range *ranges = NULL;
    *out = NULL;
    if (!ptq_prec_is_quantized(core))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the core precision must be int8, fp8-e4m3 or fp8-e5m2, not %s",
                        ptq_prec_name(core));
    ptq_calib_provenance pv;
    ptq_calib_set_provenance(s, &pv);
    if (strcmp(pv.model_sha256, model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "%s was calibrated on another model: its SHA-256 is %.16s..., the model's is %.16s...",
                        archive_path, pv.model_sha256, model_sha256);
    const int64_t n_act = ptq_calib_set_n_tensors(s);
    edge = calloc((size_t)g->n_values + 1, 1);
    wt = calloc((size_t)g->n_values + 1, 1);
    ranges = calloc((size_t)n_act + 1, sizeof *ranges);
    p = calloc(1, sizeof *p);
    if (!edge || !wt || !ranges || !p) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        goto done;
    }
    mark_edges(g, edge);
    ptq_graph_quantizable(g, NULL, wt);
    int64_t n_wt = 0;
    for (int v = 0; v < g->n_values; v++)
        n_wt += wt[v];
    p->e = calloc((size_t)(n_act + n_wt) + 1, sizeof *p->e);
    p->model_name = dup_str(model_name);
    p->archive = dup_str(archive_path);
    p->method = dup_str(ptq_calib_method_name(method->method));
    if (!p->e || !p->model_name || !p->archive || !p->method) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        goto done;
    }
    memcpy(p->model_sha256, model_sha256, 65);
    p->core = core;
    ptq_calib_params cp = *method;
    cp.format = qformat_of(core);
    int64_t bad = -1;
    PTQ_TRY(st, ptq_calib_set_ranges(ctx, s, &cp, ranges, &bad), done);

    char source[128];
    snprintf(source, sizeof source, "archive %s", ptq_calib_method_name(method->method));
    for (int64_t i = 0; i < n_act; i++) {
        const char *name = ptq_calib_set_name(s, i);
        const int v = ptq_graph_find_value(g, name);
        if (v < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor '%s' of %s is not in the model", name, archive_path);
            goto done;
        }
        ptq_plan_entry *e = &p->e[p->n++];
        const int fp16 = edge[v] || ranges[i].degenerate;
        PTQ_TRY(st, entry_set(ctx, e, name, 0, fp16 ? PTQ_PREC_FP16 : core, -1,
                              edge[v] ? "edge: first or last compute layer"
                                      : ranges[i].degenerate ? "archive: only zeros seen" : source),
                done);
        if (!fp16) {
            if (!(e->scales = malloc(sizeof *e->scales))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
                goto done;
            }
            e->scales[0] = (float)ranges[i].scale;
            e->n_scales = 1;
        }
    }
    for (int v = 0; v < g->n_values; v++) {
        if (!wt[v])
            continue;
        int input = 0;
        const ptq_node *n = weight_user(g, v, &input);
        const int axis = weight_axis(n, &g->values[v], input);
        ptq_plan_entry *e = &p->e[p->n++];
        PTQ_TRY(st, entry_set(ctx, e, g->values[v].name, 1, edge[v] ? PTQ_PREC_FP16 : core, edge[v] ? -1 : axis,
                              edge[v] ? "edge: first or last compute layer" : "weights max|w| per channel"),
                done);
        if (!edge[v])
            PTQ_TRY(st, weight_scales(ctx, &g->values[v], axis, ptq_qformat_max(qformat_of(core)), &e->scales,
                                      &e->n_scales),
                    done);
    }
    *out = p;
    p = NULL;
done:
    free(edge);
    free(wt);
    free(ranges);
    ptq_plan_free(p);
    return st;
}

ptq_status ptq_plan_check(ptq_ctx *ctx, const ptq_plan *p, const ptq_graph *g, const char *model_sha256)
{
    ptq_status st = PTQ_OK;
    if (strcmp(p->model_sha256, model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan is for another model: its SHA-256 is %.16s..., the model's is %.16s...",
                        p->model_sha256, model_sha256);
    unsigned char *act = calloc((size_t)g->n_values + 1, 1), *wt = calloc((size_t)g->n_values + 1, 1);
    unsigned char *seen = calloc((size_t)g->n_values + 1, 1);
    if (!act || !wt || !seen) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory checking a plan");
        goto done;
    }
    ptq_graph_quantizable(g, act, wt);
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0 || !(e->is_weight ? wt[v] : act[v])) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names the %s '%s', which the model does not have (%s)",
                          e->is_weight ? "weight" : "activation", e->name,
                          e->is_weight ? "no Conv/Gemm/MatMul weight by that name" : "no float activation by that name");
            goto done;
        }
        if (seen[v]++) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s' twice", e->name);
            goto done;
        }
        const ptq_value *val = &g->values[v];
        if (!ptq_prec_is_quantized(e->prec)) {
            if (e->n_scales) {
                st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s' runs in %s, which takes no scale", e->name,
                              ptq_prec_name(e->prec));
                goto done;
            }
            continue;
        }
        if (e->axis < -1 || (e->axis >= 0 && (!e->is_weight || e->axis >= val->ndim))) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': axis %d is not %s", e->name, e->axis,
                          e->is_weight ? "an axis of the weight" : "-1 (activations take one scale)");
            goto done;
        }
        const int64_t want = channels_along(val, e->axis);
        if (e->n_scales != want) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': %lld scales, but %lld along axis %d", e->name,
                          (long long)e->n_scales, (long long)want, e->axis);
            goto done;
        }
        for (int64_t c = 0; c < e->n_scales; c++)
            if (!(isfinite(e->scales[c]) && e->scales[c] > 0)) {
                st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': scale %lld is %g; scales must be finite and > 0",
                              e->name, (long long)c, (double)e->scales[c]);
                goto done;
            }
    }
done:
    free(act);
    free(wt);
    free(seen);
    return st;
}
