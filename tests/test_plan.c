/* Precision plans (quant/plan.c, quant/plan_json.c) on the demo model: the
 * --placement all plan's edges and core, weight scales against max|w| / 127 per
 * output channel computed here (FP8: the least rounding error of 16 per octave,
 * found again here with the reference rounding), JSON written -> read -> written to the same
 * bytes, and the checks a hand-edited plan must pass (unknown or repeated
 * names, bad scales, wrong scale counts, inconsistent block scales, another
 * model); the default (trt) placement's entries and rules; reduce_range:
 * INT8 weight scales max|w| / 64 (codes in [-64, 64], [-127, 127] without),
 * activations unchanged, the JSON field written and read back; a core some
 * quantized entry runs in, a plan without "core" taking its entries'. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/numfmt.h"
#include "ptq/plan.h"
#include "ptq/sensitivity.h"
#include "quant/quant_internal.h"
#include "testlib.h"

static const char SHA[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* A calibration set of g whose every tensor saw 1000 values in [-2, 3]. */
static ptq_calib_set *synthetic_set(ptq_ctx *ctx, const ptq_graph *g)
{
    ptq_calib_set *s = NULL;
    float x[1000];
    test_fill_uniform(x, 1000, -2.0f, 3.0f);
    if (ptq_calib_set_create(ctx, g, NULL, 0, &s) != PTQ_OK || ptq_calib_set_describe(ctx, s, SHA, "m", "p") != PTQ_OK)
        return s;
    for (int v = 0; v < g->n_values; v++) {
        ptq_tensor t = {PTQ_DT_FLOAT, 1, {1000}, x, PTQ_MEM_HOST, 0};
        if (ptq_calib_set_tap(s, ctx, g, -1, v, &t) != PTQ_OK)
            break;
    }
    return s;
}

static ptq_plan_entry *find(ptq_plan *p, const char *name)
{
    for (int64_t i = 0; i < p->n; i++)
        if (strcmp(p->e[i].name, name) == 0)
            return &p->e[i];
    return NULL;
}

/* ptq_plan_check of p after edit(p), expecting code and a message containing needle. */
static void expect_check(ptq_plan *p, const ptq_graph *g, ptq_status code, const char *needle)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_status st = ptq_plan_check(&ctx, p, g, SHA);
    CHECK_MSG(st == code && strstr(ctx.msg, needle), "want %d with '%s', got %d: %s", (int)code, needle, (int)st,
              ctx.msg);
}

/* Block scales on weight w of plan p: every inconsistency refused by name,
 * consistent ones refused for a format without block scales, and the JSON
 * fields written and read back only when there are blocks. */
static void check_blocks(ptq_plan *p, const ptq_graph *g, ptq_plan_entry *w)
{
    ptq_ctx ctx;
    const ptq_value *v = &g->values[ptq_graph_find_value(g, w->name)];
    int64_t numel = 1;
    for (int d = 0; d < v->ndim; d++)
        numel *= v->dims[d];
    const int64_t bs = v->dims[v->ndim - 1], n = numel / bs;
    float *blocks = malloc((size_t)n * sizeof *blocks);
    for (int64_t b = 0; b < n; b++)
        blocks[b] = 0.25f + (float)b;
    w->n_block_scales = 2;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "2 block scales but no block size");
    w->block_size = -1;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "block size -1 is not > 0");
    w->block_size = numel + 1;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "does not divide");
    w->block_size = bs;
    w->block_scales = blocks;
    w->n_block_scales = n - 1;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "block scales, but");
    w->n_block_scales = n;
    blocks[n / 2] = NAN;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "block scales must be finite and > 0");
    blocks[n / 2] = 0.5f;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "int8, which takes no block scales");

    char *j1 = NULL, *j2 = NULL;
    ptq_plan *back = NULL;
    ptq_ctx_init(&ctx);
    CHECK(ptq_plan_to_json(&ctx, p, &j1) == PTQ_OK && j1 && strstr(j1, "\"block_scales\"") &&
          strstr(j1, "\"block_size\""));
    CHECK(j1 && ptq_plan_from_json(&ctx, j1, &back) == PTQ_OK && back);
    CHECK(back && ptq_plan_to_json(&ctx, back, &j2) == PTQ_OK && j2 && strcmp(j1, j2) == 0);
    const ptq_plan_entry *wb = NULL;
    for (int64_t i = 0; back && i < back->n; i++)
        if (strcmp(back->e[i].name, w->name) == 0)
            wb = &back->e[i];
    CHECK(wb && wb->block_size == bs && wb->n_block_scales == n &&
          memcmp(wb->block_scales, blocks, (size_t)n * sizeof *blocks) == 0);
    for (int64_t i = 0; back && i < back->n; i++)
        CHECK(&back->e[i] == wb || (back->e[i].block_size == 0 && !back->e[i].block_scales));
    free(j1);
    free(j2);
    ptq_plan_free(back);
    w->block_size = 0;
    w->n_block_scales = 0;
    w->block_scales = NULL;
    free(blocks);
}

/* The default (trt) plan of the demo model: the same entries, 8 INT8
 * activations (the Conv inputs and the residual inputs), the tensors inside
 * fused Conv+ReLU(+Add) layers, after the last Conv and the logits left FP32, each
 * entry naming its rule; JSON with "placement" and "rule", read back to the
 * same bytes. */
static void check_trt(const ptq_graph *g, const ptq_calib_set *s)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *p = NULL, *back = NULL;
    CHECK_MSG(ptq_plan_default(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, &p) == PTQ_OK, "%s", ctx.msg);
    if (!p)
        return;
    CHECK(p->n == 33 && ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK);
    static const char *const int8[] = {
        "/stem/stem.2/Relu_output_0",      "/layers/layers.0/Relu_output_0",   "/layers/layers.0/Relu_1_output_0",
        "/layers/layers.1/Relu_output_0",  "/layers/layers.1/skip/skip.0/Conv_output_0",
        "/layers/layers.1/Relu_1_output_0", "/layers/layers.2/Relu_output_0", "/layers/layers.2/skip/skip.0/Conv_output_0"};
    int64_t n_int8 = 0, n_fp32 = 0;
    for (int64_t i = 0; i < p->n; i++) {
        const ptq_plan_entry *e = &p->e[i];
        CHECK_MSG(e->rule && ptq_placement_rule_why(e->rule), "%s has no known rule", e->name);
        if (e->is_weight)
            continue;
        n_int8 += e->prec == PTQ_PREC_INT8;
        n_fp32 += e->prec == PTQ_PREC_FP32;
        CHECK_MSG(e->prec != PTQ_PREC_FP32 || e->n_scales == 0, "%s: fp32 with scales", e->name);
    }
    CHECK_MSG(n_int8 == 8 && n_fp32 == 12, "%lld int8, %lld fp32 activations", (long long)n_int8, (long long)n_fp32);
    CHECK(find(p, "logits") && find(p, "logits")->prec == PTQ_PREC_FP32 && strcmp(find(p, "logits")->rule, "trt.output") == 0);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(find(p, int8[i]) && find(p, int8[i])->prec == PTQ_PREC_INT8, "%s should be int8", int8[i]);
    /* the downsampling blocks' Adds fuse into the main branch's c2: the shortcut Conv's output is quantized */
    CHECK(find(p, "/layers/layers.1/skip/skip.0/Conv_output_0") &&
          strcmp(find(p, "/layers/layers.1/skip/skip.0/Conv_output_0")->rule, "trt.residual-input") == 0);
    CHECK(find(p, "/layers/layers.1/c2/Conv_output_0") &&
          strcmp(find(p, "/layers/layers.1/c2/Conv_output_0")->rule, "trt.fused") == 0);
    CHECK(find(p, "/layers/layers.0/c1/Conv_output_0") &&
          strcmp(find(p, "/layers/layers.0/c1/Conv_output_0")->rule, "trt.fused") == 0);
    CHECK(find(p, "/GlobalAveragePool_output_0") &&
          strcmp(find(p, "/GlobalAveragePool_output_0")->rule, "trt.unquantized") == 0);
    CHECK(find(p, "input") && strcmp(find(p, "input")->rule, "edge") == 0);
    char *j1 = NULL, *j2 = NULL;
    CHECK(ptq_plan_to_json(&ctx, p, &j1) == PTQ_OK && j1 && strstr(j1, "\"placement\":\t\"trt\"") &&
          strstr(j1, "\"rule\":\t\"trt.weighted-input\""));
    CHECK(j1 && ptq_plan_from_json(&ctx, j1, &back) == PTQ_OK && back && back->placement &&
          strcmp(back->placement, "trt") == 0);
    CHECK(back && ptq_plan_to_json(&ctx, back, &j2) == PTQ_OK && j1 && j2 && strcmp(j1, j2) == 0);
    CHECK(ptq_placement_rule_why("no.such.rule") == NULL);
    ptq_placement pl = PTQ_PLACEMENT_ALL;
    CHECK(ptq_placement_parse(&ctx, "ort", &pl) == PTQ_OK && pl == PTQ_PLACEMENT_ORT);
    CHECK(ptq_placement_parse(&ctx, "tensorrt", &pl) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "trt, ort, all"));
    free(j1);
    free(j2);
    ptq_plan_free(back);
    ptq_plan_free(p);
}

