/* Pow (float32 base; float32 exponent, or int32/int64 from opset 12; numpy broadcasting), Sqrt (float32), Neg
 * (float32, float64, int8..int64) and Abs (those and uint8..uint64) through kernels/ref/math.c, which is their
 * CPU path too: torch exports
 * LayerNorm before opset 17 as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
 * Div, `x ** 2` with an integer exponent at some opsets, rotary embeddings' rotate_half (LLaMA) with a Neg, and
 * T5's relative position buckets with an Abs.
 * Covered by tests/test_ops_zoo.c, tests/test_ops_transformer.c, the ONNX conformance run, tests/pow_int_test.py
 * and tests/seq_models_test.py.
 * Exp, Floor, Ceil, Round, Sin, Cos, Softplus, Softsign, Elu, Selu, Celu, Mish, Log and Reciprocal (float32)
 * through ptq_k_fn_ref, their CPU path too: torch's functional code exports them, T5's relative position buckets
 * Log, torch 2.x's RMSNorm (rsqrt) Reciprocal (tests/ops_breadth_test.py against onnxruntime); Tan, Asin, Acos,
 * Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Sign, ThresholdedRelu (alpha) and Shrink (lambd, bias) likewise
 * (tests/ops_reduce_test.py).
 * PRelu (float32; the slope broadcast to X: torch's per-channel [C, 1, 1], a scalar or X's shape) likewise, and
 * Max and Min (any number of float32, int32 or int64 inputs, numpy broadcasting: torch.maximum, clamp by tensors). */
#include <string.h>

#include "runtime/op_util.h"

static ptq_status pow_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    const ptq_dtype e = io->in[1]->dtype;
    if (e != PTQ_DT_FLOAT && e != PTQ_DT_INT32 && e != PTQ_DT_INT64)
        return ptq_op_unsupported(ctx, io, "exponent (input 1) is %s; ptq takes float32, int32 or int64",
                                  ptq_dtype_name(e));
    if (e != PTQ_DT_FLOAT && io->graph && io->graph->opset < 12)
        return ptq_op_unsupported(ctx, io, "an %s exponent (input 1) needs opset 12 or later (Pow-12)",
                                  ptq_dtype_name(e));
    if ((st = ptq_op_bcast(ctx, io->in[0], io->in[1], &bc)) != PTQ_OK)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s", ctx->msg);
    io->out[0]->dtype = PTQ_DT_FLOAT;
    io->out[0]->ndim = bc.ndim;
    for (int d = 0; d < bc.ndim; d++)
        io->out[0]->dims[d] = bc.out_dims[d];
    return PTQ_OK;
}

static ptq_status pow_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_bcast(ctx, io->in[0], io->in[1], &bc);
    if (st != PTQ_OK)
        return st;
    if (io->in[1]->dtype == PTQ_DT_FLOAT)
        ptq_k_pow_ref(&bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    else
        ptq_k_pow_int_ref(&bc, io->in[0]->data, io->in[1]->data, io->in[1]->dtype == PTQ_DT_INT64,
                          io->out[0]->data);
    return st;
}

static ptq_status sqrt_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

