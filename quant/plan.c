/* Precision plans (include/ptq/plan.h): the default plan from a calibration
 * archive (FP16 edges, INT8/FP8 core, per-channel weight scales) and the
 * checks of a plan against its model. The JSON form is quant/plan_json.c.
 * Covered by tests/test_plan.c and tests/cli_plan_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/export.h"
#include "ptq/plan.h"
#include "kernels/numfmt.h"
#include "model/op_traits.h"
#include "quant/placement.h"
#include "quant/quant_internal.h"

/* The table's entry of p when plans may use it, else NULL. */
static const ptq_numfmt *plan_format(ptq_prec p)
{
    const ptq_numfmt *nf = ptq_numfmt_get(p);
    return nf && nf->in_plans ? nf : NULL;
}

const char *ptq_prec_name(ptq_prec p)
{
    const ptq_numfmt *nf = plan_format(p);
    return nf ? nf->name : "?";
}

ptq_status ptq_prec_parse(ptq_ctx *ctx, const char *s, ptq_prec *out)
{
    const ptq_numfmt *nf = ptq_numfmt_find(s);
    if (nf && nf->in_plans) {
        *out = nf->id;
        return PTQ_OK;
    }
    if (strcmp(s, "fp8") == 0) {
        *out = PTQ_PREC_FP8_E4M3;
        return PTQ_OK;
    }
    char choices[128] = "";
    for (int i = 0; i < PTQ_FMT_COUNT; i++)
        if ((nf = plan_format((ptq_prec)i)) != NULL)
            snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", choices[0] ? ", " : "",
                     nf->name);
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown precision '%s' (choices: %s)", s, choices);
}

void ptq_plan_free(ptq_plan *p)
{
    if (!p)
        return;
    for (int64_t i = 0; i < p->n; i++) {
        free(p->e[i].name);
        free(p->e[i].scales);
        free(p->e[i].source);
        free(p->e[i].block_scales);
        free(p->e[i].rule);
    }
    free(p->e);
    free(p->model_name);
    free(p->archive);
    free(p->method);
    free(p->placement);
    free(p);
}

int ptq_prec_is_quantized(ptq_prec p)
{
    const ptq_numfmt *nf = plan_format(p);
    return nf && nf->scaled;
}

const ptq_op_traits *quant_weight_user(const ptq_graph *g, int v, const ptq_node **node, int *input)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const ptq_op_traits *t = ptq_op_traits_find(n->domain, n->op_type);
        if (!t)
            continue;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] == v && ptq_op_mask_has(t->quant_inputs, i)) {
                *node = n;
                *input = i;
                return t;
            }
    }
    return NULL;
}

static int64_t channels_along(const ptq_value *v, int axis)
{
    return axis < 0 ? 1 : v->dims[axis];
}

/* The scale of a weight channel of max|w| amax: scale (amax / qmax, times the FP8 step) as a float32; 1 for a
 * channel of zeros, and for one whose scale is below FLT_MIN (only subnormal weights), as onnxruntime's
 * quantize_static (compute_scale_zp) takes it: a scale of 0 refuses every plan, TensorRT takes no subnormal one, and
 * FLT_MIN made an ort-cpu int32 bias's scale (input scale x weight scale) subnormal, its codes saturating (a bias of
 * 1 read back as 2e-31). Its weights, |w| < 127 FLT_MIN, round to 0. */
static float channel_scale(double amax, double scale)
{
    const float s = (float)scale;
    return amax > 0 && s >= FLT_MIN ? s : 1.0f;
}

/* Candidate scales per octave for an FP8 weight channel. */
#define FP8_WEIGHT_STEPS 16

/* FP8 weights (amax[c] > 0 per channel, scales[c] = amax[c] / qmax on entry):
 * each channel takes the scale amax / qmax * 2^(k / 16), k in [0, 16), whose
 * quantize-dequantize (the simulation's rounding, ptq_k_round_channels_cpu)
 * leaves its values the least squared error; k = 0 on a tie. Scaling by a
 * power of two rounds every value alike (but at the subnormals), so one
 * octave holds every alignment of the channel to the format's grid, and
 * k >= 0 clips nothing. */
