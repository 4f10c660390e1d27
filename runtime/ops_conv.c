/* ONNX Conv (opset 1..22 semantics; float32, 1-D to 3-D, groups, optional
 * bias): shape inference, the shared parameter parser and the ref / cpu
 * runners. Covered by tests/test_ops_dense.c and tests/parity_conv.c. */
#include <string.h>

#include "runtime/op_util.h"
#include "runtime/spatial.h"

ptq_status ptq_op_conv_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_conv_params *p)
{
    ptq_status st = PTQ_OK;
    ptq_window win;
    const ptq_tensor *x = io->in[0]; /* [N, C, spatial...] */
    const ptq_tensor *w = io->in[1]; /* [M, C/group, k...] */
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL; /* [M] */
    char xs[96], ws[96];
    static const char *const known[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"};
    for (int a = 0; a < io->node->n_attrs; a++) { /* an attribute ptq would ignore changes the result */
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(known[k], io->node->attrs[a].name) != 0)
            k++;
        if (k == sizeof known / sizeof known[0])
            return ptq_op_fail(ctx, io, PTQ_ERR_UNSUPPORTED, "unknown Conv attribute '%s'", io->node->attrs[a].name);
    }
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 0), done);
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 1), done);
    if (b)
        PTQ_TRY(st, ptq_op_need_float(ctx, io, 2), done);
    if (w->ndim != x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "weights %s must have the rank of the input %s",
                           ptq_dims_str(w->dims, w->ndim, ws, sizeof ws),
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    PTQ_TRY(st, ptq_window_parse(ctx, io, x, w->dims + 2, 0, &win), done);
    const int64_t group = ptq_node_attr_int(io->node, "group", 1);
    const int64_t c_in = x->dims[1], c_out = w->dims[0];
    int64_t c_want;
    if (group < 1 || c_in % group != 0 || c_out % group != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE,
                           "group %lld must divide input channels %lld and output channels %lld", (long long)group,
                           (long long)c_in, (long long)c_out);
    if (__builtin_mul_overflow(w->dims[1], group, &c_want))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "weights %s with group %lld: channel count overflows",
                           ptq_dims_str(w->dims, w->ndim, ws, sizeof ws), (long long)group);
    if (c_want != c_in)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE,
                           "channel mismatch: input %s has %lld channels but weights %s with group %lld expect %lld",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), (long long)c_in,
                           ptq_dims_str(w->dims, w->ndim, ws, sizeof ws), (long long)group, (long long)c_want);
    if (b && (b->ndim != 1 || b->dims[0] != c_out))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "bias %s must be [%lld], one per output channel",
                           ptq_dims_str(b->dims, b->ndim, xs, sizeof xs), (long long)c_out);
    memset(p, 0, sizeof *p);
    p->n = x->dims[0];
    p->c_in = c_in;
    p->c_out = c_out;
    p->group = group;
    ptq_window_export(&win, p->in, p->out, p->k, p->stride, p->dil, p->pad_lo, p->pad_hi);
done:
    return st;
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

const ptq_op_def ptq_op_Conv = {PTQ_OP_TRAITS(CONV), 1, 0, conv_infer, conv_run_ref, conv_run_cpu, 0};
