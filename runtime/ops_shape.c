/* Byte-copy ops on any fixed-size dtype: Flatten, Reshape (shape read on the
 * host), Squeeze, Unsqueeze (axes read on the host), Transpose (kernels/ref/transpose.c), Concat, Identity, Dropout
 * (inference: a copy, an all-true mask) and Constant; the Transpose, Concat
 * and Dropout parsers serve every backend. Covered by tests/test_ops_shape.c
 * and the ONNX conformance run. */
#include <string.h>

#include "runtime/op_util.h"

/* Output 0 = input 0's bytes (the shape ops that only relabel dims). */
static ptq_status copy_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    size_t n_bytes = ptq_tensor_bytes(io->in[0]);
    (void)ctx;
    if (n_bytes && io->out[0]->data != io->in[0]->data)
        memcpy(io->out[0]->data, io->in[0]->data, n_bytes);
    return PTQ_OK;
}

/* copy_run's bytes over the CPU pool. */
static ptq_status copy_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    (void)ctx;
    if (io->out[0]->data != io->in[0]->data)
        ptq_k_copy_cpu(ptq_tensor_bytes(io->in[0]), io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status flatten_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    int64_t axis = ptq_node_attr_int(io->node, "axis", 1);
    int64_t ax = axis < 0 ? axis + x->ndim : axis;
    if (ax < 0 || ax > x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis,
                           x->ndim);
    io->out[0]->dtype = x->dtype;
    io->out[0]->ndim = 2;
    io->out[0]->dims[0] = ptq_dims_prod(x->dims, 0, (int)ax);
    io->out[0]->dims[1] = ptq_dims_prod(x->dims, (int)ax, x->ndim);
    return PTQ_OK;
}

/* Reshape's target: the `shape` attribute before opset 5, else input 1
 * (int64, 1-D, on the host). 0 copies the input dim (unless allowzero),
 * one -1 is inferred. */
static ptq_status reshape_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    const int64_t *shape;
    int64_t n;
    if (io->graph->opset < 5) {
        const ptq_attr *a = ptq_node_attr(io->node, "shape");
        if (!a || a->type != PTQ_ATTR_INTS)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the shape attribute is missing");
        shape = a->ints;
        n = a->n;
    } else {
        if ((st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
            return st;
        const ptq_tensor *s = io->in[1];
        if (s->dtype != PTQ_DT_INT64 || s->ndim != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the shape input must be 1-D int64, got %s of rank %d",
                               ptq_dtype_name(s->dtype), s->ndim);
        shape = s->data;
        n = s->dims[0];
    }
    if (n > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "target rank %lld exceeds %d", (long long)n, PTQ_MAX_DIMS);
    int allowzero = ptq_node_attr_int(io->node, "allowzero", 0) != 0;
    int64_t dims[PTQ_MAX_DIMS], known = 1, numel = ptq_tensor_numel(x);
    int infer_at = -1, has_zero = 0, empty = 0;
    char buf[96];
    for (int i = 0; i < (int)n; i++) {
        dims[i] = shape[i];
        if (shape[i] == -1) {
            if (infer_at >= 0)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (shape[i] < -1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "shape[%d] is %lld", i, (long long)shape[i]);
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->ndim)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "shape[%d] is 0 but the input has rank %d", i, x->ndim);
            dims[i] = x->dims[i];
        }
        has_zero |= shape[i] == 0;
        /* the product of the non-zero dims must fit, whatever their order, even when a 0 empties the tensor */
        if (dims[i] == 0)
            empty = 1;
        else if (__builtin_mul_overflow(known, dims[i], &known))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE,
                               "shape[%d] = %lld: the shape has more elements than int64 counts", i, (long long)dims[i]);
    }
    if (empty)
        known = 0;
    if (infer_at >= 0) {
        if (allowzero && has_zero)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "allowzero=1 with both 0 and -1 in the shape");
        if (known == 0 || numel % known != 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "cannot infer the -1 of the shape from input %s",
                               ptq_dims_str(x->dims, x->ndim, buf, sizeof buf));
        dims[infer_at] = numel / known;
    } else if (known != numel) {
        char want[96];
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s",
                           ptq_dims_str(x->dims, x->ndim, buf, sizeof buf), (long long)numel,
                           ptq_dims_str(dims, (int)n, want, sizeof want));
    }
    io->out[0]->dtype = x->dtype;
    io->out[0]->ndim = (int)n;
    memcpy(io->out[0]->dims, dims, (size_t)n * sizeof dims[0]);
    return PTQ_OK;
}

