/* Shape inference and errors of the dense ops (Conv, ConvTranspose, Gemm,
 * MatMul, MaxPool, AveragePool, GlobalAveragePool, BatchNormalization):
 * auto_pad, ceil_mode, kernel_shape from weights, ConvTranspose's
 * output_padding and output_shape, Gemm C and MatMul broadcasting, messages
 * naming the node; hand-checked values through run_ref and run_cpu. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op.h"
#include "testlib.h"

#define MAX_IO 6

/* One node with its graph, attributes and io, built up by the fx_* calls. */
typedef struct fixture {
    ptq_graph graph;
    ptq_node node;
    ptq_attr attrs[8];
    int64_t ints[8][8];
    int in_idx[MAX_IO], out_idx[MAX_IO];
    ptq_tensor in[MAX_IO], out[MAX_IO];
    const ptq_tensor *in_ptr[MAX_IO];
    ptq_tensor *out_ptr[MAX_IO];
    ptq_op_io io;
    ptq_ctx ctx;
} fixture;

static void fx_init(fixture *f, const char *op_type, const char *name, int64_t opset)
{
    memset(f, 0, sizeof *f);
    f->graph.opset = opset;
    f->node.name = name;
    f->node.op_type = op_type;
    f->node.domain = "";
    f->node.attrs = f->attrs;
    f->node.inputs = f->in_idx;
    f->node.outputs = f->out_idx;
    f->io.graph = &f->graph;
    f->io.node = &f->node;
    f->io.in = f->in_ptr;
    f->io.out = f->out_ptr;
    f->node.n_outputs = f->io.n_out = 1;
    f->io.out[0] = &f->out[0];
    ptq_ctx_init(&f->ctx);
}


/* Appends a float32 input with dims [ndim] (ndim 0: a scalar). */
static void fx_input(fixture *f, int ndim, const int64_t *dims)
{
    const int i = f->io.n_in++;
    f->node.n_inputs = f->io.n_in;
    f->in_idx[i] = i;
    ptq_tensor *t = &f->in[i];
    t->dtype = PTQ_DT_FLOAT;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->dims[d] = dims[d];
    f->io.in[i] = t;
}

static void fx_outputs(fixture *f, int n_present, int n_omitted)
{
    f->node.n_outputs = f->io.n_out = n_present + n_omitted;
    for (int i = 0; i < f->io.n_out; i++) {
        f->out_idx[i] = i < n_present ? i : -1;
        f->io.out[i] = &f->out[i];
    }
}

