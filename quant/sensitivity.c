/* Per-tensor sensitivity (include/ptq/sensitivity.h). Three simulated
 * quantizations are built once: the default plan, every tensor in the core
 * format, every tensor in FP16 (FP32 for target ort-cpu, whose core
 * activations are uint8 with a zero point). One overlay mixes them per
 * configuration: (a) tensor t from the core one and nothing else, (b) the
 * default plan with t from the float one (an ort-cpu layer's int32 bias
 * stays rounded there: it moves with the layer only in the plans the
 * budget validates). Each batch runs FP32 once (keeping what later
 * runs read) and each tensor's (a) run from the node that makes it, then
 * the default plan once (keeping its own values) and each (b) run from that
 * node too. A Softmax the default plan computes as onnxruntime's
 * QLinearSoftmax (quant/fake_quant.c) stays so in (b) runs unless t is its
 * input or output, never in (a) runs (one 8-bit tensor). Figures are integer counts and
 * exact sums (core/xsum.h), so they do not depend on batch size or order.
 * Covered by tests/test_sensitivity.c and tests/cli_sensitivity_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/clock.h"
#include "core/logits.h"
#include "ptq/buf.h"
#include "ptq/dist.h"
#include "reports/md_header.h"
#include "ptq/fake_quant.h"
#include "ptq/sensitivity.h"
#include "quant/quant_internal.h"

enum { MODE_FP32, MODE_DEFAULT, MODE_ONLY, MODE_ALL_BUT };

struct ptq_sensitivity {
    const char *high; /* where "all but" keeps its tensor: "FP16", or "FP32" for target ort-cpu */
    const ptq_graph *g;
    ptq_fq *fq_def, *fq_core, *fq_fp16;
    const ptq_overlay *ov_def, *ov_core, *ov_fp16;
    int64_t n_t;
    ptq_sens_tensor *t;     /* [n_t] */
    qfig *acc_a, *acc_b;    /* [n_t] */
    qfig acc_fp32, acc_def;
    qfig_fp32 f32;          /* the batch's FP32 side; f32.support over the run */
    int k;
    /* the mixed overlay */
    int mode, t_value;
    unsigned char *rounds;  /* [g->n_values] what the current configuration rounds */
    unsigned char *runs;    /* [g->n_nodes] the default plan's QLinearSoftmax nodes the configuration keeps (both
                             * of a Softmax's tensors 8-bit: never in an (a) run, not around t in a (b) run) */
    unsigned char *float_bias; /* [g->n_values] 1: a bias the current "all but" run leaves in float (its node reads
                                * the tensor: an ort-cpu plan's int32 bias needs both the input's and the weight's
                                * scales, so a plan with either in float has none there, quant/bias.c) */
    ptq_overlay ov;
    ptq_tensor *outputs;    /* [g->n_outputs] one run's */
    int64_t n_runs, nodes_run, nodes_full;
    int only;               /* PTQ_SENS_ONLY: no default-plan and (b) runs */
    ptq_sens_seconds secs;
    unsigned char *mine;    /* [n_t] the tensors this process measures (ptq_sens_share) */
    int baseline;           /* 1: this process counts FP32 and the default plan */
};

static const float *mixed_weight(void *user, int v, uint64_t *source)
{
    const ptq_sensitivity *s = user;
    const ptq_overlay *src = NULL;
    if (s->mode == MODE_DEFAULT)
        src = s->ov_def;
    else if (s->mode == MODE_ONLY)
        src = v == s->t_value ? s->ov_core : NULL;
    else if (s->mode == MODE_ALL_BUT)
        src = v == s->t_value || s->float_bias[v] ? s->ov_fp16 : s->ov_def;
    return src ? src->weight(src->user, v, source) : NULL;
}

static ptq_status mixed_round(void *user, ptq_ctx *ctx, const ptq_exec *e, int v, ptq_tensor *t)
{
    const ptq_sensitivity *s = user;
    const ptq_overlay *src = s->ov_def;
    if (s->mode == MODE_ONLY)
        src = s->ov_core;
    else if (s->mode == MODE_ALL_BUT && v == s->t_value)
        src = s->ov_fp16;
    return src->round(src->user, ctx, e, v, t);
}

static ptq_status mixed_run(void *user, ptq_ctx *ctx, int k, const ptq_tensor *const *in, int n_in,
                            ptq_tensor *const *out, int n_out)
{
    const ptq_sensitivity *s = user;
    return s->ov_def->run(s->ov_def->user, ctx, k, in, n_in, out, n_out);
}