/* Checks that perm is a permutation. */
ptq_status ptq_op_transpose_perm(ptq_ctx *ctx, const ptq_op_io *io, int64_t *perm)
{
    const ptq_tensor *x = io->in[0];
    const ptq_attr *a = ptq_node_attr(io->node, "perm");
    int seen[PTQ_MAX_DIMS] = {0};
    if (a && a->type != PTQ_ATTR_INTS)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the perm attribute is not a list of ints");
    if (a && a->n != x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "perm has %lld entries for rank %d", (long long)a->n, x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        perm[d] = a ? a->ints[d] : x->ndim - 1 - d;
        if (perm[d] < 0 || perm[d] >= x->ndim || seen[perm[d]]++)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "perm is not a permutation of 0..%d", x->ndim - 1);
    }
    return PTQ_OK;
}

static ptq_status transpose_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t perm[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_transpose_perm(ctx, io, perm)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    io->out[0]->dtype = x->dtype;
    io->out[0]->ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++)
        io->out[0]->dims[d] = x->dims[perm[d]];
    return PTQ_OK;
}

static ptq_status transpose_with(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    int64_t perm[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_transpose_perm(ctx, io, perm);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    (fast ? ptq_k_transpose_cpu : ptq_k_transpose_ref)(ptq_dtype_size(x->dtype), x->ndim, x->dims, perm, x->data,
                                                       io->out[0]->data);
    return PTQ_OK;
}

static ptq_status transpose_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    return transpose_with(ctx, io, 0);
}

static ptq_status transpose_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return transpose_with(ctx, io, 1);
}

/* The axis attribute, made non-negative; required from opset 4 on (1 before). */
ptq_status ptq_op_concat_axis(ptq_ctx *ctx, const ptq_op_io *io, int *axis)
{
    const ptq_attr *a = ptq_node_attr(io->node, "axis");
    if (!a && io->graph->opset >= 4)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the axis attribute is missing");
    int64_t ax = a ? a->i : 1, r = io->in[0]->ndim;
    if (ax < -r || ax >= r)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %lld", (long long)ax,
                           (long long)r);
    *axis = (int)(ax < 0 ? ax + r : ax);
    return PTQ_OK;
}

static ptq_status concat_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = PTQ_OK;
    int axis;
    char s0[96], si[96];
    if (io->n_in < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "no inputs");
    for (int i = 0; i < io->n_in; i++)
        if ((st = ptq_op_need_sized(ctx, io, i)) != PTQ_OK)
            return st;
    if ((st = ptq_op_concat_axis(ctx, io, &axis)) != PTQ_OK)
        return st;
    const ptq_tensor *x0 = io->in[0];
    ptq_op_same_shape(io->out[0], x0);
    for (int i = 1; i < io->n_in; i++) {
        const ptq_tensor *xi = io->in[i];
        if (xi->dtype != x0->dtype)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input %d is %s but input 0 is %s", i,
                               ptq_dtype_name(xi->dtype), ptq_dtype_name(x0->dtype));
        int fits = xi->ndim == x0->ndim;
        for (int d = 0; fits && d < x0->ndim; d++)
            fits = d == axis || xi->dims[d] == x0->dims[d];
        if (!fits)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d (%s) does not fit input 0 (%s) along axis %d", i,
                               ptq_dims_str(xi->dims, xi->ndim, si, sizeof si),
                               ptq_dims_str(x0->dims, x0->ndim, s0, sizeof s0), axis);
        if (__builtin_add_overflow(io->out[0]->dims[axis], xi->dims[axis], &io->out[0]->dims[axis]))
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "the inputs' dims along axis %d add up to more than int64 "
                               "counts", axis);
    }
    return PTQ_OK;
}