/* Squared error of rounding x[0..n) to FP8 E4M3 with scale s (the reference kernel). */
static double fp8_error(const float *x, int64_t n, float s, float *y)
{
    ptq_k_fake_quant_fp8_ref(PTQ_FP8_E4M3, x, n, s, y);
    double err = 0.0;
    for (int64_t i = 0; i < n; i++)
        err += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
    return err;
}

/* FP8 core: every FP8 weight channel's scale is max|w| / 448 times 2^(k / 16)
 * for the k in [0, 16) with the least rounding error (the first on a tie),
 * found here with the reference kernel; so never worse than max|w| / 448, and
 * on this model better on most channels. */
static void check_fp8_weights(const ptq_graph *g, const ptq_calib_set *s)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_FP8_E4M3, 0};
    ptq_plan *p = NULL;
    CHECK_MSG(ptq_plan_default(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_FP8_E4M3, &p) == PTQ_OK, "%s",
              ctx.msg);
    if (!p)
        return;
    int n_weights = 0;
    int64_t n_ch = 0, n_moved = 0;
    double err_plan = 0.0, err_max = 0.0;
    for (int v = 0; v < g->n_values; v++) {
        const ptq_plan_entry *e = find(p, g->values[v].name);
        if (!e || !e->is_weight || e->prec != PTQ_PREC_FP8_E4M3)
            continue;
        const ptq_value *w = &g->values[v];
        CHECK(e->axis == 0 && e->n_scales == w->dims[0] && strstr(e->source, "least FP8 rounding error"));
        const int64_t per = w->dims[1] * w->dims[2] * w->dims[3]; /* [K, C, R, S] */
        float *y = malloc((size_t)per * sizeof *y);
        for (int64_t c = 0; y && c < w->dims[0]; c++) {
            const float *x = (const float *)w->data + c * per;
            float amax = 0;
            for (int64_t k = 0; k < per; k++)
                amax = fmaxf(amax, fabsf(x[k]));
            int best = 0;
            double best_err = INFINITY;
            for (int k = 0; k < 16; k++) {
                const double err = fp8_error(x, per, (float)((double)amax / 448.0 * exp2(k / 16.0)), y);
                if (err < best_err) {
                    best_err = err;
                    best = k;
                }
            }
            CHECK_MSG(e->scales[c] == (float)((double)amax / 448.0 * exp2(best / 16.0)), "%s channel %lld: %g",
                      w->name, (long long)c, (double)e->scales[c]);
            err_plan += fp8_error(x, per, e->scales[c], y);
            err_max += fp8_error(x, per, (float)((double)amax / 448.0), y);
            n_moved += best != 0;
            n_ch++;
        }
        free(y);
        n_weights++;
    }
    CHECK_MSG(n_weights == 8 && n_moved > n_ch / 2 && err_plan < 0.95 * err_max,
              "%d weights, %lld of %lld channels off max|w| / 448, squared error %g against %g", n_weights,
              (long long)n_moved, (long long)n_ch, err_plan, err_max);
    ptq_plan_free(p);
}

/* The core is a format the plan quantizes in: an FP8 core over INT8 entries (which export reported as "core
 * fp8-e4m3" while writing INT8 at opset 13) is refused by name, one FP8 entry in an INT8 plan is not (export and
 * validate follow each entry); a plan without "core" takes its entries' format (it read as fp32), INT8 when none is
 * quantized. */
static void check_core(const ptq_graph *g, const ptq_calib_set *s)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *p = NULL, *back = NULL;
    char *j = NULL;
    CHECK_MSG(ptq_plan_default(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, &p) == PTQ_OK, "%s", ctx.msg);
    ptq_plan_entry *a = p ? find(p, "/stem/stem.2/Relu_output_0") : NULL;
    CHECK(a && a->prec == PTQ_PREC_INT8 && ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK);
    if (!a) {
        ptq_plan_free(p);
        return;
    }
    a->prec = PTQ_PREC_FP8_E4M3;
    CHECK_MSG(ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK, "%s", ctx.msg);
    p->core = PTQ_PREC_FP8_E5M2;
    expect_check(p, g, PTQ_ERR_INVALID_ARG, "the plan's core is fp8-e5m2, but none of its entries runs in it");
    a->prec = PTQ_PREC_INT8;
    p->core = PTQ_PREC_INT8;
    /* "core" left out: the entries' format */
    CHECK(ptq_plan_to_json(&ctx, p, &j) == PTQ_OK && j && strstr(j, "\"core\":\t\"int8\",\n"));
    char *at = j ? strstr(j, "\"core\":\t\"int8\",\n") : NULL;
    if (at)
        memmove(at, at + strlen("\"core\":\t\"int8\",\n"), strlen(at + strlen("\"core\":\t\"int8\",\n")) + 1);
    CHECK_MSG(at && ptq_plan_from_json(&ctx, j, &back) == PTQ_OK && back && back->core == PTQ_PREC_INT8 &&
                  ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK,
              "core %s: %s", back ? ptq_prec_name(back->core) : "-", ctx.msg);
    ptq_plan_free(back);
    back = NULL;
    CHECK(ptq_plan_from_json(&ctx, "{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": \""
                                   "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, \"tensors\": "
                                   "[{\"name\": \"x\", \"kind\": \"activation\", \"precision\": \"fp16\"}, {\"name\": "
                                   "\"y\", \"kind\": \"activation\", \"precision\": \"fp8-e5m2\", \"scales\": [1]}]}",
                             &back) == PTQ_OK &&
          back && back->core == PTQ_PREC_FP8_E5M2);
    free(j);
    ptq_plan_free(back);
    ptq_plan_free(p);
}