/* Points the mixed overlay at configuration (mode, tensor i). */
static void configure(ptq_sensitivity *s, int mode, int64_t i)
{
    const int nv = s->g->n_values;
    s->mode = mode;
    s->t_value = i >= 0 ? s->t[i].value : -1;
    if (mode == MODE_ONLY)
        memset(s->rounds, 0, (size_t)nv);
    else
        memcpy(s->rounds, s->ov_def->rounds, (size_t)nv);
    if (i >= 0 && !s->t[i].is_weight)
        s->rounds[s->t_value] = mode == MODE_ONLY ? s->ov_core->rounds[s->t_value] : s->ov_fp16->rounds[s->t_value];
    memset(s->float_bias, 0, (size_t)nv);
    for (int k = 0; k < s->g->n_nodes; k++) {
        const ptq_node *n = &s->g->nodes[k];
        s->runs[k] = mode != MODE_ONLY && s->ov_def->runs && s->ov_def->runs[k] &&
                     !(mode == MODE_ALL_BUT && (n->inputs[0] == s->t_value || n->outputs[0] == s->t_value));
    }
    for (int k = 0; mode == MODE_ALL_BUT && k < s->g->n_nodes; k++) {
        const ptq_node *n = &s->g->nodes[k];
        if (n->n_inputs >= 3 && n->inputs[2] >= 0 && (n->inputs[0] == s->t_value || n->inputs[1] == s->t_value))
            s->float_bias[n->inputs[2]] = 1;
    }
}

void ptq_sens_free(ptq_sensitivity *s)
{
    if (!s)
        return;
    for (int64_t i = 0; s->acc_a && i < s->n_t; i++) {
        qfig_free(&s->acc_a[i]);
        qfig_free(&s->acc_b[i]);
    }
    free(s->acc_a);
    free(s->acc_b);
    qfig_free(&s->acc_fp32);
    qfig_free(&s->acc_def);
    qfig_fp32_free(&s->f32);
    free(s->t);
    free(s->mine);
    free(s->rounds);
    free(s->float_bias);
    free(s->runs);
    free(s->outputs);
    ptq_fq_free(s->fq_def);
    ptq_fq_free(s->fq_core);
    ptq_fq_free(s->fq_fp16);
    free(s);
}

/* The node an (a) run of value v starts at: its producer, or for a weight
 * (and a graph input) the first node that reads it. */
static int start_node_of(const ptq_graph *g, int v)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i] == v)
                return k;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] == v)
                return k;
    }
    return 0;
}

ptq_status quant_plan_copy(ptq_ctx *ctx, const ptq_plan *p, ptq_plan **out)
{
    ptq_plan *q = calloc(1, sizeof *q);
    if (!q || !(q->e = calloc((size_t)p->n + 1, sizeof *q->e))) {
        free(q);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory copying a plan");
    }
    *out = q;
    memcpy(q->model_sha256, p->model_sha256, sizeof q->model_sha256);
    q->core = p->core;
    q->target = p->target;
    q->reduce_range = p->reduce_range;
    q->model_name = strdup(p->model_name ? p->model_name : "");
    q->archive = strdup(p->archive ? p->archive : "");
    q->method = strdup(p->method ? p->method : "");
    q->placement = p->placement ? strdup(p->placement) : NULL;
    if (!q->model_name || !q->archive || !q->method || (p->placement && !q->placement))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory copying a plan");
    for (int64_t i = 0; i < p->n; i++, q->n++) {
        const ptq_plan_entry *a = &p->e[i];
        ptq_plan_entry *b = &q->e[i];
        *b = *a;
        b->name = strdup(a->name);
        b->source = strdup(a->source ? a->source : "");
        b->rule = a->rule ? strdup(a->rule) : NULL;
        b->scales = a->n_scales ? malloc((size_t)a->n_scales * sizeof *b->scales) : NULL;
        b->block_scales = NULL;
        b->n_block_scales = 0;
        b->block_size = 0;
        if (!b->name || !b->source || (a->rule && !b->rule) || (a->n_scales && !b->scales)) {
            q->n++;
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory copying a plan");
        }
        if (a->n_scales)
            memcpy(b->scales, a->scales, (size_t)a->n_scales * sizeof *b->scales);
    }
    return PTQ_OK;
}

