/* Pad (opset 11+: pads as host input 1, the constant input 2 possibly computed at run time; modes
 * constant, edge, reflect; no axes input; pads >= 0) on any fixed-size
 * dtype through kernels/ref/pad.c. The Keras importer's ZeroPadding2D uses it.
 * Covered by tests/test_ops_shape.c and the ONNX conformance run. */
#include <string.h>

#include "runtime/op_util.h"

#define PAD_MAX_ELEMS ((int64_t)1 << 40) /* a padded tensor past this is a hostile pads input */

/* The mode attribute and pads [2 * rank of input 0] from input 1. */
static ptq_status pad_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_pad_mode *mode, int64_t *pads)
{
    const ptq_tensor *x = io->in[0], *p = io->n_in > 1 ? io->in[1] : NULL;
    const ptq_attr *m = ptq_node_attr(io->node, "mode");
    *mode = PTQ_PAD_CONSTANT;
    if (m && (m->type != PTQ_ATTR_STRING ||
              (strcmp(m->s, "constant") != 0 && strcmp(m->s, "edge") != 0 && strcmp(m->s, "reflect") != 0)))
        return ptq_op_unsupported(ctx, io, "mode must be constant, edge or reflect, got '%s'",
                                  m->type == PTQ_ATTR_STRING ? m->s : "(not a string)");
    if (m && strcmp(m->s, "edge") == 0)
        *mode = PTQ_PAD_EDGE;
    else if (m && strcmp(m->s, "reflect") == 0)
        *mode = PTQ_PAD_REFLECT;
    if (io->n_in > 3 && io->in[3])
        return ptq_op_unsupported(ctx, io, "the axes input is not supported");
    if (!p)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input 1 (pads) is missing");
    if (p->dtype != PTQ_DT_INT64 || p->ndim != 1 || p->dims[0] != 2 * (int64_t)x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "pads must be 1-D int64 of %d values for rank %d, got %s of %lld",
                           2 * x->ndim, x->ndim, ptq_dtype_name(p->dtype), (long long)ptq_tensor_numel(p));
    memcpy(pads, p->data, (size_t)(2 * x->ndim) * sizeof *pads);
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (pads[d] < 0 || pads[x->ndim + d] < 0)
            return ptq_op_unsupported(ctx, io, "negative pads (cropping) on axis %d are not supported", d);
        if (x->dims[d] > PAD_MAX_ELEMS || pads[d] > PAD_MAX_ELEMS || pads[x->ndim + d] > PAD_MAX_ELEMS)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "padding axis %d of %lld by %lld and %lld gives more than 2^40 "
                               "elements", d, (long long)x->dims[d], (long long)pads[d], (long long)pads[x->ndim + d]);
        int64_t out = x->dims[d] + pads[d] + pads[x->ndim + d]; /* each term <= 2^40: no overflow */
        if (out > PAD_MAX_ELEMS || (out && n > PAD_MAX_ELEMS / out))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "padding axis %d to %lld gives more than 2^40 elements", d,
                               (long long)out);
        n *= out;
        if (x->dims[d] == 0 && out > 0 && *mode != PTQ_PAD_CONSTANT)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s padding of the empty axis %d", m->s, d);
    }
    return PTQ_OK;
}

static ptq_status pad_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    ptq_pad_mode mode;
    int64_t pads[2 * PTQ_MAX_DIMS];
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *c = io->n_in > 2 ? io->in[2] : NULL;
    if (ptq_dtype_size(x->dtype) == 0)
        return ptq_op_unsupported(ctx, io, "input 0 is %s; only fixed-size dtypes are supported",
                                  ptq_dtype_name(x->dtype));
    if ((st = pad_params(ctx, io, &mode, pads)) != PTQ_OK)
        return st;
    if (c && (c->dtype != x->dtype || ptq_tensor_numel(c) != 1))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "constant_value must be one %s, got %s of %lld",
                           ptq_dtype_name(x->dtype), ptq_dtype_name(c->dtype), (long long)ptq_tensor_numel(c));
    io->out[0]->dtype = x->dtype;
    io->out[0]->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++)
        io->out[0]->dims[d] = x->dims[d] + pads[d] + pads[x->ndim + d];
    return PTQ_OK;
}

static ptq_status pad_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_pad_mode mode;
    int64_t pads[2 * PTQ_MAX_DIMS];
    unsigned char zero[16] = {0};
    ptq_status st = pad_params(ctx, io, &mode, pads);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *c = io->n_in > 2 ? io->in[2] : NULL;
    ptq_k_pad_ref(mode, ptq_dtype_size(x->dtype), x->ndim, x->dims, pads, c ? c->data : zero, x->data,
                  io->out[0]->data);
    return PTQ_OK;
}

/* pads (and axes) set the output's shape: host inputs, known before the run. The constant (input 2) does not, and
 * infer reads only its dtype and size: it may be computed at run time (pad_run reads it where Pad runs, the host). */
const ptq_op_def ptq_op_Pad = {PTQ_OP_TRAITS(PAD), 11, 1u << 1 | 1u << 3, pad_infer, pad_run, NULL, 0, 0};