/* Target ort-cpu: uint8 activations whose scale and zero point come from
 * the observed [min, max] clipped to the calibrator's amax (recomputed here
 * from the observers), the Relu inputs quantize_static removes left FP32,
 * FP32 edges, int8 weights; the JSON fields; the checks of its rules. */
static void check_ort_cpu(const ptq_graph *g, const ptq_calib_set *s)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    static const ptq_calib_method methods[] = {PTQ_CALIB_MINMAX, PTQ_CALIB_PERCENTILE};
    for (int m = 0; m < 2; m++) {
        ptq_calib_params cp = {methods[m], PTQ_QFORMAT_INT8, 99.0};
        ptq_plan *p = NULL, *back = NULL;
        CHECK_MSG(ptq_plan_make_target(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                                       PTQ_TARGET_ORT_CPU, &p) == PTQ_OK,
                  "%s", ctx.msg);
        if (!p)
            return;
        CHECK_MSG(ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK, "%s", ctx.msg);
        CHECK(p->target == PTQ_TARGET_ORT_CPU && p->core == PTQ_PREC_INT8);
        int64_t n_uint8 = 0, n_removed = 0, n_int8_wt = 0;
        ptq_calib_range r;
        for (int64_t i = 0; i < p->n; i++) {
            const ptq_plan_entry *e = &p->e[i];
            CHECK_MSG(e->prec != PTQ_PREC_FP16, "%s: FP16 in an ort-cpu plan", e->name);
            n_int8_wt += e->is_weight && e->prec == PTQ_PREC_INT8;
            if (e->rule && strcmp(e->rule, "ort.removed-activation") == 0) {
                n_removed++;
                CHECK_MSG(e->prec == PTQ_PREC_FP32, "%s", e->name);
            }
            if (e->prec != PTQ_PREC_UINT8)
                continue;
            n_uint8++;
            const ptq_observer *obs = ptq_calib_set_observer(s, ptq_calib_set_find(s, e->name));
            ptq_observer_stats os;
            ptq_observer_get_stats(obs, &os);
            CHECK(ptq_calib_compute(&ctx, &cp, obs, &r) == PTQ_OK);
            const double lo = fmin(fmax((double)os.min, -r.amax), 0), hi = fmax(fmin((double)os.max, r.amax), 0);
            const double step = ((double)(float)hi - (double)(float)lo) / 255.0;
            const int zp = (int)rint(-(double)(float)lo / step);
            CHECK_MSG(e->n_scales == 1 && e->scales[0] == (float)step && e->zero_point == zp,
                      "%s (%s): scale %g zp %d, want %g %d", e->name, ptq_calib_method_name(methods[m]),
                      (double)e->scales[0], (int)e->zero_point, step, zp);
            /* [-2, 3]: the zero point near 2/5 of the way up the codes */
            CHECK_MSG(zp > 90 && zp < 115, "%s: zero point %d", e->name, zp);
        }
        /* 13 quantized activations; the Relus after c1 and after the Add of the three blocks removed; 8 int8 weights */
        CHECK_MSG(n_uint8 == 13 && n_removed == 6 && n_int8_wt == 8, "%lld uint8, %lld removed, %lld int8 weights",
                  (long long)n_uint8, (long long)n_removed, (long long)n_int8_wt);
        CHECK(find(p, "input") && find(p, "input")->prec == PTQ_PREC_FP32 && strcmp(find(p, "input")->rule, "edge") == 0);
        CHECK(find(p, "/layers/layers.0/c1/Conv_output_0") &&
              strcmp(find(p, "/layers/layers.0/c1/Conv_output_0")->rule, "ort.removed-activation") == 0);
        char *j1 = NULL, *j2 = NULL;
        CHECK(ptq_plan_to_json(&ctx, p, &j1) == PTQ_OK && j1 && strstr(j1, "\"target\":\t\"ort-cpu\"") &&
              strstr(j1, "\"zero_point\":"));
        CHECK(j1 && ptq_plan_from_json(&ctx, j1, &back) == PTQ_OK && back && back->target == PTQ_TARGET_ORT_CPU);
        CHECK(back && ptq_plan_to_json(&ctx, back, &j2) == PTQ_OK && j1 && j2 && strcmp(j1, j2) == 0);
        if (m == 0 && back) { /* hand edits the check refuses */
            ptq_plan_entry *a = find(back, "/stem/stem.2/Relu_output_0"), *w = find(back, "onnx::Conv_92");
            CHECK(a && a->prec == PTQ_PREC_UINT8 && w && w->prec == PTQ_PREC_INT8);
            const int32_t zp = a->zero_point;
            a->zero_point = 256;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "zero point 256 is not in [0, 255]");
            a->zero_point = zp;
            w->zero_point = 3;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "takes no zero point");
            w->zero_point = 0;
            w->prec = PTQ_PREC_UINT8;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "which is for activations");
            w->prec = PTQ_PREC_FP8_E4M3;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "onnxruntime's CPU kernels do not take");
            w->prec = PTQ_PREC_INT8;
            back->target = PTQ_TARGET_TRT;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "only target ort-cpu takes");
            back->target = PTQ_TARGET_ORT_CPU;
            back->core = PTQ_PREC_FP8_E4M3;
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "core is int8");
            back->core = PTQ_PREC_INT8;
            CHECK_MSG(ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK, "%s", ctx.msg);
        }
        free(j1);
        free(j2);
        ptq_plan_free(back);
        ptq_plan_free(p);
    }
    ptq_plan *p = NULL;
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_FP8_E4M3, PTQ_PLACEMENT_ORT,
                               PTQ_TARGET_ORT_CPU, &p) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "ort-cpu") && !p);
    CHECK(ptq_plan_make(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_UINT8, PTQ_PLACEMENT_TRT, &p) ==
              PTQ_ERR_INVALID_ARG && !p);
    ptq_target t = PTQ_TARGET_TRT;
    CHECK(ptq_target_parse(&ctx, "ort-cpu", &t) == PTQ_OK && t == PTQ_TARGET_ORT_CPU);
    CHECK(ptq_target_parse(&ctx, "cpu", &t) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "trt, ort-cpu"));
    CHECK(ptq_plan_from_json(&ctx, "{\"format\": \"ptq-plan\", \"format_version\": 1, \"target\": \"gpu\", "
                                   "\"model\": {\"sha256\": \"" "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
                                   "\"}, \"tensors\": []}", &p) == PTQ_ERR_FORMAT && strstr(ctx.msg, "target"));
}

/* The largest |code| of weight w's channels quantized with scales on the INT8 grid of largest code qmax. */
static int max_code(const ptq_value *w, const float *scales, int32_t qmax)
{
    const int64_t per = w->dims[1] * w->dims[2] * w->dims[3]; /* [K, C, R, S] */
    int8_t *q = malloc((size_t)per);
    int top = 0;
    for (int64_t c = 0; q && c < w->dims[0]; c++) {
        ptq_k_quantize_int8_ref((const float *)w->data + c * per, per, scales[c], qmax, q);
        for (int64_t k = 0; k < per; k++)
            top = abs(q[k]) > top ? abs(q[k]) : top;
    }
    free(q);
    return top;
}

/* onnxruntime's reduce_range on the ort-cpu plan: every INT8 weight's scales
 * max|w| / 64 per channel, its codes reaching 64 and no further (127 without
 * the option), every activation entry as it was; the plan's JSON carries
 * "reduce_range": true and reads back to the same bytes, a plan without it
 * has no such field; refused for an FP8 core, and a non-boolean field. */