static ptq_status set_source(ptq_ctx *ctx, ptq_plan_entry *e, const char *source)
{
    free(e->source);
    if (!(e->source = strdup(source)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory building a plan");
    return PTQ_OK;
}

ptq_status ptq_sens_core_plan(ptq_ctx *ctx, const ptq_graph *g, const ptq_calib_set *s, const ptq_plan *default_plan,
                              ptq_plan **out)
{
    ptq_status st = PTQ_OK;
    ptq_plan *p = NULL;
    ptq_calib_range *ranges = NULL;
    unsigned char *empty = NULL;
    *out = NULL;
    PTQ_TRY(st, quant_plan_copy(ctx, default_plan, &p), done);
    const int64_t n_act = ptq_calib_set_n_tensors(s);
    ptq_calib_params cp = {PTQ_CALIB_PERCENTILE, default_plan->core, 0};
    PTQ_TRY(st, ptq_calib_spec_parse(ctx, default_plan->method, &cp.method, &cp.percentile), done);
    ranges = calloc((size_t)n_act + 1, sizeof *ranges);
    empty = calloc((size_t)n_act + 1, 1);
    if (!ranges || !empty) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for ranges");
        goto done;
    }
    int64_t bad = -1;
    PTQ_TRY(st, ptq_calib_set_ranges_empty(ctx, s, g, &cp, ranges, empty, &bad), done);
    const int ort_cpu = p->target == PTQ_TARGET_ORT_CPU;
    for (int64_t i = 0; i < p->n; i++) {
        ptq_plan_entry *e = &p->e[i];
        if (ptq_prec_is_quantized(e->prec))
            continue;
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s', which the model does not have", e->name);
            goto done;
        }
        if (!e->is_weight) {
            const int64_t j = ptq_calib_set_find(s, e->name);
            if (j < 0 || ranges[j].degenerate)
                continue; /* no range: stays in float */
            /* the format the plan gives its activations (ort-cpu: uint8), on the plan's range (a Softmax output's
             * whole one); none without a normal float32 scale */
            int normal = 0, whole = 0;
            PTQ_TRY(st, quant_softmax_range(ctx, g, v, &cp, ptq_calib_set_observer(s, j), &ranges[j], &whole), done);
            PTQ_TRY(st, quant_entry_act_scale(ctx, e, ort_cpu ? PTQ_PREC_UINT8 : p->core, ptq_calib_set_observer(s, j),
                                              &ranges[j], &normal),
                    done);
            if (normal)
                PTQ_TRY(st, set_source(ctx, e, whole ? "sensitivity: core scales for a float tensor (a Softmax "
                                                       "output: its min-max range)"
                                                     : "sensitivity: core scales for a float tensor"),
                        done);
            continue;
        }
        int input = 0;
        const ptq_node *n = NULL;
        const ptq_op_traits *t = quant_weight_user(g, v, &n, &input);
        if (!t)
            continue;
        e->axis = ptq_op_weight_axis(t, n, input, g->values[v].ndim);
        PTQ_TRY(st, quant_weight_scales(ctx, &g->values[v], e->axis, p->core, ptq_plan_weight_qmax(p, p->core),
                                        &e->scales, &e->n_scales),
                done);
        e->prec = p->core;
        PTQ_TRY(st, set_source(ctx, e, "sensitivity: core scales for a float tensor"), done);
    }
    PTQ_TRY(st, quant_plan_fit_int32_biases(ctx, g, p), done);
    *out = p;
    p = NULL;
done:
    free(ranges);
    free(empty);
    ptq_plan_free(p);
    return st;
}

/* The default plan's tensors all in its float precision: FP16, FP32 for
 * target ort-cpu (the CPU has no FP16 arithmetic). */
static ptq_status float_plan(ptq_ctx *ctx, const ptq_plan *default_plan, ptq_plan **out)
{
    ptq_plan *p = NULL;
    ptq_status st = quant_plan_copy(ctx, default_plan, &p);
    for (int64_t i = 0; st == PTQ_OK && i < p->n; i++) {
        quant_entry_unquantize(&p->e[i], quant_target_float(p->target));
    }
    if (st != PTQ_OK) {
        ptq_plan_free(p);
        return st;
    }
    *out = p;
    return PTQ_OK;
}

