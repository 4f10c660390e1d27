/* Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Erf and Gelu
 * (opset 20; approximate "none" or "tanh") on float32 through
 * kernels/{ref,cpu}/unary.c (Clip also on int8/uint8/int32/int64 here);
 * Clip bounds: attributes before opset 11, scalar host inputs 1, 2 after.
 * ptq_op_unary_params gives every backend the float parameters.
 * Covered by tests/test_ops_shape.c, tests/test_ops_transformer.c and the
 * ONNX conformance run. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "runtime/op_util.h"

static ptq_unop unop_of(const ptq_op_io *io)
{
    switch (ptq_op_of(io)->traits->id) {
    case PTQ_OP_LEAKYRELU: return PTQ_UN_LEAKY_RELU;
    case PTQ_OP_CLIP: return PTQ_UN_CLIP;
    case PTQ_OP_SIGMOID: return PTQ_UN_SIGMOID;
    case PTQ_OP_HARDSIGMOID: return PTQ_UN_HARD_SIGMOID;
    case PTQ_OP_HARDSWISH: return PTQ_UN_HARD_SWISH;
    case PTQ_OP_TANH: return PTQ_UN_TANH;
    case PTQ_OP_ERF: return PTQ_UN_ERF;
    case PTQ_OP_GELU: return PTQ_UN_GELU;
    default: return PTQ_UN_RELU;
    }
}

static int clip_int_dtype(ptq_dtype dt)
{
    return dt == PTQ_DT_INT8 || dt == PTQ_DT_UINT8 || dt == PTQ_DT_INT32 || dt == PTQ_DT_INT64;
}

/* Clip's scalar bound inputs 1 and 2 (opset >= 11; host tensors of input 0's
 * dtype, [] or [1]); NULL where omitted. */
static ptq_status clip_bounds(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor **lo, const ptq_tensor **hi)
{
    const ptq_tensor *t[2] = {io->n_in > 1 ? io->in[1] : NULL, io->n_in > 2 ? io->in[2] : NULL};
    for (int k = 0; k < 2; k++) {
        if (t[k] && t[k]->dtype != io->in[0]->dtype)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input %d is %s but input 0 is %s", k + 1,
                               ptq_dtype_name(t[k]->dtype), ptq_dtype_name(io->in[0]->dtype));
        if (t[k] && ptq_tensor_numel(t[k]) != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d (%s) must be a scalar, it has %lld elements", k + 1,
                               k ? "max" : "min", (long long)ptq_tensor_numel(t[k]));
    }
    *lo = t[0];
    *hi = t[1];
    return PTQ_OK;
}

/* alpha/beta of LeakyRelu and HardSigmoid, min/max of Clip (ptq_unop's convention). */
ptq_status ptq_op_unary_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_unop *op, float *alpha, float *beta)
{
    ptq_status st = PTQ_OK;
    const ptq_tensor *lo = NULL, *hi = NULL;
    *op = unop_of(io);
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (*op) {
    case PTQ_UN_LEAKY_RELU: *alpha = ptq_node_attr_float(io->node, "alpha", 0.01f); break;
    case PTQ_UN_HARD_SIGMOID:
        *alpha = ptq_node_attr_float(io->node, "alpha", 0.2f);
        *beta = ptq_node_attr_float(io->node, "beta", 0.5f);
        break;
    case PTQ_UN_CLIP:
        if (io->graph->opset < 11) {
            *alpha = ptq_node_attr_float(io->node, "min", -FLT_MAX);
            *beta = ptq_node_attr_float(io->node, "max", FLT_MAX);
            break;
        }
        if ((st = clip_bounds(ctx, io, &lo, &hi)) != PTQ_OK)
            return st;
        /* a bound computed at run time has no data before the run (shape inference): its value is not needed */
        *alpha = lo ? (lo->data ? *(const float *)lo->data : NAN) : -FLT_MAX;
        *beta = hi ? (hi->data ? *(const float *)hi->data : NAN) : FLT_MAX;
        break;
    case PTQ_UN_GELU: {
        const ptq_attr *a = ptq_node_attr(io->node, "approximate");
        if (a && (a->type != PTQ_ATTR_STRING || (strcmp(a->s, "none") != 0 && strcmp(a->s, "tanh") != 0)))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "approximate must be \"none\" or \"tanh\", got '%s'",
                               a->type == PTQ_ATTR_STRING ? a->s : "(not a string)");
        if (a && strcmp(a->s, "tanh") == 0)
            *op = PTQ_UN_GELU_TANH;
        break;
    }
    default: break;
    }
    return PTQ_OK;
}

