/* LRN (opset 1 and 13: size, alpha, beta, bias) on float32 [N, C, D1, ...]: AlexNet-, GoogLeNet- and SqueezeNet-era
 * zoo models normalise across channels with it; through ptq_k_lrn_ref (kernels/ref/math2.c), its CPU path too (the
 * CUDA backend hands it to the CPU). Covered by tests/ops_reduce_test.py (onnxruntime) and the ONNX conformance run. */
#include "runtime/op_util.h"

/* LRN's input [N, C, D1, ...] of float32 and its attributes: size required, an int of at least 1. */
static ptq_status lrn_params(ptq_ctx *ctx, const ptq_op_io *io, int64_t *size, float *alpha, float *beta, float *bias)
{
    PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    if (x->ndim < 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input is rank %d; LRN takes [N, C, D1, ...]", x->ndim);
    const ptq_attr *a = ptq_node_attr(io->node, "size");
    if (!a || a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the size attribute is %s", a ? "not an int" : "missing");
    *size = ptq_node_attr_int(io->node, "size", 1);
    if (*size < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "size %lld must be at least 1", (long long)*size);
    *alpha = ptq_node_attr_float(io->node, "alpha", 1e-4f);
    *beta = ptq_node_attr_float(io->node, "beta", 0.75f);
    *bias = ptq_node_attr_float(io->node, "bias", 1.0f);
    return PTQ_OK;
}

static ptq_status lrn_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t size = 1;
    float alpha = 0.0f, beta = 0.0f, bias = 0.0f;
    PTQ_TRY_RET(lrn_params(ctx, io, &size, &alpha, &beta, &bias));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status lrn_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t size = 1;
    float alpha = 0.0f, beta = 0.0f, bias = 0.0f;
    PTQ_TRY_RET(lrn_params(ctx, io, &size, &alpha, &beta, &bias));
    const ptq_tensor *x = io->in[0];
    ptq_k_lrn_ref(x->dims[0], x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), size, alpha, beta, bias, x->data,
                  io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_LRN = {PTQ_OP_TRAITS(LRN), 1, 0, lrn_infer, lrn_run, NULL, 0, 0};