static void check_reduce_range(const ptq_graph *g, const ptq_calib_set *s)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *p = NULL, *r = NULL, *back = NULL;
    CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                               PTQ_TARGET_ORT_CPU, &p) == PTQ_OK);
    CHECK(ptq_plan_make_target(&ctx, g, SHA, "m", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ORT,
                               PTQ_TARGET_ORT_CPU, &r) == PTQ_OK);
    if (!p || !r)
        return;
    CHECK(!p->reduce_range && ptq_plan_weight_qmax(p, PTQ_PREC_INT8) == 127.0);
    CHECK_MSG(ptq_plan_reduce_range(&ctx, g, r) == PTQ_OK && ptq_plan_check(&ctx, r, g, SHA) == PTQ_OK, "%s",
              ctx.msg);
    CHECK(r->reduce_range && ptq_plan_weight_qmax(r, PTQ_PREC_INT8) == 64.0 && r->n == p->n);
    int n_weights = 0, n_same_act = 0;
    for (int64_t i = 0; i < r->n && i < p->n; i++) {
        const ptq_plan_entry *a = &p->e[i], *b = &r->e[i];
        CHECK(strcmp(a->name, b->name) == 0 && a->prec == b->prec && a->n_scales == b->n_scales);
        if (!b->is_weight) {
            const size_t bytes = (size_t)a->n_scales * sizeof *a->scales;
            n_same_act += a->zero_point == b->zero_point && (bytes == 0 || memcmp(a->scales, b->scales, bytes) == 0);
            continue;
        }
        if (b->prec != PTQ_PREC_INT8)
            continue;
        const ptq_value *w = &g->values[ptq_graph_find_value(g, b->name)];
        const int64_t per = w->dims[1] * w->dims[2] * w->dims[3];
        for (int64_t c = 0; c < w->dims[0]; c++) {
            float amax = 0;
            for (int64_t k = 0; k < per; k++)
                amax = fmaxf(amax, fabsf(((const float *)w->data)[c * per + k]));
            CHECK_MSG(b->scales[c] == (float)((double)amax / 64.0) && a->scales[c] == (float)((double)amax / 127.0),
                      "%s channel %lld: %g, %g", w->name, (long long)c, (double)b->scales[c], (double)a->scales[c]);
        }
        const int top = max_code(w, b->scales, (int32_t)ptq_plan_weight_qmax(r, b->prec));
        const int top_full = max_code(w, a->scales, (int32_t)ptq_plan_weight_qmax(p, a->prec));
        CHECK_MSG(top == 64 && top_full == 127, "%s: codes up to %d (reduce_range), %d (full)", w->name, top, top_full);
        CHECK(strstr(b->source, "reduce_range") != NULL);
        n_weights++;
    }
    int64_t n_act = 0;
    for (int64_t i = 0; i < p->n; i++)
        n_act += !p->e[i].is_weight;
    CHECK_MSG(n_weights == 8 && n_same_act == n_act, "%d int8 weights, %d of %lld activations unchanged", n_weights,
              n_same_act, (long long)n_act);
    char *j1 = NULL, *j2 = NULL, *j0 = NULL;
    CHECK(ptq_plan_to_json(&ctx, r, &j1) == PTQ_OK && j1 && strstr(j1, "\"reduce_range\":\ttrue"));
    CHECK(j1 && ptq_plan_from_json(&ctx, j1, &back) == PTQ_OK && back && back->reduce_range == 1);
    CHECK(back && ptq_plan_to_json(&ctx, back, &j2) == PTQ_OK && j1 && j2 && strcmp(j1, j2) == 0);
    ptq_plan_free(back);
    back = NULL;
    CHECK(ptq_plan_to_json(&ctx, p, &j0) == PTQ_OK && j0 && !strstr(j0, "reduce_range")); /* plans as before */
    CHECK(j0 && ptq_plan_from_json(&ctx, j0, &back) == PTQ_OK && back && back->reduce_range == 0);
    ptq_plan_free(back);
    back = NULL;
    r->core = PTQ_PREC_FP8_E4M3;
    r->target = PTQ_TARGET_TRT;
    expect_check(r, g, PTQ_ERR_INVALID_ARG, "reduce_range plan's core is int8");
    CHECK(ptq_plan_reduce_range(&ctx, g, r) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "INT8 weights"));
    CHECK(ptq_plan_from_json(&ctx, "{\"format\": \"ptq-plan\", \"format_version\": 1, \"reduce_range\": 1, "
                                   "\"model\": {\"sha256\": \"" "00112233445566778899aabbccddeeff"
                                   "00112233445566778899aabbccddeeff\"}, \"tensors\": []}",
                             &back) == PTQ_ERR_FORMAT &&
          strstr(ctx.msg, "reduce_range") && !back);
    free(j0);
    free(j1);
    free(j2);
    ptq_plan_free(r);
    ptq_plan_free(p);
}

/* A copy of the demo's second conv weight (onnx::Conv_92 [K, C, R, S], K > k_min) for a check to spoil: the weights
 * are borrowed from the mapped file. *v its value, *per the values of one channel, *orig the data to put back
 * (with free of the copy) after. NULL (a failed check) when the model has no such weight. */
static float *conv92_copy(const ptq_graph *g, int64_t k_min, int *v, int64_t *per, const void **orig)
{
    *v = 0;
    while (*v < g->n_values && strcmp(g->values[*v].name, "onnx::Conv_92") != 0)
        (*v)++;
    const ptq_value *x = *v < g->n_values ? &g->values[*v] : NULL;
    CHECK_MSG(x && x->data && x->ndim == 4 && x->dims[0] > k_min, "the demo's second conv weight");
    if (!x || !x->data || x->ndim != 4)
        return NULL;
    *orig = x->data;
    *per = x->dims[1] * x->dims[2] * x->dims[3];
    float *w = malloc((size_t)(x->dims[0] * *per) * sizeof *w);
    CHECK(w != NULL);
    if (w)
        memcpy(w, *orig, (size_t)(x->dims[0] * *per) * sizeof *w);
    return w;
}

/* A weight holding a NaN is refused as one holding an Inf is (exit 7 in the CLI), naming the weight and the
 * channel: max|w| passed over the NaN, so the channel's scale came from its other values and the NaN was rounded
 * to a code. For every quantized core. */
static void check_nonfinite_weight(ptq_graph *g, const ptq_calib_set *s)
{
    int v;
    int64_t per;
    const void *orig;
    float *w = conv92_copy(g, 2, &v, &per, &orig);
    if (!w)
        return;
    g->values[v].data = w;
    static const ptq_prec cores[] = {PTQ_PREC_INT8, PTQ_PREC_FP8_E4M3, PTQ_PREC_FP8_E5M2};
    const float bad[] = {NAN, -INFINITY};
    for (int k = 0; k < 2; k++) {
        w[2 * per + 1] = bad[k];
        for (int c = 0; c < 3; c++) {
            ptq_ctx ctx;
            ptq_ctx_init(&ctx);
            ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
            ptq_plan *p = NULL;
            const ptq_status st = ptq_plan_default(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, cores[c], &p);
            CHECK_MSG(st == PTQ_ERR_DATA && strstr(ctx.msg, "onnx::Conv_92") && strstr(ctx.msg, "channel 2"),
                      "%g in a weight, core %d: status %d, %s", (double)bad[k], (int)cores[c], (int)st, ctx.msg);
            ptq_plan_free(p);
        }
    }
    g->values[v].data = orig;
    free(w);
}