static ptq_status unary_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    const ptq_tensor *lo, *hi;
    ptq_unop op;
    float alpha, beta;
    if (st != PTQ_OK)
        return st;
    if (unop_of(io) == PTQ_UN_CLIP && clip_int_dtype(io->in[0]->dtype)) {
        if (io->graph->opset < 11)
            return ptq_op_unsupported(ctx, io, "input 0 is %s; Clip before opset 11 takes float32 only",
                                      ptq_dtype_name(io->in[0]->dtype));
        st = clip_bounds(ctx, io, &lo, &hi);
    } else if ((st = ptq_op_need_float(ctx, io, 0)) == PTQ_OK) {
        st = ptq_op_unary_params(ctx, io, &op, &alpha, &beta);
    }
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

#define CLIP_INT_LOOP(T, LOWEST, HIGHEST)                                             \
    do {                                                                              \
        const T *x = io->in[0]->data;                                                 \
        T *y = io->out[0]->data;                                                      \
        const T lo_t = lo ? (T)ptq_op_int_scalar(lo) : (LOWEST);                      \
        const T hi_t = hi ? (T)ptq_op_int_scalar(hi) : (HIGHEST);                     \
        for (int64_t i = 0; i < n; i++) {                                             \
            T t = x[i] < lo_t ? lo_t : x[i];                                          \
            y[i] = t > hi_t ? hi_t : t;                                               \
        }                                                                             \
    } while (0)

/* Integer Clip; input 0 and output 0: [n] of one integer dtype. Omitted bounds are the type's limits. */
static ptq_status clip_int_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    const ptq_tensor *lo, *hi;
    int64_t n = ptq_tensor_numel(io->in[0]);
    if ((st = clip_bounds(ctx, io, &lo, &hi)) != PTQ_OK)
        return st;
    switch (io->in[0]->dtype) {
    case PTQ_DT_INT8: CLIP_INT_LOOP(int8_t, INT8_MIN, INT8_MAX); break;
    case PTQ_DT_UINT8: CLIP_INT_LOOP(uint8_t, 0, UINT8_MAX); break;
    case PTQ_DT_INT32: CLIP_INT_LOOP(int32_t, INT32_MIN, INT32_MAX); break;
    default: CLIP_INT_LOOP(int64_t, INT64_MIN, INT64_MAX); break;
    }
    return PTQ_OK;
}

static ptq_status unary_run(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    ptq_unop op;
    float alpha, beta;
    if (unop_of(io) == PTQ_UN_CLIP && clip_int_dtype(io->in[0]->dtype))
        return clip_int_run(ctx, io);
    ptq_status st = ptq_op_unary_params(ctx, io, &op, &alpha, &beta);
    if (st != PTQ_OK)
        return st;
    int64_t n = ptq_tensor_numel(io->in[0]);
    if (fast)
        ptq_k_unary_cpu(op, alpha, beta, n, io->in[0]->data, io->out[0]->data);
    else
        ptq_k_unary_ref(op, alpha, beta, n, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status unary_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return unary_run(ctx, io, 0);
}

static ptq_status unary_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return unary_run(ctx, io, 1);
}

const ptq_op_def ptq_op_Relu = {PTQ_OP_TRAITS(RELU), 1, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
const ptq_op_def ptq_op_LeakyRelu = {PTQ_OP_TRAITS(LEAKYRELU), 1, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
/* min and max (inputs 1 and 2) are read on the host when Clip runs; they may be computed at run time */
const ptq_op_def ptq_op_Clip = {PTQ_OP_TRAITS(CLIP), 1, 1u << 1 | 1u << 2, unary_infer, unary_run_ref, unary_run_cpu,
                                0, 1u << 1 | 1u << 2};
const ptq_op_def ptq_op_Sigmoid = {PTQ_OP_TRAITS(SIGMOID), 1, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
const ptq_op_def ptq_op_HardSigmoid = {PTQ_OP_TRAITS(HARDSIGMOID), 1, 0, unary_infer, unary_run_ref, unary_run_cpu,
                                       0, 0};
const ptq_op_def ptq_op_HardSwish = {PTQ_OP_TRAITS(HARDSWISH), 14, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Tanh = {PTQ_OP_TRAITS(TANH), 1, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Erf = {PTQ_OP_TRAITS(ERF), 9, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
const ptq_op_def ptq_op_Gelu = {PTQ_OP_TRAITS(GELU), 20, 0, unary_infer, unary_run_ref, unary_run_cpu, 0, 0};
