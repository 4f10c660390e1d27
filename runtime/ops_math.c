/* Pow (float32 base; float32 exponent, or int32/int64 from opset 12; numpy broadcasting) and Sqrt (float32)
 * through kernels/ref/math.c, which is their CPU path too: torch exports
 * LayerNorm before opset 17 as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
 * Div, and `x ** 2` with an integer exponent at some opsets. Covered by tests/test_ops_zoo.c, the ONNX
 * conformance run and tests/pow_int_test.py. */
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

const ptq_op_def ptq_op_Pow = {PTQ_OP_TRAITS(POW), 7, 0, pow_infer, pow_run, NULL, 0};
const ptq_op_def ptq_op_Sqrt = {PTQ_OP_TRAITS(SQRT), 6, 0, sqrt_infer, sqrt_run, NULL, 0};
