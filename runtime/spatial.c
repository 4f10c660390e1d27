/* Conv / pool window geometry: attribute checks, auto_pad and ceil_mode
 * output sizes as ONNX defines them (the last ceil_mode window must start
 * inside the input or the left padding). Covered by tests/test_ops_dense.c. */
#include <string.h>

#include "runtime/op_util.h"
#include "runtime/spatial.h"

typedef enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID } auto_pad_mode;

/* Largest kernel, stride, dilation or pad accepted: with every value at most
 * 2^31 a window span (k - 1) * dil + 1 stays below 2^62 and cannot wrap. */
#define WINDOW_ATTR_MAX ((int64_t)1 << 31)

/* An INTS attribute with exactly n values, each in [lo, WINDOW_ATTR_MAX],
 * into v; v keeps its defaults when the attribute is absent. */
static ptq_status read_ints(ptq_ctx *ctx, const ptq_op_io *io, const char *name, int64_t n, int64_t lo, int64_t *v)
{
    const ptq_attr *a = ptq_node_attr(io->node, name);
    if (!a)
        return PTQ_OK;
    if (a->type != PTQ_ATTR_INTS || a->n != n)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "attribute %s must hold %lld ints, got %lld", name, (long long)n,
                           a->type == PTQ_ATTR_INTS ? (long long)a->n : 0LL);
    for (int64_t i = 0; i < n; i++) {
        if (a->ints[i] < lo || a->ints[i] > WINDOW_ATTR_MAX)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "attribute %s[%lld] = %lld, must be in [%lld, %lld]", name,
                               (long long)i, (long long)a->ints[i], (long long)lo, (long long)WINDOW_ATTR_MAX);
        v[i] = a->ints[i];
    }
    return PTQ_OK;
}

static ptq_status read_auto_pad(ptq_ctx *ctx, const ptq_op_io *io, auto_pad_mode *mode)
{
    const ptq_attr *a = ptq_node_attr(io->node, "auto_pad");
    *mode = PAD_NOTSET;
    if (!a || (a->type == PTQ_ATTR_STRING && (a->s_len == 0 || strcmp(a->s, "NOTSET") == 0)))
        return PTQ_OK;
    if (a->type == PTQ_ATTR_STRING && strcmp(a->s, "SAME_UPPER") == 0)
        *mode = PAD_SAME_UPPER;
    else if (a->type == PTQ_ATTR_STRING && strcmp(a->s, "SAME_LOWER") == 0)
        *mode = PAD_SAME_LOWER;
    else if (a->type == PTQ_ATTR_STRING && strcmp(a->s, "VALID") == 0)
        *mode = PAD_VALID;
    else
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '%s'",
                           a->type == PTQ_ATTR_STRING ? a->s : "(not a string)");
    return PTQ_OK;
}