/* y: [outer, sum of the inputs' axis dims, inner]; each input's [outer, dim, inner] block is copied in turn. */
static ptq_status concat_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis;
    ptq_status st = ptq_op_concat_axis(ctx, io, &axis);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x0 = io->in[0];
    size_t inner_bytes = (size_t)ptq_dims_prod(x0->dims, axis + 1, x0->ndim) * ptq_dtype_size(x0->dtype);
    int64_t outer = ptq_dims_prod(x0->dims, 0, axis);
    unsigned char *dst = io->out[0]->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < io->n_in; i++) {
            size_t n_bytes = (size_t)io->in[i]->dims[axis] * inner_bytes;
            if (n_bytes)
                memcpy(dst, (const unsigned char *)io->in[i]->data + (size_t)o * n_bytes, n_bytes);
            dst += n_bytes;
        }
    }
    return PTQ_OK;
}

static ptq_status identity_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

/* Dropout runs in inference mode: only a training_mode input that is true
 * with a ratio above 0 would change the output, and that is refused. An
 * omitted mask output may still get a scratch tensor, so the node decides. */
ptq_status ptq_op_dropout_check(ptq_ctx *ctx, const ptq_op_io *io, int *has_mask)
{
    const ptq_tensor *mode = io->n_in > 2 ? io->in[2] : NULL, *ratio = io->n_in > 1 ? io->in[1] : NULL;
    *has_mask = io->n_out > 1 && io->out[1] && io->node->outputs[1] >= 0;
    /* before opset 7 the mode is the is_test attribute, 0 (training: random drops) unless set */
    if (io->graph && io->graph->opset > 0 && io->graph->opset < 7 && ptq_node_attr_int(io->node, "is_test", 0) == 0 &&
        ptq_node_attr_float(io->node, "ratio", 0.5f) != 0.0f)
        return ptq_op_unsupported(ctx, io, "is_test=0 (training mode, the default before opset 7: random drops); "
                                  "ptq runs inference only (is_test=1)");
    if (!mode)
        return PTQ_OK;
    if (mode->dtype != PTQ_DT_BOOL || ptq_tensor_numel(mode) != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "training_mode must be a bool scalar");
    if (!*(const unsigned char *)mode->data)
        return PTQ_OK;
    double r = 0.5;
    if (ratio && ratio->dtype == PTQ_DT_FLOAT && ptq_tensor_numel(ratio) == 1)
        r = *(const float *)ratio->data;
    else if (ratio && ratio->dtype == PTQ_DT_DOUBLE && ptq_tensor_numel(ratio) == 1)
        r = *(const double *)ratio->data;
    else if (ratio)
        return ptq_op_unsupported(ctx, io, "training_mode is true and the ratio is %s of %lld elements",
                                  ptq_dtype_name(ratio->dtype), (long long)ptq_tensor_numel(ratio));
    if (r != 0.0)
        return ptq_op_unsupported(ctx, io, "training_mode is true with ratio %g; ptq runs inference only", r);
    return PTQ_OK;
}

/* Output 0 is the input; the optional mask is bool from opset 10 on, the
 * input's dtype before (only float32 then). */
static ptq_status dropout_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int has_mask;
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_dropout_check(ctx, io, &has_mask)) != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    if (has_mask) {
        ptq_op_same_shape(io->out[1], io->in[0]);
        if (io->graph->opset >= 10)
            io->out[1]->dtype = PTQ_DT_BOOL;
        else if (io->in[0]->dtype != PTQ_DT_FLOAT)
            return ptq_op_unsupported(ctx, io, "a mask output of %s before opset 10",
                                      ptq_dtype_name(io->in[0]->dtype));
    }
    return PTQ_OK;
}

static ptq_status dropout_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int has_mask;
    ptq_status st = ptq_op_dropout_check(ctx, io, &has_mask);
    if (st != PTQ_OK || (st = copy_run(ctx, io)) != PTQ_OK)
        return st;
    if (has_mask) {
        ptq_tensor *mask = io->out[1];
        int64_t n = ptq_tensor_numel(mask);
        if (mask->dtype == PTQ_DT_BOOL) {
            memset(mask->data, 1, (size_t)n);
        } else {
            float *m = mask->data;
            for (int64_t i = 0; i < n; i++)
                m[i] = 1.0f;
        }
    }
    return PTQ_OK;
}