ptq_status ptq_sens_create(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *default_plan, const ptq_plan *core_plan,
                           unsigned flags, ptq_sensitivity **out)
{
    ptq_status st = PTQ_OK;
    ptq_plan *p16 = NULL;
    *out = NULL;
    if (core_plan->n != default_plan->n)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the core plan has %lld tensors, the default plan %lld",
                        (long long)core_plan->n, (long long)default_plan->n);
    ptq_sensitivity *s = calloc(1, sizeof *s);
    if (!s)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the sensitivity analysis");
    s->g = g;
    s->high = default_plan->target == PTQ_TARGET_ORT_CPU ? "FP32" : "FP16";
    s->only = (flags & PTQ_SENS_ONLY) != 0;
    PTQ_TRY(st, float_plan(ctx, default_plan, &p16), fail);
    PTQ_TRY(st, ptq_fq_create(ctx, g, default_plan, &s->fq_def), fail);
    PTQ_TRY(st, ptq_fq_create(ctx, g, core_plan, &s->fq_core), fail);
    PTQ_TRY(st, ptq_fq_create(ctx, g, p16, &s->fq_fp16), fail);
    s->ov_def = ptq_fq_overlay(s->fq_def);
    s->ov_core = ptq_fq_overlay(s->fq_core);
    s->ov_fp16 = ptq_fq_overlay(s->fq_fp16);
    s->n_t = core_plan->n;
    s->t = calloc((size_t)s->n_t + 1, sizeof *s->t);
    s->acc_a = calloc((size_t)s->n_t + 1, sizeof *s->acc_a);
    s->acc_b = calloc((size_t)s->n_t + 1, sizeof *s->acc_b);
    s->rounds = calloc((size_t)g->n_values + 1, 1);
    s->float_bias = calloc((size_t)g->n_values + 1, 1);
    s->runs = calloc((size_t)g->n_nodes + 1, 1);
    s->outputs = calloc((size_t)g->n_outputs + 1, sizeof *s->outputs);
    s->mine = malloc((size_t)s->n_t + 1);
    s->baseline = 1;
    if (s->mine)
        memset(s->mine, 1, (size_t)s->n_t + 1);
    if (!s->t || !s->acc_a || !s->acc_b || !s->rounds || !s->float_bias || !s->runs || !s->outputs || !s->mine) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the sensitivity analysis");
        goto fail;
    }
    for (int64_t i = 0; i < s->n_t; i++) {
        const ptq_plan_entry *c = &core_plan->e[i], *d = &default_plan->e[i];
        ptq_sens_tensor *t = &s->t[i];
        if (strcmp(c->name, d->name) != 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the core plan's tensor %lld is '%s', the default plan's '%s'",
                          (long long)i, c->name, d->name);
            goto fail;
        }
        t->name = c->name;
        t->is_weight = c->is_weight;
        t->value = ptq_graph_find_value(g, c->name);
        if (t->value < 0) {
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the plan names '%s', which the model does not have", c->name);
            goto fail;
        }
        t->start_node = start_node_of(g, t->value);
        t->prec_default = d->prec;
        t->measured_a = ptq_prec_is_quantized(c->prec) && !((flags & PTQ_SENS_ONLY) && c->is_weight);
        t->measured_b = ptq_prec_is_quantized(d->prec) && !(flags & PTQ_SENS_ONLY);
    }
    s->ov.user = s;
    s->ov.weight = mixed_weight;
    s->ov.round = mixed_round;
    s->ov.rounds = s->rounds;
    s->ov.run = mixed_run;
    s->ov.runs = s->runs;
    *out = s;
    ptq_plan_free(p16);
    return PTQ_OK;
fail:
    ptq_plan_free(p16);
    ptq_sens_free(s);
    return st;
}

/* First batch: the class count, counters, and what the FP32 runs keep. */
static ptq_status sens_before(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_sensitivity *s = user;
    if (b->index != 0)
        return PTQ_OK;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    PTQ_TRY_RET(ptq_exec_keep_for(ctx, e, 0));
    for (int64_t i = 0; i < s->n_t; i++)
        if ((s->t[i].measured_a || s->t[i].measured_b) && s->mine[i])
            PTQ_TRY_RET(ptq_exec_keep_for(ctx, e, s->t[i].start_node));
    return PTQ_OK;
}

/* Runs the current configuration from node k (k < 0: the whole graph,
 * keeping its values for the runs after it) and counts it into a (NULL:
 * not counted). */
static ptq_status run_config(ptq_ctx *ctx, ptq_sensitivity *s, ptq_exec *e, int k, ptq_batch *b, qfig *a)
{
    ptq_exec_set_overlay(e, &s->ov);
    ptq_status st = k < 0 ? ptq_exec_rerun(ctx, e, s->outputs) : ptq_exec_run_from(ctx, e, k, s->outputs);
    k = k < 0 ? 0 : k;
    ptq_exec_set_overlay(e, NULL);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *q = &s->outputs[b->logits_output];
    if (ptq_tensor_numel(q) != b->n * s->k)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "the logits output changed shape under quantization");
    if (!a) /* a prefix for later runs, counted by another process */
        return PTQ_OK;
    s->n_runs++;
    s->nodes_run += s->g->n_nodes - k;
    s->nodes_full += s->g->n_nodes;
    qfig_add(a, s->k, b->n, b->labels, s->f32.logits, s->f32.pred, q->data);
    return PTQ_OK;
}