/* A channel of subnormal weights (a pruned filter's leftovers) takes a normal scale: amax / 127 (FP8: / 448)
 * rounded to a float32 0 and every plan of the model was refused ("scale [2] is 0"), or to a subnormal that
 * TensorRT does not take. A scale below FLT_MIN, the smallest normal float32, is 1, as onnxruntime's
 * quantize_static takes it (an ort-cpu bias's int32 scale stays normal: tests/qdq_placement_test.py). */
static void check_subnormal_channel(ptq_graph *g, const ptq_calib_set *s)
{
    int v;
    int64_t per;
    const void *orig;
    float *w = conv92_copy(g, 3, &v, &per, &orig);
    if (!w)
        return;
    for (int64_t k = 0; k < per; k++) {
        w[2 * per + k] = k % 3 ? 1e-44f : -3e-45f; /* channel 2: amax / 127 rounds to 0 */
        w[3 * per + k] = k % 2 ? 1e-37f : 0.0f;   /* channel 3: amax / 127 is a subnormal */
    }
    g->values[v].data = w;
    static const ptq_prec cores[] = {PTQ_PREC_INT8, PTQ_PREC_FP8_E4M3, PTQ_PREC_FP8_E5M2};
    for (int c = 0; c < 3; c++) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
        ptq_plan *p = NULL;
        const ptq_status st = ptq_plan_default(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, cores[c], &p);
        CHECK_MSG(st == PTQ_OK, "subnormal channels, core %d: %s", (int)cores[c], ctx.msg);
        const ptq_plan_entry *e = p ? find(p, "onnx::Conv_92") : NULL;
        CHECK_MSG(e && e->n_scales > 3 && e->scales[2] == 1.0f && e->scales[3] == 1.0f && e->scales[1] >= FLT_MIN,
                  "core %d: scales %g %g", (int)cores[c], e ? (double)e->scales[2] : -1.0,
                  e ? (double)e->scales[3] : -1.0);
        CHECK(p && ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK);
        ptq_plan_free(p);
    }
    g->values[v].data = orig;
    free(w);
}

/* A channel of tiny but normal weights (1e-33: scale 7.9e-36, a normal float32) in an ort-cpu plan: its int32 bias
 * scale, input scale x weight scale, was so small that the bias codes saturated at INT32_MAX (a bias of 0.1 read back
 * as 1e-28). onnxruntime's quantize_static raises such a weight scale (_adjust_weight_scale_for_int32_bias) to
 * 1.0001 x 2 |bias| / (2^32 - 2) / input scale; ptq must too, with and without reduce_range, and each channel's bias
 * codes then fit int32. A trt plan (no int32 bias) keeps max|w| / 127. */
/* An int32 bias scale of exactly 0 (input scale x weight scale underflowed in float32) with a bias of 0: 0/0 is
 * NaN, whose conversion to int32 is undefined (INT32_MIN on x86); its code is 0, as any code is times the scale 0 */
static void check_bias_codes_zero_scale(void)
{
    const float b[] = {0.0f, 1.0f, -1.0f, 3e9f}, scales[] = {0.0f, 0.5f, 0.5f, 1.0f};
    int32_t q[4] = {7, 7, 7, 7};
    quant_int32_bias_codes(b, 4, scales, q);
    CHECK_MSG(q[0] == 0 && q[1] == 2 && q[2] == -2 && q[3] == INT32_MAX, "codes %d %d %d %d", (int)q[0], (int)q[1],
              (int)q[2], (int)q[3]);
}

static void check_tiny_channel(ptq_graph *g, const ptq_calib_set *s)
{
    int v;
    int64_t per;
    const void *orig;
    float *w = conv92_copy(g, 2, &v, &per, &orig);
    const int b = ptq_graph_find_value(g, "onnx::Conv_93");
    CHECK(b >= 0 && g->values[b].data && g->values[b].ndim == 1);
    if (!w || b < 0)
        return;
    for (int64_t k = 0; k < per; k++)
        w[2 * per + k] = k % 3 ? 1e-33f : -0.5e-33f;
    g->values[v].data = w;
    const float *bias = g->values[b].data;
    CHECK_MSG(fabsf(bias[2]) > 1e-3f, "the demo's bias of channel 2 is %g", (double)bias[2]);
    for (int rr = 0; rr < 3; rr++) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
        ptq_plan *p = NULL;
        const ptq_status st = ptq_plan_make_target(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8,
                                                   PTQ_PLACEMENT_ORT, rr == 2 ? PTQ_TARGET_TRT : PTQ_TARGET_ORT_CPU,
                                                   &p);
        CHECK_MSG(st == PTQ_OK && (rr != 1 || ptq_plan_reduce_range(&ctx, g, p) == PTQ_OK), "%s", ctx.msg);
        const ptq_plan_entry *e = p ? find(p, "onnx::Conv_92") : NULL;
        const ptq_plan_entry *x = p ? find(p, "/stem/stem.2/Relu_output_0") : NULL;
        CHECK(e && x && e->n_scales > 2 && x->n_scales == 1);
        if (!e || !x || e->n_scales <= 2 || x->n_scales != 1) {
            ptq_plan_free(p);
            continue;
        }
        const double qmax = rr == 1 ? 64.0 : 127.0, plain = (double)(float)(1e-33 / qmax);
        if (rr == 2) {
            CHECK_MSG(e->scales[2] == (float)plain, "trt plan: channel 2's scale %g, want %g", (double)e->scales[2],
                      plain);
        } else { /* onnxruntime's rule, in float64 as numpy computes it */
            const double want = 1.0001 * (2.0 * fabs((double)bias[2])) / 4294967294.0;
            const double raised = (double)(float)(plain * (want / ((double)x->scales[0] * plain)));
            CHECK_MSG(e->scales[2] == (float)raised && strstr(e->source, "int32 bias 'onnx::Conv_93'"),
                      "reduce_range %d: channel 2's scale %g, want %g (%s)", rr, (double)e->scales[2], raised,
                      e->source);
            for (int64_t c = 0; c < e->n_scales; c++) {
                const double q = rint((double)bias[c] / (double)(x->scales[0] * e->scales[c]));
                CHECK_MSG(fabs(q) < 2147483647.0, "reduce_range %d: channel %lld's bias %g takes code %g", rr,
                          (long long)c, (double)bias[c], q);
            }
        }
        CHECK_MSG(ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK, "%s", ctx.msg);
        ptq_plan_free(p);
    }
    g->values[v].data = orig;
    free(w);
}

/* Two activations whose values are subnormal (amax 3e-41: amax / 127 a subnormal float32; 1e-44: it rounds to 0) in
 * a trt plan: the plan keeps them FP32 (no normal float32 scale, which TensorRT needs), and sensitivity's trial plan
 * (ptq_sens_core_plan, every float tensor given core scales) must not quantize them either: it gave them those
 * scales, which its own plan check refused, and measured the tensor "only quantized" with a scale no plan can
 * have (a scale of 0: every value NaN). For each core; the ort-cpu plan's uint8 scale is 1 there, in both. */
