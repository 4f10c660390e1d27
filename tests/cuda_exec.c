/* The whole demo model on the GPU against the CPU: same logits (rtol 1e-4,
 * atol 1e-5) on a batch of 64 random images and a batch of 1, every node on
 * the GPU (no fallback), taps see device tensors; and the GPU's logits of 300
 * images bit-identical whether they run as one batch or as batches of 1,
 * 7, 128 and 164 (the same GEMM shapes whatever the batch). Without taps the
 * Conv -> Add -> Relu chains run in cuDNN's epilogue: logits against the CPU
 * and against PTQ_EPILOGUE=0 (same tolerance), again bit-identical across
 * batch splits. Then the ViT's view handovers, fused exact GELUs and
 * MatMul biases (check_views). Exit 77 without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "testlib.h"

typedef struct tap_count {
    int calls, on_device;
} tap_count;

static ptq_status tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    tap_count *c = user;
    c->calls++;
    c->on_device += t->mem == PTQ_MEM_CUDA;
    return PTQ_OK;
}

/* The Fashion-MNIST ViT (10 Reshapes, 4 exact GELUs, MatMuls with bias Adds) on the GPU with view handovers (a
 * Reshape's output takes its input's buffer when it is the last reader), fused GELUs (ptq_k_erf_gelu_cuda) and
 * biases in the GEMM's epilogue (ptq_k_gemm_bias_cuda), and with PTQ_VIEW_ALIAS=0, PTQ_FUSE_GELU=0 and
 * PTQ_FUSE_BIAS=0 (every view copies, every GELU runs as its five nodes, every bias as an Add): logits
 * bit-identical over batches of 5, 64, 1, 200 and 64 again (the plan is remade as batches grow; a new handover
 * waits for a plan that knows it), within tolerance of the CPU; handovers made, 4 GELUs a run fused and biases
 * fused, none of them without. */
