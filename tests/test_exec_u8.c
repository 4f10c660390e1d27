/* ptq_exec_run_u8 on the demo model: 8-bit images as the graph input, on
 * the CPU (ptq_preprocess_image) and, when there is a GPU, uploaded as bytes
 * and normalized there (kernels/cuda/normalize.cu): logits identical to
 * ptq_exec_run on the host-preprocessed floats, a run from the kept input
 * (on the device for the GPU) equal to the whole run, and images of the
 * wrong size refused. */
#include <stdlib.h>
#include <string.h>

#include "ptq/dataset.h"
#include "ptq/runtime.h"
#include "testlib.h"

static int input_taps;

static ptq_status count_input_taps(void *user, ptq_ctx *ctx, const ptq_graph *g, int node_index, int value_index,
                                   const ptq_tensor *t)
{
    (void)user;
    (void)ctx;
    (void)t;
    input_taps += node_index == -1 && value_index == g->inputs[0];
    return PTQ_OK;
}

static void fill_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(test_rand_u64() >> 56);
}

/* The demo model from 8-bit images on device dev: run_u8 against run on the host's floats. */
static void exec_case(const ptq_graph *g, ptq_device dev)
{
    enum { N = 37 };
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_preprocess p;
    ptq_preprocess_default(&p);
    p.height = p.width = 28;
    p.mean[0] = 0.286f;
    p.std[0] = 0.353f;
    uint8_t *img = malloc((size_t)N * 28 * 28);
    float *x = malloc((size_t)N * 28 * 28 * sizeof *x), *ref = NULL;
    fill_bytes(img, (size_t)N * 28 * 28);
    for (int64_t i = 0; i < N; i++)
        CHECK(ptq_preprocess_image(&ctx, &p, img + i * 28 * 28, PTQ_DT_UINT8, 28, 28, 1, 0, x + i * 28 * 28) == PTQ_OK);
    ptq_exec_params ep = {dev, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_exec *e = NULL;
    CHECK(ptq_exec_create(&ctx, g, &ep, &e) == PTQ_OK);
    if (!e) {
        fprintf(stderr, "%s\n", ctx.msg);
        free(img);
        free(x);
        return;
    }
    ptq_tensor in = {PTQ_DT_FLOAT, 4, {N, 1, 28, 28}, x, PTQ_MEM_HOST, 0}, out[4];
    CHECK(ptq_exec_run(&ctx, e, &in, out) == PTQ_OK);
    const size_t bytes = ptq_tensor_bytes(&out[0]);
    ref = malloc(bytes);
    memcpy(ref, out[0].data, bytes);
    CHECK(ptq_exec_keep_for(&ctx, e, 0) == PTQ_OK);
    const ptq_u8_batch im = {img, N, 28, 28, 1, 0};
    input_taps = 0;
    CHECK(ptq_exec_add_tap(&ctx, e, count_input_taps, NULL) == PTQ_OK);
    CHECK(ptq_exec_run_u8(&ctx, e, &im, &p, out) == PTQ_OK);
    ptq_exec_remove_tap(e, count_input_taps, NULL);
    CHECK_MSG(input_taps == 1, "the input made from 8-bit images was tapped %d times", input_taps);
    /* without the tap, as the reference ran: on a GPU a tap keeps Conv -> Add -> Relu chains apart */
    CHECK(ptq_exec_run_u8(&ctx, e, &im, &p, out) == PTQ_OK);
    CHECK_MSG(ptq_tensor_bytes(&out[0]) == bytes && memcmp(out[0].data, ref, bytes) == 0,
              "%s: logits from 8-bit images differ from those of the host's floats", ptq_exec_device_name(e));
    CHECK(ptq_exec_run_from(&ctx, e, 0, out) == PTQ_OK);
    CHECK_MSG(memcmp(out[0].data, ref, bytes) == 0, "%s: the run from the kept input differs",
              ptq_exec_device_name(e));
    const ptq_u8_batch wrong = {img, N, 27, 28, 1, 0};
    CHECK(ptq_exec_run_u8(&ctx, e, &wrong, &p, out) == PTQ_ERR_SHAPE);
    /* resize=S rescales 28x28 images unless S is 28, which the GPU path cannot do: refused, not skipped */
    ptq_preprocess zoom = p;
    zoom.resize = 32;
    CHECK_MSG(ptq_exec_run_u8(&ctx, e, &im, &zoom, out) == PTQ_ERR_INVALID_ARG && strstr(ctx.msg, "resize 32"), "%s",
              ctx.msg);
    zoom.resize = 28;
    CHECK_MSG(ptq_exec_run_u8(&ctx, e, &im, &zoom, out) == PTQ_OK, "%s", ctx.msg);
    printf("    test_exec_u8: %s: logits from %d 8-bit images identical to the host-preprocessed run\n",
           ptq_exec_device_name(e), N);
    ptq_exec_free(e);
    free(ref);
    free(img);
    free(x);
}

int main(void)
{
    test_rand_seed(11);
    ptq_graph *g = test_load_demo_model("test_exec_u8");
    if (!g)
        return PTQ_TEST_SKIP;
    exec_case(g, PTQ_DEVICE_CPU);
    char why[256];
    if (ptq_cuda_n_devices(why, sizeof why) > 0)
        exec_case(g, PTQ_DEVICE_CUDA);
    else
        printf("    test_exec_u8: no GPU (%s): the CPU only\n", why);
    ptq_graph_free(g);
    return test_done("test_exec_u8");
}