static ptq_status fp8_least_error_scales(ptq_ctx *ctx, const ptq_value *v, weight_runs wr, ptq_prec prec, double qmax,
                                         const double *amax, float *scales)
{
    const int64_t total = wr.n_runs * wr.inner, n_ch = wr.n_ch;
    float *y = malloc(((size_t)total + 1) * sizeof *y), *cand = malloc(((size_t)n_ch + 1) * sizeof *cand);
    double *err = malloc(((size_t)n_ch + 1) * sizeof *err), *best = malloc(((size_t)n_ch + 1) * sizeof *best);
    if (!y || !cand || !err || !best) {
        free(y);
        free(cand);
        free(err);
        free(best);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the scales of '%s'", v->name);
    }
    const float *w = v->data;
    for (int k = 0; k < FP8_WEIGHT_STEPS; k++) {
        for (int64_t c = 0; c < n_ch; c++) {
            cand[c] = channel_scale(amax[c], amax[c] / qmax * exp2((double)k / FP8_WEIGHT_STEPS));
            err[c] = 0.0;
        }
        ptq_k_round_channels_cpu((ptq_fmt)prec, cand, n_ch, PTQ_K_INT8_QMAX, wr.n_runs, wr.inner, w, y);
        for (int64_t r = 0; r < wr.n_runs; r++) {
            double run = 0.0;
            for (int64_t i = r * wr.inner; i < (r + 1) * wr.inner; i++) {
                const double d = (double)y[i] - (double)w[i];
                run += d * d;
            }
            err[r % n_ch] += run;
        }
        for (int64_t c = 0; c < n_ch; c++)
            if (k == 0 || err[c] < best[c]) {
                best[c] = err[c];
                scales[c] = cand[c];
            }
    }
    free(y);
    free(cand);
    free(err);
    free(best);
    return PTQ_OK;
}

ptq_status quant_weight_scales(ptq_ctx *ctx, const ptq_value *v, int axis, ptq_prec prec, double qmax, float **out,
                               int64_t *n_out)
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
            if (a > amax[r % n_ch] || isnan(a)) /* a NaN stays, and is refused below as an Inf is */
                amax[r % n_ch] = a;
        }
    for (int64_t c = 0; c < n_ch; c++) {
        if (!isfinite(amax[c])) {
            free(amax);
            free(scales);
            return ptq_fail(ctx, PTQ_ERR_DATA, "weight '%s' holds a non-finite value in channel %lld", v->name,
                            (long long)c);
        }
        scales[c] = channel_scale(amax[c], amax[c] / qmax);
    }
    ptq_status st = PTQ_OK;
    if (prec == PTQ_PREC_FP8_E4M3 || prec == PTQ_PREC_FP8_E5M2)
        st = fp8_least_error_scales(ctx, v, wr, prec, qmax, amax, scales);
    free(amax);
    if (st != PTQ_OK) {
        free(scales);
        return st;
    }
    *out = scales;
    *n_out = n_ch;
    return PTQ_OK;
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static ptq_status entry_set(ptq_ctx *ctx, ptq_plan_entry *e, const char *name, int is_weight, ptq_prec prec, int axis,
                            const char *source, const char *rule)
{
    e->name = dup_str(name);
    e->source = dup_str(source);
    e->rule = dup_str(rule);
    e->is_weight = is_weight;
    e->prec = prec;
    e->axis = axis;
    return e->name && e->source && e->rule ? PTQ_OK : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
}

