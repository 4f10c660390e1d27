/* Calibration on the GPU end to end: the demo model runs on the CUDA
 * executor with a calibration set tapping every quantizable tensor (device
 * observers, tensors never copied for them), while a second set is fed host
 * copies of the very same device tensors; after ptq_calib_set_sync both
 * sets must hold bit-identical observers (stats, range, every bin) over
 * batches of 1, 64, 200 and 333 random images. A third set, on its own
 * executor as the calibrate command taps it (device observer states
 * offered, so Conv -> Add -> Relu chains are observed in one pass each),
 * must hold the same observers, and that executor's logits must equal the
 * first's bit for bit (compare_sets). The same for the Fashion-MNIST ViT,
 * whose MatMul biases and exact GELUs the third executor feeds in fused
 * passes (run_observed_bias, run_observed_gelu). Then the text encoder,
 * whose positional slice has no batch dimension (check_batchless). Exit 77
 * without a GPU. */
#include <stdlib.h>
#include <string.h>

#include "ptq/calib.h"
#include "ptq/runtime.h"
#include "testlib.h"

#ifndef PTQ_CUDA

int main(void)
{
    printf("cuda_calib: skipped: ptq was built without CUDA\n");
    return PTQ_TEST_SKIP;
}

#else

#include "calib/calib_internal.h"
#include "kernels/cuda/cuda_kernels.h"
#include "runtime/backend.h"

typedef struct both {
    ptq_calib_set *dev_set, *host_set;
    ptq_exec *e;
    int on_device, copied;
} both;

/* Feeds the device set the tensor as it is and the host set a host copy. */
static ptq_status tap(void *user, ptq_ctx *ctx, const ptq_graph *g, int node, int value, const ptq_tensor *t)
{
    both *b = user;
    PTQ_TRY_RET(ptq_calib_set_tap(b->dev_set, ctx, g, node, value, t));
    if (t->mem != PTQ_MEM_CUDA)
        return ptq_calib_set_tap(b->host_set, ctx, g, node, value, t);
    b->on_device++;
    ptq_tensor h = *t;
    h.mem = PTQ_MEM_HOST;
    h.data = malloc(ptq_tensor_bytes(t) + 1);
    if (!h.data)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory");
    ptq_status st = ptq_cuda_download(ctx, ptq_exec_cuda_dev(b->e), h.data, t->data, ptq_tensor_bytes(t));
    if (st == PTQ_OK)
        st = ptq_calib_set_tap(b->host_set, ctx, g, node, value, &h);
    b->copied++;
    free(h.data);
    return st;
}

/* Whether set a's observer i is bit-identical to set b's. */
static int same_observer(const ptq_calib_set *a, const ptq_calib_set *b, int64_t i)
{
    const ptq_observer *oa = ptq_calib_set_observer(a, i), *ob = ptq_calib_set_observer(b, i);
    ptq_observer_stats sa, sb;
    ptq_observer_get_stats(oa, &sa);
    ptq_observer_get_stats(ob, &sb);
    return memcmp(&sa, &sb, sizeof sa) == 0 && ptq_observer_exponent(oa) == ptq_observer_exponent(ob) &&
           memcmp(ptq_observer_hist(oa), ptq_observer_hist(ob), (size_t)ptq_observer_n_bins(oa) * sizeof(int64_t)) ==
               0;
}

/* The text encoder's /Slice_output_0 (a positional slice [1, L, 64]: no batch dimension) is made on the GPU and
 * counted once per sample: copied to the host and observed there in one weighted update (calib_set.c's copies),
 * not once a sample on the GPU. Its observer and every other must equal a host set's fed host copies, its count
 * the samples times L * 64. */