/* A value_* attribute of another type than its name says: its count is of the values it holds, so reading the
 * named kind would read past them (value_ints holding floats) or give 0 (value_float holding an int). */
static ptq_status constant_mistyped(ptq_ctx *ctx, const ptq_op_io *io, const ptq_attr *a, ptq_attr_type want)
{
    return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the %s attribute is of type %s, not %s", a->name,
                       ptq_op_attr_type_name(a->type), ptq_op_attr_type_name(want));
}

/* Where a Constant node's value comes from: shape/dtype in *shape, bytes at *data. */
static ptq_status constant_source(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *shape, const void **data)
{
    const ptq_node *n = io->node;
    const ptq_attr *a;
    memset(shape, 0, sizeof *shape);
    if ((a = ptq_node_attr(n, "value")) != NULL) {
        if (a->type != PTQ_ATTR_TENSOR || a->tensor < 0 || a->tensor >= io->graph->n_values)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the value attribute is not a tensor");
        const ptq_value *v = &io->graph->values[a->tensor];
        if (ptq_dtype_size(v->dtype) == 0)
            return ptq_op_unsupported(ctx, io, "value of dtype %s", ptq_dtype_name(v->dtype));
        shape->dtype = v->dtype;
        shape->ndim = v->ndim;
        memcpy(shape->dims, v->dims, sizeof shape->dims);
        if (v->ndim < 0 || v->n_bytes != ptq_tensor_bytes(shape))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "value holds %zu bytes for %s of rank %d", v->n_bytes,
                               ptq_dtype_name(v->dtype), v->ndim);
        *data = v->data;
    } else if ((a = ptq_node_attr(n, "value_float")) != NULL) {
        if (a->type != PTQ_ATTR_FLOAT)
            return constant_mistyped(ctx, io, a, PTQ_ATTR_FLOAT);
        shape->dtype = PTQ_DT_FLOAT;
        *data = &a->f;
    } else if ((a = ptq_node_attr(n, "value_floats")) != NULL) {
        if (a->type != PTQ_ATTR_FLOATS)
            return constant_mistyped(ctx, io, a, PTQ_ATTR_FLOATS);
        shape->dtype = PTQ_DT_FLOAT;
        shape->ndim = 1;
        shape->dims[0] = a->n;
        *data = a->floats;
    } else if ((a = ptq_node_attr(n, "value_int")) != NULL) {
        if (a->type != PTQ_ATTR_INT)
            return constant_mistyped(ctx, io, a, PTQ_ATTR_INT);
        shape->dtype = PTQ_DT_INT64;
        *data = &a->i;
    } else if ((a = ptq_node_attr(n, "value_ints")) != NULL) {
        if (a->type != PTQ_ATTR_INTS)
            return constant_mistyped(ctx, io, a, PTQ_ATTR_INTS);
        shape->dtype = PTQ_DT_INT64;
        shape->ndim = 1;
        shape->dims[0] = a->n;
        *data = a->ints;
    } else {
        static const char *const refused[] = {"sparse_value", "value_string", "value_strings"};
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (ptq_node_attr(n, refused[i]))
                return ptq_op_unsupported(ctx, io, "a %s attribute", refused[i]);
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "no value attribute");
    }
    return PTQ_OK;
}

static ptq_status constant_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_tensor shape;
    const void *data = NULL;
    ptq_status st = constant_source(ctx, io, &shape, &data);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], &shape);
    return st;
}

static ptq_status constant_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_tensor shape;
    const void *data = NULL;
    ptq_status st = constant_source(ctx, io, &shape, &data);
    size_t n_bytes = ptq_tensor_bytes(&shape);
    if (st == PTQ_OK && n_bytes)
        memcpy(io->out[0]->data, data, n_bytes);
    return st;
}