/* One scale for activation entry e. */
static ptq_status entry_scale(ptq_ctx *ctx, ptq_plan_entry *e, double scale)
{
    if (!(e->scales = malloc(sizeof *e->scales)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
    e->scales[0] = (float)scale;
    e->n_scales = 1;
    return PTQ_OK;
}

/* Activation entry e, whose range amax gives no normal float32 scale (|x| below about 1e-36, or past float's
 * range), kept in FP32: TensorRT and onnxruntime take no such scale, and FP16 would round it to 0 or Inf. */
static ptq_status entry_keep_fp32(ptq_ctx *ctx, ptq_plan_entry *e, double amax)
{
    char why[128];
    snprintf(why, sizeof why, "archive: amax %.3g gives no normal float32 scale", amax);
    free(e->scales);
    e->scales = NULL;
    e->n_scales = 0;
    e->zero_point = 0;
    e->prec = PTQ_PREC_FP32;
    free(e->source);
    e->source = dup_str(why);
    free(e->rule); /* not the placement rule's precision: --explain says why */
    e->rule = dup_str(PTQ_RULE_NO_RANGE);
    return e->source && e->rule ? PTQ_OK : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
}

/* The source of a first or last compute layer's tensor: under --placement ort the plan says that keeping it is
 * ptq's choice, as quantize_static has no such rule. */
static const char *edge_source(ptq_placement placement)
{
    return placement == PTQ_PLACEMENT_ORT ? "edge: first or last compute layer, kept by ptq (quantize_static, which "
                                            "has no edge rule, quantizes it)"
                                          : "edge: first or last compute layer";
}

/* The source of an activation a placement rule keeps in FP16. */
static const char *fp16_source(const char *rule, ptq_placement placement)
{
    return rule && strcmp(rule, PTQ_RULE_FP16_TRANSFORMER) == 0 ? "fp16: transformer LayerNorm/Softmax/residual Add"
                                                                : edge_source(placement);
}

static const char *const target_names[] = {[PTQ_TARGET_TRT] = "trt", [PTQ_TARGET_ORT_CPU] = "ort-cpu"};
enum { N_TARGETS = (int)(sizeof target_names / sizeof target_names[0]) };

const char *ptq_target_name(ptq_target t)
{
    return (int)t >= 0 && (int)t < N_TARGETS ? target_names[t] : "?";
}

ptq_status ptq_target_parse(ptq_ctx *ctx, const char *s, ptq_target *out)
{
    for (int i = 0; s && i < N_TARGETS; i++)
        if (strcmp(s, target_names[i]) == 0) {
            *out = (ptq_target)i;
            return PTQ_OK;
        }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown target '%s' (choices: trt, ort-cpu)", s ? s : "(null)");
}

ptq_status quant_entry_act_scale(ptq_ctx *ctx, ptq_plan_entry *e, ptq_prec prec, const ptq_observer *obs,
                                 const ptq_calib_range *r, int *normal)
{
    float scale = (float)r->scale;
    int32_t zero_point = 0;
    if (prec == PTQ_PREC_UINT8) {
        float lo, hi;
        ptq_calib_clip_range(obs, r->amax, &lo, &hi);
        ptq_k_uint8_params_ref(lo, hi, &scale, &zero_point);
    }
    *normal = scale >= FLT_MIN && isfinite(scale);
    if (!*normal)
        return PTQ_OK;
    free(e->scales);
    e->scales = NULL;
    e->prec = prec;
    e->axis = -1;
    e->zero_point = zero_point;
    return entry_scale(ctx, e, scale);
}

ptq_status ptq_plan_default(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                            const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                            ptq_prec core, ptq_plan **out)
{
    return ptq_plan_make(ctx, g, model_sha256, model_name, s, archive_path, method, core, PTQ_PLACEMENT_TRT, out);
}

ptq_status ptq_plan_make(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                         const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                         ptq_prec core, ptq_placement placement, ptq_plan **out)
{
    return ptq_plan_make_target(ctx, g, model_sha256, model_name, s, archive_path, method, core, placement,
                                PTQ_TARGET_TRT, out);
}

/* 1 if value v is the output of a Softmax node. */
static int softmax_output(const ptq_graph *g, int v)
{
    const int n = g->values[v].producer;
    return n >= 0 && strcmp(g->nodes[n].op_type, "Softmax") == 0;
}

ptq_status quant_softmax_range(ptq_ctx *ctx, const ptq_graph *g, int v, const ptq_calib_params *cp,
                               const ptq_observer *obs, ptq_calib_range *r, int *whole)
{
    /* a Softmax output lies in [0, 1] and its few largest values are the attention: they are not clipped */
    *whole = softmax_output(g, v) && cp->method != PTQ_CALIB_MINMAX;
    if (!*whole)
        return PTQ_OK;
    ptq_calib_params minmax = *cp;
    minmax.method = PTQ_CALIB_MINMAX;
    return ptq_calib_compute(ctx, &minmax, obs, r);
}

ptq_status ptq_plan_settings_check(ptq_ctx *ctx, ptq_prec core, ptq_placement placement, ptq_target target,
                                   int reduce_range)
{
    if (!ptq_prec_is_quantized(core))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the core precision must be int8, fp8-e4m3 or fp8-e5m2, not %s",
                        ptq_prec_name(core));
    if (strcmp(ptq_placement_name(placement), "?") == 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown placement %d", (int)placement);
    if (strcmp(ptq_target_name(target), "?") == 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown target %d", (int)target);
    if (core == PTQ_PREC_UINT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "uint8 is not a core precision: it is the activations' format of target ort-cpu");
    if (target == PTQ_TARGET_ORT_CPU && core != PTQ_PREC_INT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "target ort-cpu quantizes weights to int8 and activations to uint8; core %s is not for it",
                        ptq_prec_name(core));
    if (reduce_range && core != PTQ_PREC_INT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "reduce_range is for INT8 weights; the plan's core is %s",
                        ptq_prec_name(core));
    return PTQ_OK;
}

ptq_status ptq_plan_make_target(ptq_ctx *ctx, const ptq_graph *g, const char *model_sha256, const char *model_name,
                                const ptq_calib_set *s, const char *archive_path, const ptq_calib_params *method,
                                ptq_prec core, ptq_placement placement, ptq_target target, ptq_plan **out)
{
    ptq_status st = PTQ_OK;
    ptq_plan *p = NULL;
    unsigned char *edge = NULL, *wt = NULL;
    ptq_calib_range *ranges = NULL;
    place_decision *place = NULL;
    int64_t *entry_of = NULL;
    unsigned char *empty = NULL;
    *out = NULL;
    PTQ_TRY_RET(ptq_plan_settings_check(ctx, core, placement, target, 0));
    const int ort_cpu = target == PTQ_TARGET_ORT_CPU;
    /* the activations' format, and what stays in high precision (the CPU computes FP16 in FP32 anyway) */
    const ptq_prec act_core = ort_cpu ? PTQ_PREC_UINT8 : core, high = quant_target_float(target);
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
    place = calloc((size_t)g->n_values + 1, sizeof *place);
    entry_of = malloc(((size_t)g->n_values + 1) * sizeof *entry_of);
    empty = calloc((size_t)n_act + 1, 1);
    p = calloc(1, sizeof *p);
    if (!edge || !wt || !ranges || !place || !entry_of || !empty || !p) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        goto done;
    }
    ptq_placement_edges(g, edge);
    PTQ_TRY(st, ptq_placement_decide(ctx, g, placement, act_core, edge, place), done);
    ptq_graph_quantizable(g, NULL, wt);
    int64_t n_wt = 0;
    for (int v = 0; v < g->n_values; v++) {
        n_wt += wt[v];
        entry_of[v] = -1;
    }
    p->e = calloc((size_t)(n_act + n_wt) + 1, sizeof *p->e);
    p->model_name = dup_str(model_name);
    p->archive = dup_str(archive_path);
    ptq_calib_params cp = *method;
    cp.format = core;
    char method_name[64], value[40];
    if (cp.method == PTQ_CALIB_PERCENTILE && cp.percentile == 0.0)
        cp.percentile = PTQ_CALIB_DEFAULT_PERCENTILE;
    if (cp.method == PTQ_CALIB_PERCENTILE && ptq_export_format_double(cp.percentile, value, sizeof value))
        snprintf(method_name, sizeof method_name, "percentile=%s", value);
    else
        snprintf(method_name, sizeof method_name, "%s", ptq_calib_method_name(cp.method));
    p->method = dup_str(method_name);
    p->placement = dup_str(ptq_placement_name(placement));
    if (!p->e || !p->model_name || !p->archive || !p->method || !p->placement) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        goto done;
    }
    memcpy(p->model_sha256, model_sha256, 65);
    p->core = core;
    p->target = target;
    int64_t bad = -1;
    PTQ_TRY(st, ptq_calib_set_ranges_empty(ctx, s, g, &cp, ranges, empty, &bad), done);

    char source[128], not_placed[64];
    snprintf(source, sizeof source, "archive %s", ptq_calib_method_name(cp.method));
    snprintf(not_placed, sizeof not_placed, "placement %s: not quantized", ptq_placement_name(placement));
    for (int64_t i = 0; i < n_act; i++) {
        const char *name = ptq_calib_set_name(s, i);
        const int v = ptq_graph_find_value(g, name);
        if (v < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "tensor '%s' of %s is not in the model", name, archive_path);
            goto done;
        }
        const place_decision d = place[v];
        ptq_plan_entry *e = &p->e[p->n];
        entry_of[v] = p->n++;
        if (d.action == PLACE_FP32) {
            PTQ_TRY(st, entry_set(ctx, e, name, 0, PTQ_PREC_FP32, -1, not_placed, d.rule), done);
            continue;
        }
        if (empty[i] && d.action != PLACE_FP16) {
            PTQ_TRY(st, entry_set(ctx, e, name, 0, high, -1, "archive: no values (an empty tensor)",
                                  PTQ_RULE_NO_RANGE), done);
            continue;
        }
        /* an observed tensor no rule covers (not a float activation) is rounded as --placement all does */
        const int fp16 = d.action == PLACE_FP16 || ranges[i].degenerate;
        int whole = 0;
        if (!fp16)
            PTQ_TRY(st, quant_softmax_range(ctx, g, v, &cp, ptq_calib_set_observer(s, i), &ranges[i], &whole), done);
        PTQ_TRY(st, entry_set(ctx, e, name, 0, fp16 ? high : act_core, -1,
                              d.action == PLACE_FP16 ? fp16_source(d.rule, placement)
                              : ranges[i].degenerate ? "archive: only zeros seen"
                              : whole ? PTQ_PLAN_SOURCE_SOFTMAX : source,
                              ranges[i].degenerate && d.action != PLACE_FP16 ? PTQ_RULE_NO_RANGE
                              : d.rule ? d.rule : "all.observed"),
                done);
        int normal = 1;
        if (!fp16)
            PTQ_TRY(st, quant_entry_act_scale(ctx, e, act_core, ptq_calib_set_observer(s, i), &ranges[i], &normal),
                    done);
        if (!normal)
            PTQ_TRY(st, entry_keep_fp32(ctx, e, ranges[i].amax), done);
    }
    /* quantize_static's shared parameters: the output takes its input's scale, or stays float. An input ptq keeps
     * as an edge (quantize_static has none: it quantizes the input) lends the scale it would have: the activations
     * come first in p->e, one per archive tensor, so entry from is archive tensor from. */
    for (int64_t i = 0; i < p->n; i++) {
        ptq_plan_entry *e = &p->e[i];
        const int v = ptq_graph_find_value(g, e->name);
        if (place[v].action != PLACE_SHARE || e->prec == high)
            continue;
        const int64_t from = place[v].share >= 0 ? entry_of[place[v].share] : -1;
        free(e->scales);
        e->scales = NULL;
        e->n_scales = 0;
        e->zero_point = 0;
        int lent = 0;
        if (from >= 0 && strcmp(p->e[from].rule, PTQ_RULE_EDGE) == 0 && !empty[from] && !ranges[from].degenerate) {
            const ptq_observer *obs = ptq_calib_set_observer(s, from);
            ptq_calib_range r = ranges[from];
            int whole = 0;
            PTQ_TRY(st, quant_softmax_range(ctx, g, place[v].share, &cp, obs, &r, &whole), done);
            PTQ_TRY(st, quant_entry_act_scale(ctx, e, act_core, obs, &r, &lent), done);
        }
        if (lent) {
            free(e->source);
            if (!(e->source = malloc(strlen(p->e[from].name) + 96))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
                goto done;
            }
            sprintf(e->source, "the scale '%s' would have (kept %s as an edge; quantize_static quantizes it)",
                    p->e[from].name, ptq_prec_name(p->e[from].prec));
        } else if (from >= 0 && p->e[from].prec == act_core) {
            PTQ_TRY(st, entry_scale(ctx, e, p->e[from].scales[0]), done);
            e->zero_point = p->e[from].zero_point;
            free(e->source);
            if (!(e->source = malloc(strlen(p->e[from].name) + 32))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
                goto done;
            }
            sprintf(e->source, "the scale of '%s'", p->e[from].name);
        } else {
            e->prec = PTQ_PREC_FP32;
            free(e->source);
            if (!(e->source = dup_str(not_placed))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
                goto done;
            }
        }
    }
    for (int v = 0; v < g->n_values; v++) {
        if (!wt[v])
            continue;
        int input = 0;
        const ptq_node *n = NULL;
        const ptq_op_traits *t = quant_weight_user(g, v, &n, &input);
        const int axis = ptq_op_weight_axis(t, n, input, g->values[v].ndim);
        ptq_plan_entry *e = &p->e[p->n++];
        PTQ_TRY(st, entry_set(ctx, e, g->values[v].name, 1, edge[v] ? high : core, edge[v] ? -1 : axis,
                              edge[v]                  ? edge_source(placement)
                              : core == PTQ_PREC_INT8 ? "weights max|w| per channel"
                                                      : "weights per channel, least FP8 rounding error",
                              edge[v] ? PTQ_RULE_EDGE : PTQ_RULE_WEIGHT),
                done);
        if (!edge[v])
            PTQ_TRY(st, quant_weight_scales(ctx, &g->values[v], axis, core, ptq_plan_weight_qmax(p, core), &e->scales,
                                            &e->n_scales),
                    done);
    }
    PTQ_TRY(st, quant_plan_weights_follow(ctx, g, p), done);
    PTQ_TRY(st, quant_plan_fit_int32_biases(ctx, g, p), done);
    *out = p;
    p = NULL;
done:
    free(edge);
    free(wt);
    free(ranges);
    free(place);
    free(entry_of);
    free(empty);
    ptq_plan_free(p);
    return st;
}

