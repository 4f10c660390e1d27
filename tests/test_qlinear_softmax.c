/* onnxruntime's QLinearSoftmax: the reference (kernels/ref/qlinear_softmax.c)
 * on hand-worked values (the output scale taken as floor(1 / y_scale): 254
 * for 1/255; ties to even; the clamp at 255 after the zero point; a strided
 * axis; the table's largest entry), and its simulation under a plan
 * (quant/fake_quant.c): a Softmax over axis 1 of [4, 3, 5] whose input and
 * output the plan rounds to uint8 (or both to int8) gives the reference's
 * codes dequantized, on the CPU and, where there is one, the GPU (the node on
 * the host, bit for bit the CPU's); with its output in FP32, or int8 beside
 * uint8, onnxruntime does not fuse it and the Softmax stays a float one. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/numfmt.h"
#include "model/onnx_build.h"
#include "ptq/fake_quant.h"
#include "testlib.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* y [n] of the reference on one line of codes x [n]; equal to want [n]. */
static void line_case(const char *what, int64_t n, const uint8_t *x, float x_scale, float y_scale, int32_t y_zp,
                      const uint8_t *want)
{
    uint8_t y[8];
    ptq_k_qlinear_softmax_ref(1, n, 1, x, x_scale, y_scale, y_zp, y);
    int ok = memcmp(y, want, (size_t)n) == 0;
    CHECK_MSG(ok, "%s: got %u %u, want %u %u", what, y[0], n > 1 ? y[1] : 0, want[0], n > 1 ? want[1] : 0);
}

static void hand_worked(void)
{
    const float ln2 = 0.693147182f;
    /* exp(-ln 2) = 1/2: the two entries are e and e/2, sum 1.5e; floor(1/(1/256)) = 256: 170.67, 85.33 */
    line_case("codes 10, 9 at x_scale ln 2, y_scale 1/256", 2, (const uint8_t[]){10, 9}, ln2, 1.0f / 256,
              0, (const uint8_t[]){171, 85});
    /* 1.0f / (float)(1/255) is 254.99998: the output scale is 1/254, so one half is 127, not round(127.5) = 128 */
    line_case("two equal codes, y_scale 1/255", 2, (const uint8_t[]){200, 200}, 0.1f, 1.0f / 255, 0,
              (const uint8_t[]){127, 127});
    /* 1.0f / (float)(1/7) is 6.9999995: 3, where a float softmax rounds 3.5 to 4 */
    line_case("two equal codes, y_scale 1/7", 2, (const uint8_t[]){0, 0}, 0.1f, 1.0f / 7, 0,
              (const uint8_t[]){3, 3});
    /* e * 1 / 2e = 0.5 exactly: half to even gives 0, then the zero point 3 */
    line_case("a tie at 0.5, zero point 3", 2, (const uint8_t[]){7, 7}, 0.3f, 1.0f, 3, (const uint8_t[]){3, 3});
    /* one element: floor(1/(1/300)) = 300 > 255; two: 200 + zero point 100 */
    line_case("one element, y_scale 1/300", 1, (const uint8_t[]){42}, 0.1f, 1.0f / 300, 0, (const uint8_t[]){255});
    line_case("200 + zero point 100", 2, (const uint8_t[]){1, 1}, 0.1f, 1.0f / 400, 100, (const uint8_t[]){255, 255});
    /* codes 255 apart at x_scale 1: e^-255 of the largest, under 1/2 of a step */
    line_case("codes 255 apart", 2, (const uint8_t[]){0, 255}, 1.0f, 1.0f / 256, 0, (const uint8_t[]){0, 255});

    /* a strided axis: [1, 2, 2], softmax over the middle dim; lines (10, 9) and (0, 0) */
    const uint8_t x[4] = {10, 0, 9, 0}, want[4] = {171, 128, 85, 128};
    uint8_t y[4];
    ptq_k_qlinear_softmax_ref(1, 2, 2, x, ln2, 1.0f / 256, 0, y);
    CHECK_MSG(memcmp(y, want, 4) == 0, "strided: got %u %u %u %u", y[0], y[1], y[2], y[3]);

    /* the table: entry 0 is e^(logf(FLT_MAX / len) - 5), so len of them stay 148 times under FLT_MAX */
    float t[256];
    for (int64_t len = 1; len <= 1000000; len *= 1000) {
        ptq_k_qlinear_softmax_table_ref(0.5f, len, t);
        const double top = exp((double)logf(FLT_MAX / (float)len) - 5.0);
        CHECK_MSG(fabs(t[0] / top - 1.0) < 1e-6 && fabs(t[255] / (top * exp(-127.5)) - 1.0) < 1e-6 &&
                  (double)t[0] * (double)len < (double)FLT_MAX / 148.0,
                  "table for len %lld: %g .. %g", (long long)len, (double)t[0], (double)t[255]);
    }
}

