/* The accuracy-budgeted planner (include/ptq/sensitivity.h): tensors of the
 * default plan move to FP16 (FP32 for target ort-cpu) one at a time, in order
 * of the top-1 a sensitivity report says each buys per byte kept in float, and every plan
 * on the way is validated on labelled data against FP32 (one executor, the
 * plan as an overlay) until the top-1 drop and, optionally, every class's
 * recall drop are within budget. Also reads sensitivity reports back.
 * Covered by tests/test_sensitivity.c and tests/cli_sensitivity_test.py. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/json.h"
#include "core/logits.h"
#include "ptq/fake_quant.h"
#include "ptq/sensitivity.h"
#include "quant/quant_internal.h"

void ptq_sens_summary_free(ptq_sens_summary *s)
{
    if (!s)
        return;
    for (int64_t i = 0; i < s->n; i++)
        free(s->e[i].name);
    free(s->e);
    memset(s, 0, sizeof *s);
}

static void copy_hex(char dst[65], const cJSON *o, const char *key)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    dst[0] = '\0';
    if (cJSON_IsString(x) && strlen(x->valuestring) == 64)
        memcpy(dst, x->valuestring, 65);
}

/* The number at key of o into *out: required (absent, null or another type refused) unless nullable, when null
 * and absent read as NAN (a figure the report could not measure). */
static int sens_number(const cJSON *o, const char *key, int nullable, double *out)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    return cJSON_IsNumber(x) || (nullable && (!x || cJSON_IsNull(x)));
}