double ptq_plan_weight_qmax(const ptq_plan *p, ptq_prec prec)
{
    if (prec == PTQ_PREC_INT8 && p->reduce_range)
        return PTQ_PLAN_REDUCED_INT8_QMAX;
    return ptq_qformat_max((ptq_qformat)prec);
}

ptq_status ptq_plan_reduce_range(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p)
{
    if (p->core != PTQ_PREC_INT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "reduce_range is for INT8 weights; the plan's core is %s",
                        ptq_prec_name(p->core));
    for (int64_t i = 0; i < p->n; i++) {
        ptq_plan_entry *e = &p->e[i];
        if (!e->is_weight || e->prec != PTQ_PREC_INT8)
            continue;
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s', which the model does not have", e->name);
        float *scales = NULL;
        int64_t n_scales = 0;
        PTQ_TRY_RET(quant_weight_scales(ctx, &g->values[v], e->axis, e->prec, PTQ_PLAN_REDUCED_INT8_QMAX, &scales,
                                        &n_scales));
        char *source = dup_str("weights max|w| / 64 per channel (reduce_range)");
        if (!source) {
            free(scales);
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
        }
        free(e->scales);
        free(e->source);
        e->scales = scales;
        e->n_scales = n_scales;
        e->source = source;
    }
    p->reduce_range = 1;
    return quant_plan_fit_int32_biases(ctx, g, p);
}

