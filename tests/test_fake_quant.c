/* Simulated quantization (quant/fake_quant.c) through the CPU executor on
 * the demo model: an all-FP32 plan changes no logit bit; under the default
 * INT8 plan every planned activation comes out as k * scale with |k| <= 127
 * (FP16 ones exactly representable in half), every INT8 weight as multiples
 * of its channel's scale, the caller's input and the graph are never
 * written, and one executor switches between FP32 and the plan; under an
 * ort-cpu plan every uint8 activation is (k - zp) * scale with k in [0, 255]
 * and every Conv bias behind a uint8 input round(b / (sx * sw[c])) * sx *
 * sw[c], computed here; with reduce_range every INT8 weight is k * scale
 * with |k| <= 64 reaching 64 (127 without), also where hand-halved scales
 * make the grid clamp. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/fake_quant.h"
#include "testlib.h"

static const char SHA[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

typedef struct watch {
    const ptq_plan *plan;
    int n_checked, n_bad;
} watch;

static const ptq_plan_entry *entry_of(const ptq_plan *p, const char *name)
{
    for (int64_t i = 0; i < p->n; i++)
        if (strcmp(p->e[i].name, name) == 0)
            return &p->e[i];
    return NULL;
}

/* x on the grid of entry e: k * scale with |k| <= 127 (int8), (k - zp) * scale with k in [0, 255] (uint8), or a
 * half (fp16). */
static int on_grid(const ptq_plan_entry *e, float x, float scale)
{
    if (e->prec == PTQ_PREC_FP16)
        return ptq_k_fp16_to_float_ref(ptq_k_fp16_from_float_ref(x)) == x;
    if (e->prec == PTQ_PREC_UINT8) {
        const float k = x / scale + (float)e->zero_point;
        return k >= -0.001f && k <= 255.001f && fabsf(k - rintf(k)) <= 1e-3f;
    }
    const float k = x / scale;
    return fabsf(k) <= 127.001f && fabsf(k - rintf(k)) <= 1e-3f; /* k * scale / scale: float rounding */
}

/* A look at what the overlay left (taps run after its rounding). */
static ptq_status tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    watch *w = user;
    const ptq_plan_entry *e = entry_of(w->plan, g->values[value].name);
    if (!e || e->prec == PTQ_PREC_FP32)
        return PTQ_OK;
    const float *x = t->data;
    for (int64_t i = 0; i < ptq_tensor_numel(t); i++)
        w->n_bad += !on_grid(e, x[i], e->n_scales ? e->scales[0] : 1.0f);
    w->n_checked++;
    return PTQ_OK;
}

/* The ort-cpu plan (placement ort) of set s on g, run on input in: uint8
 * activations on their grids, and the biases of the Convs reading them
 * rounded to int32 at input scale x weight scale. */
static void check_ort_cpu(const ptq_graph *g, const ptq_calib_set *s, const ptq_tensor *in)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *plan = NULL;
    ptq_fq *fq = NULL;
    ptq_exec *e = NULL;
    CHECK_MSG(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                                   PTQ_TARGET_ORT_CPU, &plan) == PTQ_OK, "%s", ctx.msg);
    if (!plan)
        return;
    watch w = {plan, 0, 0};
    ptq_exec_params pw = {PTQ_DEVICE_CPU, 0, tap, &w, 0, PTQ_MATH_FP32};
    ptq_tensor out;
    CHECK(ptq_fq_create(&ctx, g, plan, &fq) == PTQ_OK && ptq_exec_create(&ctx, g, &pw, &e) == PTQ_OK);
    ptq_exec_set_overlay(e, ptq_fq_overlay(fq));
    CHECK_MSG(ptq_exec_run(&ctx, e, in, &out) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(w.n_checked == 13 && w.n_bad == 0, "ort-cpu: %d uint8 activations seen, %d values off their grid",
              w.n_checked, w.n_bad);
    const ptq_overlay *ov = ptq_fq_overlay(fq);
    int n_bias = 0, bad = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *nd = &g->nodes[k];
        if (strcmp(nd->op_type, "Conv") != 0 || nd->n_inputs < 3)
            continue;
        const ptq_plan_entry *xe = entry_of(plan, g->values[nd->inputs[0]].name);
        const ptq_plan_entry *we = entry_of(plan, g->values[nd->inputs[1]].name);
        const ptq_value *bv = &g->values[nd->inputs[2]];
        uint64_t src = 0;
        const float *bq = ov->weight(ov->user, nd->inputs[2], &src);
        if (!(xe && xe->prec == PTQ_PREC_UINT8)) { /* the first Conv reads the FP32 input: its bias stays */
            CHECK_MSG(!bq, "bias '%s' of a float Conv was rounded", bv->name);
            continue;
        }
        CHECK_MSG(bq && we && we->prec == PTQ_PREC_INT8, "bias '%s' not rounded", bv->name);
        for (int64_t c = 0; bq && we && c < bv->dims[0]; c++) {
            const float bs = xe->scales[0] * we->scales[c];
            const float want = (float)rint((double)((const float *)bv->data)[c] / (double)bs) * bs;
            bad += bq[c] != want;
        }
        n_bias++;
    }
    CHECK_MSG(n_bias == 8 && bad == 0, "ort-cpu: %d int32 biases, %d values off", n_bias, bad);
    printf("test_fake_quant: ort-cpu: %d uint8 activations on their grids, %d Conv biases on the int32 grid\n",
           w.n_checked, n_bias);
    ptq_exec_free(e);
    ptq_fq_free(fq);
    ptq_plan_free(plan);
}