/* One entry of "tensors" into e; PTQ_ERR_FORMAT naming the tensor (by index until it has a name). */
static ptq_status sens_entry_read(ptq_ctx *ctx, const cJSON *t, int64_t i, ptq_sens_entry *e)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(t, "kind");
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(t, "only");
    const cJSON *all_but = cJSON_GetObjectItemCaseSensitive(t, "all_but");
    if (!cJSON_IsObject(t) || !cJSON_IsString(name) || !name->valuestring[0])
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor %lld is not an object with a \"name\"", (long long)i);
    const char *n = name->valuestring;
    if (!cJSON_IsString(kind) || (strcmp(kind->valuestring, "weight") != 0 &&
                                  strcmp(kind->valuestring, "activation") != 0))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor '%s': \"kind\" is not activation or weight", n);
    if (!cJSON_IsObject(all_but))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor '%s': no \"all_but\" object", n);
    if (!cJSON_IsObject(only) && !cJSON_IsNull(only)) /* null: not measured */
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor '%s': \"only\" is neither an object nor null", n);
    const cJSON *measured = cJSON_GetObjectItemCaseSensitive(all_but, "measured");
    const cJSON *inf = cJSON_GetObjectItemCaseSensitive(only, "sqnr_infinite");
    if (!cJSON_IsBool(measured) || !sens_number(all_but, "recovered_pts", 0, &e->recovered_pts))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor '%s': \"all_but\" wants \"measured\" (true or false) "
                        "and \"recovered_pts\" (a number)", n);
    e->only_delta_pts = e->only_sqnr_db = NAN;
    if (cJSON_IsObject(only) && (!sens_number(only, "top1_delta_pts", 0, &e->only_delta_pts) ||
                                 !sens_number(only, "sqnr_db", 1, &e->only_sqnr_db) || (inf && !cJSON_IsBool(inf))))
        return ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity tensor '%s': \"only\" wants \"top1_delta_pts\" (a number), "
                        "\"sqnr_db\" (a number or null) and \"sqnr_infinite\" (true or false)", n);
    if (cJSON_IsTrue(inf))
        e->only_sqnr_db = INFINITY;
    e->is_weight = strcmp(kind->valuestring, "weight") == 0;
    if (!(e->name = strdup(n)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a sensitivity report");
    return PTQ_OK;
}

static int cmp_entry_names(const void *a, const void *b)
{
    return strcmp((*(const ptq_sens_entry *const *)a)->name, (*(const ptq_sens_entry *const *)b)->name);
}

/* PTQ_ERR_FORMAT naming the first tensor s lists twice. */
static ptq_status sens_unique_names(ptq_ctx *ctx, const ptq_sens_summary *s)
{
    const ptq_sens_entry **by_name = malloc((size_t)s->n * sizeof *by_name);
    if (!by_name)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a sensitivity report");
    for (int64_t i = 0; i < s->n; i++)
        by_name[i] = &s->e[i];
    qsort(by_name, (size_t)s->n, sizeof *by_name, cmp_entry_names);
    ptq_status st = PTQ_OK;
    for (int64_t i = 1; i < s->n && st == PTQ_OK; i++)
        if (strcmp(by_name[i]->name, by_name[i - 1]->name) == 0)
            st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: tensor '%s' is listed twice", by_name[i]->name);
    free(by_name);
    return st;
}

ptq_status ptq_sens_read(ptq_ctx *ctx, const char *json, ptq_sens_summary *out)
{
    ptq_status st = PTQ_OK;
    memset(out, 0, sizeof *out);
    cJSON *root = NULL;
    PTQ_TRY_RET(ptq_json_parse(ctx, json, "not a ptq sensitivity report", &root));
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "format_version");
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    const cJSON *core = cJSON_GetObjectItemCaseSensitive(root, "core");
    double n_samples = NAN;
    if (!cJSON_IsObject(root) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "ptq-sensitivity") != 0 ||
        !cJSON_IsNumber(version) || !cJSON_IsArray(arr)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "not a ptq sensitivity report (format \"ptq-sensitivity\" with a "
                      "format_version and tensors)");
        goto done;
    }
    if (version->valuedouble != PTQ_SENS_FORMAT_VERSION) {
        st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "a version %g sensitivity report; this ptq reads version %d",
                      version->valuedouble, PTQ_SENS_FORMAT_VERSION);
        goto done;
    }
    if (!sens_number(root, "samples", 0, &n_samples) || !(n_samples >= 0 && n_samples < 9e18) ||
        n_samples != floor(n_samples)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"samples\" is not a count of images >= 0");
        goto done;
    }
    out->n_samples = (int64_t)n_samples;
    copy_hex(out->model_sha256, root, "model_sha256");
    copy_hex(out->archive_sample_ids_sha256, root, "archive_sample_ids_sha256");
    /* both always written: without them a plan's checks would report a mismatch where the key is missing */
    if (!out->archive_sample_ids_sha256[0]) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"archive_sample_ids_sha256\" (the calibration "
                      "archive's samples) is missing or not 64 hex digits");
        goto done;
    }
    if (!cJSON_IsString(core) || !core->valuestring[0]) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"core\" (the format it was measured in) is missing "
                      "or not a name");
        goto done;
    }
    snprintf(out->core, sizeof out->core, "%s", core->valuestring);
    /* as in a plan: written only when true, so reports from before it read as false */
    const cJSON *reduce_range = cJSON_GetObjectItemCaseSensitive(root, "reduce_range");
    if (reduce_range && !cJSON_IsBool(reduce_range)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"reduce_range\" is not true or false");
        goto done;
    }
    out->reduce_range = cJSON_IsTrue(reduce_range);
    /* as in a plan: written only when not trt, so reports from before it read as trt */
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(root, "target");
    out->target = PTQ_TARGET_TRT;
    if (target && (!cJSON_IsString(target) || ptq_target_parse(ctx, target->valuestring, &out->target) != PTQ_OK)) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: \"target\" is not trt or ort-cpu");
        goto done;
    }
    const int n = cJSON_GetArraySize(arr);
    if (n == 0) {
        st = ptq_fail(ctx, PTQ_ERR_FORMAT, "sensitivity report: no tensors");
        goto done;
    }
    if (!(out->e = calloc((size_t)n + 1, sizeof *out->e))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory reading a sensitivity report");
        goto done;
    }
    const cJSON *t;
    cJSON_ArrayForEach(t, arr)
    {
        PTQ_TRY(st, sens_entry_read(ctx, t, out->n, &out->e[out->n]), done);
        out->n++;
    }
    st = sens_unique_names(ctx, out);
