/* Conv / pool window geometry: attribute checks, auto_pad and ceil_mode
 * output sizes as ONNX defines them (the last ceil_mode window must start
 * inside the input or the left padding); ConvTranspose's, where the window
 * scatters (output_padding, output_shape); the Conv and ConvTranspose
 * parameter parser. Covered by tests/test_ops_dense.c. */
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

/* A node's window attributes over x (its spatial sizes >= 1), checked: k,
 * stride, dil [n_sp] and pads [2 * n_sp] as given (zero pads by default),
 * before any output size. */
typedef struct window_attrs {
    int n_sp;
    int64_t k[PTQ_SPATIAL], stride[PTQ_SPATIAL], dil[PTQ_SPATIAL], pads[2 * PTQ_SPATIAL];
    auto_pad_mode mode;
} window_attrs;

static ptq_status read_window_attrs(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *x, const int64_t *kernel,
                                    window_attrs *a)
{
    ptq_status st = PTQ_OK;
    const int n_sp = x->ndim - 2;
    if (x->ndim < 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input is rank %d; [N, C, spatial...] needs rank >= 3", x->ndim);
    if (n_sp > PTQ_SPATIAL)
        return ptq_op_unsupported(ctx, io, "%d spatial dims; at most %d are supported", n_sp, PTQ_SPATIAL);
    a->n_sp = n_sp;
    for (int i = 0; i < n_sp; i++) {
        if (x->dims[2 + i] < 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld, must be >= 1", i,
                               (long long)x->dims[2 + i]);
        a->k[i] = kernel ? kernel[i] : 0;
        a->stride[i] = 1;
        a->dil[i] = 1;
        a->pads[i] = a->pads[n_sp + i] = 0;
    }
    const ptq_attr *ks = ptq_node_attr(io->node, "kernel_shape");
    if (!ks && !kernel)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "attribute kernel_shape is required");
    PTQ_TRY(st, read_ints(ctx, io, "kernel_shape", n_sp, 1, a->k), done);
    for (int i = 0; kernel && i < n_sp; i++) {
        if (a->k[i] != kernel[i])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "kernel_shape[%d] = %lld but the weights' kernel is %lld", i,
                               (long long)a->k[i], (long long)kernel[i]);
        if (a->k[i] < 1 || a->k[i] > WINDOW_ATTR_MAX)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the weights' kernel[%d] = %lld, must be in [1, %lld]", i,
                               (long long)a->k[i], (long long)WINDOW_ATTR_MAX);
    }
    PTQ_TRY(st, read_ints(ctx, io, "strides", n_sp, 1, a->stride), done);
    PTQ_TRY(st, read_ints(ctx, io, "dilations", n_sp, 1, a->dil), done);
    PTQ_TRY(st, read_ints(ctx, io, "pads", 2 * n_sp, 0, a->pads), done);
    PTQ_TRY(st, read_auto_pad(ctx, io, &a->mode), done);
    if (a->mode != PAD_NOTSET)
        for (int i = 0; i < 2 * n_sp; i++)
            if (a->pads[i] != 0)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "explicit pads cannot be combined with auto_pad");
done:
    return st;
}

/* w for n_sp spatial axes, every slot the identity window until set. */
static void window_init(ptq_window *w, int n_sp)
{
    memset(w, 0, sizeof *w);
    w->n_spatial = n_sp;
    for (int s = 0; s < PTQ_SPATIAL; s++) {
        w->in[s] = w->out[s] = w->k[s] = w->stride[s] = w->dil[s] = 1;
        w->pad_lo[s] = w->pad_hi[s] = 0;
    }
}

/* Axis i (of a->n_sp) of w: sizes, pads and a's kernel, stride and
 * dilation; fails naming the node when the output is empty. */
static ptq_status window_set(ptq_ctx *ctx, const ptq_op_io *io, ptq_window *w, const window_attrs *a, int i,
                             int64_t in, int64_t out, int64_t lo, int64_t hi)
{
    const int s = PTQ_SPATIAL - a->n_sp + i;
    if (out < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld gives output size %lld", i,
                           (long long)in, (long long)out);
    w->in[s] = in;
    w->out[s] = out;
    w->k[s] = a->k[i];
    w->stride[s] = a->stride[i];
    w->dil[s] = a->dil[i];
    w->pad_lo[s] = lo;
    w->pad_hi[s] = hi;
    return PTQ_OK;
}

