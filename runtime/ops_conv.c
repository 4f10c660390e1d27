/* ONNX Conv (opset 1..22 semantics; float32, 1-D to 3-D, groups, optional
 * bias): shape inference, the parameter parser every backend shares (on
 * ptq_conv_parse, runtime/spatial.c) and the ref / cpu runners. Covered by
 * tests/test_ops_dense.c and tests/parity_conv.c. */
#include "runtime/op_util.h"
#include "runtime/spatial.h"

ptq_status ptq_op_conv_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_conv_params *p)
{
    return ptq_conv_parse(ctx, io, 0, p);
}

static ptq_status conv_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_conv_params p;
    ptq_status st = ptq_op_conv_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    return ptq_window_output(ctx, io, p.n, p.c_out, io->in[0]->ndim - 2, p.out, io->out[0]); /* [N, M, out...] */
}

typedef void (*conv_kernel)(const ptq_conv_params *, const float *, const float *, const float *, float *);

static ptq_status conv_run(ptq_ctx *ctx, const ptq_op_io *io, conv_kernel k)
{
    ptq_conv_params p;
    ptq_status st = ptq_op_conv_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    k(&p, io->in[0]->data, io->in[1]->data, b ? b->data : NULL, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status conv_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return conv_run(ctx, io, ptq_k_conv_ref);
}

static ptq_status conv_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return conv_run(ctx, io, ptq_k_conv_cpu);
}

const ptq_op_def ptq_op_Conv = {PTQ_OP_TRAITS(CONV), 1, 0, conv_infer, conv_run_ref, conv_run_cpu, 0, 0};