done:
    cJSON_Delete(root);
    if (st != PTQ_OK)
        ptq_sens_summary_free(out);
    return st;
}

ptq_status ptq_sens_check(ptq_ctx *ctx, const ptq_sens_summary *s, const ptq_graph *g, const char *model_sha256)
{
    if (strcmp(s->model_sha256, model_sha256) != 0)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "measured on another model (SHA-256 %.16s..., the model's %.16s...)",
                        s->model_sha256[0] ? s->model_sha256 : "none", model_sha256);
    ptq_status st = PTQ_OK;
    unsigned char *act = calloc((size_t)g->n_values + 1, 1), *wt = calloc((size_t)g->n_values + 1, 1);
    if (!act || !wt) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory checking a sensitivity report");
        goto done;
    }
    ptq_graph_quantizable(g, act, wt);
    for (int64_t i = 0; i < s->n && st == PTQ_OK; i++) {
        const ptq_sens_entry *e = &s->e[i];
        const int v = ptq_graph_find_value(g, e->name);
        if (v < 0)
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "sensitivity tensor '%s' is not a tensor of the model", e->name);
        /* its kind as the plan's check reads it: a weight swapped for an activation is another tensor's figures */
        else if (!(e->is_weight ? wt[v] : act[v]))
            st = ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "sensitivity tensor '%s' is of kind %s, but the model has no %s "
                          "by that name (%s)", e->name, e->is_weight ? "weight" : "activation",
                          e->is_weight ? "Conv/Gemm/MatMul weight" : "float activation",
                          wt[v] ? "it is a weight" : act[v] ? "it is an activation" : "nor any tensor a plan covers");
    }
done:
    free(act);
    free(wt);
    return st;
}

ptq_status ptq_sens_covers(ptq_ctx *ctx, const ptq_sens_summary *s, const ptq_plan *plan)
{
    int64_t n_missing = 0, first = -1, n_quantized = 0;
    for (int64_t i = 0; i < plan->n; i++) {
        if (!ptq_prec_is_quantized(plan->e[i].prec))
            continue;
        n_quantized++;
        int64_t j = 0;
        while (j < s->n && strcmp(s->e[j].name, plan->e[i].name) != 0)
            j++;
        if (j == s->n && !n_missing++)
            first = i;
    }
    if (!n_missing)
        return PTQ_OK;
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "no figure for %lld of the plan's %lld quantized tensors (the first: "
                    "'%s'): measured for another plan; measure it with the plan's --placement and precision flags",
                    (long long)n_missing, (long long)n_quantized, plan->e[first].name);
}

void ptq_budget_result_free(ptq_budget_result *r)
{
    if (!r)
        return;
    for (int64_t i = 0; i < r->n_steps; i++)
        free(r->steps[i].moved);
    free(r->steps);
    memset(r, 0, sizeof *r);
}

/* One candidate move: plan entry, what it buys and what it costs. */
typedef struct move {
    int64_t entry;
    double gain, cost, sqnr;
} move;

/* Elements per sample of an activation (its inferred dims after the
 * batch), or of a weight. */
static double cost_of(const ptq_graph *g, const ptq_plan_entry *e)
{
    const int v = ptq_graph_find_value(g, e->name);
    if (v < 0 || g->values[v].ndim < 0)
        return 1;
    const ptq_value *val = &g->values[v];
    double n = 1;
    for (int d = e->is_weight ? 0 : 1; d < val->ndim; d++)
        n *= val->dims[d] > 0 ? (double)val->dims[d] : 1;
    return n > 0 ? n : 1;
}