/* x [4, 3, 5] -> Softmax(axis 1) -> y, opset 13. */
static ptq_graph *softmax_graph(void)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    ptq_onnx_builder b;
    memset(&b, 0, sizeof b);
    const ptq_ob_attr axis = {.name = "axis", .type = PTQ_ATTR_INT, .i = 1};
    ptq_ob_value(&b, 0, "x", 3, DIMS(-1, 3, 5));
    ptq_ob_node(&b, "Softmax", "sm", 1, (const char *const[]){"x"}, 1, (const char *const[]){"y"}, 1, &axis);
    ptq_ob_value(&b, 1, "y", 3, DIMS(-1, 3, 5));
    void *bytes = NULL;
    size_t n_bytes = 0;
    ptq_graph *g = NULL;
    if (ptq_ob_finish(&ctx, &b, "softmax", "test_qlinear_softmax", 13, &bytes, &n_bytes) != PTQ_OK ||
        ptq_graph_load_onnx_bytes(&ctx, bytes, n_bytes, ".", &g) != PTQ_OK)
        CHECK_MSG(0, "%s", ctx.msg);
    free(bytes);
    return g;
}

/* Runs g on x [60] under a plan of x at (px, sx, zx) and y at (py, sy, zy), on dev, into y [60]; 0 when dev is
 * not there. */
static int run_plan(const ptq_graph *g, ptq_device dev, const float *x, ptq_prec px, float sx, int32_t zx,
                    ptq_prec py, float sy, int32_t zy, float *y)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    float scales[2] = {sx, sy};
    ptq_plan_entry e[2] = {
        {.name = "x", .prec = px, .axis = -1, .n_scales = 1, .scales = &scales[0], .zero_point = zx},
        {.name = "y", .prec = py, .axis = -1, .n_scales = 1, .scales = &scales[1], .zero_point = zy}};
    for (int i = 0; i < 2; i++)
        if (e[i].prec == PTQ_PREC_FP32)
            e[i].n_scales = 0;
    ptq_plan plan = {.n = 2, .e = e, .core = PTQ_PREC_INT8};
    ptq_fq *fq = NULL;
    ptq_exec *ex = NULL;
    ptq_exec_params p = {dev, 0, NULL, NULL, 0, PTQ_MATH_FP32};
    ptq_tensor in = {PTQ_DT_FLOAT, 3, {4, 3, 5}, (void *)x, PTQ_MEM_HOST, 0}, out;
    CHECK_MSG(ptq_fq_create(&ctx, g, &plan, &fq) == PTQ_OK, "%s", ctx.msg);
    const ptq_status st = ptq_exec_create(&ctx, g, &p, &ex);
    if (st == PTQ_ERR_NO_DEVICE) {
        ptq_fq_free(fq);
        return 0;
    }
    CHECK_MSG(st == PTQ_OK, "%s", ctx.msg);
    ptq_exec_set_overlay(ex, fq ? ptq_fq_overlay(fq) : NULL);
    CHECK_MSG(ex && ptq_exec_run(&ctx, ex, &in, &out) == PTQ_OK, "%s", ctx.msg);
    if (ex)
        memcpy(y, out.data, 60 * sizeof *y);
    ptq_exec_free(ex);
    ptq_fq_free(fq);
    return 1;
}