ptq_status ptq_window_parse(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *x, const int64_t *kernel,
                            unsigned flags, ptq_window *w)
{
    ptq_status st = PTQ_OK;
    const int n_sp = x->ndim - 2;
    int64_t k[PTQ_SPATIAL], stride[PTQ_SPATIAL], dil[PTQ_SPATIAL], pads[2 * PTQ_SPATIAL];
    auto_pad_mode mode;
    if (x->ndim < 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input is rank %d; [N, C, spatial...] needs rank >= 3", x->ndim);
    if (n_sp > PTQ_SPATIAL)
        return ptq_op_unsupported(ctx, io, "%d spatial dims; at most %d are supported", n_sp, PTQ_SPATIAL);
    for (int i = 0; i < n_sp; i++) {
        k[i] = kernel ? kernel[i] : 0;
        stride[i] = 1;
        dil[i] = 1;
        pads[i] = pads[n_sp + i] = 0;
    }
    const ptq_attr *ks = ptq_node_attr(io->node, "kernel_shape");
    if (!ks && !kernel)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "attribute kernel_shape is required");
    PTQ_TRY(st, read_ints(ctx, io, "kernel_shape", n_sp, 1, k), done);
    for (int i = 0; kernel && i < n_sp; i++) {
        if (k[i] != kernel[i])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "kernel_shape[%d] = %lld but the weights' kernel is %lld", i,
                               (long long)k[i], (long long)kernel[i]);
        if (k[i] < 1 || k[i] > WINDOW_ATTR_MAX)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the weights' kernel[%d] = %lld, must be in [1, %lld]", i,
                               (long long)k[i], (long long)WINDOW_ATTR_MAX);
    }
    PTQ_TRY(st, read_ints(ctx, io, "strides", n_sp, 1, stride), done);
    PTQ_TRY(st, read_ints(ctx, io, "dilations", n_sp, 1, dil), done);
    PTQ_TRY(st, read_ints(ctx, io, "pads", 2 * n_sp, 0, pads), done);
    PTQ_TRY(st, read_auto_pad(ctx, io, &mode), done);
    const int ceil_mode = (flags & PTQ_WINDOW_CEIL_MODE) && ptq_node_attr_int(io->node, "ceil_mode", 0) != 0;
    if (mode != PAD_NOTSET)
        for (int i = 0; i < 2 * n_sp; i++)
            if (pads[i] != 0)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "explicit pads cannot be combined with auto_pad");

    memset(w, 0, sizeof *w);
    w->n_spatial = n_sp;
    for (int s = 0; s < PTQ_SPATIAL; s++) {
        w->in[s] = w->out[s] = w->k[s] = w->stride[s] = w->dil[s] = 1;
        w->pad_lo[s] = w->pad_hi[s] = 0;
    }
    for (int i = 0; i < n_sp; i++) {
        const int s = PTQ_SPATIAL - n_sp + i;
        const int64_t in = x->dims[2 + i];
        const int64_t span = (k[i] - 1) * dil[i] + 1; /* input extent one window covers; < 2^62 (see above) */
        int64_t lo = pads[i], hi = pads[n_sp + i], out = 0, padded;
        if (in < 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld, must be >= 1", i,
                               (long long)in);
        /* in can be any positive int64 (a declared input); the sums below near it are checked */
        if (mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
            out = (in - 1) / stride[i] + 1; /* ceil(in / stride) */
            int64_t total;
            if (__builtin_add_overflow((out - 1) * stride[i], span, &total))
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld with auto_pad overflows",
                                   i, (long long)in);
            total -= in;
            if (total < 0)
                total = 0;
            lo = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            hi = total - lo;
        } else {
            if (__builtin_add_overflow(in, lo, &padded) || __builtin_add_overflow(padded, hi, &padded))
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld plus pads overflows", i,
                                   (long long)in);
            const int64_t room = padded - span;
            if (room < 0)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE,
                                   "spatial axis %d: window of %lld (kernel %lld, dilation %lld) exceeds the padded "
                                   "input of %lld",
                                   i, (long long)span, (long long)k[i], (long long)dil[i], (long long)padded);
            out = room / stride[i] + (ceil_mode && room % stride[i] != 0) + 1;
            /* the last ceil_mode window must start inside: (out - 1) * stride < in + lo, without the product */
            if (ceil_mode && out - 1 > (in + lo - 1) / stride[i])
                out--;
        }
        if (out < 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld gives output size %lld", i,
                               (long long)in, (long long)out);
        w->in[s] = in;
        w->out[s] = out;
        w->k[s] = k[i];
        w->stride[s] = stride[i];
        w->dil[s] = dil[i];
        w->pad_lo[s] = lo;
        w->pad_hi[s] = hi;
    }
done:
    return st;
}

ptq_status ptq_window_output(ptq_ctx *ctx, const ptq_op_io *io, int64_t n, int64_t c, int n_spatial,
                             const int64_t *out, ptq_tensor *y)
{
    int64_t numel = 1;
    char ys[96];
    y->dtype = PTQ_DT_FLOAT;
    y->ndim = n_spatial + 2;
    y->dims[0] = n;
    y->dims[1] = c;
    for (int i = 0; i < n_spatial; i++)
        y->dims[2 + i] = out[PTQ_SPATIAL - n_spatial + i];
    for (int d = 0; d < y->ndim; d++)
        if (__builtin_mul_overflow(numel, y->dims[d], &numel))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "output %s has more elements than int64 counts",
                               ptq_dims_str(y->dims, y->ndim, ys, sizeof ys));
    return PTQ_OK;
}

void ptq_window_export(const ptq_window *w, int64_t *in, int64_t *out, int64_t *k, int64_t *stride, int64_t *dil,
                       int64_t *pad_lo, int64_t *pad_hi)
{
    for (int s = 0; s < PTQ_SPATIAL; s++) {
        in[s] = w->in[s];
        out[s] = w->out[s];
        k[s] = w->k[s];
        stride[s] = w->stride[s];
        dil[s] = w->dil[s];
        pad_lo[s] = w->pad_lo[s];
        pad_hi[s] = w->pad_hi[s];
    }
}
