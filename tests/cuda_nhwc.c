/* Channels-last activations on the GPU (runtime/layout.c) on the bundled
 * ResNet and MobileNet (Conv, Relu, Clip, Add, GlobalAveragePool):
 * - FP32 with PTQ_NHWC=1, a tap on every value (so every node runs on its
 *   own): logits against the CPU (rtol 1e-4, atol 1e-5), no node on the
 *   CPU but the Constants, every other tap on the device;
 * - TF32 (channels last by default) without taps (Conv -> Add -> Relu in
 *   cuDNN's epilogue): logits against the CPU and against TF32 with
 *   PTQ_NHWC=0 within TF32's tolerance, bit-identical across batch splits;
 * - TF32 calibration as ptq calibrate taps it (chains observed in one
 *   pass): every observer bit-identical whether 300 images run as one batch
 *   or as batches of 1, 7, 128 and 164, and the same logits.
 * Exit 77 without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "ptq/calib.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_nhwc: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "calib/calib_internal.h"
#include "runtime/backend.h"

#define N_ALL 300
#define IMG (28 * 28)
#define N_CLASSES 10

typedef struct tap_count {
    int calls, on_device;
} tap_count;

static ptq_status count_tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    (void)ctx;
    (void)g;
    (void)node;
    (void)value;
    tap_count *c = user;
    c->calls++;
    c->on_device += t->mem == PTQ_MEM_CUDA;
    return PTQ_OK;
}

static ptq_ctx ctx;
static const int64_t splits[] = {1, 7, 128, 164};

/* An executor on the GPU with PTQ_NHWC set to nhwc ("" leaves it unset). */
static ptq_exec *gpu_exec(const ptq_graph *g, ptq_math math, const char *nhwc, ptq_tap_fn tap, void *user)
{
    ptq_exec *e = NULL;
    ptq_exec_params p = {PTQ_DEVICE_CUDA, 0, tap, user, 0, math};
    if (nhwc[0])
        setenv("PTQ_NHWC", nhwc, 1);
    else
        unsetenv("PTQ_NHWC");
    CHECK_MSG(ptq_exec_create(&ctx, g, &p, &e) == PTQ_OK, "%s", ctx.msg);
    unsetenv("PTQ_NHWC");
    return e;
}

/* Logits of x's first n images into y as batches of parts (NULL: one batch). */
static int run_parts(ptq_exec *e, const float *x, int64_t n, const int64_t *parts, int n_parts, float *y)
{
    int64_t done = 0;
    for (int j = 0; done < n; j++) {
        const int64_t m = parts ? parts[j % n_parts] : n;
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {m, 1, 28, 28}, (void *)(x + done * IMG), PTQ_MEM_HOST, 0}, out;
        ptq_status st = ptq_exec_run(&ctx, e, &in, &out);
        CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
        if (st != PTQ_OK)
            return 0;
        memcpy(y + done * N_CLASSES, out.data, (size_t)(m * N_CLASSES) * sizeof(float));
        done += m;
    }
    return 1;
}

static int same_observers(const ptq_calib_set *a, const ptq_calib_set *b)
{
    int differ = 0;
    for (int64_t i = 0; i < ptq_calib_set_n_tensors(a); i++) {
        const ptq_observer *oa = ptq_calib_set_observer(a, i), *ob = ptq_calib_set_observer(b, i);
        ptq_observer_stats sa, sb;
        ptq_observer_get_stats(oa, &sa);
        ptq_observer_get_stats(ob, &sb);
        const int same = memcmp(&sa, &sb, sizeof sa) == 0 && ptq_observer_exponent(oa) == ptq_observer_exponent(ob) &&
                         memcmp(ptq_observer_hist(oa), ptq_observer_hist(ob),
                                (size_t)ptq_observer_n_bins(oa) * sizeof(int64_t)) == 0;
        CHECK_MSG(same, "tensor %s: observers differ between batch splits", ptq_calib_set_name(a, i));
        differ += !same;
    }
    return differ;
}