static void check_sens_core_tiny(const ptq_graph *g)
{
    static const char *const tiny_names[] = {"/stem/stem.2/Relu_output_0", "/layers/layers.0/Relu_output_0",
                                             "/layers/layers.1/Relu_output_0"};
    static const float tiny[] = {1e-41f, 1e-44f, 0.0f};
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_calib_set *s = NULL;
    float x[1000], y[1000];
    test_fill_uniform(x, 1000, -2.0f, 3.0f);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK &&
          ptq_calib_set_describe(&ctx, s, SHA, "m", "p") == PTQ_OK);
    for (int v = 0; s && v < g->n_values; v++) {
        float k = 1.0f;
        for (int t = 0; t < 3; t++)
            k = strcmp(g->values[v].name, tiny_names[t]) == 0 ? tiny[t] : k;
        for (int i = 0; i < 1000; i++)
            y[i] = x[i] * k;
        ptq_tensor t = {PTQ_DT_FLOAT, 1, {1000}, y, PTQ_MEM_HOST, 0};
        if (ptq_calib_set_tap(s, &ctx, g, -1, v, &t) != PTQ_OK)
            break;
    }
    static const ptq_prec cores[] = {PTQ_PREC_INT8, PTQ_PREC_FP8_E4M3, PTQ_PREC_INT8};
    for (int c = 0; s && c < 3; c++) {
        const ptq_target target = c == 2 ? PTQ_TARGET_ORT_CPU : PTQ_TARGET_TRT;
        ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
        ptq_plan *p = NULL, *core = NULL;
        const ptq_placement placement = c == 2 ? PTQ_PLACEMENT_ORT : PTQ_PLACEMENT_TRT;
        CHECK_MSG(ptq_plan_make_target(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, cores[c], placement, target, &p) ==
                      PTQ_OK,
                  "%s", ctx.msg);
        CHECK_MSG(p && ptq_sens_core_plan(&ctx, g, s, p, &core) == PTQ_OK, "%s", ctx.msg);
        for (int t = 0; core && t < 2; t++) {
            const ptq_plan_entry *d = find(p, tiny_names[t]), *e = find(core, tiny_names[t]);
            CHECK(d && e);
            if (!d || !e)
                continue;
            if (target == PTQ_TARGET_TRT) {
                /* the rule says why (not trt.weighted-input, whose --explain says TensorRT quantizes it) */
                CHECK_MSG(d->prec == PTQ_PREC_FP32 && strstr(d->source, "no normal float32 scale") &&
                              strcmp(d->rule, "archive.no-range") == 0,
                          "%s: %s, %s, rule %s", d->name, ptq_prec_name(d->prec), d->source, d->rule);
                CHECK_MSG(!ptq_prec_is_quantized(e->prec), "core %d, %s in the trial plan: %s, scale %g", (int)c,
                          e->name, ptq_prec_name(e->prec), e->n_scales ? (double)e->scales[0] : -1.0);
            } else {
                CHECK_MSG(e->prec == d->prec && e->n_scales == 1 && e->scales[0] == 1.0f, "ort-cpu, %s: %s, %s",
                          e->name, ptq_prec_name(e->prec), ptq_prec_name(d->prec));
            }
        }
        /* a tensor that saw only zeros: high precision, rule archive.no-range (it had kept trt.weighted-input) */
        const ptq_plan_entry *z = find(p, tiny_names[2]);
        CHECK_MSG(z && !ptq_prec_is_quantized(z->prec) && strcmp(z->rule, "archive.no-range") == 0 &&
                      strstr(z->source, "only zeros"),
                  "core %d, zeros: %s, rule %s, %s", (int)c, z ? ptq_prec_name(z->prec) : "-", z ? z->rule : "-",
                  z ? z->source : "-");
        CHECK_MSG(core && ptq_plan_check(&ctx, core, g, SHA) == PTQ_OK, "core %d: the trial plan: %s", c, ctx.msg);
        ptq_plan_free(core);
        ptq_plan_free(p);
    }
    ptq_calib_set_free(s);
}

/* A Softmax output the default plan keeps in float (a classifier's final Softmax under trt.unquantized; here the
 * ViT's attention one, set to FP16 in the default plan): sensitivity's trial plan gives it core scales, which must
 * be those any plan gives a Softmax output, its whole (min-max) range, not the calibrator's (percentile=99 clipped
 * the largest probabilities: scale 0.99 / 127 where plans have 1 / 127). */
static void check_sens_core_softmax(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_model("test_plan", "fmnist_vit.onnx");
    ptq_calib_set *s = NULL;
    CHECK_MSG(g && ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK &&
                  ptq_calib_set_describe(&ctx, s, SHA, "m", "p") == PTQ_OK,
              "%s", ctx.msg);
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i + 1) / 1000.0f; /* (0, 1]: a Softmax's range */
    for (int v = 0; s && g && v < g->n_values; v++) {
        ptq_tensor t = {PTQ_DT_FLOAT, 1, {1000}, x, PTQ_MEM_HOST, 0};
        if (ptq_calib_set_tap(s, &ctx, g, -1, v, &t) != PTQ_OK)
            break;
    }
    const char *soft = NULL;
    for (int k = 0; g && k < g->n_nodes && !soft; k++)
        if (strcmp(g->nodes[k].op_type, "Softmax") == 0)
            soft = g->values[g->nodes[k].outputs[0]].name;
    CHECK(soft != NULL);
    ptq_calib_params cp = {PTQ_CALIB_PERCENTILE, PTQ_QFORMAT_INT8, 99.0};
    ptq_plan *p = NULL, *all = NULL, *core = NULL;
    CHECK_MSG(s && soft &&
                  ptq_plan_make(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_TRT, &p) ==
                      PTQ_OK &&
                  ptq_plan_make(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ALL, &all) ==
                      PTQ_OK,
              "%s", ctx.msg);
    ptq_plan_entry *f = p ? (ptq_plan_entry *)find(p, soft) : NULL;
    if (f)
        quant_entry_unquantize(f, PTQ_PREC_FP16);
    CHECK_MSG(f && ptq_sens_core_plan(&ctx, g, s, p, &core) == PTQ_OK, "%s", ctx.msg);
    const ptq_plan_entry *d = f, *a = all ? find(all, soft) : NULL;
    const ptq_plan_entry *e = core ? find(core, soft) : NULL;
    CHECK(d && a && e);
    if (d && a && e) {
        CHECK_MSG(d->prec == PTQ_PREC_FP16 && a->prec == PTQ_PREC_INT8 && a->n_scales == 1 &&
                      strcmp(a->source, PTQ_PLAN_SOURCE_SOFTMAX) == 0,
                  "%s: default plan %s, placement all %s (%s)", soft, ptq_prec_name(d->prec), ptq_prec_name(a->prec),
                  a->source);
        CHECK_MSG(e->prec == PTQ_PREC_INT8 && e->n_scales == 1 && a->n_scales == 1 && e->scales[0] == a->scales[0],
                  "%s in the trial plan: scale %.9g, a plan's %.9g", soft, e->n_scales ? (double)e->scales[0] : -1.0,
                  a->n_scales ? (double)a->scales[0] : -1.0);
    }
    ptq_plan_free(core);
    ptq_plan_free(all);
    ptq_plan_free(p);
    ptq_calib_set_free(s);
    ptq_graph_free(g);
}