ptq_status ptq_window_parse(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *x, const int64_t *kernel,
                            unsigned flags, ptq_window *w)
{
    ptq_status st = PTQ_OK;
    window_attrs a;
    PTQ_TRY(st, read_window_attrs(ctx, io, x, kernel, &a), done);
    const int n_sp = a.n_sp;
    const int64_t *k = a.k, *stride = a.stride, *dil = a.dil, *pads = a.pads;
    const auto_pad_mode mode = a.mode;
    const int ceil_mode = (flags & PTQ_WINDOW_CEIL_MODE) && ptq_node_attr_int(io->node, "ceil_mode", 0) != 0;
    window_init(w, n_sp);
    for (int i = 0; i < n_sp; i++) {
        const int64_t in = x->dims[2 + i];
        const int64_t span = (k[i] - 1) * dil[i] + 1; /* input extent one window covers; < 2^62 (see above) */
        int64_t lo = pads[i], hi = pads[n_sp + i], out = 0, padded;
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
        PTQ_TRY(st, window_set(ctx, io, w, &a, i, in, out, lo, hi), done);
    }
done:
    return st;
}

/* a * b, or INT64_MAX when it passes int64 (a, b >= 0). */
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* The failure of ptq_window_check_work: channels x pos x fan x w's kernel taps, pos the positions named where
 * ("output", or "input" for a ConvTranspose's scatter, whose fan is output channels). */
static ptq_status work_fail(ptq_ctx *ctx, const ptq_op_io *io, const ptq_window *w, const int64_t *pos,
                           const char *where, int64_t channels, int64_t fan)
{
    char ks[96], ps[96];
    int64_t pd[PTQ_SPATIAL + 1];
    double work = (double)channels * (double)fan;
    pd[0] = channels;
    for (int i = 0; i < w->n_spatial; i++) {
        const int s = PTQ_SPATIAL - w->n_spatial + i;
        pd[1 + i] = pos[s];
        work *= (double)pos[s] * (double)w->k[s];
    }
    return ptq_op_unsupported(ctx, io,
                              "kernel [%s] over %lld %s channel%s with %s [%s] per image: %.3g taps, more than the "
                              "2^%d ptq runs in one node per image (kernel_shape, strides, dilations and pads set it)",
                              ptq_dims_str(w->k + PTQ_SPATIAL - w->n_spatial, w->n_spatial, ks, sizeof ks),
                              (long long)fan, pos == w->out ? "input" : "output", fan == 1 ? "" : "s", where,
                              ptq_dims_str(pd, w->n_spatial + 1, ps, sizeof ps), work, PTQ_WINDOW_WORK_LOG2);
}

/* channels x pos's positions x fan x w's kernel positions, saturating at INT64_MAX; 0 when channels x pos's
 * positions alone pass int64: an output int64 cannot count is ptq_window_output's to refuse (shape inference
 * calls it before anything runs), as it refuses it for any op. */
static int64_t window_work(const ptq_window *w, const int64_t *pos, int64_t channels, int64_t fan)
{
    int64_t elems = channels, work;
    for (int s = 0; s < PTQ_SPATIAL; s++)
        if (__builtin_mul_overflow(elems, pos[s], &elems))
            return 0;
    work = sat_mul(elems, fan);
    for (int s = 0; s < PTQ_SPATIAL; s++)
        work = sat_mul(work, w->k[s]);
    return work;
}

ptq_status ptq_window_check_work(ptq_ctx *ctx, const ptq_op_io *io, const ptq_window *w, int64_t channels,
                                 int64_t fan)
{
    if (window_work(w, w->out, channels, fan) <= PTQ_WINDOW_WORK_MAX)
        return PTQ_OK;
    return work_fail(ctx, io, w, w->out, "output", channels, fan);
}

/* ONNX floor(t / 2), t of either sign (onnx's reference splits pads with Python's //). */
static int64_t floor_half(int64_t t)
{
    return t >= 0 ? t / 2 : -((1 - t) / 2);
}

/* ConvTranspose's geometry over x: in = x's sizes, out = the output's: the
 * whole scatter (stride * (in - 1) + dilated kernel + output_padding)
 * less pad_lo at the start and pad_hi at the end, the pads given, or from
 * output_shape or auto_pad SAME (out = in * stride) as ONNX opset 11 splits
 * them (also applied to opset 1); a negative pad adds zero positions.
 * kernel: [rank-2] from the weights. Fails naming the node on bad
 * attributes, an empty output, or pads given beside output_shape (which
 * runtimes read differently). */
static ptq_status window_parse_transpose(ptq_ctx *ctx, const ptq_op_io *io, const ptq_tensor *x, const int64_t *kernel,
                                         ptq_window *w)
{
    ptq_status st = PTQ_OK;
    window_attrs a;
    int64_t out_pad[PTQ_SPATIAL] = {0}, out_shape[PTQ_SPATIAL] = {0};
    PTQ_TRY(st, read_window_attrs(ctx, io, x, kernel, &a), done);
    const int n_sp = a.n_sp;
    PTQ_TRY(st, read_ints(ctx, io, "output_padding", n_sp, 0, out_pad), done);
    PTQ_TRY(st, read_ints(ctx, io, "output_shape", n_sp, 1, out_shape), done);
    const int has_shape = ptq_node_attr(io->node, "output_shape") != NULL;
    for (int i = 0; has_shape && i < 2 * n_sp; i++)
        if (a.pads[i] != 0)
            return ptq_op_unsupported(ctx, io, "explicit pads together with output_shape: onnxruntime ignores the "
                                               "pads, ONNX's reference implementation keeps them; give one of the two");
    window_init(w, n_sp);
    for (int i = 0; i < n_sp; i++) {
        const int64_t in = x->dims[2 + i], stride = a.stride[i];
        const int64_t span = (a.k[i] - 1) * a.dil[i] + 1; /* < 2^62, as for Conv */
        const int64_t pad_max = stride > a.dil[i] ? stride : a.dil[i];
        const int same = a.mode == PAD_SAME_UPPER || a.mode == PAD_SAME_LOWER;
        int64_t full, out = has_shape ? out_shape[i] : 0, lo;
        if (out_pad[i] >= pad_max)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE,
                               "output_padding[%d] = %lld, must be less than max(stride, dilation) = %lld", i,
                               (long long)out_pad[i], (long long)pad_max);
        /* the whole scatter covers stride * (in - 1) + span positions, output_padding more */
        if (__builtin_mul_overflow(in - 1, stride, &full) || __builtin_add_overflow(full, span + out_pad[i], &full) ||
            (same && !has_shape && __builtin_mul_overflow(in, stride, &out)))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "spatial axis %d: input size %lld with stride %lld overflows",
                               i, (long long)in, (long long)stride);
        if (has_shape || same) {
            /* output_shape, else in * stride (SAME): what the whole scatter has more is cropped (what it has
               less is added as zeros), the odd one at the end for SAME_UPPER, at the start otherwise */
            const int64_t total = full - out;
            lo = a.mode == PAD_SAME_UPPER ? floor_half(total) : total - floor_half(total);
        } else {
            lo = a.pads[i];
            out = full - lo - a.pads[n_sp + i];
        }
        PTQ_TRY(st, window_set(ctx, io, w, &a, i, in, out, lo, full - out - lo), done);
    }