/* The largest |k| of the overlay's weight entry e (value v, [K, C, R, S]) as k * scales[c]; -1 if a value is
 * off that grid. */
static int weight_max_code(const ptq_graph *g, const ptq_overlay *ov, int v, const ptq_plan_entry *e)
{
    const ptq_value *wv = &g->values[v];
    uint64_t src = 0;
    const float *wq = ov->weight(ov->user, v, &src);
    const int64_t per = wv->dims[1] * wv->dims[2] * wv->dims[3];
    int top = 0;
    for (int64_t c = 0; wq && c < wv->dims[0]; c++)
        for (int64_t k = 0; k < per; k++) {
            const float q = wq[c * per + k] / e->scales[c];
            if (fabsf(q - rintf(q)) > 1e-3f)
                return -1;
            top = fabsf(q) > (float)top ? (int)rintf(fabsf(q)) : top;
        }
    return wq ? top : -1;
}

/* onnxruntime's reduce_range on the ort-cpu plan: the simulated INT8 weights
 * on [-64, 64] (the full plan's on [-127, 127]); one weight's scales halved
 * by hand still gives codes up to 64 only (clamped, not 128); the
 * activations run as before. */
static void check_reduce_range(const ptq_graph *g, const ptq_calib_set *s, const ptq_tensor *in)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *full = NULL, *plan = NULL;
    ptq_fq *fq_full = NULL, *fq = NULL;
    ptq_exec *e = NULL;
    CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                               PTQ_TARGET_ORT_CPU, &full) == PTQ_OK);
    CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                               PTQ_TARGET_ORT_CPU, &plan) == PTQ_OK);
    if (!full || !plan)
        return;
    CHECK_MSG(ptq_plan_reduce_range(&ctx, g, plan) == PTQ_OK, "%s", ctx.msg);
    ptq_plan_entry *halved = NULL;
    for (int64_t i = 0; i < plan->n && !halved; i++)
        if (plan->e[i].is_weight && plan->e[i].prec == PTQ_PREC_INT8)
            halved = &plan->e[i];
    for (int64_t c = 0; halved && c < halved->n_scales; c++)
        halved->scales[c] *= 0.5f;
    CHECK(ptq_fq_create(&ctx, g, full, &fq_full) == PTQ_OK && ptq_fq_create(&ctx, g, plan, &fq) == PTQ_OK);
    int n_int8_w = 0, bad = 0;
    for (int64_t i = 0; fq_full && fq && i < plan->n; i++) {
        const ptq_plan_entry *pe = &plan->e[i];
        if (!pe->is_weight || pe->prec != PTQ_PREC_INT8)
            continue;
        const int v = ptq_graph_find_value(g, pe->name);
        const int top = weight_max_code(g, ptq_fq_overlay(fq), v, pe);
        const int top_full = weight_max_code(g, ptq_fq_overlay(fq_full), v, entry_of(full, pe->name));
        if (top != 64 || top_full != 127) {
            bad++;
            fprintf(stderr, "%s: simulated codes up to %d with reduce_range (want 64), %d without (want 127)%s\n",
                    pe->name, top, top_full, pe == halved ? ", its scales halved" : "");
        }
        n_int8_w++;
    }
    CHECK_MSG(n_int8_w == 8 && bad == 0, "reduce_range: %d INT8 weights, %d off [-64, 64]", n_int8_w, bad);
    watch w = {plan, 0, 0};
    ptq_exec_params pw = {PTQ_DEVICE_CPU, 0, tap, &w, 0, PTQ_MATH_FP32};
    ptq_tensor out;
    CHECK(fq && ptq_exec_create(&ctx, g, &pw, &e) == PTQ_OK);
    if (e) {
        ptq_exec_set_overlay(e, ptq_fq_overlay(fq));
        CHECK_MSG(ptq_exec_run(&ctx, e, in, &out) == PTQ_OK, "%s", ctx.msg);
    }
    CHECK_MSG(w.n_checked == 13 && w.n_bad == 0, "reduce_range: %d uint8 activations seen, %d values off their grid",
              w.n_checked, w.n_bad);
    printf("test_fake_quant: reduce_range: %d INT8 weights simulated on [-64, 64] ([-127, 127] without)\n", n_int8_w);
    ptq_exec_free(e);
    ptq_fq_free(fq);
    ptq_fq_free(fq_full);
    ptq_plan_free(plan);
    ptq_plan_free(full);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("test_fake_quant");
    if (!g)
        return 1;
    const int64_t n = 16;
    float *x = malloc((size_t)n * 784 * sizeof *x), *xq = malloc((size_t)n * 784 * sizeof *xq);
    float *ref = malloc((size_t)n * 10 * sizeof *ref);
    test_rand_seed(4);
    test_fill_uniform(x, n * 784, -0.81f, 2.03f);
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;

    /* FP32 reference logits */
    ptq_exec *e = NULL;
    ptq_exec_params p0 = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, g, &p0, &e) == PTQ_OK && ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK);
    memcpy(ref, out.data, (size_t)n * 10 * sizeof *ref);
    ptq_exec_free(e);

    /* a plan from synthetic observers: every tensor saw [-8, 8] */
    ptq_calib_set *s = NULL;
    float obs[1000];
    test_fill_uniform(obs, 1000, -8.0f, 8.0f);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK && ptq_calib_set_describe(&ctx, s, SHA, "m", "p") == PTQ_OK);
    for (int v = 0; v < g->n_values; v++) {
        ptq_tensor t = {PTQ_DT_FLOAT, 1, {1000}, obs, PTQ_MEM_HOST, 0};
        CHECK(ptq_calib_set_tap(s, &ctx, g, -1, v, &t) == PTQ_OK);
    }
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *plan = NULL;
    /* --placement all: every observed activation is rounded, the most the overlay does */
    CHECK(ptq_plan_make(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ALL, &plan) == PTQ_OK);
    if (!plan)
        return test_done("test_fake_quant");

    /* all FP32: the same logits, bit for bit */
    ptq_prec *saved = malloc((size_t)plan->n * sizeof *saved);
    int64_t *saved_n = malloc((size_t)plan->n * sizeof *saved_n);
    for (int64_t i = 0; i < plan->n; i++) {
        saved[i] = plan->e[i].prec;
        saved_n[i] = plan->e[i].n_scales;
        plan->e[i].prec = PTQ_PREC_FP32;
        plan->e[i].n_scales = 0;
    }
    ptq_fq *fq = NULL;
    CHECK(ptq_fq_create(&ctx, g, plan, &fq) == PTQ_OK);
    CHECK(ptq_exec_create(&ctx, g, &p0, &e) == PTQ_OK);
    ptq_exec_set_overlay(e, ptq_fq_overlay(fq));
    CHECK(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK);
    CHECK_MSG(memcmp(out.data, ref, (size_t)n * 10 * sizeof *ref) == 0, "an all-FP32 plan changed the logits");
    ptq_exec_free(e);
    ptq_fq_free(fq);
    for (int64_t i = 0; i < plan->n; i++) {
        plan->e[i].prec = saved[i];
        plan->e[i].n_scales = saved_n[i];
    }

    /* the default INT8 plan */
    const void *orig[64];
    int n_w = 0;
    for (int v = 0; v < g->n_values && n_w < 64; v++)
        if (entry_of(plan, g->values[v].name) && entry_of(plan, g->values[v].name)->is_weight)
            orig[n_w++] = g->values[v].data;
    CHECK(ptq_fq_create(&ctx, g, plan, &fq) == PTQ_OK);
    watch w = {plan, 0, 0};
    ptq_exec_params pw = {PTQ_DEVICE_CPU, 0, tap, &w, 0, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, g, &pw, &e) == PTQ_OK);
    const ptq_overlay *ov = ptq_fq_overlay(fq);
    ptq_exec_set_overlay(e, ov);
    memcpy(xq, x, (size_t)n * 784 * sizeof *x);
    CHECK(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK);
    CHECK_MSG(memcmp(xq, x, (size_t)n * 784 * sizeof *x) == 0, "the overlay rounded the caller's input");
    CHECK_MSG(w.n_checked == 22 && w.n_bad == 0, "%d planned activations seen, %d values off their grid", w.n_checked,
              w.n_bad);
    int n_logits_differ = memcmp(out.data, ref, (size_t)n * 10 * sizeof *ref) != 0;
    CHECK_MSG(n_logits_differ, "an INT8 plan left every logit as it was");
    float *quant = malloc((size_t)n * 10 * sizeof *quant);
    memcpy(quant, out.data, (size_t)n * 10 * sizeof *quant);
    /* the same executor back to FP32 and to the plan again: bit for bit */
    ptq_exec_set_overlay(e, NULL);
    CHECK(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK);
    CHECK_MSG(memcmp(out.data, ref, (size_t)n * 10 * sizeof *ref) == 0, "FP32 after the overlay differs");
    ptq_exec_set_overlay(e, ov);
    CHECK(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK);
    CHECK_MSG(memcmp(out.data, quant, (size_t)n * 10 * sizeof *ref) == 0, "the plan run twice differs");
    free(quant);
    /* weights: multiples of each channel's scale */
    int bad_w = 0, n_int8_w = 0;
    for (int64_t i = 0; i < plan->n; i++) {
        const ptq_plan_entry *pe = &plan->e[i];
        if (!pe->is_weight || pe->prec != PTQ_PREC_INT8)
            continue;
        for (int v = 0; v < g->n_values; v++) {
            if (strcmp(g->values[v].name, pe->name) != 0)
                continue;
            const ptq_value *wv = &g->values[v];
            uint64_t src = 0;
            const float *wq = ov->weight(ov->user, v, &src);
            const int64_t per = wv->dims[1] * wv->dims[2] * wv->dims[3];
            CHECK_MSG(wq && wq != wv->data, "weight '%s' has no quantized copy", wv->name);
            for (int64_t c = 0; wq && c < wv->dims[0]; c++)
                for (int64_t k = 0; k < per; k++) {
                    const float wx = wq[c * per + k];
                    if (!on_grid(pe, wx, pe->scales[c]) && bad_w++ < 3)
                        fprintf(stderr, "%s[%lld]: %.9g = %.9g x scale %.9g\n", pe->name, (long long)(c * per + k),
                                (double)wx, (double)(wx / pe->scales[c]), (double)pe->scales[c]);
                }
            n_int8_w++;
        }
    }
    CHECK_MSG(n_int8_w == 8 && bad_w == 0, "%d INT8 weights, %d values off their channel's grid", n_int8_w, bad_w);
    ptq_exec_free(e);
    ptq_fq_free(fq);
    int restored = 1, k = 0;
    for (int v = 0; v < g->n_values && k < n_w; v++)
        if (entry_of(plan, g->values[v].name) && entry_of(plan, g->values[v].name)->is_weight)
            restored &= g->values[v].data == orig[k++];
    CHECK_MSG(restored, "the overlay changed the graph's weights");
    printf("test_fake_quant: %d planned activations and %d INT8 weights on their grids\n", w.n_checked, n_int8_w);
    check_ort_cpu(g, s, &in);
    check_reduce_range(g, s, &in);

    free(saved);
    free(saved_n);
    free(x);
    free(xq);
    free(ref);
    ptq_plan_free(plan);
    ptq_calib_set_free(s);
    ptq_graph_free(g);
    return test_done("test_fake_quant");
}