/* Squeeze / Unsqueeze axes: the `axes` attribute before opset 13, else the
 * optional int64 input 1 (on the host). n_axes = -1 when none are given. */
static ptq_status squeeze_axes(ptq_ctx *ctx, const ptq_op_io *io, int64_t *axes, int64_t *n_axes)
{
    const int64_t *src;
    int64_t n;
    *n_axes = -1;
    PTQ_TRY_RET(ptq_op_axes(ctx, io, 13, &src, &n));
    if (n > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "%lld axes exceed %d", (long long)n, PTQ_MAX_DIMS);
    for (int64_t i = 0; i < n; i++)
        axes[i] = src[i];
    *n_axes = n;
    return PTQ_OK;
}

/* Squeeze: drops the given size-1 axes (every size-1 axis when none are given). */
static ptq_status squeeze_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t axes[PTQ_MAX_DIMS], n_axes;
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = squeeze_axes(ctx, io, axes, &n_axes)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    int drop[PTQ_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n_axes; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (ax < 0 || ax >= x->ndim || x->dims[ax] != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is not a size-1 axis of a rank-%d input",
                               (long long)axes[i], x->ndim);
        drop[ax] = 1;
    }
    ptq_tensor *y = io->out[0];
    y->dtype = x->dtype;
    y->ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (!(n_axes < 0 ? x->dims[d] == 1 : drop[d]))
            y->dims[y->ndim++] = x->dims[d];
    return PTQ_OK;
}

/* Unsqueeze: inserts size-1 axes at the given output positions. */
static ptq_status unsqueeze_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t axes[PTQ_MAX_DIMS], n_axes;
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = squeeze_axes(ctx, io, axes, &n_axes)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (n_axes < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axes are required");
    const int64_t rank = x->ndim + n_axes;
    if (rank > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "output rank %lld exceeds %d", (long long)rank, PTQ_MAX_DIMS);
    int add[PTQ_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n_axes; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
        if (ax < 0 || ax >= rank || add[ax])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range or repeated for output rank %lld",
                               (long long)axes[i], (long long)rank);
        add[ax] = 1;
    }
    ptq_tensor *y = io->out[0];
    y->dtype = x->dtype;
    y->ndim = (int)rank;
    for (int d = 0, j = 0; d < rank; d++)
        y->dims[d] = add[d] ? 1 : x->dims[j++];
    return PTQ_OK;
}

const ptq_op_def ptq_op_Flatten = {PTQ_OP_TRAITS(FLATTEN), 1, 0, flatten_infer, copy_run, copy_run_cpu, 0, 0};
const ptq_op_def ptq_op_Reshape = {PTQ_OP_TRAITS(RESHAPE), 1, 1u << 1, reshape_infer, copy_run, copy_run_cpu, 0, 0};
const ptq_op_def ptq_op_Transpose = {PTQ_OP_TRAITS(TRANSPOSE), 1, 0, transpose_infer, transpose_run, transpose_run_cpu,
                                      0, 0};
const ptq_op_def ptq_op_Concat = {PTQ_OP_TRAITS(CONCAT), 1, 0, concat_infer, concat_run, NULL, 0, 0};
const ptq_op_def ptq_op_Squeeze = {PTQ_OP_TRAITS(SQUEEZE), 1, 1u << 1, squeeze_infer, copy_run, copy_run_cpu, 0, 0};
const ptq_op_def ptq_op_Unsqueeze = {PTQ_OP_TRAITS(UNSQUEEZE), 1, 1u << 1, unsqueeze_infer, copy_run, copy_run_cpu,
                                      0, 0};
const ptq_op_def ptq_op_Identity = {PTQ_OP_TRAITS(IDENTITY), 1, 0, identity_infer, copy_run, copy_run_cpu, 0, 0};
const ptq_op_def ptq_op_Dropout = {PTQ_OP_TRAITS(DROPOUT), 1, 1u << 1 | 1u << 2, dropout_infer, dropout_run, NULL, 0,
                                   0};
const ptq_op_def ptq_op_Constant = {PTQ_OP_TRAITS(CONSTANT), 1, 0, constant_infer, constant_run, NULL, 0, 0};