/* 1 when a moves before b: more gain per cost; without gain, lower SQNR. */
static int moves_first(const move *a, const move *b)
{
    const int ga = a->gain > 0, gb = b->gain > 0;
    if (ga != gb)
        return ga;
    if (ga && a->gain / a->cost != b->gain / b->cost)
        return a->gain / a->cost > b->gain / b->cost;
    return a->sqnr < b->sqnr;
}

/* The order in which start's quantized tensors move to float. */
static ptq_status move_order(ptq_ctx *ctx, const ptq_graph *g, const ptq_plan *start, const ptq_sens_summary *sens,
                             move **out, int64_t *n_out)
{
    move *m = calloc((size_t)start->n + 1, sizeof *m);
    int64_t n = 0;
    const double noise_pts = sens->n_samples > 0 ? 300.0 / (double)sens->n_samples : 0;
    if (!m)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory ordering moves");
    for (int64_t i = 0; i < start->n; i++) {
        const ptq_plan_entry *e = &start->e[i];
        if (!ptq_prec_is_quantized(e->prec))
            continue;
        const ptq_sens_entry *se = NULL;
        for (int64_t j = 0; j < sens->n && !se; j++)
            if (strcmp(sens->e[j].name, e->name) == 0)
                se = &sens->e[j];
        move mv = {i, 0, cost_of(g, e), INFINITY};
        if (se) {
            const double lost_alone = isnan(se->only_delta_pts) ? 0 : -se->only_delta_pts;
            mv.gain = se->recovered_pts > lost_alone ? se->recovered_pts : lost_alone;
            if (mv.gain <= noise_pts) /* within a few images of nothing: no evidence */
                mv.gain = 0;
            mv.sqnr = isnan(se->only_sqnr_db) ? INFINITY : se->only_sqnr_db;
        }
        int64_t at = n++;
        while (at > 0 && moves_first(&mv, &m[at - 1])) {
            m[at] = m[at - 1];
            at--;
        }
        m[at] = mv;
    }
    *out = m;
    *n_out = n;
    return PTQ_OK;
}

/* FP32 against one overlay over the run: a runner consumer. */
typedef struct eval_run {
    const ptq_overlay *ov;
    int k;
    qfig f, q;
    qfig_fp32 f32;
    ptq_tensor *outs;
} eval_run;

static void eval_run_free(eval_run *r)
{
    qfig_free(&r->f);
    qfig_free(&r->q);
    qfig_fp32_free(&r->f32);
    free(r->outs);
    memset(r, 0, sizeof *r);
}

static ptq_status eval_after(void *user, ptq_ctx *ctx, ptq_runner *rn, ptq_batch *b)
{
    eval_run *r = user;
    ptq_exec *e = ptq_session_exec(ptq_runner_session(rn));
    const ptq_graph *g = ptq_exec_graph(e);
    PTQ_TRY_RET(qfig_fp32_take(ctx, &r->f32, b));
    if (!r->k) {
        r->k = r->f32.k;
        PTQ_TRY_RET(qfig_init(ctx, &r->f, r->k));
        PTQ_TRY_RET(qfig_init(ctx, &r->q, r->k));
        if (!(r->outs = calloc((size_t)g->n_outputs + 1, sizeof *r->outs)))
            return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    }
    qfig_add(&r->f, r->k, b->n, b->labels, r->f32.logits, r->f32.pred, r->f32.logits);
    ptq_exec_set_overlay(e, r->ov);
    ptq_status st = ptq_runner_rerun(ctx, rn, b, r->outs);
    ptq_exec_set_overlay(e, NULL);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *q = &r->outs[b->logits_output];
    if (ptq_tensor_numel(q) != b->n * r->k)
        return ptq_fail(ctx, PTQ_ERR_SHAPE, "the logits output changed shape under quantization");
    qfig_add(&r->q, r->k, b->n, b->labels, r->f32.logits, r->f32.pred, q->data);
    return PTQ_OK;
}