done:
    return st;
}

/* PTQ_ERR_UNSUPPORTED naming the attribute when io's node has one not in known [n_known]. */
static ptq_status known_attrs(ptq_ctx *ctx, const ptq_op_io *io, const char *const *known, int n_known)
{
    for (int a = 0; a < io->node->n_attrs; a++) { /* an attribute ptq would ignore changes the result */
        int k = 0;
        while (k < n_known && strcmp(known[k], io->node->attrs[a].name) != 0)
            k++;
        if (k == n_known)
            return ptq_op_fail(ctx, io, PTQ_ERR_UNSUPPORTED, "unknown %s attribute '%s'", io->node->op_type,
                               io->node->attrs[a].name);
    }
    return PTQ_OK;
}

/* io's node has no attribute outside known [n_known]; X, W and the
 * optional B are float32, W of X's rank. */
static ptq_status conv_check_inputs(ptq_ctx *ctx, const ptq_op_io *io, const char *const *known, int n_known)
{
    ptq_status st = PTQ_OK;
    const ptq_tensor *x = io->in[0], *w = io->in[1];
    char xs[96], ws[96];
    PTQ_TRY(st, known_attrs(ctx, io, known, n_known), done);
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 0), done);
    PTQ_TRY(st, ptq_op_need_float(ctx, io, 1), done);
    if (io->n_in > 2 && io->in[2])
        PTQ_TRY(st, ptq_op_need_float(ctx, io, 2), done);
    if (w->ndim != x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "weights %s must have the rank of the input %s",
                           ptq_dims_str(w->dims, w->ndim, ws, sizeof ws),
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
done:
    return st;
}

