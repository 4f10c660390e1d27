/* Pow (float32 base and exponent, numpy broadcasting) and Sqrt (float32)
 * through kernels/ref/math.c, which is their CPU path too: torch exports
 * LayerNorm before opset 17 as ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
 * Div. Covered by tests/test_ops_zoo.c and the ONNX conformance run. */
#include "runtime/op_util.h"

static ptq_status pow_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_float(ctx, io, 1)) != PTQ_OK)
        return st;
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
    if (st == PTQ_OK)
        ptq_k_pow_ref(&bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
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