/* 1 if node n (traits t), which quantizes weight w, reads an activation
 * plan p quantizes, or reads no activation at all. */
static int reads_quantized(const ptq_graph *g, const ptq_node *n, const ptq_op_traits *t, int w, const ptq_plan *p)
{
    int n_act = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const int a = n->inputs[i];
        if (a < 0 || a == w || !ptq_op_mask_has(t->quant_inputs, i) ||
            (g->values[a].flags & PTQ_VALUE_HAS_DATA))
            continue;
        n_act++;
        const ptq_plan_entry *e = quant_plan_entry(p, g->values[a].name, 0);
        if (e && ptq_prec_is_quantized(e->prec))
            return 1;
    }
    return n_act == 0;
}

ptq_prec quant_target_float(ptq_target t)
{
    return t == PTQ_TARGET_ORT_CPU ? PTQ_PREC_FP32 : PTQ_PREC_FP16;
}

void quant_entry_unquantize(ptq_plan_entry *e, ptq_prec high)
{
    e->prec = high;
    e->axis = -1;
    e->zero_point = 0;
    e->n_scales = 0;
    free(e->scales);
    e->scales = NULL;
}

ptq_status quant_plan_weights_follow(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p)
{
    const ptq_prec high = quant_target_float(p->target);
    for (int64_t i = 0; i < p->n; i++) {
        ptq_plan_entry *e = &p->e[i];
        const int v = e->is_weight && ptq_prec_is_quantized(e->prec) ? ptq_graph_find_value(g, e->name) : -1;
        int input = 0;
        const ptq_node *n = NULL;
        const ptq_op_traits *t = v >= 0 ? quant_weight_user(g, v, &n, &input) : NULL;
        if (!t || reads_quantized(g, n, t, v, p))
            continue;
        quant_entry_unquantize(e, high);
        free(e->source);
        free(e->rule);
        e->source = dup_str("follows its layer's input: no quantized activation");
        e->rule = dup_str(PTQ_RULE_WEIGHT_FOLLOWS);
        if (!e->source || !e->rule)
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
    }
    return PTQ_OK;
}

