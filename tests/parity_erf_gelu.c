/* The fused exact GELU (kernels/cpu/unary.c's ptq_k_erf_gelu_cpu) against
 * the five ops it stands for, each as its CPU kernel computes it (Div, then
 * ptq_k_unary_cpu's Erf, Add, Mul, Mul, one IEEE operation each): the same
 * bits on seeded data with zeros, -0, NaN, +-Inf and values past erf's
 * saturation, across the 1,024-element blocks and the pool's pieces, in
 * place too. Then the Fashion-MNIST ViT's 4 GELUs (torch's export: Div by a
 * Constant node's sqrt 2, Erf, Add 1, Mul by x, Mul 0.5) on the CPU
 * executor: fused, with logits bit-identical to PTQ_FUSE_GELU=0's (every
 * node run), on one thread and on four; the reference executor (kernels/ref,
 * erff) never fuses. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "testlib.h"

static void check_kernel(void)
{
    const int64_t sizes[] = {1, 7, 1024, 1025, 70001};
    const float c_div = 1.41421354f, c_add = 1.0f, c_mul = 0.5f;
    test_rand_seed(23);
    for (int s = 0; s < 5; s++) {
        const int64_t n = sizes[s];
        float *x = malloc((size_t)n * sizeof *x), *t = malloc((size_t)n * sizeof *t);
        float *want = malloc((size_t)n * sizeof *want), *got = malloc((size_t)n * sizeof *got);
        test_fill_uniform(x, n, -7.0f, 7.0f);
        const float special[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-30f, -3.9f, 4.5f, 1e30f};
        for (int i = 0; i < 9 && i < n; i++)
            x[(int64_t)i * (n / 9 + 1) % n] = special[i];
        for (int64_t i = 0; i < n; i++)
            t[i] = x[i] / c_div;
        ptq_k_unary_cpu(PTQ_UN_ERF, 0.0f, 0.0f, n, t, t);
        for (int64_t i = 0; i < n; i++) {
            const float a = t[i] + c_add, m = x[i] * a;
            want[i] = m * c_mul;
        }
        ptq_k_erf_gelu_cpu(n, c_div, c_add, c_mul, x, got);
        CHECK_MSG(memcmp(got, want, (size_t)n * sizeof *got) == 0, "erf gelu, %lld values: differs from the five ops",
                  (long long)n);
        ptq_k_erf_gelu_cpu(n, c_div, c_add, c_mul, x, x); /* in place */
        CHECK_MSG(memcmp(x, want, (size_t)n * sizeof *x) == 0, "erf gelu in place, %lld values: differs",
                  (long long)n);
        free(x);
        free(t);
        free(want);
        free(got);
    }
}

/* The ViT's logits of batch n on executor e into y: [n * 10]. */
static int run_vit(ptq_exec *e, const float *x, int64_t n, float *y)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, (void *)x, PTQ_MEM_HOST, 0}, out;
    const ptq_status st = ptq_exec_run(&ctx, e, &in, &out);
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    if (st != PTQ_OK)
        return 0;
    memcpy(y, out.data, (size_t)(n * 10) * sizeof *y);
    return 1;
}

static void check_vit(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_model("parity_erf_gelu", "fmnist_vit.onnx");
    CHECK(g != NULL);
    if (!g)
        return;
    ptq_exec *fused = NULL, *plain = NULL, *ref = NULL;
    const ptq_exec_params pc = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    const ptq_exec_params pr = {PTQ_DEVICE_REF, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK_MSG(ptq_exec_create(&ctx, g, &pc, &fused) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pr, &ref) == PTQ_OK, "%s", ctx.msg);
    setenv("PTQ_FUSE_GELU", "0", 1);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pc, &plain) == PTQ_OK, "%s", ctx.msg);
    unsetenv("PTQ_FUSE_GELU");
    const int64_t n = 37;
    float *x = malloc((size_t)(n * 784) * sizeof *x), *y[3];
    for (int i = 0; i < 3; i++)
        y[i] = malloc((size_t)(n * 10) * sizeof *y[i]);
    test_rand_seed(29);
    test_fill_uniform(x, n * 784, -0.9f, 2.1f);
    const int saved = ptq_par_workers();
    int runs = 0;
    for (int w = 0; fused && plain && ref && w < 2; w++) {
        ptq_par_set_workers(w ? 4 : 1);
        if (run_vit(fused, x, n, y[0]) && run_vit(plain, x, n, y[1]) && run_vit(ref, x, n, y[2])) {
            CHECK_MSG(memcmp(y[0], y[1], (size_t)(n * 10) * sizeof *y[0]) == 0,
                      "ViT on %d threads: fused GELU logits differ from PTQ_FUSE_GELU=0's", w ? 4 : 1);
            test_close("ViT fused vs reference", y[0], y[2], n * 10, 1e-4f, 1e-5f);
            runs++;
        }
    }
    ptq_par_set_workers(saved);
    printf("parity_erf_gelu: ViT, %d runs: %lld GELUs fused (%lld with PTQ_FUSE_GELU=0, %lld on the reference)\n",
           runs, (long long)(fused ? ptq_exec_n_gelus(fused) : -1), (long long)(plain ? ptq_exec_n_gelus(plain) : -1),
           (long long)(ref ? ptq_exec_n_gelus(ref) : -1));
    CHECK(runs == 2 && ptq_exec_n_gelus(fused) == 4 * 2 && ptq_exec_n_gelus(plain) == 0 && ptq_exec_n_gelus(ref) == 0);
    for (int i = 0; i < 3; i++)
        free(y[i]);
    free(x);
    ptq_exec_free(fused);
    ptq_exec_free(plain);
    ptq_exec_free(ref);
    ptq_graph_free(g);
}

int main(void)
{
    check_kernel();
    check_vit();
    return test_done("parity_erf_gelu");
}