/* A calibration set tapping e as ptq calibrate does; 300 images as batches of parts. */
static ptq_calib_set *calibrate(const ptq_graph *g, ptq_exec *e, const float *x, const int64_t *parts, int n_parts,
                                float *y)
{
    ptq_calib_set *s = NULL;
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &s) == PTQ_OK);
    if (!s || !e)
        return s;
    CHECK(ptq_calib_set_bind(&ctx, s, e) == PTQ_OK);
    CHECK(ptq_exec_add_tap(&ctx, e, ptq_calib_set_tap, s) == PTQ_OK);
    CHECK(ptq_exec_tap_dev_state(&ctx, e, ptq_calib_set_tap, s, calib_set_dev_state) == PTQ_OK);
    int64_t done = 0;
    for (int j = 0; done < N_ALL; j++) {
        const int64_t m = parts ? parts[j % n_parts] : N_ALL;
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {m, 1, 28, 28}, (void *)(x + done * IMG), PTQ_MEM_HOST, 0}, out;
        CHECK(ptq_calib_set_observe_inputs(&ctx, s, &in) == PTQ_OK);
        CHECK_MSG(ptq_exec_run(&ctx, e, &in, &out) == PTQ_OK, "%s", ctx.msg);
        memcpy(y + done * N_CLASSES, out.data, (size_t)(m * N_CLASSES) * sizeof(float));
        done += m;
    }
    CHECK_MSG(ptq_calib_set_sync(&ctx, s) == PTQ_OK, "%s", ctx.msg);
    return s;
}