/* Group, channel counts and bias of X [N, C, ...] and W ([M, C/group, k...],
 * transposed [C, M/group, k...]) checked; p from them and the window win. */
static ptq_status conv_params_fill(ptq_ctx *ctx, const ptq_op_io *io, const ptq_window *win, int transposed,
                                   ptq_conv_params *p)
{
    const ptq_tensor *x = io->in[0], *w = io->in[1], *b = io->n_in > 2 ? io->in[2] : NULL;
    const int64_t group = ptq_node_attr_int(io->node, "group", 1), c_in = x->dims[1];
    int64_t c_w; /* W's dims[1] * group: the input channels of a Conv, the output channels of a ConvTranspose */
    char xs[96], ws[96];
    if (group < 1 || c_in % group != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "group %lld must divide the %lld input channels", (long long)group,
                           (long long)c_in);
    if (__builtin_mul_overflow(w->dims[1], group, &c_w))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "weights %s with group %lld: channel count overflows",
                           ptq_dims_str(w->dims, w->ndim, ws, sizeof ws), (long long)group);
    const int64_t c_out = transposed ? c_w : w->dims[0], c_want = transposed ? w->dims[0] : c_w;
    if (c_out % group != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "group %lld must divide the %lld output channels", (long long)group,
                           (long long)c_out);
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
    ptq_window_export(win, p->in, p->out, p->k, p->stride, p->dil, p->pad_lo, p->pad_hi);
    /* every output reads its group's input channels through the kernel (the ref's loops, a ConvTranspose's
       gather); a ConvTranspose also scatters every input through its group's output channels' kernels */
    ptq_status st = ptq_window_check_work(ctx, io, win, c_out, c_in / group);
    if (st == PTQ_OK && transposed && window_work(win, win->in, c_in, c_out / group) > PTQ_WINDOW_WORK_MAX)
        st = work_fail(ctx, io, win, win->in, "input", c_in, c_out / group);
    return st;
}

ptq_status ptq_conv_parse(ptq_ctx *ctx, const ptq_op_io *io, int transposed, ptq_conv_params *p)
{
    ptq_status st = PTQ_OK;
    ptq_window win;
    /* the last two are ConvTranspose's own */
    static const char *const known[] = {"auto_pad", "dilations", "group",          "kernel_shape",
                                        "pads",     "strides",   "output_padding", "output_shape"};
    const int n_known = transposed ? 8 : 6;
    const ptq_tensor *x = io->in[0], *w = io->in[1];
    PTQ_TRY(st, conv_check_inputs(ctx, io, known, n_known), done);
    if (transposed)
        PTQ_TRY(st, window_parse_transpose(ctx, io, x, w->dims + 2, &win), done);
    else
        PTQ_TRY(st, ptq_window_parse(ctx, io, x, w->dims + 2, 0, &win), done);
    PTQ_TRY(st, conv_params_fill(ctx, io, &win, transposed, p), done);
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