int main(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("test_plan");
    if (!g)
        return 1;
    test_rand_seed(8);
    ptq_calib_set *s = synthetic_set(&ctx, g);
    CHECK(s != NULL);
    ptq_calib_params cp = {PTQ_CALIB_MINMAX, PTQ_QFORMAT_INT8, 0};
    ptq_plan *p = NULL;
    CHECK_MSG(ptq_plan_make(&ctx, g, SHA, "m.onnx", s, "a.h5", &cp, PTQ_PREC_INT8, PTQ_PLACEMENT_ALL, &p) == PTQ_OK,
              "%s", ctx.msg);
    if (!p)
        return test_done("test_plan");
    CHECK(p->n == 33); /* 23 activations + 10 weights */
    CHECK(ptq_plan_check(&ctx, p, g, SHA) == PTQ_OK);

    /* edges: the input, the first conv's output, the Gemm's input and the logits; the stem and fc weights */
    static const char *const edges[] = {"input", "/stem/stem.0/Conv_output_0", "/Flatten_output_0", "logits"};
    for (int i = 0; i < 4; i++)
        CHECK_MSG(find(p, edges[i]) && find(p, edges[i])->prec == PTQ_PREC_FP16 && find(p, edges[i])->n_scales == 0,
                  "%s should be fp16", edges[i]);
    int64_t n_int8_act = 0, n_fp16_wt = 0;
    for (int64_t i = 0; i < p->n; i++) {
        n_int8_act += !p->e[i].is_weight && p->e[i].prec == PTQ_PREC_INT8;
        n_fp16_wt += p->e[i].is_weight && p->e[i].prec == PTQ_PREC_FP16;
    }
    CHECK(n_int8_act == 19 && n_fp16_wt == 2);
    /* an INT8 activation: minmax of [-2, 3] is max|x| (the largest value drawn), scale amax / 127 */
    const ptq_plan_entry *a = find(p, "/stem/stem.2/Relu_output_0");
    CHECK(a && a->prec == PTQ_PREC_INT8 && a->n_scales == 1 && a->scales[0] > 2.9f / 127 && a->scales[0] <= 3.0f / 127);
    /* every INT8 weight: per output channel (Conv axis 0), max|w| / 127 computed here */
    int n_weights_checked = 0;
    for (int v = 0; v < g->n_values; v++) {
        const ptq_plan_entry *e = find(p, g->values[v].name);
        if (!e || !e->is_weight || e->prec != PTQ_PREC_INT8)
            continue;
        const ptq_value *w = &g->values[v];
        CHECK(e->axis == 0 && e->n_scales == w->dims[0]);
        const int64_t per = w->dims[1] * w->dims[2] * w->dims[3]; /* [K, C, R, S] */
        for (int64_t c = 0; c < w->dims[0]; c++) {
            float amax = 0;
            for (int64_t k = 0; k < per; k++)
                amax = fmaxf(amax, fabsf(((const float *)w->data)[c * per + k]));
            CHECK_MSG(e->scales[c] == (float)((double)amax / 127.0), "%s channel %lld", w->name, (long long)c);
        }
        n_weights_checked++;
    }
    CHECK(n_weights_checked == 8);

    /* JSON round trip: the same bytes */
    char *j1 = NULL, *j2 = NULL;
    ptq_plan *back = NULL;
    CHECK(ptq_plan_to_json(&ctx, p, &j1) == PTQ_OK);
    CHECK(j1 && ptq_plan_from_json(&ctx, j1, &back) == PTQ_OK);
    CHECK(back && ptq_plan_to_json(&ctx, back, &j2) == PTQ_OK);
    CHECK(j1 && j2 && strcmp(j1, j2) == 0);
    CHECK(j1 && !strstr(j1, "block")); /* no block fields without blocks: plans as before */
    CHECK(j1 && !strstr(j1, "\"rule\"") && !strstr(j1, "\"placement\"")); /* --placement all: plans as before */
    check_trt(g, s);
    check_ort_cpu(g, s);
    check_reduce_range(g, s);
    check_fp8_weights(g, s);
    check_core(g, s);
    check_nonfinite_weight(g, s);
    check_subnormal_channel(g, s);
    check_tiny_channel(g, s);
    check_bias_codes_zero_scale();
    check_sens_core_tiny(g);
    check_sens_core_softmax();
    CHECK(back && ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK);

    /* hand edits the check refuses */
    if (back) {
        ptq_plan_entry *e = find(back, "/stem/stem.2/Relu_output_0");
        const float saved = e->scales[0];
        static const float bad_scales[] = {0.0f, -0.5f, NAN, INFINITY};
        for (int i = 0; i < 4; i++) {
            e->scales[0] = bad_scales[i];
            expect_check(back, g, PTQ_ERR_INVALID_ARG, "scales must be finite and > 0");
        }
        e->scales[0] = saved;
        char *name = e->name;
        e->name = "no_such_tensor";
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "no_such_tensor");
        e->name = "/Flatten_output_0"; /* already in the plan */
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "twice");
        e->name = name;
        e->n_scales = 0;
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "0 scales");
        e->n_scales = 1;
        ptq_plan_entry *w = NULL;
        for (int64_t i = 0; i < back->n && !w; i++)
            if (back->e[i].is_weight && back->e[i].prec == PTQ_PREC_INT8)
                w = &back->e[i];
        w->axis = 2; /* [K, C, 3, 3]: 3 channels along axis 2, not K */
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "along axis 2");
        w->axis = 0;
        /* target trt: per-channel weight scales on the layer's output-channel axis only, normal activation scales */
        const ptq_value *wv = &g->values[ptq_graph_find_value(g, w->name)];
        float *kept = w->scales, *per_c = malloc((size_t)wv->dims[1] * sizeof *per_c);
        for (int64_t c = 0; c < wv->dims[1]; c++)
            per_c[c] = 0.01f;
        w->scales = per_c;
        w->axis = 1; /* [K, C, 3, 3]: C scales along the input channels */
        w->n_scales = wv->dims[1];
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "along axis 1, but TensorRT takes the scales of a Conv weight");
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "output-channel axis 0 only");
        w->axis = 0;
        w->n_scales = wv->dims[0];
        w->scales = kept;
        for (int k = 0; k < g->n_nodes; k++) { /* the Gemm's weight, fp16 at the edge: int8 on each axis */
            const ptq_node *n = &g->nodes[k];
            if (strcmp(n->op_type, "Gemm") != 0)
                continue;
            const ptq_value *b = &g->values[n->inputs[1]];
            ptq_plan_entry *fc = find(back, b->name);
            const int want = ptq_node_attr_int(n, "transB", 0) ? 0 : 1;
            float *fc_scales = malloc((size_t)(b->dims[0] + b->dims[1]) * sizeof *fc_scales);
            for (int64_t c = 0; c < b->dims[0] + b->dims[1]; c++)
                fc_scales[c] = 0.01f;
            float *fc_kept = fc->scales; /* the plan's own (empty) array, which ptq_plan_free releases */
            fc->prec = PTQ_PREC_INT8;
            fc->scales = fc_scales;
            for (int axis = 0; axis < 2; axis++) {
                fc->axis = axis;
                fc->n_scales = b->dims[axis];
                if (axis == want) {
                    CHECK_MSG(ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK, "%s", ctx.msg);
                } else {
                    char needle[80];
                    snprintf(needle, sizeof needle, "along axis %d, but TensorRT", axis);
                    expect_check(back, g, PTQ_ERR_INVALID_ARG, needle);
                }
            }
            free(fc_scales);
            fc->prec = PTQ_PREC_FP16;
            fc->scales = fc_kept;
            fc->n_scales = 0;
            fc->axis = -1;
        }
        e->scales[0] = 1e-45f; /* a float32 subnormal */
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "is not a normal float32");
        back->target = PTQ_TARGET_ORT_CPU; /* onnxruntime's CPU kernels take it */
        w->axis = 1;
        w->n_scales = wv->dims[1];
        w->scales = per_c;
        back->core = PTQ_PREC_INT8;
        CHECK_MSG(ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK, "%s", ctx.msg);
        back->target = PTQ_TARGET_TRT;
        w->axis = 0;
        w->n_scales = wv->dims[0];
        w->scales = kept;
        free(per_c);
        e->scales[0] = saved;
        CHECK_MSG(ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK, "%s", ctx.msg);
        check_blocks(back, g, w);
        ptq_plan_entry *f16 = find(back, "input");
        f16->n_scales = 1;
        expect_check(back, g, PTQ_ERR_INVALID_ARG, "takes no scale");
        f16->n_scales = 0;
        CHECK(ptq_plan_check(&ctx, back, g, SHA) == PTQ_OK);
        CHECK(ptq_plan_check(&ctx, back, g, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff") ==
                  PTQ_ERR_INVALID_ARG &&
              strstr(ctx.msg, "another model"));
    }
    /* JSON the reader refuses */