static void test_model(const char *file, int64_t want_nhwc)
{
    const char *src = getenv("PTQ_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", src ? src : ".", file);
    ptq_graph *g = NULL;
    ptq_status st = ptq_graph_load_onnx(&ctx, path, &g);
    if (st == PTQ_OK)
        st = ptq_graph_infer_shapes(&ctx, g, 1);
    CHECK_MSG(st == PTQ_OK, "%s: %s", path, ctx.msg);
    if (st != PTQ_OK) {
        ptq_graph_free(g);
        return;
    }
    int n_const = 0; /* Constant nodes (Clip's bounds) run on the host, as without channels last */
    for (int k = 0; k < g->n_nodes; k++)
        n_const += strcmp(g->nodes[k].op_type, "Constant") == 0;
    float *x = malloc((size_t)N_ALL * IMG * sizeof *x);
    float *y_cpu = malloc((size_t)N_ALL * N_CLASSES * sizeof *y_cpu);
    float *y_a = malloc((size_t)N_ALL * N_CLASSES * sizeof *y_a), *y_b = malloc((size_t)N_ALL * N_CLASSES * sizeof *y_b);
    test_rand_seed(23);
    test_fill_uniform(x, (int64_t)N_ALL * IMG, -0.9f, 2.1f);
    ptq_exec *cpu = NULL;
    ptq_exec_params pc = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, g, &pc, &cpu) == PTQ_OK);
    CHECK(cpu && run_parts(cpu, x, N_ALL, NULL, 0, y_cpu));

    /* FP32, forced channels last, every value tapped */
    tap_count taps = {0, 0};
    ptq_exec *f = gpu_exec(g, PTQ_MATH_FP32, "1", count_tap, &taps);
    if (f) {
        const int64_t n_last = ptq_exec_n_channels_last(f);
        CHECK_MSG(n_last == want_nhwc, "%s: %lld values channels last, want %lld", file, (long long)n_last,
                  (long long)want_nhwc);
        const int ran = run_parts(f, x, N_ALL, NULL, 0, y_a);
        const int ok = ran && test_close("fp32 channels last vs cpu", y_a, y_cpu, (int64_t)N_ALL * N_CLASSES, 1e-4f, 1e-5f);
        CHECK(ok);
        CHECK(ptq_exec_n_fallback_nodes(f) == n_const);
        CHECK(taps.calls == g->n_nodes && taps.on_device == taps.calls - n_const);
        const int split_ok = run_parts(f, x, N_ALL, splits, 4, y_b) &&
                             memcmp(y_a, y_b, (size_t)N_ALL * N_CLASSES * sizeof(float)) == 0;
        CHECK_MSG(split_ok, "%s: fp32 channels last: batch splits differ", file);
        printf("cuda_nhwc: %s: FP32, %lld values channels last, every node tapped: logits %s the CPU (rtol 1e-4); "
               "%d taps, %d on the device; %d nodes on the CPU (%d Constants); batches 1,7,128,164 %s one of 300\n",
               file, (long long)n_last, ok ? "match" : "DIFFER from", taps.calls, taps.on_device,
               ptq_exec_n_fallback_nodes(f), n_const, split_ok ? "bit-identical to" : "DIFFER from");
    }
    ptq_exec_free(f);

    /* TF32: channels last by default, against PTQ_NHWC=0 */
    ptq_exec *t = gpu_exec(g, PTQ_MATH_TF32, "", NULL, NULL), *t0 = gpu_exec(g, PTQ_MATH_TF32, "0", NULL, NULL);
    if (t && t0) {
        CHECK(ptq_exec_n_channels_last(t) == want_nhwc && ptq_exec_n_channels_last(t0) == 0);
        float *y_t0 = malloc((size_t)N_ALL * N_CLASSES * sizeof *y_t0);
        const int64_t before = ptq_exec_n_epilogues(t);
        const int ran = run_parts(t, x, N_ALL, NULL, 0, y_a) && run_parts(t0, x, N_ALL, NULL, 0, y_t0);
        /* TF32 rounds each product's operands to 10 mantissa bits */
        const int ok_cpu = ran && test_close("tf32 channels last vs cpu", y_a, y_cpu, (int64_t)N_ALL * N_CLASSES, 1e-2f,
                                             1e-2f);
        const int ok_nchw = ran && test_close("tf32 channels last vs tf32 nchw", y_a, y_t0, (int64_t)N_ALL * N_CLASSES,
                                              1e-2f, 1e-2f);
        CHECK(ok_cpu && ok_nchw);
        const int64_t chains = ptq_exec_n_epilogues(t) - before;
        const int split_ok = run_parts(t, x, N_ALL, splits, 4, y_b) &&
                             memcmp(y_a, y_b, (size_t)N_ALL * N_CLASSES * sizeof(float)) == 0;
        CHECK_MSG(split_ok, "%s: tf32 channels last: batch splits differ", file);
        CHECK(ptq_exec_n_fallback_nodes(t) == n_const);
        printf("cuda_nhwc: %s: TF32, %lld chains in cuDNN's epilogue: logits %s the CPU and %s TF32 [N, C, H, W] "
               "(rtol 1e-2, atol 1e-2); batches 1,7,128,164 %s one of 300\n",
               file, (long long)chains, ok_cpu ? "match" : "DIFFER from", ok_nchw ? "match" : "DIFFER from",
               split_ok ? "bit-identical to" : "DIFFER from");
        free(y_t0);
    }
    ptq_exec_free(t);
    ptq_exec_free(t0);

    /* TF32 calibration: the same observers whatever the batches */
    ptq_exec *c1 = gpu_exec(g, PTQ_MATH_TF32, "", NULL, NULL), *c2 = gpu_exec(g, PTQ_MATH_TF32, "", NULL, NULL);
    if (c1 && c2) {
        ptq_calib_set *s1 = calibrate(g, c1, x, NULL, 0, y_a), *s2 = calibrate(g, c2, x, splits, 4, y_b);
        if (s1 && s2) {
            const int differ = same_observers(s1, s2);
            const int same_logits = memcmp(y_a, y_b, (size_t)N_ALL * N_CLASSES * sizeof(float)) == 0;
            CHECK(same_logits);
            const int64_t chains = ptq_exec_n_observed_chains(c1);
            CHECK(chains > 0);
            printf("cuda_nhwc: %s: TF32 calibration, %lld chains observed in one pass: %lld observers, %d differ "
                   "between one batch of 300 and batches 1,7,128,164 (must be 0); logits %s\n",
                   file, (long long)chains, (long long)ptq_calib_set_n_tensors(s1), differ,
                   same_logits ? "bit-identical" : "DIFFER");
        }
        ptq_calib_set_free(s1);
        ptq_calib_set_free(s2);
    }
    ptq_exec_free(c1);
    ptq_exec_free(c2);
    ptq_exec_free(cpu);
    free(x);
    free(y_cpu);
    free(y_a);
    free(y_b);
    ptq_graph_free(g);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_nhwc: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx_init(&ctx);
    test_model("fmnist_resnet.onnx", 19);
    test_model("fmnist_mobilenet.onnx", 47);
    return test_done("cuda_nhwc");
}

#endif
