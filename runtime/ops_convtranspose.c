/* ONNX ConvTranspose (opset 1..22 semantics, opset 11's padding rules
 * throughout; float32, 1-D to 3-D, groups, optional bias, output_padding,
 * output_shape, auto_pad): shape inference and the ref / cpu runners; the
 * attributes are read by ptq_conv_parse (runtime/spatial.c). Covered by
 * tests/test_ops_dense.c, tests/parity_conv.c and the ONNX conformance run. */
#include "runtime/op_util.h"
#include "runtime/spatial.h"

static ptq_status convtranspose_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_conv_params p;
    ptq_status st = ptq_conv_parse(ctx, io, 1, &p);
    /* [N, M, out...] */
    return st != PTQ_OK ? st : ptq_window_output(ctx, io, p.n, p.c_out, io->in[0]->ndim - 2, p.out, io->out[0]);
}

/* Runs the reference kernel, or with fast the CPU one. */
static ptq_status convtranspose_exec(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    ptq_conv_params p;
    ptq_status st = ptq_conv_parse(ctx, io, 1, &p);
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    if (st == PTQ_OK)
        (fast ? ptq_k_conv_transpose_cpu : ptq_k_conv_transpose_ref)(&p, io->in[0]->data, io->in[1]->data,
                                                                      b ? b->data : NULL, io->out[0]->data);
    return st;
}

static ptq_status convtranspose_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return convtranspose_exec(ctx, io, 0);
}

static ptq_status convtranspose_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return convtranspose_exec(ctx, io, 1);
}

const ptq_op_def ptq_op_ConvTranspose = {PTQ_OP_TRAITS(CONVTRANSPOSE), 1, 0, convtranspose_infer,
                                         convtranspose_run_ref, convtranspose_run_cpu, 0, 0};