#define PLAN_HEAD \
    "{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": " \
    "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, "
    static const struct {
        const char *text, *needle;
    } bad_json[] = {
        {"{", "not valid JSON"},
        {"{\"format\": \"other\"}", "ptq-plan"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 2}", "version 2"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": \"x\"}, \"tensors\": []}", "sha256"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": "
         "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, \"tensors\": [{\"name\": \"x\", "
         "\"kind\": \"activation\", \"precision\": \"int4\"}]}",
         "int4"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": "
         "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, \"tensors\": [{\"name\": \"x\", "
         "\"kind\": \"activation\", \"precision\": \"int8\", \"scales\": [\"a\"]}]}",
         "not a number"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": "
         "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, \"tensors\": [{\"name\": \"x\", "
         "\"kind\": \"weight\", \"precision\": \"int8\", \"block_size\": 0.5, \"block_scales\": []}]}",
         "\"block_size\" is not an integer >= 1"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"model\": {\"sha256\": "
         "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}, \"tensors\": [{\"name\": \"x\", "
         "\"kind\": \"weight\", \"precision\": \"int8\", \"block_size\": 4}]}",
         "\"block_scales\" is not an array"},
        {"{\"format\": \"ptq-plan\", \"format_version\": 1, \"tensors\": [{\"name\": \"x\", "
         "\"kind\": \"weight\", \"kind\": \"activation\"}]}",
         "key \"kind\" appears twice in one object (at tensors[0], in 'x')"},
        /* fields once read as absent when mistyped, or kept whatever they said */
        {PLAN_HEAD "\"core\": \"fp16\", \"tensors\": []}", "\"core\" 'fp16' is not a core precision"},
        {PLAN_HEAD "\"core\": 8, \"tensors\": []}", "\"core\" is not a string"},
        {PLAN_HEAD "\"placement\": \"tensorrt\", \"tensors\": []}",
         "\"placement\" 'tensorrt' is not one of trt, ort, all"},
        {PLAN_HEAD "\"method\": [], \"tensors\": []}", "\"method\" is not a string"},
        {PLAN_HEAD "\"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", \"precision\": \"fp16\", "
                   "\"rule\": \"egde\"}]}",
         "plan tensor 'x': \"rule\" 'egde' is no placement rule"},
        {PLAN_HEAD "\"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", \"precision\": \"fp16\", "
                   "\"source\": 1}]}",
         "plan tensor 'x': \"source\" is not a string"},
        /* a rule of another placement or kind, once read as the plan's own */
        {PLAN_HEAD "\"placement\": \"trt\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                   "\"precision\": \"int8\", \"scales\": [1], \"rule\": \"ort.op-io\"}]}",
         "plan tensor 'x': \"rule\" 'ort.op-io' is a rule of placement ort, not of the plan's trt"},
        {PLAN_HEAD "\"placement\": \"ort\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                   "\"precision\": \"fp32\", \"rule\": \"trt.fused\"}]}",
         "'trt.fused' is a rule of placement trt, not of the plan's ort"},
        {PLAN_HEAD "\"placement\": \"all\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                   "\"precision\": \"fp32\", \"rule\": \"trt.unquantized\"}]}",
         "'trt.unquantized' is a rule of placement trt, not of the plan's all"},
        {PLAN_HEAD "\"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", \"precision\": \"fp32\", "
                   "\"rule\": \"trt.fused\"}, {\"name\": \"y\", \"kind\": \"activation\", \"precision\": "
                   "\"fp32\", \"rule\": \"ort.unquantized\"}]}",
         "plan tensor 'y': \"rule\" 'ort.unquantized' is a rule of placement ort, and tensor 'x' has one of "
         "placement trt"},
        {PLAN_HEAD "\"placement\": \"trt\", \"tensors\": [{\"name\": \"w\", \"kind\": \"weight\", "
                   "\"precision\": \"fp16\", \"rule\": \"trt.weighted-input\"}]}",
         "'trt.weighted-input' is a rule of activations, and the entry is a weight"},
        {PLAN_HEAD "\"placement\": \"trt\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                   "\"precision\": \"fp16\", \"rule\": \"weight.follows-input\"}]}",
         "'weight.follows-input' is a rule of weights, and the entry is an activation"},
        {PLAN_HEAD "\"placement\": \"ort\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                   "\"precision\": \"fp32\", \"rule\": \"ort.removed-activation\"}]}",
         "'ort.removed-activation' is for target ort-cpu (uint8 activations), and the plan's target is trt"},
        /* cJSON ends the string at U+0000: the name would read as "x" */
        {PLAN_HEAD "\"tensors\": [{\"name\": \"x\\u0000y\", \"kind\": \"activation\", \"precision\": \"fp16\"}]}",
         "U+0000 (\\u0000 at byte"},
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        ptq_plan *q = NULL;
        ptq_status st = ptq_plan_from_json(&ctx, bad_json[i].text, &q);
        CHECK_MSG(st != PTQ_OK && !q && strstr(ctx.msg, bad_json[i].needle), "case %zu: %d %s", i, (int)st, ctx.msg);
    }
    /* the rules every placement shares, and ort.removed-activation in an ort-cpu plan, read back */
    static const char *const good_json[] = {
        PLAN_HEAD "\"placement\": \"trt\", \"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", "
                  "\"precision\": \"fp16\", \"rule\": \"edge\"}, {\"name\": \"w\", \"kind\": \"weight\", "
                  "\"precision\": \"fp16\", \"rule\": \"edge\"}, {\"name\": \"v\", \"kind\": \"weight\", "
                  "\"precision\": \"fp16\", \"rule\": \"weight.follows-input\"}, {\"name\": \"c\", "
                  "\"kind\": \"activation\", \"precision\": \"int8\", \"rule\": \"all.observed\"}]}",
        PLAN_HEAD "\"placement\": \"ort\", \"target\": \"ort-cpu\", \"tensors\": [{\"name\": \"x\", "
                  "\"kind\": \"activation\", \"precision\": \"fp32\", \"rule\": \"ort.removed-activation\"}]}",
        PLAN_HEAD "\"tensors\": [{\"name\": \"x\", \"kind\": \"activation\", \"precision\": \"fp32\", "
                  "\"rule\": \"ort.unquantized\"}, {\"name\": \"y\", \"kind\": \"activation\", \"precision\": "
                  "\"fp32\", \"rule\": \"ort.output\"}]}",
    };
    for (size_t i = 0; i < sizeof good_json / sizeof good_json[0]; i++) {
        ptq_plan *q = NULL;
        CHECK_MSG(ptq_plan_from_json(&ctx, good_json[i], &q) == PTQ_OK && q, "good case %zu: %s", i, ctx.msg);
        ptq_plan_free(q);
    }
#undef PLAN_HEAD
    free(j1);
    free(j2);
    ptq_plan_free(back);
    ptq_plan_free(p);
    ptq_calib_set_free(s);
    ptq_graph_free(g);
    return test_done("test_plan");
}