static void simulated(void)
{
    ptq_graph *g = softmax_graph();
    if (!g)
        return;
    float x[60], xq[60], y[60], y_dev[60], want[60];
    uint8_t qx[60], qy[60];
    test_rand_seed(7);
    test_fill_uniform(x, 60, -3.0f, 5.0f);
    const float sx = 8.0f / 255, sy = 1.0f / 255;
    const int32_t zx = 96;
    /* uint8 in and out: onnxruntime's codes, dequantized */
    ptq_k_quantize_uint8_ref(x, 60, sx, zx, qx);
    for (int o = 0; o < 4; o++)
        ptq_k_qlinear_softmax_ref(1, 3, 5, qx + o * 15, sx, sy, 0, qy + o * 15);
    ptq_k_dequantize_uint8_ref(qy, 60, sy, 0, want);
    run_plan(g, PTQ_DEVICE_CPU, x, PTQ_PREC_UINT8, sx, zx, PTQ_PREC_UINT8, sy, 0, y);
    CHECK_MSG(memcmp(y, want, sizeof y) == 0, "uint8: the simulated Softmax is not QLinearSoftmax's codes");
    /* a float Softmax rounded to the output's grid gives other codes here (the output scale is 1/254) */
    float plain[60];
    ptq_k_fake_quant_uint8_ref(x, 60, sx, zx, xq);
    ptq_k_softmax_cpu(4, 3, 5, xq, plain);
    ptq_k_fake_quant_uint8_ref(plain, 60, sy, 0, plain);
    CHECK_MSG(memcmp(plain, want, sizeof plain) != 0, "the case does not tell QLinearSoftmax from a rounded one");
    if (run_plan(g, PTQ_DEVICE_CUDA, x, PTQ_PREC_UINT8, sx, zx, PTQ_PREC_UINT8, sy, 0, y_dev))
        CHECK_MSG(memcmp(y_dev, want, sizeof y_dev) == 0, "uint8 on the GPU: not the CPU's codes");
    /* int8 in and out (symmetric): the same codes + 128 */
    int8_t sq[60];
    const float sx8 = 5.0f / 127, sy8 = 0.9f / 127;
    ptq_k_quantize_int8_ref(x, 60, sx8, PTQ_K_INT8_QMAX, sq);
    for (int i = 0; i < 60; i++)
        qx[i] = (uint8_t)(sq[i] + 128);
    for (int o = 0; o < 4; o++)
        ptq_k_qlinear_softmax_ref(1, 3, 5, qx + o * 15, sx8, sy8, 128, qy + o * 15);
    for (int i = 0; i < 60; i++)
        want[i] = (float)(qy[i] - 128) * sy8;
    run_plan(g, PTQ_DEVICE_CPU, x, PTQ_PREC_INT8, sx8, 0, PTQ_PREC_INT8, sy8, 0, y);
    CHECK_MSG(memcmp(y, want, sizeof y) == 0, "int8: the simulated Softmax is not QLinearSoftmax's codes");
    if (run_plan(g, PTQ_DEVICE_CUDA, x, PTQ_PREC_INT8, sx8, 0, PTQ_PREC_INT8, sy8, 0, y_dev))
        CHECK_MSG(memcmp(y_dev, want, sizeof y_dev) == 0, "int8 on the GPU: not the CPU's codes");
    /* not fused: the output in FP32, or int8 beside uint8: a float Softmax of the rounded input */
    ptq_k_softmax_cpu(4, 3, 5, xq, want);
    run_plan(g, PTQ_DEVICE_CPU, x, PTQ_PREC_UINT8, sx, zx, PTQ_PREC_FP32, 1.0f, 0, y);
    CHECK_MSG(memcmp(y, want, sizeof y) == 0, "uint8 in, fp32 out: not a float Softmax");
    ptq_k_fake_quant_int8_ref(want, 60, sy8, PTQ_K_INT8_QMAX, want);
    run_plan(g, PTQ_DEVICE_CPU, x, PTQ_PREC_UINT8, sx, zx, PTQ_PREC_INT8, sy8, 0, y);
    CHECK_MSG(memcmp(y, want, sizeof y) == 0, "uint8 in, int8 out: not a float Softmax rounded to int8");
    ptq_graph_free(g);
}

int main(void)
{
    hand_worked();
    simulated();
    return test_done("test_qlinear_softmax");
}