static ptq_status sens_after(void *user, ptq_ctx *ctx, ptq_runner *r, ptq_batch *b)
{
    ptq_sensitivity *s = user;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(r));
    ptq_runner_seconds(r, &s->secs.read, &s->secs.fp32);
    double t0 = ptq_clock_s(), t1;
    PTQ_TRY_RET(qfig_fp32_take(ctx, &s->f32, b));
    if (!s->k) {
        s->k = s->f32.k;
        PTQ_TRY_RET(qfig_init(ctx, &s->acc_fp32, s->k));
        PTQ_TRY_RET(qfig_init(ctx, &s->acc_def, s->k));
        for (int64_t i = 0; i < s->n_t; i++) {
            PTQ_TRY_RET(qfig_init(ctx, &s->acc_a[i], s->k));
            PTQ_TRY_RET(qfig_init(ctx, &s->acc_b[i], s->k));
        }
    }
    if (s->baseline) { /* the FP32 run every process makes counts once */
        qfig_add(&s->acc_fp32, s->k, b->n, b->labels, s->f32.logits, s->f32.pred, s->f32.logits);
        s->n_runs++;
        s->nodes_run += s->g->n_nodes;
        s->nodes_full += s->g->n_nodes;
    }
    /* (a) runs start from the FP32 run's kept values; then the default
     * plan runs whole and keeps its own, and each (b) run starts from them
     * at the node that makes its tensor, as nothing before it differs */
    int any_b = 0;
    for (int64_t i = 0; i < s->n_t; i++) {
        if (!s->mine[i])
            continue;
        any_b |= s->t[i].measured_b;
        if (s->t[i].measured_a) {
            configure(s, MODE_ONLY, i);
            PTQ_TRY_RET(run_config(ctx, s, e, s->t[i].start_node, b, &s->acc_a[i]));
        }
    }
    s->secs.only += (t1 = ptq_clock_s()) - t0;
    if (s->only || (!s->baseline && !any_b))
        return PTQ_OK;
    configure(s, MODE_DEFAULT, -1);
    /* a process that measures (b) runs but not the baseline runs it uncounted */
    PTQ_TRY_RET(run_config(ctx, s, e, -1, b, s->baseline ? &s->acc_def : NULL));
    s->secs.default_plan += (t0 = ptq_clock_s()) - t1;
    for (int64_t i = 0; i < s->n_t; i++)
        if (s->t[i].measured_b && s->mine[i]) {
            configure(s, MODE_ALL_BUT, i);
            PTQ_TRY_RET(run_config(ctx, s, e, s->t[i].start_node, b, &s->acc_b[i]));
        }
    s->secs.all_but += ptq_clock_s() - t0;
    return PTQ_OK;
}

ptq_consumer ptq_sens_consumer(ptq_sensitivity *s)
{
    ptq_consumer c = {s, sens_before, sens_after, NULL};
    return c;
}

/* Elements of value v at batch 1 (the session's shapes), 0 where unknown. */
static int64_t value_elems(const ptq_graph *g, int v)
{
    if (v < 0 || g->values[v].ndim < 0)
        return 0;
    int64_t n = 1;
    for (int d = 0; d < g->values[v].ndim; d++) {
        if (g->values[v].dims[d] <= 0)
            return 0;
        n *= g->values[v].dims[d];
    }
    return n;
}

/* Node k's work per sample for sharing the tensors: multiply-adds of Conv,
 * ConvTranspose, Gemm and MatMul, output elements for the others, 1 where
 * the shapes are unknown. An estimate: only the balance depends on it. */
static int64_t node_work(const ptq_graph *g, int k)
{
    const ptq_node *n = &g->nodes[k];
    const int64_t out = n->n_outputs > 0 ? value_elems(g, n->outputs[0]) : 0;
    const ptq_value *a = n->n_inputs > 0 && n->inputs[0] >= 0 ? &g->values[n->inputs[0]] : NULL;
    const ptq_value *w = n->n_inputs > 1 && n->inputs[1] >= 0 ? &g->values[n->inputs[1]] : NULL;
    int64_t per = 1; /* multiply-adds per output element */
    if ((strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "ConvTranspose") == 0) && w && w->ndim >= 2) {
        per = value_elems(g, n->inputs[1]) / (w->dims[0] > 0 ? w->dims[0] : 1); /* Cin/group x kernel */
        if (strcmp(n->op_type, "ConvTranspose") == 0) /* each input element meets Cout/group x kernel weights */
            return value_elems(g, n->inputs[0]) * per + 1;
    } else if (strcmp(n->op_type, "Gemm") == 0 && a && a->ndim == 2)
        per = a->dims[ptq_node_attr_int(n, "transA", 0) ? 0 : 1];
    else if (strcmp(n->op_type, "MatMul") == 0 && a && a->ndim >= 1)
        per = a->dims[a->ndim - 1];
    return out * (per > 0 ? per : 1) + 1;
}

/* The work per sample of tensor i's runs, each from the node that reads it
 * on (sens_after); from[j] is the work of nodes j.. */
static int64_t tensor_cost(const ptq_sensitivity *s, const int64_t *from, int64_t i)
{
    const ptq_sens_tensor *t = &s->t[i];
    return ((t->measured_a ? 1 : 0) + (t->measured_b ? 1 : 0)) * from[t->start_node];
}