static void check_batchless(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    const char *src = getenv("PTQ_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/text_encoder.onnx", src ? src : ".");
    ptq_graph *g = NULL;
    CHECK_MSG(ptq_graph_load_onnx(&ctx, path, &g) == PTQ_OK, "%s", ctx.msg); /* shapes once L is known */
    if (!g)
        return;
    const int64_t L = 9, sizes[] = {5, 1, 12};
    for (int k = 0; k < g->n_inputs; k++)
        g->values[g->inputs[k]].dims[1] = L; /* as the session binds the data's sequence length */
    CHECK_MSG(ptq_graph_infer_shapes(&ctx, g, 1) == PTQ_OK, "%s", ctx.msg);
    both b = {0};
    ptq_exec_params p = {PTQ_DEVICE_CUDA, 0, tap, &b, 0, PTQ_MATH_FP32};
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &b.dev_set) == PTQ_OK);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &b.host_set) == PTQ_OK);
    CHECK_MSG(ptq_exec_create(&ctx, g, &p, &b.e) == PTQ_OK, "%s", ctx.msg);
    CHECK(b.e && b.dev_set && b.host_set);
    if (!b.e || !b.dev_set || !b.host_set)
        goto done;
    CHECK(ptq_calib_set_bind(&ctx, b.dev_set, b.e) == PTQ_OK);
    int64_t total = 0;
    test_rand_seed(9);
    for (int r = 0; r < 3; r++) {
        const int64_t n = sizes[r];
        int64_t *ids = malloc((size_t)(2 * n * L) * sizeof *ids), *mask = ids + n * L;
        for (int64_t j = 0; j < n * L; j++) {
            ids[j] = 2 + (int64_t)(test_rand_u64() % 48);
            mask[j] = j % L < 1 + (j / L) % L; /* sample j / L holds its first 1 + (j / L) % L tokens */
        }
        ptq_tensor in[2] = {{PTQ_DT_INT64, 2, {n, L}, ids, PTQ_MEM_HOST, 0},
                            {PTQ_DT_INT64, 2, {n, L}, mask, PTQ_MEM_HOST, 0}};
        ptq_tensor out;
        b.dev_set->batch_n = b.host_set->batch_n = n; /* as calib/calib_consumer.c sets it */
        CHECK_MSG(ptq_exec_run(&ctx, b.e, in, &out) == PTQ_OK, "%s", ctx.msg);
        total += n;
        free(ids);
    }
    CHECK_MSG(ptq_calib_set_sync(&ctx, b.dev_set) == PTQ_OK, "%s", ctx.msg);
    CHECK(ptq_calib_set_sync(&ctx, b.host_set) == PTQ_OK);
    int differ = 0;
    for (int64_t i = 0; i < ptq_calib_set_n_tensors(b.dev_set); i++) {
        const int same = same_observer(b.dev_set, b.host_set, i);
        CHECK_MSG(same, "text encoder, tensor %s: device and host observers differ", ptq_calib_set_name(b.dev_set, i));
        differ += !same;
    }
    const int64_t slice = ptq_calib_set_find(b.dev_set, "/Slice_output_0");
    ptq_observer_stats s = {0};
    if (slice >= 0)
        ptq_observer_get_stats(ptq_calib_set_observer(b.dev_set, slice), &s);
    printf("cuda_calib: text encoder, %lld observers compared, %d differ (must be 0); /Slice_output_0 counted %lld "
           "(must be %lld samples x %lld x 64)\n", (long long)ptq_calib_set_n_tensors(b.dev_set), differ,
           (long long)s.count, (long long)total, (long long)L);
    CHECK(slice >= 0 && s.count == total * L * 64 && s.n_binned > 0);
done:
    ptq_exec_free(b.e);
    ptq_calib_set_free(b.dev_set);
    ptq_calib_set_free(b.host_set);
    ptq_graph_free(g);
}

/* Calibrates model g ([n, 1, 28, 28] input) on the GPU three ways over batches of 1, 64, 200 and 333 random images
 * of a growing range: a set tapping device tensors and a set fed host copies of the very same tensors (one
 * executor, no fused passes: its tap offers no device states), and a third set on its own executor as ptq
 * calibrate taps it (device states offered, so chains, MatMul biases and GELUs are fed in fused passes). Every
 * observer of the three must be bit-identical, the two executors' logits too. *fused: the fused passes' counts
 * (chains, biases, GELUs) over the 4 runs. */
