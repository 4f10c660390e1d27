/* The CPU executor's fused runs against the nodes apart: the Fashion-MNIST ViT (10 Reshapes, 17 MatMuls with a
 * bias Add) on a CPU-only executor, whose Reshapes that are the last readers of computed tensors take their buffers
 * over instead of copying them (runtime/exec.c view_source) and whose MatMuls add their bias rows as the GEMM stores
 * (run_matmul_bias, ptq_k_gemm_bias_cpu), against one made under PTQ_VIEW_ALIAS=0 PTQ_FUSE_BIAS=0 (every view
 * copies, every bias an Add node): logits bit-identical over batches of 5, 64, 1, 200 and 64 again (the plan is
 * remade as batches grow; a new handover waits for a plan that knows it), in whole batches and in passes of 16
 * samples; handovers made and biases fused, none of either under the switches. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptq/runtime.h"
#include "runtime/backend.h"
#include "testlib.h"

/* The logits of one run of e on x ([n, 1, 28, 28]) into y ([n, 10]); NaN-filled bytes when it fails. */
static void logits(ptq_ctx *ctx, ptq_exec *e, float *x, int64_t n, float *y)
{
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out;
    const ptq_status st = ptq_exec_run(ctx, e, &in, &out);
    CHECK_MSG(st == PTQ_OK, "%s", ctx->msg);
    if (st == PTQ_OK)
        memcpy(y, out.data, (size_t)(n * 10) * sizeof *y);
    else
        memset(y, 0xFF, (size_t)(n * 10) * sizeof *y);
}

static void check_views(int64_t pass_rows)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_graph *g = test_load_model("test_exec_fused", "fmnist_vit.onnx");
    CHECK(g != NULL);
    if (!g)
        return;
    ptq_exec *handing = NULL, *copying = NULL;
    ptq_exec_params p = {PTQ_DEVICE_CPU, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK_MSG(ptq_exec_create(&ctx, g, &p, &handing) == PTQ_OK, "%s", ctx.msg);
    setenv("PTQ_VIEW_ALIAS", "0", 1);
    setenv("PTQ_FUSE_BIAS", "0", 1);
    CHECK_MSG(ptq_exec_create(&ctx, g, &p, &copying) == PTQ_OK, "%s", ctx.msg);
    unsetenv("PTQ_VIEW_ALIAS");
    unsetenv("PTQ_FUSE_BIAS");
    if (handing && copying && pass_rows > 0) {
        ptq_exec_set_pass_rows(handing, pass_rows);
        ptq_exec_set_pass_rows(copying, pass_rows);
    }
    const int64_t sizes[] = {5, 64, 1, 200, 64};
    int same_all = 1;
    test_rand_seed(23);
    for (int r = 0; handing && copying && r < 5; r++) {
        const int64_t n = sizes[r];
        float *x = malloc((size_t)(n * 784) * sizeof *x), *y0 = malloc((size_t)(n * 10) * sizeof *y0);
        float *y1 = malloc((size_t)(n * 10) * sizeof *y1);
        CHECK(x && y0 && y1);
        if (x && y0 && y1) {
            test_fill_uniform(x, n * 784, -0.9f, 2.1f);
            logits(&ctx, handing, x, n, y0);
            logits(&ctx, copying, x, n, y1);
            const int same = memcmp(y0, y1, (size_t)(n * 10) * sizeof *y0) == 0;
            CHECK_MSG(same, "ViT batch %lld (passes of %lld): logits with view handovers and fused biases differ "
                      "from PTQ_VIEW_ALIAS=0 PTQ_FUSE_BIAS=0's", (long long)n, (long long)pass_rows);
            same_all &= same;
        }
        free(x);
        free(y0);
        free(y1);
    }
    const int64_t handed = handing ? ptq_exec_n_view_handovers(handing) : 0;
    const int64_t copied = copying ? ptq_exec_n_view_handovers(copying) : -1;
    const int64_t biases = handing ? ptq_exec_n_biases(handing) : 0;
    const int64_t no_biases = copying ? ptq_exec_n_biases(copying) : -1;
    printf("test_exec_fused: ViT on the CPU, 5 batches, passes of %lld (0: whole): %lld view handovers, %lld biases "
           "fused (%lld and %lld with PTQ_VIEW_ALIAS=0 PTQ_FUSE_BIAS=0); logits %s\n", (long long)pass_rows,
           (long long)handed, (long long)biases, (long long)copied, (long long)no_biases,
           same_all ? "bit-identical" : "DIFFER");
    CHECK_MSG(handed > 0, "no Reshape took its input's buffer over");
    CHECK_MSG(biases > 0 && biases % 17 == 0, "%lld biases fused", (long long)biases);
    CHECK(copied == 0 && no_biases == 0);
    ptq_exec_free(handing);
    ptq_exec_free(copying);
    ptq_graph_free(g);
}

int main(void)
{
    check_views(0);
    check_views(16);
    return test_done("test_exec_fused");
}