ptq_status ptq_sens_share(ptq_ctx *ctx, ptq_sensitivity *s, int group, int n_groups)
{
    if (n_groups < 1 || group < 0 || group >= n_groups)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "bad tensor group %d of %d", group, n_groups);
    int64_t *order = malloc(((size_t)s->n_t + 1) * sizeof *order), *load = calloc((size_t)n_groups, sizeof *load);
    int64_t *from = malloc(((size_t)s->g->n_nodes + 1) * sizeof *from);
    if (!order || !load || !from) {
        free(order);
        free(load);
        free(from);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory sharing %lld tensors", (long long)s->n_t);
    }
    from[s->g->n_nodes] = 0;
    for (int k = s->g->n_nodes - 1; k >= 0; k--)
        from[k] = from[k + 1] + node_work(s->g, k);
    for (int64_t i = 0; i < s->n_t; i++) { /* the costliest first, plan order among equals (insertion sort) */
        int64_t j = i;
        while (j > 0 && tensor_cost(s, from, order[j - 1]) < tensor_cost(s, from, i)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int64_t j = 0; j < s->n_t; j++) { /* each to the least loaded group, the lowest among equals */
        int best = 0;
        for (int q = 1; q < n_groups; q++)
            if (load[q] < load[best])
                best = q;
        load[best] += tensor_cost(s, from, order[j]);
        s->mine[order[j]] = best == group;
    }
    s->baseline = group == 0;
    free(order);
    free(load);
    free(from);
    return PTQ_OK;
}

/* One count to or from a reduction buffer. */
static void word(int64_t *field, int64_t *slot, int to_buf)
{
    if (to_buf)
        *slot = *field;
    else
        *field = *slot;
}

/* One configuration's counts to or from buf; returns the words used. */
static int64_t qfig_words(qfig *a, int k, int64_t *buf, int to_buf)
{
    word(&a->n, &buf[0], to_buf);
    word(&a->top1, &buf[1], to_buf);
    word(&a->agree, &buf[2], to_buf);
    word(&a->n_measured, &buf[3], to_buf);
    for (int c = 0; c < k; c++)
        word(&a->tp[c], &buf[4 + c], to_buf);
    int64_t at = 4 + k;
    ptq_xsum *sums[] = {&a->signal_sq, &a->noise_sq, &a->kl};
    for (int i = 0; i < 3; i++, at += PTQ_XSUM_WORDS) {
        if (to_buf)
            ptq_xsum_pack(sums[i], buf + at);
        else
            ptq_xsum_unpack(sums[i], buf + at);
    }
    return at;
}

/* Every count of s to or from buf (the support only from the baseline process); returns the words used. */
static int64_t sens_words(ptq_sensitivity *s, int64_t *buf, int to_buf)
{
    int64_t at = qfig_words(&s->acc_fp32, s->k, buf, to_buf);
    at += qfig_words(&s->acc_def, s->k, buf + at, to_buf);
    for (int64_t i = 0; i < s->n_t; i++) {
        at += qfig_words(&s->acc_a[i], s->k, buf + at, to_buf);
        at += qfig_words(&s->acc_b[i], s->k, buf + at, to_buf);
    }
    word(&s->n_runs, &buf[at++], to_buf);
    word(&s->nodes_run, &buf[at++], to_buf);
    word(&s->nodes_full, &buf[at++], to_buf);
    if (to_buf && !s->baseline) /* every process counted the support: one counts */
        memset(s->f32.support, 0, (size_t)s->k * sizeof *s->f32.support);
    for (int c = 0; c < s->k; c++)
        word(&s->f32.support[c], &buf[at++], to_buf);
    return at;
}

ptq_status ptq_sens_allreduce(ptq_ctx *ctx, ptq_sensitivity *s)
{
    if (ptq_dist_size() == 1)
        return PTQ_OK;
    const int64_t per_fig = 4 + s->k + 3 * PTQ_XSUM_WORDS, n = (2 + 2 * s->n_t) * per_fig + 3 + s->k;
    int64_t *buf = s->k > 0 ? malloc((size_t)n * sizeof *buf) : NULL;
    ptq_status st = ptq_dist_agree(ctx, buf ? PTQ_OK
                                            : ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reducing the figures of "
                                                       "%lld tensors", (long long)s->n_t));
    if (st == PTQ_OK) {
        sens_words(s, buf, 1);
        st = ptq_dist_allreduce_i64(ctx, buf, n, PTQ_DIST_SUM);
        if (st == PTQ_OK) {
            sens_words(s, buf, 0);
            memset(s->mine, 1, (size_t)s->n_t);
            s->baseline = 1;
        }
    }
    free(buf);
    return st;
}

int64_t ptq_sens_n_tensors(const ptq_sensitivity *s)
{
    return s->n_t;
}

const ptq_sens_tensor *ptq_sens_tensor_at(const ptq_sensitivity *s, int64_t i)
{
    ptq_sens_tensor *t = &s->t[i];
    if (s->k) {
        qfig_figures(&s->acc_a[i], &t->a);
        qfig_figures(t->measured_b ? &s->acc_b[i] : &s->acc_def, &t->b);
    }
    return t;
}

int ptq_sens_n_classes(const ptq_sensitivity *s)
{
    return s->k;
}