static ptq_status sqrt_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    (void)ctx;
    ptq_k_sqrt_ref(ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

/* The ptq_fn of io's node and its alpha and gamma (the ONNX defaults where the attribute is absent). */
static ptq_status fn_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_fn *op, float *alpha, float *gamma)
{
    static const struct {
        ptq_op_id id;
        ptq_fn fn;
        float alpha, gamma;
    } fns[] = {
        {PTQ_OP_EXP, PTQ_FN_EXP, 0.0f, 0.0f},
        {PTQ_OP_FLOOR, PTQ_FN_FLOOR, 0.0f, 0.0f},
        {PTQ_OP_CEIL, PTQ_FN_CEIL, 0.0f, 0.0f},
        {PTQ_OP_ROUND, PTQ_FN_ROUND, 0.0f, 0.0f},
        {PTQ_OP_SIN, PTQ_FN_SIN, 0.0f, 0.0f},
        {PTQ_OP_COS, PTQ_FN_COS, 0.0f, 0.0f},
        {PTQ_OP_SOFTPLUS, PTQ_FN_SOFTPLUS, 0.0f, 0.0f},
        {PTQ_OP_SOFTSIGN, PTQ_FN_SOFTSIGN, 0.0f, 0.0f},
        {PTQ_OP_ELU, PTQ_FN_ELU, 1.0f, 0.0f},
        {PTQ_OP_SELU, PTQ_FN_SELU, 1.67326319217681884765625f, 1.05070102214813232421875f},
        {PTQ_OP_CELU, PTQ_FN_CELU, 1.0f, 0.0f},
        {PTQ_OP_MISH, PTQ_FN_MISH, 0.0f, 0.0f},
        {PTQ_OP_LOG, PTQ_FN_LOG, 0.0f, 0.0f},
        {PTQ_OP_RECIPROCAL, PTQ_FN_RECIPROCAL, 0.0f, 0.0f},
        {PTQ_OP_TAN, PTQ_FN_TAN, 0.0f, 0.0f},
        {PTQ_OP_ASIN, PTQ_FN_ASIN, 0.0f, 0.0f},
        {PTQ_OP_ACOS, PTQ_FN_ACOS, 0.0f, 0.0f},
        {PTQ_OP_ATAN, PTQ_FN_ATAN, 0.0f, 0.0f},
        {PTQ_OP_SINH, PTQ_FN_SINH, 0.0f, 0.0f},
        {PTQ_OP_COSH, PTQ_FN_COSH, 0.0f, 0.0f},
        {PTQ_OP_ASINH, PTQ_FN_ASINH, 0.0f, 0.0f},
        {PTQ_OP_ACOSH, PTQ_FN_ACOSH, 0.0f, 0.0f},
        {PTQ_OP_ATANH, PTQ_FN_ATANH, 0.0f, 0.0f},
        {PTQ_OP_SIGN, PTQ_FN_SIGN, 0.0f, 0.0f},
        {PTQ_OP_THRESHOLDEDRELU, PTQ_FN_THRESHOLDED_RELU, 1.0f, 0.0f},
        {PTQ_OP_SHRINK, PTQ_FN_SHRINK, 0.5f, 0.0f},
    };
    const ptq_op_id id = ptq_op_of(io)->traits->id;
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
        if (fns[k].id != id)
            continue;
        *op = fns[k].fn;
        const int shrink = *op == PTQ_FN_SHRINK; /* its alpha and gamma are lambd and bias */
        *alpha = ptq_node_attr_float(io->node, shrink ? "lambd" : "alpha", fns[k].alpha);
        *gamma = ptq_node_attr_float(io->node, shrink ? "bias" : "gamma", fns[k].gamma);
        if (*op == PTQ_FN_CELU && *alpha == 0.0f) /* x / alpha */
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "alpha must not be 0");
        return PTQ_OK;
    }
    return ptq_op_unsupported(ctx, io, "no elementwise function for this op");
}

static ptq_status fn_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_fn op = PTQ_FN_EXP;
    float alpha = 0.0f, gamma = 0.0f;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = fn_params(ctx, io, &op, &alpha, &gamma)) != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status fn_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_fn op = PTQ_FN_EXP;
    float alpha = 0.0f, gamma = 0.0f;
    ptq_status st = fn_params(ctx, io, &op, &alpha, &gamma);
    if (st == PTQ_OK)
        ptq_k_fn_ref(op, alpha, gamma, ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return st;
}

/* The slope (input 1) broadcast to X (input 0): unidirectionally, the output X's shape. */
static ptq_status prelu_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc)
{
    const ptq_tensor *x = io->in[0], *slope = io->in[1];
    char sx[96], ss[96];
    int same = ptq_op_bcast(ctx, x, slope, bc) == PTQ_OK && bc->ndim == x->ndim;
    for (int d = 0; same && d < x->ndim; d++)
        same = bc->out_dims[d] == x->dims[d];
    if (!same)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "slope (input 1) %s does not broadcast to X (input 0) %s",
                           ptq_dims_str(slope->dims, slope->ndim, ss, sizeof ss),
                           ptq_dims_str(x->dims, x->ndim, sx, sizeof sx));
    return PTQ_OK;
}