/* e's block scales against its tensor val: none without a block size; else
 * a static shape the block size divides, one finite scale > 0 per block, and
 * a format that takes block scales. */
static ptq_status check_blocks(ptq_ctx *ctx, const ptq_plan_entry *e, const ptq_value *val)
{
    if (e->block_size == 0) {
        if (e->n_block_scales)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': %lld block scales but no block size", e->name,
                            (long long)e->n_block_scales);
        return PTQ_OK;
    }
    if (e->block_size < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': block size %lld is not > 0", e->name,
                        (long long)e->block_size);
    int64_t numel = val->ndim >= 0 ? 1 : -1;
    for (int d = 0; d < val->ndim && numel > 0; d++)
        numel = val->dims[d] > 0 ? numel * val->dims[d] : -1;
    if (numel < 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': block scales need a static shape", e->name);
    if (numel % e->block_size != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': block size %lld does not divide its %lld elements", e->name,
                        (long long)e->block_size, (long long)numel);
    if (e->n_block_scales != numel / e->block_size)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': %lld block scales, but %lld blocks of %lld", e->name,
                        (long long)e->n_block_scales, (long long)(numel / e->block_size), (long long)e->block_size);
    for (int64_t b = 0; b < e->n_block_scales; b++)
        if (!(isfinite(e->block_scales[b]) && e->block_scales[b] > 0))
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "'%s': block scale [%lld] is %g; block scales must be finite and > 0", e->name, (long long)b,
                            (double)e->block_scales[b]);
    if (!ptq_numfmt_get(e->prec)->block_scaled)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s' runs in %s, which takes no block scales", e->name,
                        ptq_prec_name(e->prec));
    return PTQ_OK;
}