void ptq_sens_baselines(const ptq_sensitivity *s, ptq_sens_figures *fp32, ptq_sens_figures *default_plan,
                        const int64_t **support)
{
    qfig_figures(&s->acc_fp32, fp32);
    qfig_figures(&s->acc_def, default_plan);
    *support = s->f32.support;
}

void ptq_sens_work(const ptq_sensitivity *s, int64_t *n_runs, int64_t *nodes_run, int64_t *nodes_full)
{
    *n_runs = s->n_runs;
    *nodes_run = s->nodes_run;
    *nodes_full = s->nodes_full;
}

ptq_sens_seconds ptq_sens_time(const ptq_sensitivity *s)
{
    return s->secs;
}

/* ---- reports ---- */

static double pts(int64_t num, int64_t den)
{
    return den ? 100.0 * (double)num / (double)den : 0.0;
}

static void add_finite(cJSON *o, const char *key, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, key, x);
    else
        cJSON_AddNullToObject(o, key);
}

/* The worst class of f against FP32: the largest recall drop (points). */
static int worst_class(const ptq_sensitivity *s, const ptq_sens_figures *f, double *drop)
{
    int worst = -1;
    *drop = 0;
    for (int c = 0; c < s->k; c++) {
        const double d = pts(s->acc_fp32.tp[c] - f->tp[c], s->f32.support[c]);
        if (worst < 0 || d > *drop) {
            worst = c;
            *drop = d;
        }
    }
    return worst;
}

static cJSON *figures_json(const ptq_sensitivity *s, const ptq_sens_figures *f, const char *const *names)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "top1", f->n ? (double)f->top1 / (double)f->n : 0.0);
    cJSON_AddNumberToObject(o, "top1_delta_pts", pts(f->top1 - s->acc_fp32.top1, f->n));
    cJSON_AddNumberToObject(o, "agreement", f->n ? (double)f->agree / (double)f->n : 0.0);
    add_finite(o, "sqnr_db", f->sqnr_db);
    cJSON_AddBoolToObject(o, "sqnr_infinite", isinf(f->sqnr_db) && f->sqnr_db > 0);
    add_finite(o, "kl_nats", f->kl_nats);
    cJSON *rec = cJSON_AddArrayToObject(o, "recall_delta_pts");
    for (int c = 0; rec && c < s->k; c++)
        cJSON_AddItemToArray(rec, cJSON_CreateNumber(pts(f->tp[c] - s->acc_fp32.tp[c], s->f32.support[c])));
    double drop;
    const int w = worst_class(s, f, &drop);
    if (w >= 0) {
        cJSON *wc = cJSON_AddObjectToObject(o, "worst_class");
        cJSON_AddNumberToObject(wc, "index", w);
        if (names && names[w])
            cJSON_AddStringToObject(wc, "name", names[w]);
        cJSON_AddNumberToObject(wc, "recall_drop_pts", drop);
    }
    return o;
}

ptq_status ptq_sens_format_json(ptq_ctx *ctx, const ptq_sensitivity *s, const char *header_json,
                                const char *const *class_names, char **out)
{
    *out = NULL;
    cJSON *root = header_json ? cJSON_Parse(header_json) : cJSON_CreateObject();
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the report header is not a JSON object");
    }
    ptq_sens_figures f32, def;
    const int64_t *support;
    ptq_sens_baselines(s, &f32, &def, &support);
    cJSON_AddStringToObject(root, "format", "ptq-sensitivity");
    cJSON_AddNumberToObject(root, "format_version", PTQ_SENS_FORMAT_VERSION);
    cJSON_AddNumberToObject(root, "samples", (double)f32.n);
    cJSON_AddNumberToObject(root, "classes", s->k);
    cJSON *names = cJSON_AddArrayToObject(root, "class_names");
    for (int c = 0; names && c < s->k; c++)
        cJSON_AddItemToArray(names, class_names && class_names[c] ? cJSON_CreateString(class_names[c])
                                                                   : cJSON_CreateNull());
    cJSON *sup = cJSON_AddArrayToObject(root, "support");
    for (int c = 0; sup && c < s->k; c++)
        cJSON_AddItemToArray(sup, cJSON_CreateNumber((double)support[c]));
    cJSON_AddNumberToObject(root, "top1_fp32", f32.n ? (double)f32.top1 / (double)f32.n : 0.0);
    cJSON_AddItemToObject(root, "default_plan", figures_json(s, &def, class_names));
    cJSON *arr = cJSON_AddArrayToObject(root, "tensors");
    for (int64_t i = 0; arr && i < s->n_t; i++) {
        const ptq_sens_tensor *t = ptq_sens_tensor_at(s, i);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", t->name);
        cJSON_AddStringToObject(o, "kind", t->is_weight ? "weight" : "activation");
        cJSON_AddNumberToObject(o, "start_node", t->start_node);
        cJSON_AddStringToObject(o, "precision_default", ptq_prec_name(t->prec_default));
        if (t->measured_a)
            cJSON_AddItemToObject(o, "only", figures_json(s, &t->a, class_names));
        else
            cJSON_AddNullToObject(o, "only");
        cJSON *b = figures_json(s, &t->b, class_names);
        cJSON_AddItemToObject(o, "all_but", b);
        cJSON_AddNumberToObject(b, "recovered_pts", pts(t->b.top1 - def.top1, t->b.n));
        cJSON_AddBoolToObject(b, "measured", t->measured_b);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory formatting the sensitivity report");
    *out = text;
    return PTQ_OK;
}