static ptq_status prelu_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_float(ctx, io, 1)) != PTQ_OK ||
        (st = prelu_layout(ctx, io, &bc)) != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status prelu_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = prelu_layout(ctx, io, &bc);
    if (st == PTQ_OK)
        ptq_k_prelu_ref(&bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    return st;
}

/* Max / Min: every input present and of input 0's dtype, float32 (int32 and int64 from opset 12); *shape (rank and
 * dims) the broadcast of them all. */
static ptq_status minmax_shape(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *shape)
{
    ptq_status st = PTQ_OK;
    ptq_bcast bc;
    if (io->n_in < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "no inputs");
    for (int i = 0; i < io->n_in; i++)
        if ((st = ptq_op_need_input(ctx, io, i)) != PTQ_OK)
            return st;
    const ptq_dtype dt = io->in[0]->dtype;
    if (dt != PTQ_DT_FLOAT && dt != PTQ_DT_INT32 && dt != PTQ_DT_INT64)
        return ptq_op_unsupported(ctx, io, "input 0 is %s; ptq takes float32, int32 or int64", ptq_dtype_name(dt));
    if (dt != PTQ_DT_FLOAT && io->graph && io->graph->opset < 12)
        return ptq_op_unsupported(ctx, io, "%s inputs need opset 12 or later", ptq_dtype_name(dt));
    *shape = *io->in[0];
    for (int i = 1; i < io->n_in; i++) {
        if (io->in[i]->dtype != dt)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input %d is %s but input 0 is %s", i,
                               ptq_dtype_name(io->in[i]->dtype), ptq_dtype_name(dt));
        if (ptq_op_bcast(ctx, shape, io->in[i], &bc) != PTQ_OK)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d: %s", i, ctx->msg);
        shape->ndim = bc.ndim;
        for (int d = 0; d < bc.ndim; d++)
            shape->dims[d] = bc.out_dims[d];
    }
    return PTQ_OK;
}

static ptq_status minmax_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_tensor shape;
    ptq_status st = minmax_shape(ctx, io, &shape);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], &shape);
    return st;
}

static ptq_status minmax_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = PTQ_OK;
    const ptq_minmax op = ptq_op_of(io)->traits->id == PTQ_OP_MAX ? PTQ_MINMAX_MAX : PTQ_MINMAX_MIN;
    const ptq_dtype dt = io->in[0]->dtype;
    const ptq_minmax_elem elem = dt == PTQ_DT_FLOAT ? PTQ_MINMAX_F32 : dt == PTQ_DT_INT32 ? PTQ_MINMAX_I32
                                                                                         : PTQ_MINMAX_I64;
    for (int i = 0; i < io->n_in && st == PTQ_OK; i++)
        if ((st = ptq_op_bcast(ctx, io->out[0], io->in[i], &bc)) == PTQ_OK)
            ptq_k_minmax_ref(i == 0 ? PTQ_MINMAX_TAKE : op, elem, &bc, io->in[i]->data, io->out[0]->data);
    return st;
}

/* Neg's input is present and of a signed kind ONNX gives it (float16 and bfloat16 excepted). */
static ptq_status neg_kind(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *kind)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_dtype dt = io->in[0]->dtype;
    if (!ptq_op_cast_kind(dt, kind) || *kind == PTQ_CAST_U8 || *kind == PTQ_CAST_U16 || *kind == PTQ_CAST_U32 ||
        *kind == PTQ_CAST_U64 || *kind == PTQ_CAST_BOOL)
        return ptq_op_unsupported(ctx, io, "input is %s; ptq takes float32, float64, int8, int16, int32 or int64",
                                  ptq_dtype_name(dt));
    return PTQ_OK;
}

static ptq_status neg_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_cast_kind kind;
    ptq_status st = neg_kind(ctx, io, &kind);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