static void check_views(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_model("cuda_exec", "fmnist_vit.onnx");
    CHECK(g != NULL);
    if (!g)
        return;
    ptq_exec *cpu = NULL, *gpu = NULL, *copying = NULL;
    ptq_exec_params pc = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec_params pg = {PTQ_DEVICE_CUDA, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, g, &pc, &cpu) == PTQ_OK);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pg, &gpu) == PTQ_OK, "%s", ctx.msg);
    setenv("PTQ_VIEW_ALIAS", "0", 1);
    setenv("PTQ_FUSE_GELU", "0", 1);
    setenv("PTQ_FUSE_BIAS", "0", 1);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pg, &copying) == PTQ_OK, "%s", ctx.msg);
    unsetenv("PTQ_VIEW_ALIAS");
    unsetenv("PTQ_FUSE_GELU");
    unsetenv("PTQ_FUSE_BIAS");
    const int64_t sizes[] = {5, 64, 1, 200, 64};
    int same_all = 1, close_all = 1;
    test_rand_seed(17);
    for (int r = 0; cpu && gpu && copying && r < 5; r++) {
        const int64_t n = sizes[r];
        float *x = malloc((size_t)(n * 784) * sizeof *x), *y[2];
        y[0] = malloc((size_t)(n * 10) * sizeof *y[0]);
        y[1] = malloc((size_t)(n * 10) * sizeof *y[1]);
        test_fill_uniform(x, n * 784, -0.9f, 2.1f);
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;
        ptq_exec *runs[2] = {gpu, copying};
        for (int j = 0; j < 2; j++) {
            const ptq_status st = ptq_exec_run(&ctx, runs[j], &in, &out);
            CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
            if (st == PTQ_OK)
                memcpy(y[j], out.data, (size_t)(n * 10) * sizeof(float));
            else
                memset(y[j], 0xFF, (size_t)(n * 10) * sizeof(float));
        }
        const int same = memcmp(y[0], y[1], (size_t)(n * 10) * sizeof(float)) == 0;
        CHECK_MSG(same, "ViT batch %lld: logits with view handovers and fusions differ from PTQ_VIEW_ALIAS=0 "
                  "PTQ_FUSE_GELU=0 PTQ_FUSE_BIAS=0's", (long long)n);
        CHECK(ptq_exec_run(&ctx, cpu, &in, &out) == PTQ_OK);
        char label[64];
        snprintf(label, sizeof label, "ViT batch %lld gpu vs cpu", (long long)n);
        close_all &= test_close(label, y[0], out.data, n * 10, 1e-3f, 1e-4f); /* a sanity bound: LayerNorm, Softmax */
        same_all &= same;
        free(x);
        free(y[0]);
        free(y[1]);
    }
    const int64_t handed = gpu ? ptq_exec_n_view_handovers(gpu) : 0;
    const int64_t copied = copying ? ptq_exec_n_view_handovers(copying) : 0;
    const int64_t fused = gpu ? ptq_exec_n_gelus(gpu) : 0, unfused = copying ? ptq_exec_n_gelus(copying) : -1;
    const int64_t biases = gpu ? ptq_exec_n_biases(gpu) : 0, no_biases = copying ? ptq_exec_n_biases(copying) : -1;
    printf("cuda_exec: ViT, 5 batches: %lld view handovers, %lld GELUs fused, %lld biases in GEMM epilogues (%lld, "
           "%lld and %lld with PTQ_VIEW_ALIAS=0 PTQ_FUSE_GELU=0 PTQ_FUSE_BIAS=0); logits %s that executor's, %s the "
           "CPU's\n", (long long)handed, (long long)fused, (long long)biases, (long long)copied, (long long)unfused,
           (long long)no_biases, same_all ? "bit-identical to" : "DIFFER from", close_all ? "match" : "DIFFER from");
    CHECK(handed > 0 && copying && copied == 0);
    CHECK(fused == 4 * 5 && unfused == 0);
    CHECK(biases > 0 && biases % 5 == 0 && no_biases == 0);
    ptq_exec_free(cpu);
    ptq_exec_free(gpu);
    ptq_exec_free(copying);
    ptq_graph_free(g);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_exec: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_demo_model("cuda_exec");
    if (!g)
        return 1;
    ptq_exec *cpu = NULL, *gpu = NULL;
    tap_count taps = {0};
    ptq_exec_params pc = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32}, pg = {PTQ_DEVICE_CUDA, 0, tap, &taps, 0, PTQ_MATH_FP32};
    CHECK(ptq_exec_create(&ctx, g, &pc, &cpu) == PTQ_OK);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pg, &gpu) == PTQ_OK, "%s", ctx.msg);
    printf("cuda_exec: device %s\n", gpu ? ptq_exec_device_name(gpu) : "?");
    const int64_t sizes[] = {64, 1, 200};
    test_rand_seed(11);
    for (int r = 0; cpu && gpu && r < 3; r++) {
        int64_t n = sizes[r];
        float *x = malloc((size_t)(n * 28 * 28) * sizeof *x);
        float *y_cpu = malloc((size_t)(n * 10) * sizeof *y_cpu);
        test_fill_uniform(x, n * 28 * 28, -0.9f, 2.1f);
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0};
        ptq_tensor out;
        CHECK(ptq_exec_run(&ctx, cpu, &in, &out) == PTQ_OK);
        memcpy(y_cpu, out.data, (size_t)(n * 10) * sizeof(float));
        taps.calls = taps.on_device = 0;
        ptq_status st = ptq_exec_run(&ctx, gpu, &in, &out);
        CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
        if (st == PTQ_OK) {
            char label[64];
            snprintf(label, sizeof label, "batch %lld gpu vs cpu", (long long)n);
            int ok = test_close(label, out.data, y_cpu, n * 10, 1e-4f, 1e-5f);
            printf("cuda_exec: batch %lld: logits %s; %d taps, %d on the device, %d nodes fell back to the CPU\n",
                   (long long)n, ok ? "match" : "DIFFER", taps.calls, taps.on_device, ptq_exec_n_fallback_nodes(gpu));
        }
        CHECK(ptq_exec_n_fallback_nodes(gpu) == 0);
        CHECK(taps.calls == g->n_nodes && taps.on_device == taps.calls);
        free(x);
        free(y_cpu);
    }
    /* batch invariance */
    const int64_t n_all = 300, splits[][5] = {{300}, {1, 7, 128, 164}, {128, 128, 44}};
    float *x = malloc((size_t)(n_all * 784) * sizeof *x), *ref = malloc((size_t)(n_all * 10) * sizeof *ref);
    float *got = malloc((size_t)(n_all * 10) * sizeof *got);
    test_fill_uniform(x, n_all * 784, -0.9f, 2.1f);
    for (int s = 0; gpu && s < 3; s++) {
        int64_t done = 0;
        for (int j = 0; j < 5 && splits[s][j] > 0; j++) {
            const int64_t n = splits[s][j];
            ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x + done * 784, PTQ_MEM_HOST, 0};
            ptq_tensor out;
            CHECK_MSG(ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK, "%s", ctx.msg);
            memcpy((s == 0 ? ref : got) + done * 10, out.data, (size_t)(n * 10) * sizeof(float));
            done += n;
        }
        if (s > 0) {
            int same = memcmp(ref, got, (size_t)(n_all * 10) * sizeof(float)) == 0;
            CHECK_MSG(same, "split %d: logits differ from one batch of 300", s);
            printf("cuda_exec: 300 images as batches %lld,%lld,%lld,%lld: logits %s one batch of 300\n",
                   (long long)splits[s][0], (long long)splits[s][1], (long long)splits[s][2], (long long)splits[s][3],
                   same ? "bit-identical to" : "DIFFER from");
        }
    }
    /* no taps: the chains run fused, within tolerance of the CPU and the unfused GPU, batch-invariant */
    if (gpu && cpu) {
        ptq_exec *plain = NULL;
        ptq_exec_params pp = {PTQ_DEVICE_CUDA, 0, NULL, NULL, 0, PTQ_MATH_FP32};
        setenv("PTQ_EPILOGUE", "0", 1);
        CHECK_MSG(ptq_exec_create(&ctx, g, &pp, &plain) == PTQ_OK, "%s", ctx.msg);
        unsetenv("PTQ_EPILOGUE");
        ptq_exec_set_tap(gpu, NULL, NULL);
        float *y_cpu = malloc((size_t)(n_all * 10) * sizeof *y_cpu);
        float *y_plain = malloc((size_t)(n_all * 10) * sizeof *y_plain);
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n_all, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;
        CHECK(ptq_exec_run(&ctx, cpu, &in, &out) == PTQ_OK);
        memcpy(y_cpu, out.data, (size_t)(n_all * 10) * sizeof(float));
        CHECK_MSG(plain && ptq_exec_run(&ctx, plain, &in, &out) == PTQ_OK, "%s", ctx.msg);
        memcpy(y_plain, out.data, (size_t)(n_all * 10) * sizeof(float));
        const int64_t before = ptq_exec_n_epilogues(gpu);
        CHECK_MSG(ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK, "%s", ctx.msg);
        memcpy(ref, out.data, (size_t)(n_all * 10) * sizeof(float));
        const int64_t chains = ptq_exec_n_epilogues(gpu) - before;
        CHECK_MSG(chains == 7, "%lld chains ran in the epilogue, the demo model has 7", (long long)chains);
        CHECK(plain && ptq_exec_n_epilogues(plain) == 0);
        int ok_cpu = test_close("fused gpu vs cpu", ref, y_cpu, n_all * 10, 1e-4f, 1e-5f);
        int ok_plain = test_close("fused vs unfused gpu", ref, y_plain, n_all * 10, 1e-4f, 1e-5f);
        int64_t done = 0;
        for (int j = 0; j < 4; j++) {
            const int64_t n = splits[1][j];
            ptq_tensor part = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x + done * 784, PTQ_MEM_HOST, 0};
            CHECK_MSG(ptq_exec_run(&ctx, gpu, &part, &out) == PTQ_OK, "%s", ctx.msg);
            memcpy(got + done * 10, out.data, (size_t)(n * 10) * sizeof(float));
            done += n;
        }
        int same = memcmp(ref, got, (size_t)(n_all * 10) * sizeof(float)) == 0;
        CHECK_MSG(same, "fused: batches 1,7,128,164 differ from one batch of 300");
        printf("cuda_exec: %lld Conv->Add->Relu chains in cuDNN's epilogue per run; logits %s the CPU, %s the unfused "
               "GPU; batches 1,7,128,164 %s one batch of 300\n", (long long)chains, ok_cpu ? "match" : "DIFFER from",
               ok_plain ? "match" : "DIFFER from", same ? "bit-identical to" : "DIFFER from");
        free(y_cpu);
        free(y_plain);
        ptq_exec_free(plain);
    }
    /* the device memory plan: steady runs allocate nothing; kept values on the
     * device and ptq_exec_run_from give the full run's logits bit for bit */
    if (gpu) {
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {128, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;
        ptq_exec_set_tap(gpu, NULL, NULL);
        CHECK(ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK && ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK);
        const int64_t allocs = ptq_exec_n_allocs(gpu);
        CHECK(ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK);
        memcpy(ref, out.data, 128 * 10 * sizeof(float));
        CHECK_MSG(ptq_exec_n_allocs(gpu) == allocs, "steady GPU runs allocated %lld times",
                  (long long)(ptq_exec_n_allocs(gpu) - allocs));
        for (int k = 0; k <= g->n_nodes; k++)
            CHECK(ptq_exec_keep_for(&ctx, gpu, k) == PTQ_OK);
        CHECK(ptq_exec_run(&ctx, gpu, &in, &out) == PTQ_OK);
        memcpy(ref, out.data, 128 * 10 * sizeof(float)); /* kept values leave no chain to fuse */
        int n_same = 0, n_runs = 0;
        for (int k = g->n_nodes - 1; k >= 0; k -= 2, n_runs++) {
            CHECK_MSG(ptq_exec_run_from(&ctx, gpu, k, &out) == PTQ_OK, "%s", ctx.msg);
            n_same += memcmp(out.data, ref, 128 * 10 * sizeof(float)) == 0;
        }
        printf("cuda_exec: %lld device allocations in all; steady runs add none; %d of %d runs from kept values "
               "bit-identical to the full run\n", (long long)ptq_exec_n_allocs(gpu), n_same, n_runs);
        CHECK(n_same == n_runs);
    }
    free(x);
    free(ref);
    free(got);
    ptq_exec_free(cpu);
    ptq_exec_free(gpu);
    ptq_graph_free(g);
    check_views();
    return test_done("cuda_exec");
}