/* 1 when tensor a comes before b in harm order: top-1 lost alone (most
 * first), then SQNR (lowest first), then plan order. */
static int more_harmful(const ptq_sens_tensor *a, const ptq_sens_tensor *b)
{
    if (a->measured_a != b->measured_a)
        return a->measured_a;
    if (a->a.top1 != b->a.top1)
        return a->a.top1 < b->a.top1;
    const double x = isnan(a->a.sqnr_db) ? INFINITY : a->a.sqnr_db, y = isnan(b->a.sqnr_db) ? INFINITY : b->a.sqnr_db;
    return x < y;
}

ptq_status ptq_sens_format_markdown(ptq_ctx *ctx, const ptq_sensitivity *s, const char *header_json,
                                    const char *const *class_names, char **out)
{
    *out = NULL;
    int64_t *order = malloc(((size_t)s->n_t + 1) * sizeof *order);
    if (!order)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory formatting the sensitivity report");
    for (int64_t i = 0; i < s->n_t; i++) { /* insertion sort: stable, plan order among equals */
        ptq_sens_tensor_at(s, i);
        int64_t j = i;
        while (j > 0 && more_harmful(&s->t[i], &s->t[order[j - 1]])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    ptq_sens_figures f32, def;
    const int64_t *support;
    ptq_sens_baselines(s, &f32, &def, &support);
    ptq_buf b = {0};
    ptq_buf_putf(&b, "# Sensitivity\n\n");
    ptq_status st = ptq_md_header(ctx, &b, header_json, "sensitivity report");
    if (st != PTQ_OK) {
        ptq_buf_free(&b);
        free(order);
        return st;
    }
    ptq_buf_putf(&b, "%lld samples, %d classes. FP32 top-1 %.2f%%; the default plan %.2f%% (%+.2f pts).\n\n",
                 (long long)f32.n, s->k, pts(f32.top1, f32.n), pts(def.top1, def.n), pts(def.top1 - f32.top1, f32.n));
    ptq_buf_putf(&b, "Sorted by the top-1 lost when only the tensor is quantized (then its logits' SQNR). "
                     "\"All but\" is the default plan with the tensor in %s: the points it recovers "
                     "(only for tensors the default plan quantizes).\n\n", s->high);
    ptq_buf_putf(&b, "| tensor | kind | only: top-1 Δ pts | only: SQNR dB | only: agreement | only: worst class (recall Δ) "
                     "| all but: recovered pts |\n|---|---|---|---|---|---|---|\n");
    for (int64_t j = 0; j < s->n_t; j++) {
        const ptq_sens_tensor *t = &s->t[order[j]];
        /* names from the files escaped as validate.md escapes them; a failed put is b's, which ptq_buf_take finds */
        ptq_buf_putf(&b, "| ");
        (void)ptq_md_code(ctx, &b, t->name);
        ptq_buf_putf(&b, " | %s | ", t->is_weight ? "weight" : "activation");
        if (t->measured_a) {
            double drop;
            const int w = worst_class(s, &t->a, &drop);
            ptq_buf_putf(&b, "%+.2f | %.2f | %.2f%% | ", pts(t->a.top1 - f32.top1, t->a.n), t->a.sqnr_db,
                         pts(t->a.agree, t->a.n));
            if (drop <= 0) {
                ptq_buf_putf(&b, "— | ");
            } else {
                if (class_names && class_names[w])
                    (void)ptq_md_name(ctx, &b, class_names[w]);
                else
                    ptq_buf_putf(&b, "%d", w);
                ptq_buf_putf(&b, " (%+.2f) | ", -drop);
            }
        } else {
            ptq_buf_putf(&b, "— | — | — | — (no core scale: only zeros seen, no values, or no normal float32 one) | ");
        }
        if (t->measured_b)
            ptq_buf_putf(&b, "%+.2f |\n", pts(t->b.top1 - def.top1, t->b.n));
        else
            ptq_buf_putf(&b, "— (%s in the default plan) |\n", ptq_prec_name(t->prec_default));
    }
    free(order);
    if (!(*out = ptq_buf_take(&b)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory formatting the sensitivity report");
    return PTQ_OK;
}