static ptq_attr *fx_attr(fixture *f, const char *name, ptq_attr_type type)
{
    ptq_attr *a = &f->attrs[f->node.n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static void fx_int(fixture *f, const char *name, int64_t v)
{
    fx_attr(f, name, PTQ_ATTR_INT)->i = v;
}

static void fx_float(fixture *f, const char *name, float v)
{
    fx_attr(f, name, PTQ_ATTR_FLOAT)->f = v;
}

static void fx_str(fixture *f, const char *name, const char *s)
{
    ptq_attr *a = fx_attr(f, name, PTQ_ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}

static void fx_ints(fixture *f, const char *name, int n, const int64_t *v)
{
    const int slot = f->node.n_attrs;
    ptq_attr *a = fx_attr(f, name, PTQ_ATTR_INTS);
    for (int i = 0; i < n; i++)
        f->ints[slot][i] = v[i];
    a->n = n;
    a->ints = f->ints[slot];
}

static ptq_status fx_infer(fixture *f)
{
    const ptq_op_def *op = ptq_op_find("", f->node.op_type);
    CHECK_MSG(op != NULL, "op %s not in the table", f->node.op_type);
    return op ? op->infer(&f->ctx, &f->io) : PTQ_ERR_INTERNAL;
}

/* infer succeeds and output 0 has exactly the dims want: [ndim]. */
static void expect_shape(fixture *f, const char *what, int ndim, const int64_t *want)
{
    ptq_status st = fx_infer(f);
    CHECK_MSG(st == PTQ_OK, "%s: infer failed: %s", what, f->ctx.msg);
    if (st != PTQ_OK)
        return;
    char got_s[96], want_s[96];
    int same = f->out[0].ndim == ndim && f->out[0].dtype == PTQ_DT_FLOAT;
    for (int d = 0; same && d < ndim; d++)
        same = f->out[0].dims[d] == want[d];
    CHECK_MSG(same, "%s: output %s, want %s", what, ptq_dims_str(f->out[0].dims, f->out[0].ndim, got_s, sizeof got_s),
              ptq_dims_str(want, ndim, want_s, sizeof want_s));
}

/* infer fails with code and a message naming the node and containing needle. */
static void expect_error(fixture *f, const char *what, ptq_status code, const char *needle)
{
    ptq_status st = fx_infer(f);
    char node_part[96];
    snprintf(node_part, sizeof node_part, "node '%s'", f->node.name);
    CHECK_MSG(st == code, "%s: got status %s (%s), want %s", what, ptq_status_name(st), f->ctx.msg,
              ptq_status_name(code));
    CHECK_MSG(strstr(f->ctx.msg, node_part) != NULL, "%s: message does not name the node: %s", what, f->ctx.msg);
    CHECK_MSG(strstr(f->ctx.msg, needle) != NULL, "%s: message lacks '%s': %s", what, needle, f->ctx.msg);
}

/* Runs the node on both kernels (inputs' data set by the caller) and
 * compares output 0 with want. */
static void expect_values(fixture *f, const char *what, const float *want, int64_t n, float tol)
{
    const ptq_op_def *op = ptq_op_find("", f->node.op_type);
    ptq_status st = op ? op->infer(&f->ctx, &f->io) : PTQ_ERR_INTERNAL;
    CHECK_MSG(st == PTQ_OK, "%s: infer failed: %s", what, f->ctx.msg);
    if (st != PTQ_OK)
        return;
    CHECK_MSG(ptq_tensor_numel(&f->out[0]) == n, "%s: %lld outputs, want %lld", what,
              (long long)ptq_tensor_numel(&f->out[0]), (long long)n);
    float *y = malloc((size_t)n * sizeof *y);
    CHECK(y != NULL);
    if (!y || ptq_tensor_numel(&f->out[0]) != n) {
        free(y);
        return;
    }
    f->out[0].data = y;
    for (int backend = 0; backend < 2; backend++) {
        for (int64_t i = 0; i < n; i++)
            y[i] = NAN;
        st = (backend ? op->run_cpu : op->run_ref)(&f->ctx, &f->io);
        CHECK_MSG(st == PTQ_OK, "%s: run failed: %s", what, f->ctx.msg);
        char label[128];
        snprintf(label, sizeof label, "%s (%s)", what, backend ? "cpu" : "ref");
        test_close(label, y, want, n, tol, tol);
    }
    f->out[0].data = NULL;
    free(y);
}

static void test_conv(void)
{
    fixture f;
    ptq_conv_params p;

    fx_init(&f, "Conv", "conv_pad", 11);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    expect_shape(&f, "conv pads 1", 4, DIMS(1, 1, 5, 5));

    fx_init(&f, "Conv", "conv_same_lower", 11);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_str(&f, "auto_pad", "SAME_LOWER");
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    expect_shape(&f, "conv SAME_LOWER stride 2", 4, DIMS(1, 1, 3, 3));

    /* odd total padding: SAME_UPPER puts the extra at the end, SAME_LOWER at the start */
    for (int lower = 0; lower < 2; lower++) {
        fx_init(&f, "Conv", "conv_same_odd", 13);
        fx_input(&f, 4, DIMS(1, 2, 6, 6));
        fx_input(&f, 4, DIMS(3, 2, 3, 3));
        fx_str(&f, "auto_pad", lower ? "SAME_LOWER" : "SAME_UPPER");
        fx_ints(&f, "strides", 2, DIMS(2, 2));
        expect_shape(&f, "conv SAME odd total", 4, DIMS(1, 3, 3, 3));
        CHECK(ptq_op_conv_params(&f.ctx, &f.io, &p) == PTQ_OK);
        CHECK(p.pad_lo[2] == lower && p.pad_hi[2] == 1 - lower && p.pad_lo[1] == lower);
        CHECK(p.in[0] == 1 && p.k[0] == 1 && p.out[0] == 1 && p.stride[0] == 1 && p.dil[0] == 1);
    }

    /* SAME with dilation: effective kernel (3-1)*2+1 = 5 */
    fx_init(&f, "Conv", "conv_same_dil", 13);
    fx_input(&f, 3, DIMS(1, 1, 7));
    fx_input(&f, 3, DIMS(1, 1, 3));
    fx_str(&f, "auto_pad", "SAME_UPPER");
    fx_ints(&f, "dilations", 1, DIMS(2));
    expect_shape(&f, "conv SAME dilated", 3, DIMS(1, 1, 7));
    CHECK(ptq_op_conv_params(&f.ctx, &f.io, &p) == PTQ_OK && p.pad_lo[2] == 2 && p.pad_hi[2] == 2);

    fx_init(&f, "Conv", "conv_valid", 11);
    fx_input(&f, 4, DIMS(1, 1, 7, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_str(&f, "auto_pad", "VALID");
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    expect_shape(&f, "conv VALID stride 2", 4, DIMS(1, 1, 3, 2));

    fx_init(&f, "Conv", "conv_asym", 11);
    fx_input(&f, 4, DIMS(1, 1, 7, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "pads", 4, DIMS(1, 0, 1, 0));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    expect_shape(&f, "conv asymmetric pads", 4, DIMS(1, 1, 4, 2));

    fx_init(&f, "Conv", "conv_kernel_from_w", 6);
    fx_input(&f, 4, DIMS(2, 3, 7, 5));
    fx_input(&f, 4, DIMS(4, 3, 3, 2));
    fx_input(&f, 1, DIMS(4));
    expect_shape(&f, "conv kernel_shape from weights", 4, DIMS(2, 4, 5, 4));

    fx_init(&f, "Conv", "conv_depthwise_mult", 6);
    fx_input(&f, 4, DIMS(2, 4, 6, 6));
    fx_input(&f, 4, DIMS(8, 1, 3, 3));
    fx_int(&f, "group", 4);
    expect_shape(&f, "conv depthwise with multiplier", 4, DIMS(2, 8, 4, 4));

    fx_init(&f, "Conv", "conv_1d", 6);
    fx_input(&f, 3, DIMS(2, 4, 10));
    fx_input(&f, 3, DIMS(5, 4, 3));
    fx_ints(&f, "dilations", 1, DIMS(2));
    expect_shape(&f, "conv 1-D dilated", 3, DIMS(2, 5, 6));

    fx_init(&f, "Conv", "conv_3d", 6);
    fx_input(&f, 5, DIMS(2, 3, 5, 5, 5));
    fx_input(&f, 5, DIMS(4, 3, 2, 2, 2));
    fx_ints(&f, "pads", 6, DIMS(1, 1, 1, 1, 1, 1));
    fx_ints(&f, "strides", 3, DIMS(2, 2, 2));
    expect_shape(&f, "conv 3-D", 5, DIMS(2, 4, 3, 3, 3));

    fx_init(&f, "Conv", "conv_bad_channels", 13);
    fx_input(&f, 4, DIMS(1, 3, 5, 5));
    fx_input(&f, 4, DIMS(4, 2, 3, 3));
    expect_error(&f, "conv channel mismatch", PTQ_ERR_SHAPE, "channel mismatch");

    fx_init(&f, "Conv", "conv_bad_group", 13);
    fx_input(&f, 4, DIMS(1, 4, 5, 5));
    fx_input(&f, 4, DIMS(6, 1, 3, 3));
    fx_int(&f, "group", 4);
    expect_error(&f, "conv group not dividing M", PTQ_ERR_SHAPE, "group 4");

    fx_init(&f, "Conv", "conv_bad_kernel_shape", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "kernel_shape", 2, DIMS(3, 2));
    expect_error(&f, "conv kernel_shape vs weights", PTQ_ERR_SHAPE, "kernel_shape[1]");

    fx_init(&f, "Conv", "conv_bad_bias", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(2, 1, 3, 3));
    fx_input(&f, 1, DIMS(3));
    expect_error(&f, "conv bias length", PTQ_ERR_SHAPE, "bias");

    fx_init(&f, "Conv", "conv_too_big", 13);
    fx_input(&f, 4, DIMS(1, 1, 2, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    expect_error(&f, "conv kernel larger than input", PTQ_ERR_SHAPE, "exceeds the padded input");

    fx_init(&f, "Conv", "conv_pads_and_auto", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_str(&f, "auto_pad", "SAME_UPPER");
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    expect_error(&f, "conv pads with auto_pad", PTQ_ERR_SHAPE, "auto_pad");

    fx_init(&f, "Conv", "conv_4d", 13);
    fx_input(&f, 6, DIMS(1, 1, 3, 3, 3, 3));
    fx_input(&f, 6, DIMS(1, 1, 1, 1, 1, 1));
    expect_error(&f, "conv 4 spatial dims", PTQ_ERR_UNSUPPORTED, "spatial dims");

    fx_init(&f, "Conv", "conv_int8", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    f.in[0].dtype = PTQ_DT_INT8;
    expect_error(&f, "conv int8 input", PTQ_ERR_UNSUPPORTED, "float32");

    /* values: ONNX's conv_with_strides_and_asymmetric_padding, all-ones 3x3 over 0..34 */
    {
        float x[35], w[9];
        static const float want[8] = {21, 33, 99, 117, 189, 207, 171, 183};
        for (int i = 0; i < 35; i++)
            x[i] = (float)i;
        for (int i = 0; i < 9; i++)
            w[i] = 1.0f;
        fx_init(&f, "Conv", "conv_values", 11);
        fx_input(&f, 4, DIMS(1, 1, 7, 5));
        fx_input(&f, 4, DIMS(1, 1, 3, 3));
        fx_ints(&f, "pads", 4, DIMS(1, 0, 1, 0));
        fx_ints(&f, "strides", 2, DIMS(2, 2));
        f.in[0].data = x;
        f.in[1].data = w;
        expect_values(&f, "conv asymmetric pads values", want, 8, 1e-6f);
    }
}

/* 1-D ConvTranspose of x = 1, 2, 3, 4 by the first k of w = 1, 10, 100 (at
 * stride 2 and k 3 the scatter is 1 10 102 20 203 30 304 40 400), auto_pad
 * and output_shape (0: none) as given, on both kernels: want [n_want]. */
static void convtranspose_1d_values(const char *what, const char *auto_pad, int64_t output_shape, int64_t k,
                                    int64_t stride, const float *want, int64_t n_want)
{
    fixture f;
    float x[4] = {1, 2, 3, 4}, w[3] = {1, 10, 100};
    fx_init(&f, "ConvTranspose", "ct_values", 11);
    fx_input(&f, 3, DIMS(1, 1, 4));
    fx_input(&f, 3, DIMS(1, 1, k));
    fx_ints(&f, "strides", 1, DIMS(stride));
    if (auto_pad)
        fx_str(&f, "auto_pad", auto_pad);
    if (output_shape > 0)
        fx_ints(&f, "output_shape", 1, DIMS(output_shape));
    f.in[0].data = x;
    f.in[1].data = w;
    expect_values(&f, what, want, n_want, 0);
}

/* f set up for a ConvTranspose node named name with X [ndim] x and W [ndim] w. */
static void ct_init(fixture *f, const char *name, int ndim, const int64_t *x, const int64_t *w)
{
    fx_init(f, "ConvTranspose", name, 11);
    fx_input(f, ndim, x);
    fx_input(f, ndim, w);
}

static void test_conv_transpose(void)
{
    fixture f;

    ct_init(&f, "ct_plain", 4, DIMS(1, 1, 3, 3), DIMS(1, 2, 3, 3));
    expect_shape(&f, "convtranspose no pads", 4, DIMS(1, 2, 5, 5));

    /* stride 2, pads 1, output_padding 1: 2 * (in - 1) + 3 + 1 - 2 = 2 * in */
    ct_init(&f, "ct_upsample", 4, DIMS(2, 3, 5, 6), DIMS(3, 4, 3, 3));
    fx_input(&f, 1, DIMS(4));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    fx_ints(&f, "output_padding", 2, DIMS(1, 1));
    expect_shape(&f, "convtranspose stride 2 upsampling", 4, DIMS(2, 4, 10, 12));

    ct_init(&f, "ct_group", 4, DIMS(1, 4, 3, 3), DIMS(4, 3, 3, 3));
    fx_int(&f, "group", 2);
    fx_ints(&f, "dilations", 2, DIMS(2, 1));
    expect_shape(&f, "convtranspose group 2 dilated", 4, DIMS(1, 6, 7, 5));

    ct_init(&f, "ct_same", 4, DIMS(1, 1, 3, 5), DIMS(1, 2, 3, 3));
    fx_str(&f, "auto_pad", "SAME_LOWER");
    fx_ints(&f, "strides", 2, DIMS(2, 3));
    expect_shape(&f, "convtranspose SAME: in * stride", 4, DIMS(1, 2, 6, 15));

    ct_init(&f, "ct_output_shape", 4, DIMS(1, 1, 3, 3), DIMS(1, 2, 3, 3));
    fx_ints(&f, "strides", 2, DIMS(3, 2));
    fx_ints(&f, "output_shape", 2, DIMS(10, 8));
    expect_shape(&f, "convtranspose output_shape", 4, DIMS(1, 2, 10, 8));

    ct_init(&f, "ct_1d", 3, DIMS(2, 4, 10), DIMS(4, 5, 3));
    fx_ints(&f, "pads", 2, DIMS(2, 1));
    expect_shape(&f, "convtranspose 1-D", 3, DIMS(2, 5, 9));

    ct_init(&f, "ct_3d", 5, DIMS(1, 2, 3, 4, 5), DIMS(2, 3, 2, 2, 2));
    fx_ints(&f, "strides", 3, DIMS(2, 2, 2));
    expect_shape(&f, "convtranspose 3-D", 5, DIMS(1, 3, 6, 8, 10));

    ct_init(&f, "ct_bad_channels", 4, DIMS(1, 3, 5, 5), DIMS(2, 4, 3, 3));
    expect_error(&f, "convtranspose channel mismatch", PTQ_ERR_SHAPE, "channel mismatch");

    ct_init(&f, "ct_bad_group", 4, DIMS(1, 3, 5, 5), DIMS(3, 2, 3, 3));
    fx_int(&f, "group", 2);
    expect_error(&f, "convtranspose group not dividing C", PTQ_ERR_SHAPE, "group 2");

    ct_init(&f, "ct_bad_bias", 4, DIMS(1, 2, 5, 5), DIMS(2, 3, 3, 3));
    fx_int(&f, "group", 2);
    fx_input(&f, 1, DIMS(3));
    expect_error(&f, "convtranspose bias length (C_out = W[1] * group)", PTQ_ERR_SHAPE, "[6]");

    ct_init(&f, "ct_bad_output_padding", 4, DIMS(1, 1, 5, 5), DIMS(1, 1, 3, 3));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    fx_ints(&f, "output_padding", 2, DIMS(1, 2));
    expect_error(&f, "convtranspose output_padding >= stride", PTQ_ERR_SHAPE, "output_padding[1]");

    ct_init(&f, "ct_pads_and_shape", 4, DIMS(1, 1, 3, 3), DIMS(1, 1, 3, 3));
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    fx_ints(&f, "output_shape", 2, DIMS(5, 5));
    expect_error(&f, "convtranspose pads beside output_shape", PTQ_ERR_UNSUPPORTED, "output_shape");

    ct_init(&f, "ct_shape_count", 4, DIMS(1, 1, 3, 3), DIMS(1, 1, 3, 3));
    fx_ints(&f, "output_shape", 4, DIMS(1, 1, 5, 5));
    expect_error(&f, "convtranspose output_shape with N and C", PTQ_ERR_SHAPE, "output_shape must hold 2 ints");

    ct_init(&f, "ct_cropped_away", 4, DIMS(1, 1, 2, 2), DIMS(1, 1, 2, 2));
    fx_ints(&f, "pads", 4, DIMS(1, 1, 2, 1));
    expect_error(&f, "convtranspose pads crop everything", PTQ_ERR_SHAPE, "output size 0");

    ct_init(&f, "ct_unknown_attr", 4, DIMS(1, 1, 3, 3), DIMS(1, 1, 3, 3));
    fx_int(&f, "ceil_mode", 1);
    expect_error(&f, "convtranspose unknown attribute", PTQ_ERR_UNSUPPORTED,
                 "unknown ConvTranspose attribute 'ceil_mode'");

    ct_init(&f, "ct_pads_and_auto", 4, DIMS(1, 1, 3, 3), DIMS(1, 1, 3, 3));
    fx_str(&f, "auto_pad", "SAME_UPPER");
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    expect_error(&f, "convtranspose pads with auto_pad", PTQ_ERR_SHAPE, "auto_pad");

    ct_init(&f, "ct_4d", 6, DIMS(1, 1, 3, 3, 3, 3), DIMS(1, 1, 1, 1, 1, 1));
    expect_error(&f, "convtranspose 4 spatial dims", PTQ_ERR_UNSUPPORTED, "spatial dims");

    ct_init(&f, "ct_int8", 4, DIMS(1, 1, 3, 3), DIMS(1, 1, 3, 3));
    f.in[1].dtype = PTQ_DT_INT8;
    expect_error(&f, "convtranspose int8 weights", PTQ_ERR_UNSUPPORTED, "float32");

    /* where the odd padding goes (as onnxruntime 1.32 and ONNX's reference place it) */
    {
        static const float upper[8] = {1, 10, 102, 20, 203, 30, 304, 40};
        static const float lower[8] = {10, 102, 20, 203, 30, 304, 40, 400};
        static const float shape7[7] = {10, 102, 20, 203, 30, 304, 40}, shape6[6] = {102, 20, 203, 30, 304, 40};
        static const float shape10[10] = {1, 10, 102, 20, 203, 30, 304, 40, 400, 0};
        /* kernel below the stride: SAME adds a zero position at each end (ONNX; onnxruntime keeps 10) */
        static const float gaps[12] = {0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0};
        convtranspose_1d_values("SAME_UPPER: the odd one cropped at the end", "SAME_UPPER", 0, 3, 2, upper, 8);
        convtranspose_1d_values("SAME_LOWER: the odd one cropped at the start", "SAME_LOWER", 0, 3, 2, lower, 8);
        convtranspose_1d_values("output_shape 7: one cropped at each end", NULL, 7, 3, 2, shape7, 7);
        convtranspose_1d_values("output_shape 6: the odd one at the start", NULL, 6, 3, 2, shape6, 6);
        convtranspose_1d_values("output_shape 10: a zero added at the end", NULL, 10, 3, 2, shape10, 10);
        convtranspose_1d_values("SAME_UPPER, kernel 1 at stride 3", "SAME_UPPER", 0, 1, 3, gaps, 12);
    }
}

static void test_pool(void)
{
    fixture f;

    fx_init(&f, "MaxPool", "maxpool_ceil", 12);
    fx_input(&f, 4, DIMS(1, 1, 4, 4));
    fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    fx_int(&f, "ceil_mode", 1);
    expect_shape(&f, "maxpool ceil_mode", 4, DIMS(1, 1, 2, 2));

    /* ceil_mode: a last window that would start in the right padding is dropped */
    fx_init(&f, "MaxPool", "maxpool_ceil_drop", 12);
    fx_input(&f, 3, DIMS(1, 1, 4));
    fx_ints(&f, "kernel_shape", 1, DIMS(2));
    fx_ints(&f, "strides", 1, DIMS(2));
    fx_ints(&f, "pads", 2, DIMS(0, 1));
    fx_int(&f, "ceil_mode", 1);
    expect_shape(&f, "maxpool ceil_mode last window rule", 3, DIMS(1, 1, 2));

    fx_init(&f, "AveragePool", "avgpool_ceil_pad", 19);
    fx_input(&f, 4, DIMS(1, 1, 6, 6));
    fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    fx_ints(&f, "pads", 4, DIMS(1, 1, 1, 1));
    fx_int(&f, "ceil_mode", 1);
    expect_shape(&f, "avgpool ceil_mode with pads", 4, DIMS(1, 1, 4, 4));

    fx_init(&f, "MaxPool", "maxpool_dil", 12);
    fx_input(&f, 4, DIMS(1, 1, 4, 4));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_ints(&f, "dilations", 2, DIMS(2, 2));
    expect_shape(&f, "maxpool dilations", 4, DIMS(1, 1, 2, 2));

    fx_init(&f, "MaxPool", "maxpool_big_dil", 12);
    fx_input(&f, 4, DIMS(1, 1, 1000, 1000));
    fx_ints(&f, "kernel_shape", 2, DIMS(60, 80));
    fx_ints(&f, "dilations", 2, DIMS(10, 10));
    fx_ints(&f, "pads", 4, DIMS(10, 20, 10, 20));
    fx_ints(&f, "strides", 2, DIMS(10, 10));
    expect_shape(&f, "maxpool dilations, pads, strides", 4, DIMS(1, 1, 43, 25));

    fx_init(&f, "MaxPool", "maxpool_same_upper", 12);
    fx_input(&f, 4, DIMS(1, 3, 32, 32));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_str(&f, "auto_pad", "SAME_UPPER");
    expect_shape(&f, "maxpool SAME_UPPER", 4, DIMS(1, 3, 32, 32));

    fx_init(&f, "AveragePool", "avgpool_same_lower_s2", 11);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
    fx_ints(&f, "strides", 2, DIMS(2, 2));
    fx_str(&f, "auto_pad", "SAME_LOWER");
    expect_shape(&f, "avgpool SAME_LOWER stride 2", 4, DIMS(1, 1, 3, 3));

    fx_init(&f, "AveragePool", "avgpool_valid", 11);
    fx_input(&f, 4, DIMS(1, 3, 32, 32));
    fx_ints(&f, "kernel_shape", 2, DIMS(5, 5));
    fx_ints(&f, "strides", 2, DIMS(3, 3));
    fx_str(&f, "auto_pad", "VALID");
    expect_shape(&f, "avgpool VALID strides", 4, DIMS(1, 3, 10, 10));

    fx_init(&f, "AveragePool", "avgpool_1d", 11);
    fx_input(&f, 3, DIMS(1, 3, 32));
    fx_ints(&f, "kernel_shape", 1, DIMS(2));
    expect_shape(&f, "avgpool 1-D", 3, DIMS(1, 3, 31));

    fx_init(&f, "AveragePool", "avgpool_3d", 11);
    fx_input(&f, 5, DIMS(1, 3, 32, 32, 32));
    fx_ints(&f, "kernel_shape", 3, DIMS(2, 2, 2));
    expect_shape(&f, "avgpool 3-D", 5, DIMS(1, 3, 31, 31, 31));

    fx_init(&f, "MaxPool", "maxpool_indices", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_outputs(&f, 2, 0);
    expect_error(&f, "maxpool Indices output", PTQ_ERR_UNSUPPORTED, "Indices");

    fx_init(&f, "MaxPool", "maxpool_indices_omitted", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_outputs(&f, 1, 1);
    expect_shape(&f, "maxpool with an omitted Indices", 4, DIMS(1, 1, 4, 4));

    fx_init(&f, "MaxPool", "maxpool_no_kernel", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    expect_error(&f, "maxpool without kernel_shape", PTQ_ERR_SHAPE, "kernel_shape");

    fx_init(&f, "MaxPool", "maxpool_bad_strides", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_ints(&f, "strides", 1, DIMS(2));
    expect_error(&f, "maxpool strides of the wrong length", PTQ_ERR_SHAPE, "strides");

    fx_init(&f, "AveragePool", "avgpool_bad_auto_pad", 11);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_str(&f, "auto_pad", "SAME");
    expect_error(&f, "avgpool unknown auto_pad", PTQ_ERR_SHAPE, "SAME");

    fx_init(&f, "GlobalAveragePool", "gap_5d", 1);
    fx_input(&f, 5, DIMS(2, 3, 4, 5, 6));
    expect_shape(&f, "global avgpool 3-D", 5, DIMS(2, 3, 1, 1, 1));

    fx_init(&f, "GlobalAveragePool", "gap_rank2", 1);
    fx_input(&f, 2, DIMS(2, 3));
    expect_error(&f, "global avgpool rank 2", PTQ_ERR_SHAPE, "rank >= 3");

    /* values: ONNX's maxpool_2d_ceil / averagepool_2d_ceil and averagepool_2d_pads_count_include_pad corner */
    {
        float x[16];
        for (int i = 0; i < 16; i++)
            x[i] = (float)(i + 1);
        static const float want_max[4] = {11, 12, 15, 16}, want_avg[4] = {6, 7.5f, 12, 13.5f};
        fx_init(&f, "MaxPool", "maxpool_values", 12);
        fx_input(&f, 4, DIMS(1, 1, 4, 4));
        fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
        fx_ints(&f, "strides", 2, DIMS(2, 2));
        fx_int(&f, "ceil_mode", 1);
        f.in[0].data = x;
        expect_values(&f, "maxpool ceil values", want_max, 4, 1e-6f);
        f.node.op_type = "AveragePool";
        expect_values(&f, "avgpool ceil values", want_avg, 4, 1e-6f);

        /* 2x2 input padded 1 at the top and left, 3x3 window: one output over 4 values and 5 pads */
        static const float want_incl[1] = {10.0f / 9.0f}, want_excl[1] = {2.5f};
        fx_init(&f, "AveragePool", "avgpool_include_pad", 11);
        fx_input(&f, 4, DIMS(1, 1, 2, 2));
        fx_ints(&f, "kernel_shape", 2, DIMS(3, 3));
        fx_ints(&f, "pads", 4, DIMS(1, 1, 0, 0));
        f.in[0].data = x;
        expect_values(&f, "avgpool exclude pad", want_excl, 1, 1e-6f);
        fx_int(&f, "count_include_pad", 1);
        expect_values(&f, "avgpool include pad", want_incl, 1, 1e-6f);

        static const float want_gap[2] = {2.5f, 6.5f};
        fx_init(&f, "GlobalAveragePool", "gap_values", 1);
        fx_input(&f, 4, DIMS(1, 2, 2, 2));
        f.in[0].data = x;
        expect_values(&f, "global avgpool values", want_gap, 2, 1e-6f);
    }
}

/* Attributes and shapes that would wrap int64 (crafted models): a clean
 * PTQ_ERR_SHAPE naming the attribute, never a product past 2^63. */
static void test_window_overflow(void)
{
    fixture f;
    const int64_t big = (int64_t)1 << 62, lim = (int64_t)1 << 31;

    fx_init(&f, "Conv", "conv_huge_dil", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "dilations", 2, DIMS(big, 1));
    expect_error(&f, "conv dilation 2^62", PTQ_ERR_SHAPE, "dilations[0]");

    fx_init(&f, "Conv", "conv_huge_pad", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "pads", 4, DIMS(0, 0, big, big));
    expect_error(&f, "conv pads 2^62", PTQ_ERR_SHAPE, "pads[2]");

    fx_init(&f, "Conv", "conv_huge_stride", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 3, 3));
    fx_ints(&f, "strides", 2, DIMS(1, lim + 1));
    expect_error(&f, "conv stride 2^31 + 1", PTQ_ERR_SHAPE, "strides[1]");

    fx_init(&f, "Conv", "conv_kernel0", 13);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_input(&f, 4, DIMS(1, 1, 0, 3));
    expect_error(&f, "conv weights with a 0 kernel", PTQ_ERR_SHAPE, "kernel[0] = 0");

    fx_init(&f, "Conv", "conv_huge_group", 13);
    fx_input(&f, 4, DIMS(1, 0, 5, 5));
    fx_input(&f, 4, DIMS(0, 4, 3, 3));
    fx_int(&f, "group", big);
    expect_error(&f, "conv group 2^62 with 0 channels", PTQ_ERR_SHAPE, "overflows");

    /* the largest accepted values still give a size */
    fx_init(&f, "Conv", "conv_max_dil", 13);
    fx_input(&f, 3, DIMS(1, 1, lim + 1));
    fx_input(&f, 3, DIMS(1, 1, 2));
    fx_ints(&f, "dilations", 1, DIMS(lim));
    expect_shape(&f, "conv dilation 2^31", 3, DIMS(1, 1, 1));

    /* a declared input near INT64_MAX: padding it overflows */
    fx_init(&f, "Conv", "conv_pad_wrap", 13);
    fx_input(&f, 3, DIMS(1, 1, INT64_MAX - 2));
    fx_input(&f, 3, DIMS(1, 1, 3));
    fx_ints(&f, "pads", 2, DIMS(lim, lim));
    expect_error(&f, "conv pads over INT64_MAX", PTQ_ERR_SHAPE, "plus pads overflows");

    fx_init(&f, "Conv", "conv_same_wrap", 13);
    fx_input(&f, 3, DIMS(1, 1, INT64_MAX));
    fx_input(&f, 3, DIMS(1, 1, 3));
    fx_ints(&f, "dilations", 1, DIMS(lim));
    fx_str(&f, "auto_pad", "SAME_UPPER");
    expect_error(&f, "conv SAME_UPPER over INT64_MAX", PTQ_ERR_SHAPE, "auto_pad overflows");

    /* each output dim fits but their product does not */
    fx_init(&f, "Conv", "conv_numel_wrap", 13);
    fx_input(&f, 4, DIMS(1, 1, big, big));
    fx_input(&f, 4, DIMS(1, 1, 1, 1));
    expect_error(&f, "conv output of 2^124 elements", PTQ_ERR_SHAPE, "more elements than int64");

    fx_init(&f, "MaxPool", "maxpool_huge_dil", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(2, 2));
    fx_ints(&f, "dilations", 2, DIMS(1, big));
    expect_error(&f, "maxpool dilation 2^62", PTQ_ERR_SHAPE, "dilations[1]");

    fx_init(&f, "MaxPool", "maxpool_huge_kernel", 12);
    fx_input(&f, 4, DIMS(1, 1, 5, 5));
    fx_ints(&f, "kernel_shape", 2, DIMS(big, 2));
    expect_error(&f, "maxpool kernel 2^62", PTQ_ERR_SHAPE, "kernel_shape[0]");

    /* ceil_mode near INT64_MAX: windows start at 0, s, ..., (2^32 - 1) s < 2^63 - 1 (no room + s - 1) */
    fx_init(&f, "AveragePool", "avgpool_ceil_near_max", 19);
    fx_input(&f, 3, DIMS(1, 1, INT64_MAX - 1));
    fx_ints(&f, "kernel_shape", 1, DIMS(1));
    fx_ints(&f, "strides", 1, DIMS(lim));
    fx_int(&f, "ceil_mode", 1);
    expect_shape(&f, "avgpool ceil_mode near INT64_MAX", 3, DIMS(1, 1, (int64_t)1 << 32));

    fx_init(&f, "AveragePool", "avgpool_numel_wrap", 19);
    fx_input(&f, 4, DIMS(lim, lim, lim, 4));
    fx_ints(&f, "kernel_shape", 2, DIMS(1, 1));
    expect_error(&f, "avgpool output of 2^95 elements", PTQ_ERR_SHAPE, "more elements than int64");

    /* one image's work (PTQ_WINDOW_WORK_MAX = 2^44 taps): kernels of 2^31 on three axes around a 1x1x1 input
       padded by 2^30 (count_include_pad's count wrapped to 0, the ref walked 2^93 taps per output) */
    fx_init(&f, "AveragePool", "avgpool_taps_2e93", 19);
    fx_input(&f, 5, DIMS(1, 1, 1, 1, 1));
    fx_ints(&f, "kernel_shape", 3, DIMS(lim, lim, lim));
    fx_ints(&f, "pads", 6, DIMS(lim / 2, lim / 2, lim / 2, lim / 2, lim / 2, lim / 2));
    fx_int(&f, "count_include_pad", 1);
    expect_error(&f, "avgpool of 2^93 taps per output", PTQ_ERR_UNSUPPORTED,
                 "kernel [2147483648x2147483648x2147483648] over 1 input channel with output [1x2x2x2] per image: "
                 "7.92e+28 taps, more than the 2^44");
    /* 2^44 exactly runs; a tap more per output than that is refused: 2^22 outputs of 2^22 taps, then 2^22 + 1 */
    fx_init(&f, "MaxPool", "maxpool_at_limit", 12);
    fx_input(&f, 3, DIMS(1, 1, ((int64_t)1 << 23) - 1));
    fx_ints(&f, "kernel_shape", 1, DIMS((int64_t)1 << 22));
    expect_shape(&f, "maxpool of 2^44 taps", 3, DIMS(1, 1, (int64_t)1 << 22));
    fx_init(&f, "MaxPool", "maxpool_past_limit", 12);
    fx_input(&f, 3, DIMS(1, 1, ((int64_t)1 << 23) - 1));
    fx_ints(&f, "kernel_shape", 1, DIMS(((int64_t)1 << 22) + 1));
    fx_ints(&f, "pads", 2, DIMS(1, 0));
    expect_error(&f, "maxpool of 2^44 + 2^22 taps", PTQ_ERR_UNSUPPORTED, "more than the 2^44");
    /* the channels count (not the batch): 2^14 channels of 2^15 outputs of 2^16 taps */
    fx_init(&f, "AveragePool", "avgpool_channels", 19);
    fx_input(&f, 4, DIMS(1 << 20, 1 << 14, 1 << 15, 1));
    fx_ints(&f, "kernel_shape", 2, DIMS(1, (int64_t)1 << 16));
    fx_ints(&f, "pads", 4, DIMS(0, 1 << 15, 0, (1 << 15) - 1));
    expect_error(&f, "avgpool of 2^45 taps over 2^14 channels", PTQ_ERR_UNSUPPORTED,
                 "over 1 input channel with output [16384x32768x1] per image: 3.52e+13 taps");
    fx_init(&f, "AveragePool", "avgpool_batch", 19);
    fx_input(&f, 4, DIMS(1 << 20, 1 << 13, 1 << 15, 1));
    fx_ints(&f, "kernel_shape", 2, DIMS(1, (int64_t)1 << 16));
    fx_ints(&f, "pads", 4, DIMS(0, 1 << 15, 0, (1 << 15) - 1));
    expect_shape(&f, "avgpool of 2^44 taps per image, 2^20 images", 4, DIMS(1 << 20, 1 << 13, 1 << 15, 1));
    /* a Conv: output channels x outputs x input channels per group x kernel */
    fx_init(&f, "Conv", "conv_work", 13);
    fx_input(&f, 4, DIMS(1, 64, 1 << 10, 1 << 10));
    fx_input(&f, 4, DIMS(1 << 10, 32, 32, 32));
    fx_int(&f, "group", 2);
    fx_ints(&f, "pads", 4, DIMS(16, 16, 15, 15));
    expect_error(&f, "conv of 2^45 multiply-adds", PTQ_ERR_UNSUPPORTED,
                 "kernel [32x32] over 32 input channels with output [1024x1024x1024] per image: 3.52e+13 taps");
    /* a ConvTranspose: its gather (every output through its group's inputs), and its scatter (every input through
       its group's outputs: outputs cropped to 1x1 by pads) */
    ct_init(&f, "convt_gather", 4, DIMS(1, 1, 1 << 9, 1 << 9), DIMS(1, 1 << 12, 1 << 7, 1 << 7));
    expect_error(&f, "convtranspose gathering 2^45 taps", PTQ_ERR_UNSUPPORTED,
                 "over 1 input channel with output [4096x639x639] per image: 2.74e+13 taps");
    ct_init(&f, "convt_scatter", 4, DIMS(1, 1 << 4, 1 << 10, 1 << 10), DIMS(1 << 4, 1 << 11, 1 << 5, 1 << 5));
    fx_ints(&f, "pads", 4, DIMS(527, 527, 527, 527));
    expect_error(&f, "convtranspose scattering 2^45 taps", PTQ_ERR_UNSUPPORTED,
                 "over 2048 output channels with input [16x1024x1024] per image: 3.52e+13 taps");
}

static void test_gemm(void)
{
    fixture f;

    fx_init(&f, "Gemm", "gemm_all", 13);
    fx_input(&f, 2, DIMS(4, 3));
    fx_input(&f, 2, DIMS(5, 4));
    fx_input(&f, 2, DIMS(1, 5));
    fx_int(&f, "transA", 1);
    fx_int(&f, "transB", 1);
    fx_float(&f, "alpha", 0.25f);
    fx_float(&f, "beta", 0.35f);
    expect_shape(&f, "gemm transA transB", 2, DIMS(3, 5));

    fx_init(&f, "Gemm", "gemm_scalar_c", 13);
    fx_input(&f, 2, DIMS(2, 3));
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 0, NULL);
    expect_shape(&f, "gemm scalar C", 2, DIMS(2, 4));

    fx_init(&f, "Gemm", "gemm_col_c", 13);
    fx_input(&f, 2, DIMS(2, 3));
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 2, DIMS(2, 1));
    expect_shape(&f, "gemm C [M, 1]", 2, DIMS(2, 4));

    fx_init(&f, "Gemm", "gemm_no_c", 13);
    fx_input(&f, 2, DIMS(2, 10));
    fx_input(&f, 2, DIMS(10, 3));
    expect_shape(&f, "gemm without C", 2, DIMS(2, 3));

    fx_init(&f, "Gemm", "gemm_bad_c", 13);
    fx_input(&f, 2, DIMS(2, 3));
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 1, DIMS(3));
    expect_error(&f, "gemm C not broadcastable", PTQ_ERR_SHAPE, "broadcast");

    fx_init(&f, "Gemm", "gemm_opset6_strict", 6);
    fx_input(&f, 2, DIMS(2, 3));
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 1, DIMS(4));
    expect_error(&f, "gemm opset 6 without broadcast", PTQ_ERR_SHAPE, "broadcast=0");
    fx_int(&f, "broadcast", 1);
    expect_shape(&f, "gemm opset 6 broadcast=1", 2, DIMS(2, 4));

    fx_init(&f, "Gemm", "gemm_bad_k", 13);
    fx_input(&f, 2, DIMS(2, 3));
    fx_input(&f, 2, DIMS(4, 4));
    expect_error(&f, "gemm inner dims", PTQ_ERR_SHAPE, "inner dims");

    fx_init(&f, "Gemm", "gemm_3d", 13);
    fx_input(&f, 3, DIMS(1, 2, 3));
    fx_input(&f, 2, DIMS(3, 4));
    expect_error(&f, "gemm 3-D A", PTQ_ERR_SHAPE, "2-D");

    /* values: Y = 0.5 * A @ B^T + 2 * C, C [N] broadcast over rows */
    {
        float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, -1, 2, 1, 0}, c[2] = {1, -1};
        static const float want[4] = {0.5f * -2 + 2, 0.5f * 4 - 2, 0.5f * -2 + 2, 0.5f * 13 - 2};
        fx_init(&f, "Gemm", "gemm_values", 13);
        fx_input(&f, 2, DIMS(2, 3));
        fx_input(&f, 2, DIMS(2, 3));
        fx_input(&f, 1, DIMS(2));
        fx_int(&f, "transB", 1);
        fx_float(&f, "alpha", 0.5f);
        fx_float(&f, "beta", 2.0f);
        f.in[0].data = a;
        f.in[1].data = b;
        f.in[2].data = c;
        expect_values(&f, "gemm C broadcast values", want, 4, 1e-6f);
    }
}

/* y[b] = a[b % a_batch] @ bm[b % b_batch] for small row-major matrices. */
static void matmul_naive(int64_t n_batch, int64_t a_batch, int64_t b_batch, int64_t m, int64_t n, int64_t k,
                         const float *a, const float *bm, float *y)
{
    for (int64_t s = 0; s < n_batch; s++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t l = 0; l < k; l++)
                    acc += (double)a[(s % a_batch) * m * k + i * k + l] * bm[(s % b_batch) * k * n + l * n + j];
                y[(s * m + i) * n + j] = (float)acc;
            }
}

static void test_matmul(void)
{
    fixture f;

    fx_init(&f, "MatMul", "mm_2d", 13);
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 2, DIMS(4, 3));
    expect_shape(&f, "matmul 2-D", 2, DIMS(3, 3));

    fx_init(&f, "MatMul", "mm_1d_a", 13);
    fx_input(&f, 1, DIMS(4));
    fx_input(&f, 3, DIMS(2, 4, 3));
    expect_shape(&f, "matmul 1-D A", 2, DIMS(2, 3));

    fx_init(&f, "MatMul", "mm_1d_b", 13);
    fx_input(&f, 3, DIMS(2, 3, 4));
    fx_input(&f, 1, DIMS(4));
    expect_shape(&f, "matmul 1-D B", 2, DIMS(2, 3));

    fx_init(&f, "MatMul", "mm_dot", 13);
    fx_input(&f, 1, DIMS(4));
    fx_input(&f, 1, DIMS(4));
    expect_shape(&f, "matmul 1-D by 1-D", 0, NULL);

    fx_init(&f, "MatMul", "mm_bcast", 13);
    fx_input(&f, 4, DIMS(2, 1, 3, 4));
    fx_input(&f, 3, DIMS(5, 4, 2));
    expect_shape(&f, "matmul batch broadcast", 4, DIMS(2, 5, 3, 2));

    fx_init(&f, "MatMul", "mm_bad_batch", 13);
    fx_input(&f, 3, DIMS(2, 3, 4));
    fx_input(&f, 3, DIMS(3, 4, 5));
    expect_error(&f, "matmul batch dims", PTQ_ERR_SHAPE, "do not broadcast");

    fx_init(&f, "MatMul", "mm_bad_k", 13);
    fx_input(&f, 2, DIMS(3, 4));
    fx_input(&f, 2, DIMS(5, 3));
    expect_error(&f, "matmul inner dims", PTQ_ERR_SHAPE, "inner dims");

    /* values: [3, 2, 4] @ [4, 5] (one folded GEMM), [3, 2, 4] @ [3, 4, 5], [1, 2, 4] @ [3, 4, 5], [4] @ [3, 4, 5] */
    {
        float a[24], b[60], want[30 * 3];
        test_rand_seed(77);
        test_fill_uniform(a, 24, -1.0f, 1.0f);
        test_fill_uniform(b, 60, -1.0f, 1.0f);
        const int64_t batches[][3] = {{3, 3, 1}, {3, 3, 3}, {3, 1, 3}};
        for (int c = 0; c < 3; c++) {
            fx_init(&f, "MatMul", "mm_values", 13);
            fx_input(&f, 3, DIMS(batches[c][1], 2, 4));
            if (batches[c][2] == 1)
                fx_input(&f, 2, DIMS(4, 5));
            else
                fx_input(&f, 3, DIMS(batches[c][2], 4, 5));
            f.in[0].data = a;
            f.in[1].data = b;
            matmul_naive(batches[c][0], batches[c][1], batches[c][2], 2, 5, 4, a, b, want);
            expect_values(&f, "matmul batched values", want, 3 * 2 * 5, 1e-5f);
        }
        fx_init(&f, "MatMul", "mm_values_1d", 13);
        fx_input(&f, 1, DIMS(4));
        fx_input(&f, 3, DIMS(3, 4, 5));
        f.in[0].data = a;
        f.in[1].data = b;
        matmul_naive(3, 1, 3, 1, 5, 4, a, b, want);
        expect_values(&f, "matmul 1-D A values", want, 15, 1e-5f);
    }
}

static void test_batchnorm(void)
{
    fixture f;
    for (int opset = 6; opset <= 15; opset += 9) {
        fx_init(&f, "BatchNormalization", "bn", opset);
        fx_input(&f, 4, DIMS(2, 3, 4, 5));
        for (int i = 0; i < 4; i++)
            fx_input(&f, 1, DIMS(3));
        if (opset < 7) /* inference mode before opset 7 is is_test=1 (0, the default, is training) */
            fx_int(&f, "is_test", 1);
        expect_shape(&f, "batchnorm", 4, DIMS(2, 3, 4, 5));
    }
    fx_init(&f, "BatchNormalization", "bn_is_test0", 6);
    fx_input(&f, 4, DIMS(2, 3, 4, 5));
    for (int i = 0; i < 4; i++)
        fx_input(&f, 1, DIMS(3));
    expect_error(&f, "batchnorm opset 6 without is_test", PTQ_ERR_UNSUPPORTED, "is_test=0");

    fx_init(&f, "BatchNormalization", "bn_train", 15);
    fx_input(&f, 4, DIMS(2, 3, 4, 5));
    for (int i = 0; i < 4; i++)
        fx_input(&f, 1, DIMS(3));
    fx_int(&f, "training_mode", 1);
    expect_error(&f, "batchnorm training_mode", PTQ_ERR_UNSUPPORTED, "training_mode=1");

    fx_init(&f, "BatchNormalization", "bn_stats_out", 9);
    fx_input(&f, 4, DIMS(2, 3, 4, 5));
    for (int i = 0; i < 4; i++)
        fx_input(&f, 1, DIMS(3));
    fx_outputs(&f, 3, 0);
    expect_error(&f, "batchnorm with statistics outputs", PTQ_ERR_UNSUPPORTED, "output 1");

    fx_init(&f, "BatchNormalization", "bn_spatial0", 7);
    fx_input(&f, 4, DIMS(2, 3, 4, 5));
    for (int i = 0; i < 4; i++)
        fx_input(&f, 1, DIMS(3));
    fx_int(&f, "spatial", 0);
    expect_error(&f, "batchnorm spatial=0", PTQ_ERR_UNSUPPORTED, "spatial=0");

    fx_init(&f, "BatchNormalization", "bn_bad_mean", 15);
    fx_input(&f, 4, DIMS(2, 3, 4, 5));
    fx_input(&f, 1, DIMS(3));
    fx_input(&f, 1, DIMS(3));
    fx_input(&f, 1, DIMS(4));
    fx_input(&f, 1, DIMS(3));
    expect_error(&f, "batchnorm mean length", PTQ_ERR_SHAPE, "input_mean");

    /* values: ONNX's batchnorm_example, X [1, 2, 1, 3] */
    {
        float x[6] = {-1, 0, 1, 2, 3, 4}, s[2] = {1.0f, 1.5f}, bias[2] = {0, 1}, mean[2] = {0, 3}, var[2] = {1, 1.5f};
        float want[6];
        for (int i = 0; i < 6; i++) {
            const int c = i / 3;
            want[i] = (float)((x[i] - mean[c]) / sqrt(var[c] + 1e-5) * s[c] + bias[c]);
        }
        fx_init(&f, "BatchNormalization", "bn_values", 15);
        fx_input(&f, 4, DIMS(1, 2, 1, 3));
        for (int i = 0; i < 4; i++)
            fx_input(&f, 1, DIMS(2));
        f.in[0].data = x;
        f.in[1].data = s;
        f.in[2].data = bias;
        f.in[3].data = mean;
        f.in[4].data = var;
        expect_values(&f, "batchnorm values", want, 6, 1e-6f);
    }
}

int main(void)
{
    test_conv();
    test_conv_transpose();
    test_pool();
    test_window_overflow();
    test_gemm();
    test_matmul();
    test_batchnorm();
    return test_done("test_ops_dense");
}
