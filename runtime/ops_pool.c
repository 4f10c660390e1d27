/* ONNX MaxPool (no Indices output), AveragePool and GlobalAveragePool,
 * float32, 1-D to 3-D: shape inference, the ref / cpu runners and
 * ptq_op_pool_params for every backend; window geometry from
 * runtime/spatial.c. Covered by tests/test_ops_dense.c and tests/parity_pool.c. */
#include <string.h>

#include "runtime/op_util.h"
#include "runtime/spatial.h"

ptq_status ptq_op_pool_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_pool_params *p)
{
    ptq_window w;
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    if (io->node->n_outputs > 1 && io->node->outputs[1] >= 0)
        return ptq_op_unsupported(ctx, io, "MaxPool with an Indices output");
    const ptq_tensor *x = io->in[0];
    if ((st = ptq_window_parse(ctx, io, x, NULL, PTQ_WINDOW_CEIL_MODE, &w)) != PTQ_OK)
        return st;
    memset(p, 0, sizeof *p);
    p->n = x->dims[0];
    p->c = x->dims[1];
    ptq_window_export(&w, p->in, p->out, p->k, p->stride, p->dil, p->pad_lo, p->pad_hi);
    p->count_include_pad = ptq_node_attr_int(io->node, "count_include_pad", 0) != 0;
    /* the ref walks every tap of every window (2^93 for kernels of 2^31 on three axes), and tap counts
       (count_include_pad's) must not wrap: one image's taps bounded */
    return ptq_window_check_work(ctx, io, &w, p->c, 1);
}

static ptq_status pool_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_pool_params p;
    ptq_status st = ptq_op_pool_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    /* x: [N, C, spatial...] -> y: [N, C, out...] */
    return ptq_window_output(ctx, io, p.n, p.c, io->in[0]->ndim - 2, p.out, io->out[0]);
}

typedef void (*pool_kernel)(const ptq_pool_params *, const float *, float *);

static ptq_status pool_run(ptq_ctx *ctx, const ptq_op_io *io, pool_kernel k)
{
    ptq_pool_params p;
    ptq_status st = ptq_op_pool_params(ctx, io, &p);
    if (st != PTQ_OK)
        return st;
    k(&p, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status maxpool_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return pool_run(ctx, io, ptq_k_maxpool_ref);
}

static ptq_status maxpool_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return pool_run(ctx, io, ptq_k_maxpool_cpu);
}

static ptq_status avgpool_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return pool_run(ctx, io, ptq_k_avgpool_ref);
}

static ptq_status avgpool_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return pool_run(ctx, io, ptq_k_avgpool_cpu);
}

static ptq_status global_avgpool_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    char xs[96];
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0]; /* [N, C, spatial...] */
    if (x->ndim < 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s must be [N, C, spatial...] (rank >= 3)",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    ptq_tensor *y = io->out[0];      /* [N, C, 1, ...] */
    ptq_op_same_shape(y, x);
    for (int d = 2; d < y->ndim; d++)
        y->dims[d] = 1;
    return PTQ_OK;
}

typedef void (*global_pool_kernel)(int64_t, int64_t, const float *, float *);

static ptq_status global_avgpool_run(const ptq_op_io *io, global_pool_kernel k)
{
    const ptq_tensor *x = io->in[0];
    k(x->dims[0] * x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), x->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status global_avgpool_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return global_avgpool_run(io, ptq_k_global_avgpool_ref);
}

static ptq_status global_avgpool_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return global_avgpool_run(io, ptq_k_global_avgpool_cpu);
}

const ptq_op_def ptq_op_MaxPool = {PTQ_OP_TRAITS(MAXPOOL), 1, 0, pool_infer, maxpool_run_ref, maxpool_run_cpu, 0, 0};
const ptq_op_def ptq_op_AveragePool = {PTQ_OP_TRAITS(AVERAGEPOOL), 1, 0, pool_infer, avgpool_run_ref,
                                       avgpool_run_cpu, 0, 0};
const ptq_op_def ptq_op_GlobalAveragePool = {PTQ_OP_TRAITS(GLOBALAVERAGEPOOL), 1, 0, global_avgpool_infer, global_avgpool_run_ref,
                                             global_avgpool_run_cpu, 0, 0};