static ptq_status neg_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_cast_kind kind;
    ptq_status st = neg_kind(ctx, io, &kind);
    if (st == PTQ_OK)
        ptq_k_neg_ref(kind, ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return st;
}

/* Abs's input is present and of a numeric kind ONNX gives it (float16 and bfloat16 excepted). */
static ptq_status abs_kind(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *kind)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_dtype dt = io->in[0]->dtype;
    if (!ptq_op_cast_kind(dt, kind) || *kind == PTQ_CAST_BOOL)
        return ptq_op_unsupported(ctx, io, "input is %s; ptq takes float32, float64, int8..int64 or uint8..uint64",
                                  ptq_dtype_name(dt));
    return PTQ_OK;
}

static ptq_status abs_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_cast_kind kind;
    ptq_status st = abs_kind(ctx, io, &kind);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

static ptq_status abs_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_cast_kind kind;
    ptq_status st = abs_kind(ctx, io, &kind);
    if (st == PTQ_OK)
        ptq_k_abs_ref(kind, ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return st;
}

const ptq_op_def ptq_op_Pow = {PTQ_OP_TRAITS(POW), 7, 0, pow_infer, pow_run, NULL, 0, 0};
const ptq_op_def ptq_op_Sqrt = {PTQ_OP_TRAITS(SQRT), 6, 0, sqrt_infer, sqrt_run, NULL, 0, 0};
const ptq_op_def ptq_op_Exp = {PTQ_OP_TRAITS(EXP), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Floor = {PTQ_OP_TRAITS(FLOOR), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Ceil = {PTQ_OP_TRAITS(CEIL), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Round = {PTQ_OP_TRAITS(ROUND), 11, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Sin = {PTQ_OP_TRAITS(SIN), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Cos = {PTQ_OP_TRAITS(COS), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Softplus = {PTQ_OP_TRAITS(SOFTPLUS), 1, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Softsign = {PTQ_OP_TRAITS(SOFTSIGN), 1, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Elu = {PTQ_OP_TRAITS(ELU), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Selu = {PTQ_OP_TRAITS(SELU), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Celu = {PTQ_OP_TRAITS(CELU), 12, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Mish = {PTQ_OP_TRAITS(MISH), 18, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Log = {PTQ_OP_TRAITS(LOG), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Reciprocal = {PTQ_OP_TRAITS(RECIPROCAL), 6, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Tan = {PTQ_OP_TRAITS(TAN), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Asin = {PTQ_OP_TRAITS(ASIN), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Acos = {PTQ_OP_TRAITS(ACOS), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Atan = {PTQ_OP_TRAITS(ATAN), 7, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Sinh = {PTQ_OP_TRAITS(SINH), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Cosh = {PTQ_OP_TRAITS(COSH), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Asinh = {PTQ_OP_TRAITS(ASINH), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Acosh = {PTQ_OP_TRAITS(ACOSH), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Atanh = {PTQ_OP_TRAITS(ATANH), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Sign = {PTQ_OP_TRAITS(SIGN), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_ThresholdedRelu = {PTQ_OP_TRAITS(THRESHOLDEDRELU), 10, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_Shrink = {PTQ_OP_TRAITS(SHRINK), 9, 0, fn_infer, fn_run, NULL, 0, 0};
const ptq_op_def ptq_op_PRelu = {PTQ_OP_TRAITS(PRELU), 7, 0, prelu_infer, prelu_run, NULL, 0, 0};
const ptq_op_def ptq_op_Max = {PTQ_OP_TRAITS(MAX), 8, 0, minmax_infer, minmax_run, NULL, 0, 0};
const ptq_op_def ptq_op_Min = {PTQ_OP_TRAITS(MIN), 8, 0, minmax_infer, minmax_run, NULL, 0, 0};
const ptq_op_def ptq_op_Neg = {PTQ_OP_TRAITS(NEG), 6, 0, neg_infer, neg_run, NULL, 0, 0};
const ptq_op_def ptq_op_Abs = {PTQ_OP_TRAITS(ABS), 6, 0, abs_infer, abs_run, NULL, 0, 0};