/* e's format against the plan's target: uint8 for activations of an
 * ort-cpu plan only, with a zero point in [0, 255] (every other format 0);
 * no FP8 for ort-cpu. */
static ptq_status check_format(ptq_ctx *ctx, const ptq_plan *p, const ptq_plan_entry *e)
{
    const ptq_numfmt *nf = ptq_numfmt_get(e->prec);
    if (nf->zero_point) {
        if (e->is_weight)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "weight '%s' runs in %s, which is for activations (weights "
                                                      "take int8, symmetric per channel)", e->name, nf->name);
        if (p->target != PTQ_TARGET_ORT_CPU)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s' runs in %s, which only target ort-cpu takes (the plan's "
                                                      "target is %s: symmetric, zero point 0)",
                            e->name, nf->name, ptq_target_name(p->target));
        if (e->zero_point < 0 || e->zero_point > 255)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': zero point %d is not in [0, 255]", e->name,
                            (int)e->zero_point);
    } else if (e->zero_point != 0) {
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s' runs in %s, which takes no zero point (it has %d)", e->name,
                        nf->name, (int)e->zero_point);
    }
    if (p->target == PTQ_TARGET_ORT_CPU && (e->prec == PTQ_PREC_FP8_E4M3 || e->prec == PTQ_PREC_FP8_E5M2))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s' runs in %s, which onnxruntime's CPU kernels do not take "
                                                  "(target ort-cpu)", e->name, nf->name);
    return PTQ_OK;
}