/* Validates plan p: its top-1 drop and worst class against FP32. */
static ptq_status validate_plan(ptq_ctx *ctx, ptq_session *s, const int64_t *ids, int64_t n_ids, int64_t batch,
                                const ptq_plan *p, ptq_budget_step *step, double *top1_fp32)
{
    ptq_fq *fq = NULL;
    eval_run r;
    memset(&r, 0, sizeof r);
    ptq_status st = ptq_fq_create(ctx, ptq_session_graph(s), p, &fq);
    if (st != PTQ_OK)
        return st;
    r.ov = ptq_fq_overlay(fq);
    ptq_runner_params rp = {.session = s, .ids = ids, .n_ids = n_ids, .batch = batch, .need_labels = 1,
                            .need_logits = 1, .prefetch = 1};
    rp.consumers[rp.n_consumers++] = (ptq_consumer){&r, NULL, eval_after, NULL};
    st = ptq_runner_run(ctx, &rp);
    if (st == PTQ_OK) {
        const double n = r.f.n ? (double)r.f.n : 1;
        *top1_fp32 = (double)r.f.top1 / n;
        step->top1 = (double)r.q.top1 / n;
        step->top1_drop_pts = 100.0 * (double)(r.f.top1 - r.q.top1) / n;
        step->worst_class = -1;
        step->worst_class_drop_pts = 0;
        for (int c = 0; c < r.k; c++) {
            const double d = r.f32.support[c] ? 100.0 * (double)(r.f.tp[c] - r.q.tp[c]) / (double)r.f32.support[c] : 0;
            if (step->worst_class < 0 || d > step->worst_class_drop_pts) {
                step->worst_class = c;
                step->worst_class_drop_pts = d;
            }
        }
    }
    eval_run_free(&r);
    ptq_fq_free(fq);
    return st;
}

/* Entry e leaves quantization for precision high (FP16, or FP32), its scales and zero point dropped. */
static ptq_status move_entry(ptq_ctx *ctx, ptq_plan_entry *e, ptq_prec high, const char *source)
{
    quant_entry_unquantize(e, high);
    free(e->source);
    if (!(e->source = strdup(source)))
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    return PTQ_OK;
}

/* Target ort-cpu: weight entry w moved to FP32 takes its layer's quantized activation inputs along.
 * onnxruntime quantizes a float weight whose layer reads a DequantizeLinear itself (its
 * WeightBiasQuantization: int8 per tensor), so the weight runs in FP32 only when its input does. */
static ptq_status move_layer_inputs(ptq_ctx *ctx, const ptq_graph *g, ptq_plan *p, const ptq_plan_entry *w)
{
    const int v = ptq_graph_find_value(g, w->name);
    const ptq_node *n = NULL;
    int input = 0;
    const ptq_op_traits *t = v >= 0 ? quant_weight_user(g, v, &n, &input) : NULL;
    for (int i = 0; t && i < n->n_inputs; i++) {
        const int a = n->inputs[i];
        if (a < 0 || a == v || !ptq_op_mask_has(t->quant_inputs, i))
            continue;
        for (int64_t j = 0; j < p->n; j++) {
            ptq_plan_entry *x = &p->e[j];
            if (!x->is_weight && ptq_prec_is_quantized(x->prec) && strcmp(x->name, g->values[a].name) == 0)
                PTQ_TRY_RET(move_entry(ctx, x, PTQ_PREC_FP32, "budget: moved to FP32 with its layer's weight"));
        }
    }
    return PTQ_OK;
}

static int64_t count_prec(const ptq_plan *p, ptq_prec prec)
{
    int64_t n = 0;
    for (int64_t i = 0; i < p->n; i++)
        n += p->e[i].prec == prec;
    return n;
}

