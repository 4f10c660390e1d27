/* ONNX BatchNormalization, inference form only (opset 6..15 semantics:
 * X, scale, B, input_mean, input_var -> Y), float32: shape inference and the
 * ref / cpu runners; ptq_op_batchnorm_check serves every backend. Covered
 * by tests/test_ops_dense.c and tests/parity_pool.c. InstanceNormalization (X [N, C, spatial...], scale and B [C],
 * epsilon; float32) beside it, through kernels/ref/batchnorm.c alone: torch's InstanceNorm and GroupNorm export it
 * (tests/ops_breadth_test.py). */
#include "runtime/op_util.h"

ptq_status ptq_op_batchnorm_check(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    char xs[96], vs[96];
    static const char *const names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 5; i++)
        PTQ_TRY(st, ptq_op_need_float(ctx, io, i), done);
    if (ptq_node_attr_int(io->node, "training_mode", 0) != 0)
        return ptq_op_unsupported(ctx, io, "training_mode=1 (only inference BatchNormalization is implemented)");
    /* before opset 7 the mode is the is_test attribute, 0 (training: the batch's own statistics) unless set */
    if (io->graph && io->graph->opset > 0 && io->graph->opset < 7 && ptq_node_attr_int(io->node, "is_test", 0) == 0)
        return ptq_op_unsupported(ctx, io, "is_test=0 (training mode, the default before opset 7: the batch's own "
                                  "statistics); only inference BatchNormalization (is_test=1) is implemented");
    for (int i = 1; i < io->node->n_outputs; i++)
        if (io->node->outputs[i] >= 0)
            return ptq_op_unsupported(ctx, io, "output %d (running or saved statistics of training mode)", i);
    if (io->graph && io->graph->opset > 0 && io->graph->opset < 9 && ptq_node_attr_int(io->node, "spatial", 1) == 0)
        return ptq_op_unsupported(ctx, io, "spatial=0 (per-activation statistics)");
    const ptq_tensor *x = io->in[0]; /* [N, C, spatial...] */
    if (x->ndim < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "X %s must be [N, C, ...] (rank >= 2)",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    for (int i = 1; i < 5; i++) {
        const ptq_tensor *v = io->in[i]; /* [C] */
        if (v->ndim != 1 || v->dims[0] != x->dims[1])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s %s must be [%lld], one per channel of X %s", names[i],
                               ptq_dims_str(v->dims, v->ndim, vs, sizeof vs), (long long)x->dims[1],
                               ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    }
done:
    return st;
}

static ptq_status bn_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_batchnorm_check(ctx, io);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]); /* Y: like X */
    return st;
}

typedef void (*bn_kernel)(int64_t, int64_t, int64_t, const float *, const float *, const float *, const float *,
                          const float *, float, float *);

static ptq_status bn_run(const ptq_op_io *io, bn_kernel k)
{
    const ptq_tensor *x = io->in[0];
    const float eps = ptq_node_attr_float(io->node, "epsilon", 1e-5f);
    k(x->dims[0], x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), x->data, io->in[1]->data, io->in[2]->data,
      io->in[3]->data, io->in[4]->data, eps, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status bn_run_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return bn_run(io, ptq_k_batchnorm_ref);
}

static ptq_status bn_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return bn_run(io, ptq_k_batchnorm_cpu);
}

const ptq_op_def ptq_op_BatchNormalization = {PTQ_OP_TRAITS(BATCHNORMALIZATION), 6, 0, bn_infer, bn_run_ref,
                                              bn_run_cpu, 0, 0};

static ptq_status instnorm_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    char xs[96], vs[96];
    for (int i = 0; i < 3; i++)
        if ((st = ptq_op_need_float(ctx, io, i)) != PTQ_OK)
            return st;
    const ptq_tensor *x = io->in[0]; /* [N, C, spatial...] */
    if (x->ndim < 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s must be [N, C, D1, ...] (rank >= 3)",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    for (int i = 1; i < 3; i++) {
        const ptq_tensor *v = io->in[i]; /* [C] */
        if (v->ndim != 1 || v->dims[0] != x->dims[1])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s %s must be [%lld], one per channel of input %s",
                               i == 1 ? "scale" : "B", ptq_dims_str(v->dims, v->ndim, vs, sizeof vs),
                               (long long)x->dims[1], ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    }
    ptq_op_same_shape(io->out[0], x);
    return PTQ_OK;
}

static ptq_status instnorm_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    (void)ctx;
    const ptq_tensor *x = io->in[0];
    ptq_k_instancenorm_ref(x->dims[0], x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), x->data, io->in[1]->data,
                           io->in[2]->data, ptq_node_attr_float(io->node, "epsilon", 1e-5f), io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_InstanceNormalization = {PTQ_OP_TRAITS(INSTANCENORMALIZATION), 6, 0, instnorm_infer,
                                                 instnorm_run, NULL, 0, 0};