/* What TensorRT builds (target trt) beyond the plan format: a weight's
 * per-channel scales along the axis its layer's output channels are (the one
 * the plan maker picks: Conv 0, ConvTranspose 1, Gemm 0 with transB else 1,
 * MatMul's last), and activation scales that are normal float32 values. */
static ptq_status check_trt_scales(ptq_ctx *ctx, const ptq_graph *g, int v, const ptq_plan_entry *e)
{
    if (e->is_weight && e->axis >= 0) {
        int input = 0;
        const ptq_node *n = NULL;
        const ptq_op_traits *t = quant_weight_user(g, v, &n, &input);
        const int want = ptq_op_weight_axis(t, n, input, g->values[v].ndim);
        if (e->axis != want && want >= 0)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "'%s': per-channel scales along axis %d, but TensorRT takes the scales of a %s weight "
                            "(node '%s') along its output-channel axis %d only (target trt)", e->name, e->axis,
                            n->op_type, n->name, want);
        if (e->axis != want)
            return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                            "'%s': per-channel scales along axis %d, but a %s weight (node '%s') has no output-channel "
                            "axis TensorRT takes them along: give it one scale, axis -1 (target trt)", e->name,
                            e->axis, n ? n->op_type : "?", n ? n->name : "?");
    }
    if (!e->is_weight && e->n_scales == 1 && !(e->scales[0] >= FLT_MIN))
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG,
                        "'%s': scale %g is not a normal float32 (below %g), which TensorRT needs (target trt)", e->name,
                        (double)e->scales[0], (double)FLT_MIN);
    return PTQ_OK;
}

/* The core is a format the plan quantizes in: each entry runs and exports in its own format (an FP8 activation of
 * an INT8 plan is written at opset 19), but what reports the plan (its core) must be one of them, uint8 activations
 * counting as int8, the core of an ort-cpu plan. A plan that quantizes nothing may name any core. */
static ptq_status check_core(ptq_ctx *ctx, const ptq_plan *p)
{
    const ptq_plan_entry *first = NULL;
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        if (!ptq_prec_is_quantized(e->prec))
            continue;
        if (e->prec == p->core || (e->prec == PTQ_PREC_UINT8 && p->core == PTQ_PREC_INT8))
            return PTQ_OK;
        first = first ? first : e;
    }
    if (!first)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan's core is %s, but none of its entries runs in it ('%s' runs "
                    "in %s): set \"core\" to the format its entries quantize in", ptq_prec_name(p->core), first->name,
                    ptq_prec_name(first->prec));
}

ptq_status ptq_plan_check(ptq_ctx *ctx, const ptq_plan *p, const ptq_graph *g, const char *model_sha256)
{
    ptq_status st = PTQ_OK;
    if (strcmp(p->model_sha256, model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan is for another model: its SHA-256 is %.16s..., the model's is %.16s...",
                        p->model_sha256, model_sha256);
    if (strcmp(ptq_target_name(p->target), "?") == 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan's target %d is not one ptq knows", (int)p->target);
    if (p->target == PTQ_TARGET_ORT_CPU && p->core != PTQ_PREC_INT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "an ort-cpu plan's core is int8 (its weights'), not %s",
                        ptq_prec_name(p->core));
    if (p->reduce_range && p->core != PTQ_PREC_INT8)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "a reduce_range plan's core is int8 (its weights'), not %s",
                        ptq_prec_name(p->core));
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
        if (!plan_format(e->prec)) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': precision %d is not one a plan may use", e->name,
                          (int)e->prec);
            goto done;
        }
        PTQ_TRY(st, check_blocks(ctx, e, val), done);
        PTQ_TRY(st, check_format(ctx, p, e), done);
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
                st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "'%s': scale [%lld] is %g; scales must be finite and > 0",
                              e->name, (long long)c, (double)e->scales[c]);
                goto done;
            }
        if (p->target == PTQ_TARGET_TRT)
            PTQ_TRY(st, check_trt_scales(ctx, g, v, e), done);
    }
    st = check_core(ctx, p);
done:
    free(act);
    free(wt);
    free(seen);
    return st;
}