static void compare_sets(const char *label, ptq_graph *g, int64_t fused[3])
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    both b = {0};
    ptq_calib_set *chain_set = NULL;
    ptq_exec *ce = NULL;
    ptq_exec_params pg = {PTQ_DEVICE_CUDA, 0, tap, &b, 0, PTQ_MATH_FP32};
    ptq_exec_params pc = {PTQ_DEVICE_CUDA, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &b.dev_set) == PTQ_OK);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &b.host_set) == PTQ_OK);
    CHECK(ptq_calib_set_create(&ctx, g, NULL, 0, &chain_set) == PTQ_OK);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pg, &b.e) == PTQ_OK, "%s", ctx.msg);
    CHECK_MSG(ptq_exec_create(&ctx, g, &pc, &ce) == PTQ_OK, "%s", ctx.msg);
    fused[0] = fused[1] = fused[2] = 0;
    if (!b.e || !ce || !b.dev_set || !b.host_set || !chain_set)
        goto done;
    CHECK(ptq_calib_set_bind(&ctx, b.dev_set, b.e) == PTQ_OK);
    /* as calib/calib_consumer.c taps the executor of ptq calibrate */
    CHECK(ptq_calib_set_bind(&ctx, chain_set, ce) == PTQ_OK);
    CHECK(ptq_exec_add_tap(&ctx, ce, ptq_calib_set_tap, chain_set) == PTQ_OK);
    CHECK(ptq_exec_tap_dev_state(&ctx, ce, ptq_calib_set_tap, chain_set, calib_set_dev_state) == PTQ_OK);
    CHECK(ptq_exec_tap_dev_state(&ctx, ce, tap, &b, calib_set_dev_state) == PTQ_ERR_INVALID_ARG);
    int logits_differ = 0;
    printf("cuda_calib: %s: device %s, %lld tensors observed\n", label, ptq_exec_device_name(b.e),
           (long long)ptq_calib_set_n_tensors(b.dev_set));
    const int64_t sizes[] = {1, 64, 200, 333};
    test_rand_seed(5);
    for (int r = 0; r < 4; r++) {
        int64_t n = sizes[r];
        float *x = malloc((size_t)(n * 28 * 28) * sizeof *x);
        /* a growing range: later batches reach further, so device ranges regrow */
        test_fill_uniform(x, n * 28 * 28, -0.9f * (float)(r + 1), 2.1f * (float)(r + 1));
        ptq_tensor in = {PTQ_DT_FLOAT, 4, {n, 1, 28, 28}, x, PTQ_MEM_HOST, 0};
        ptq_tensor out, out_c;
        b.dev_set->batch_n = b.host_set->batch_n = chain_set->batch_n = n; /* as calib/calib_consumer.c sets it */
        CHECK(ptq_calib_set_observe_inputs(&ctx, b.dev_set, &in) == PTQ_OK);
        CHECK(ptq_calib_set_observe_inputs(&ctx, b.host_set, &in) == PTQ_OK);
        CHECK(ptq_calib_set_observe_inputs(&ctx, chain_set, &in) == PTQ_OK);
        CHECK_MSG(ptq_exec_run(&ctx, b.e, &in, &out) == PTQ_OK, "%s", ctx.msg);
        CHECK_MSG(ptq_exec_run(&ctx, ce, &in, &out_c) == PTQ_OK, "%s", ctx.msg);
        const int same = ptq_tensor_bytes(&out) == ptq_tensor_bytes(&out_c) &&
                         memcmp(out.data, out_c.data, ptq_tensor_bytes(&out)) == 0;
        CHECK_MSG(same, "%s, batch %lld: logits with fused observing passes differ", label, (long long)n);
        logits_differ += !same;
        free(x);
    }
    CHECK_MSG(ptq_calib_set_sync(&ctx, b.dev_set) == PTQ_OK, "%s", ctx.msg);
    CHECK(ptq_calib_set_sync(&ctx, b.host_set) == PTQ_OK);
    CHECK_MSG(ptq_calib_set_sync(&ctx, chain_set) == PTQ_OK, "%s", ctx.msg);
    int differ = 0, chain_differ = 0;
    for (int64_t i = 0; i < ptq_calib_set_n_tensors(b.dev_set); i++) {
        const int same = same_observer(b.dev_set, b.host_set, i);
        CHECK_MSG(same, "%s, tensor %s: device and host observers differ", label, ptq_calib_set_name(b.dev_set, i));
        differ += !same;
        const int same_c = same_observer(chain_set, b.host_set, i);
        CHECK_MSG(same_c, "%s, tensor %s: observers fed by the fused passes differ from the host's", label,
                  ptq_calib_set_name(chain_set, i));
        chain_differ += !same_c;
        ptq_observer_stats sd;
        ptq_observer_get_stats(ptq_calib_set_observer(b.dev_set, i), &sd);
        CHECK(sd.count > 0);
    }
    printf("cuda_calib: %s: %d tensor taps on the device (%d host copies for the reference), %lld observers "
           "compared, %d differ (must be 0)\n",
           label, b.on_device, b.copied, (long long)ptq_calib_set_n_tensors(b.dev_set), differ);
    CHECK(b.on_device > 0);
    fused[0] = ptq_exec_n_observed_chains(ce);
    fused[1] = ptq_exec_n_observed_biases(ce);
    fused[2] = ptq_exec_n_observed_gelus(ce);
    printf("cuda_calib: %s: fed in fused passes over 4 runs: %lld Conv->Add->Relu chains, %lld MatMul biases, %lld "
           "GELUs; %d observers differ from the host's, %d batches' logits differ (all must be 0)\n",
           label, (long long)fused[0], (long long)fused[1], (long long)fused[2], chain_differ, logits_differ);
done:
    ptq_exec_free(ce);
    ptq_calib_set_free(chain_set);
    ptq_exec_free(b.e);
    ptq_calib_set_free(b.dev_set);
    ptq_calib_set_free(b.host_set);
}

int main(void)
{
    char why[256];
    if (!ptq_cuda_available(why, sizeof why)) {
        printf("cuda_calib: skipped: %s\n", why);
        return PTQ_TEST_SKIP;
    }
    int64_t fused[3];
    ptq_graph *g = test_load_demo_model("cuda_calib");
    CHECK(g != NULL);
    if (g) {
        compare_sets("demo model", g, fused);
        CHECK(fused[0] > 0 && fused[0] % 4 == 0);
        ptq_graph_free(g);
    }
    /* the ViT: 17 MatMul biases a run (its 4 encoder layers' 16 and the head's, which eval's GEMM epilogue leaves to
     * the Add: its 10 columns are no multiple of 4) and 4 exact GELUs */
    g = test_load_model("cuda_calib", "fmnist_vit.onnx");
    CHECK(g != NULL);
    if (g) {
        compare_sets("ViT", g, fused);
        CHECK_MSG(fused[1] == 4 * 17 && fused[2] == 4 * 4, "ViT: %lld biases and %lld GELUs fed in fused passes, "
                  "must be 68 and 16", (long long)fused[1], (long long)fused[2]);
        ptq_graph_free(g);
    }
    check_batchless();
    return test_done("cuda_calib");
}

#endif