ptq_status ptq_plan_budgeted(ptq_ctx *ctx, ptq_session *s, const int64_t *ids, int64_t n_ids, const ptq_plan *start,
                             const ptq_sens_summary *sens, const ptq_budget *b, ptq_plan **out,
                             ptq_budget_result *result)
{
    ptq_status st = PTQ_OK;
    ptq_plan *cur = NULL, *best = NULL;
    move *order = NULL;
    int64_t n_moves = 0;
    double best_drop = INFINITY;
    *out = NULL;
    memset(result, 0, sizeof *result);
    if (!(b->budget_pts >= 0) || !isfinite(b->budget_pts) || isnan(b->class_budget_pts) || b->batch < 1)
        return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "the budget must be a finite number of points >= 0");
    /* a tensor with no figure would be moved last, as if measured harmless */
    PTQ_TRY(st, ptq_sens_covers(ctx, sens, start), done);
    PTQ_TRY(st, move_order(ctx, ptq_session_graph(s), start, sens, &order, &n_moves), done);
    const int64_t n_order = n_moves;
    if (b->max_moves >= 0 && n_moves > b->max_moves)
        n_moves = b->max_moves;
    if (!(result->steps = calloc((size_t)n_moves + 1, sizeof *result->steps))) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory for the planner's trace");
        goto done;
    }
    PTQ_TRY(st, quant_plan_copy(ctx, start, &cur), done);
    /* where the target keeps tensors out of quantization: onnxruntime's CPU kernels have no FP16 arithmetic */
    const int ort_cpu = start->target == PTQ_TARGET_ORT_CPU;
    const ptq_prec high = quant_target_float(start->target);
    for (int64_t step = 0, next = 0; step <= n_moves; step++) {
        ptq_budget_step *bs = &result->steps[result->n_steps];
        if (step > 0) {
            /* a tensor an earlier move already took to float (a weight follows its layer's input) is no move */
            while (next < n_order && !ptq_prec_is_quantized(cur->e[order[next].entry].prec))
                next++;
            if (next == n_order)
                break;
            ptq_plan_entry *e = &cur->e[order[next++].entry];
            PTQ_TRY(st, move_entry(ctx, e, high, ort_cpu ? "budget: moved to FP32" : "budget: moved to FP16"), done);
            if (!(bs->moved = strdup(e->name))) {
                st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
                goto done;
            }
            if (ort_cpu && e->is_weight)
                PTQ_TRY(st, move_layer_inputs(ctx, ptq_session_graph(s), cur, e), done);
            /* a layer left reading no quantized activation takes its weight along (quant/placement.c) */
            PTQ_TRY(st, quant_plan_weights_follow(ctx, ptq_session_graph(s), cur), done);
        }
        PTQ_TRY(st, validate_plan(ctx, s, ids, n_ids, b->batch, cur, bs, &result->top1_fp32), done);
        bs->n_fp16 = count_prec(cur, high);
        result->n_steps++;
        if (b->on_step)
            b->on_step(b->on_step_user, (int)step, bs->moved, bs->top1_drop_pts, bs->worst_class,
                       bs->worst_class_drop_pts, bs->n_fp16, cur->n);
        const int met = bs->top1_drop_pts <= b->budget_pts &&
                        (b->class_budget_pts < 0 || bs->worst_class_drop_pts <= b->class_budget_pts);
        if (met || bs->top1_drop_pts < best_drop) {
            best_drop = bs->top1_drop_pts;
            ptq_plan_free(best);
            best = NULL;
            PTQ_TRY(st, quant_plan_copy(ctx, cur, &best), done);
        }
        if (met) {
            result->met = 1;
            break;
        }
    }
    *out = best;
    best = NULL;
done:
    free(order);
    ptq_plan_free(cur);
    ptq_plan_free(best);
    if (st != PTQ_OK)
        ptq_budget_result_free(result);
    return st;
}
