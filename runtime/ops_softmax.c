/* Softmax on float32 through kernels/{ref,cpu}/softmax.c. Before opset 13
 * the input is coerced to 2-D at axis (default 1) and normalised over the
 * whole trailing block; from 13 on over the single dim axis (default -1);
 * ptq_op_softmax_view gives every backend that view. LogSoftmax the same way, through
 * kernels/ref/softmax.c alone (tests/ops_breadth_test.py against onnxruntime).
 * Covered by tests/test_ops_shape.c and the ONNX conformance run. */
#include "runtime/op_util.h"

ptq_status ptq_op_softmax_view(ptq_ctx *ctx, const ptq_op_io *io, int64_t *outer, int64_t *len, int64_t *inner)
{
    const ptq_tensor *x = io->in[0];
    int legacy = io->graph->opset < 13;
    int64_t axis = ptq_node_attr_int(io->node, "axis", legacy ? 1 : -1);
    int64_t ax = axis < 0 ? axis + x->ndim : axis;
    if (ax < 0 || ax >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis,
                           x->ndim);
    *outer = ptq_dims_prod(x->dims, 0, (int)ax);
    *len = legacy ? ptq_dims_prod(x->dims, (int)ax, x->ndim) : x->dims[ax];
    *inner = legacy ? 1 : ptq_dims_prod(x->dims, (int)ax + 1, x->ndim);
    if (*outer == 0 || *len == 0 || *inner == 0) /* nothing to compute: no kernel walks the other dims' lines */
        *outer = *len = *inner = 0;
    return PTQ_OK;
}

static ptq_status softmax_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t outer = 0, len = 0, inner = 0;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_softmax_view(ctx, io, &outer, &len, &inner)) != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status softmax_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t outer = 0, len = 0, inner = 0;
    ptq_status st = ptq_op_softmax_view(ctx, io, &outer, &len, &inner);
    if (st == PTQ_OK)
        ptq_k_softmax_ref(outer, len, inner, io->in[0]->data, io->out[0]->data);
    return st;
}

static ptq_status softmax_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t outer = 0, len = 0, inner = 0;
    ptq_status st = ptq_op_softmax_view(ctx, io, &outer, &len, &inner);
    if (st == PTQ_OK)
        ptq_k_softmax_cpu(outer, len, inner, io->in[0]->data, io->out[0]->data);
    return st;
}

const ptq_op_def ptq_op_Softmax = {PTQ_OP_TRAITS(SOFTMAX), 1, 0, softmax_infer, softmax_run_ref, softmax_run_cpu, 0, 0};

static ptq_status log_softmax_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t outer = 0, len = 0, inner = 0;
    ptq_status st = ptq_op_softmax_view(ctx, io, &outer, &len, &inner);
    if (st == PTQ_OK)
        ptq_k_log_softmax_ref(outer, len, inner, io->in[0]->data, io->out[0]->data);
    return st;
}

const ptq_op_def ptq_op_LogSoftmax = {PTQ_OP_TRAITS(LOGSOFTMAX), 1, 0, softmax_infer, log_softmax_run, NULL, 0, 0};
