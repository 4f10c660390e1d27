/* The index and mask arithmetic of transformer exports: Split (the split
 * attribute before opset 13, a host input from 13, num_outputs from 18),
 * Where (bool condition, numpy broadcasting), Expand (the shape as a host
 * input), ConstantOfShape (the shape as a host input; a fill by Expand's
 * kernel), Range (scalar host inputs), Equal, Greater, Less, GreaterOrEqual and LessOrEqual (bool result; T5's
 * relative position buckets compare int64 positions), Not, And, Or and Xor (bool), Trilu (any fixed-size dtype; k a
 * host input: torch.tril/triu, GPT-style causal masks) and Mod (fmod 0: the divisor's sign, integers; fmod 1: the
 * dividend's) on the dtypes ONNX allows, float16 and strings excepted, through kernels/ref/index.c, which
 * is their CPU path too. Like Shape and Gather they are folded to constants
 * at shape inference when their inputs are known. The CUDA backend runs
 * Split, and Where and Expand on float32, through the layouts below
 * (runtime/backend_cuda.c); the others it hands to the CPU. Covered by
 * tests/test_ops_transformer.c and the ONNX conformance run. */
#include <math.h>
#include <string.h>

#include "runtime/op_util.h"

#define RANGE_MAX_ELEMS ((int64_t)1 << 40) /* a longer Range is a hostile input */

/* Inputs 0 and 1 are present, of one dtype with a kernel kind (*kind). */
static ptq_status need_same_kind(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *kind)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    const ptq_dtype dt = io->in[0]->dtype;
    if (io->in[1]->dtype != dt)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "inputs are %s and %s; they must have one dtype",
                           ptq_dtype_name(dt), ptq_dtype_name(io->in[1]->dtype));
    if (!ptq_op_cast_kind(dt, kind))
        return ptq_op_unsupported(ctx, io, "dtype %s; supported: float32, float64, bool and the integers",
                                  ptq_dtype_name(dt));
    return PTQ_OK;
}

/* Output 0 gets dtype dt and the broadcast shape of bc. */
static void set_bcast_out(ptq_tensor *y, ptq_dtype dt, const ptq_bcast *bc)
{
    y->dtype = dt;
    y->ndim = bc->ndim;
    memcpy(y->dims, bc->out_dims, (size_t)bc->ndim * sizeof bc->out_dims[0]);
}

/* numpy broadcasting of inputs 0 and 1 (a failure names the node). */
static ptq_status pair_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc)
{
    ptq_status st = ptq_op_bcast(ctx, io->in[0], io->in[1], bc);
    return st == PTQ_OK ? st : ptq_op_fail(ctx, io, st, "%s", ctx->msg);
}

/* ---- Split ---- */

ptq_status ptq_op_split_plan(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int64_t *sizes)
{
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    const int n_out = io->n_out;
    if (n_out < 1 || n_out > PTQ_SPLIT_MAX_OUTPUTS)
        return ptq_op_unsupported(ctx, io, "%d outputs; ptq splits into 1 to %d", n_out, PTQ_SPLIT_MAX_OUTPUTS);
    const int64_t ax = ptq_node_attr_int(io->node, "axis", 0);
    if (ax < -x->ndim || ax >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)ax, x->ndim);
    *axis = (int)(ax < 0 ? ax + x->ndim : ax);
    const int64_t dim = x->dims[*axis];
    const ptq_attr *a = io->graph->opset < 13 ? ptq_node_attr(io->node, "split") : NULL;
    const ptq_tensor *t = io->graph->opset >= 13 && io->n_in > 1 ? io->in[1] : NULL;
    int64_t n_given = -1, total = 0;
    if (a) {
        if (a->type != PTQ_ATTR_INTS)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the split attribute is not a list of ints");
        n_given = a->n;
    } else if (t) {
        if ((t->dtype != PTQ_DT_INT64 && t->dtype != PTQ_DT_INT32) || t->ndim != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "split must be 1-D int64, got %s of rank %d",
                               ptq_dtype_name(t->dtype), t->ndim);
        n_given = t->dims[0];
    }
    if (n_given >= 0) {
        if (n_given != n_out)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "split has %lld sizes for %d outputs", (long long)n_given,
                               n_out);
        for (int j = 0; j < n_out; j++) {
            sizes[j] = a ? a->ints[j]
                         : t->dtype == PTQ_DT_INT64 ? ((const int64_t *)t->data)[j] : ((const int32_t *)t->data)[j];
            if (sizes[j] < 0)
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "split size %d is %lld", j, (long long)sizes[j]);
            if (__builtin_add_overflow(total, sizes[j], &total)) /* sizes from a file: a wrapped sum may match */
                return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "split sizes add up to more than int64 counts");
        }
        if (total != dim)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "split sizes add up to %lld; axis %d has %lld",
                               (long long)total, *axis, (long long)dim);
        return PTQ_OK;
    }
    /* equal parts: from opset 18 num_outputs of ceil(dim / n), the last smaller; before, n that divide dim */
    const ptq_attr *num = io->graph->opset >= 18 ? ptq_node_attr(io->node, "num_outputs") : NULL;
    if (num && (num->type != PTQ_ATTR_INT || num->i != n_out))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "num_outputs %lld for %d outputs", (long long)num->i, n_out);
    if (!num && dim % n_out != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %d of size %lld does not split into %d equal parts", *axis,
                           (long long)dim, n_out);
    const int64_t chunk = (dim + n_out - 1) / n_out;
    for (int j = 0; j < n_out; j++) {
        sizes[j] = dim - total < chunk ? dim - total : chunk;
        total += sizes[j];
    }
    return PTQ_OK;
}

static ptq_status split_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis;
    int64_t sizes[PTQ_SPLIT_MAX_OUTPUTS];
    ptq_status st = ptq_op_split_plan(ctx, io, &axis, sizes);
    if (st != PTQ_OK)
        return st;
    for (int j = 0; j < io->n_out; j++) {
        ptq_op_same_shape(io->out[j], io->in[0]);
        io->out[j]->dims[axis] = sizes[j];
    }
    return PTQ_OK;
}

/* x viewed as [outer, dim, inner]: output j takes its band of sizes[j] along dim from each outer block. */
static ptq_status split_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis;
    int64_t sizes[PTQ_SPLIT_MAX_OUTPUTS];
    ptq_status st = ptq_op_split_plan(ctx, io, &axis, sizes);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    const size_t inner_bytes = (size_t)ptq_dims_prod(x->dims, axis + 1, x->ndim) * ptq_dtype_size(x->dtype);
    const int64_t outer = ptq_dims_prod(x->dims, 0, axis);
    const unsigned char *src = x->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int j = 0; j < io->n_out; j++) {
            const size_t n_bytes = (size_t)sizes[j] * inner_bytes;
            if (n_bytes)
                memcpy((unsigned char *)io->out[j]->data + (size_t)o * n_bytes, src, n_bytes);
            src += n_bytes;
        }
    }
    return PTQ_OK;
}

/* ---- Where ---- */

ptq_status ptq_op_where_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *shape, ptq_bcast *per_input)
{
    ptq_status st = PTQ_OK;
    ptq_bcast bc;
    for (int i = 0; i < 3; i++)
        if ((st = ptq_op_need_sized(ctx, io, i)) != PTQ_OK)
            return st;
    if (io->in[0]->dtype != PTQ_DT_BOOL)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "condition is %s; it must be bool",
                           ptq_dtype_name(io->in[0]->dtype));
    if (io->in[1]->dtype != io->in[2]->dtype)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "X is %s and Y is %s; they must have one dtype",
                           ptq_dtype_name(io->in[1]->dtype), ptq_dtype_name(io->in[2]->dtype));
    if ((st = ptq_op_bcast(ctx, io->in[1], io->in[2], &bc)) != PTQ_OK)
        return ptq_op_fail(ctx, io, st, "%s", ctx->msg);
    memset(shape, 0, sizeof *shape);
    set_bcast_out(shape, io->in[1]->dtype, &bc);
    if ((st = ptq_op_bcast(ctx, io->in[0], shape, &bc)) != PTQ_OK)
        return ptq_op_fail(ctx, io, st, "condition: %s", ctx->msg);
    set_bcast_out(shape, io->in[1]->dtype, &bc);
    for (int i = 0; per_input && i < 3; i++)
        ptq_op_bcast(ctx, io->in[i], shape, &per_input[i]); /* fits: shape covers every input */
    return PTQ_OK;
}

static ptq_status where_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_tensor shape;
    ptq_status st = ptq_op_where_layout(ctx, io, &shape, NULL);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], &shape);
    return st;
}

static ptq_status where_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_tensor shape;
    ptq_bcast in_bc[3];
    ptq_status st = ptq_op_where_layout(ctx, io, &shape, in_bc);
    if (st == PTQ_OK)
        ptq_k_where_ref(ptq_dtype_size(shape.dtype), shape.ndim, shape.dims, in_bc[0].a_stride, in_bc[1].a_stride,
                        in_bc[2].a_stride, io->in[0]->data, io->in[1]->data, io->in[2]->data, io->out[0]->data);
    return st;
}

/* ---- Expand ---- */

/* The broadcast of from to the shape input i gives (1-D int64, entries >= 0), in *bc (Expand, ConstantOfShape). */
static ptq_status bcast_to_shape(ptq_ctx *ctx, const ptq_op_io *io, int i, const ptq_tensor *from, ptq_bcast *bc)
{
    ptq_tensor shape;
    int64_t n = -1;
    memset(&shape, 0, sizeof shape);
    ptq_status st = ptq_op_int_list(ctx, io, i, shape.dims, &n);
    if (st != PTQ_OK)
        return st;
    shape.ndim = (int)n;
    for (int d = 0; d < shape.ndim; d++)
        if (shape.dims[d] < 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "shape entry %d is %lld", d, (long long)shape.dims[d]);
    if ((st = ptq_op_bcast(ctx, from, &shape, bc)) != PTQ_OK)
        return ptq_op_fail(ctx, io, st, "%s", ctx->msg);
    return PTQ_OK;
}

ptq_status ptq_op_expand_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc)
{
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    return bcast_to_shape(ctx, io, 1, io->in[0], bc);
}

static ptq_status expand_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_expand_layout(ctx, io, &bc);
    if (st == PTQ_OK)
        set_bcast_out(io->out[0], io->in[0]->dtype, &bc);
    return st;
}

static ptq_status expand_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = ptq_op_expand_layout(ctx, io, &bc);
    if (st == PTQ_OK)
        ptq_k_expand_ref(ptq_dtype_size(io->in[0]->dtype), &bc, io->in[0]->data, io->out[0]->data);
    return st;
}

/* ---- ConstantOfShape ---- */

/* The fill value (the value attribute, one element of a dtype ptq runs; float32 0 without it): its
 * dtype in value (rank 0, no data), its bytes at *fill, and its broadcast to the shape given by input
 * 0 (1-D int64, entries >= 0) in *bc. */
static ptq_status constant_of_shape_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *value, const void **fill,
                                           ptq_bcast *bc)
{
    static const float zero = 0.0f;
    ptq_cast_kind kind = PTQ_CAST_F32;
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    memset(value, 0, sizeof *value);
    value->dtype = PTQ_DT_FLOAT;
    *fill = &zero;
    const ptq_attr *a = ptq_node_attr(io->node, "value");
    if (a) {
        if (a->type != PTQ_ATTR_TENSOR || a->tensor < 0 || a->tensor >= io->graph->n_values)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the value attribute is not a tensor");
        const ptq_value *v = &io->graph->values[a->tensor];
        if (!ptq_op_cast_kind(v->dtype, &kind))
            return ptq_op_unsupported(ctx, io, "value of dtype %s; supported: float32, float64, bool and the integers",
                                      ptq_dtype_name(v->dtype));
        if (v->ndim < 0 || ptq_dims_prod(v->dims, 0, v->ndim) != 1 || v->n_bytes != ptq_dtype_size(v->dtype))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "value must hold one element, got %zu bytes of %s of rank %d",
                               v->n_bytes, ptq_dtype_name(v->dtype), v->ndim);
        value->dtype = v->dtype;
        *fill = v->data;
    }
    return bcast_to_shape(ctx, io, 0, value, bc);
}

static ptq_status constant_of_shape_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_tensor value;
    const void *fill = NULL;
    ptq_bcast bc;
    ptq_status st = constant_of_shape_layout(ctx, io, &value, &fill, &bc);
    if (st == PTQ_OK)
        set_bcast_out(io->out[0], value.dtype, &bc);
    return st;
}

static ptq_status constant_of_shape_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_tensor value;
    const void *fill = NULL;
    ptq_bcast bc;
    ptq_status st = constant_of_shape_layout(ctx, io, &value, &fill, &bc);
    if (st == PTQ_OK)
        ptq_k_expand_ref(ptq_dtype_size(value.dtype), &bc, fill, io->out[0]->data);
    return st;
}

/* ---- Range ---- */

/* The kind of Range's three scalar inputs and its length, max(ceil((limit - start) / delta), 0). */
static ptq_status range_len(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *kind, int64_t *n)
{
    ptq_status st = PTQ_OK;
    static const char *const names[3] = {"start", "limit", "delta"};
    for (int i = 0; i < 3; i++) {
        if ((st = ptq_op_need_input(ctx, io, i)) != PTQ_OK)
            return st;
        if (io->in[i]->dtype != io->in[0]->dtype || ptq_tensor_numel(io->in[i]) != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "%s must be a scalar of start's dtype %s, got %s of %lld "
                               "elements", names[i], ptq_dtype_name(io->in[0]->dtype),
                               ptq_dtype_name(io->in[i]->dtype), (long long)ptq_tensor_numel(io->in[i]));
    }
    const ptq_dtype dt = io->in[0]->dtype;
    if ((dt != PTQ_DT_FLOAT && dt != PTQ_DT_DOUBLE && dt != PTQ_DT_INT16 && dt != PTQ_DT_INT32 &&
         dt != PTQ_DT_INT64) || !ptq_op_cast_kind(dt, kind))
        return ptq_op_unsupported(ctx, io, "dtype %s; Range takes float32, float64, int16, int32 and int64",
                                  ptq_dtype_name(dt));
    const void *s = io->in[0]->data, *l = io->in[1]->data, *d = io->in[2]->data; /* floats */
    double len;
    if (dt == PTQ_DT_FLOAT) {
        len = ceilf((*(const float *)l - *(const float *)s) / *(const float *)d);
    } else if (dt == PTQ_DT_DOUBLE) {
        len = ceil((*(const double *)l - *(const double *)s) / *(const double *)d);
    } else {
        const int64_t si = ptq_op_int_scalar(io->in[0]), li = ptq_op_int_scalar(io->in[1]),
                      di = ptq_op_int_scalar(io->in[2]);
        if (di == 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "delta is 0");
        /* the span in unsigned arithmetic, exact even from INT64_MIN to INT64_MAX */
        const uint64_t span = di > 0 ? (li > si ? (uint64_t)li - (uint64_t)si : 0)
                                     : (si > li ? (uint64_t)si - (uint64_t)li : 0);
        const uint64_t step = di > 0 ? (uint64_t)di : 0 - (uint64_t)di;
        len = (double)(span / step + (span % step != 0));
    }
    if (!(len <= (double)RANGE_MAX_ELEMS))
        return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "the range has %g elements (delta 0 or NaN, or more than 2^40)",
                           len);
    *n = len > 0 ? (int64_t)len : 0;
    return PTQ_OK;
}

static ptq_status range_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_cast_kind kind = PTQ_CAST_F32;
    int64_t n = 0;
    ptq_status st = range_len(ctx, io, &kind, &n);
    if (st != PTQ_OK)
        return st;
    io->out[0]->dtype = io->in[0]->dtype;
    io->out[0]->ndim = 1;
    io->out[0]->dims[0] = n;
    return PTQ_OK;
}

static ptq_status range_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_cast_kind kind = PTQ_CAST_F32;
    int64_t n = 0;
    ptq_status st = range_len(ctx, io, &kind, &n);
    if (st == PTQ_OK)
        ptq_k_range_ref(kind, n, io->in[0]->data, io->in[2]->data, io->out[0]->data);
    return st;
}

/* ---- Equal, Greater, Less, GreaterOrEqual, LessOrEqual, Mod ---- */

/* The comparison of io's op, its inputs' kind and layout: Equal takes bool too, the ordered ones numbers only. */
static ptq_status compare_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_compare *op, ptq_cast_kind *kind,
                                 ptq_bcast *bc)
{
    PTQ_TRY_RET(need_same_kind(ctx, io, kind));
    const ptq_op_id id = ptq_op_of(io)->traits->id;
    static const struct {
        ptq_op_id id;
        ptq_compare cmp;
    } ops[] = {{PTQ_OP_GREATER, PTQ_CMP_GT}, {PTQ_OP_LESS, PTQ_CMP_LT}, {PTQ_OP_GREATEROREQUAL, PTQ_CMP_GE},
               {PTQ_OP_LESSOREQUAL, PTQ_CMP_LE}};
    *op = PTQ_CMP_EQ;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (ops[k].id == id)
            *op = ops[k].cmp;
    if (*op != PTQ_CMP_EQ && *kind == PTQ_CAST_BOOL)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "inputs are bool; %s takes numbers", io->node->op_type);
    return pair_layout(ctx, io, bc);
}

static ptq_status compare_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_compare op;
    ptq_cast_kind kind = PTQ_CAST_F32;
    ptq_bcast bc;
    ptq_status st = compare_params(ctx, io, &op, &kind, &bc);
    if (st == PTQ_OK)
        set_bcast_out(io->out[0], PTQ_DT_BOOL, &bc);
    return st;
}

static ptq_status compare_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_compare op;
    ptq_cast_kind kind = PTQ_CAST_F32;
    ptq_bcast bc;
    ptq_status st = compare_params(ctx, io, &op, &kind, &bc);
    if (st == PTQ_OK)
        ptq_k_compare_ref(op, kind, &bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    return st;
}

/* Not: input 0 is bool (the output is too, of its shape). */
static ptq_status not_check(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st == PTQ_OK && io->in[0]->dtype != PTQ_DT_BOOL)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "input is %s; Not takes bool", ptq_dtype_name(io->in[0]->dtype));
    return st;
}

static ptq_status not_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = not_check(ctx, io);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

static ptq_status not_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_status st = not_check(ctx, io);
    if (st == PTQ_OK)
        ptq_k_not_ref(ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return st;
}

/* And, Or, Xor: inputs 0 and 1 bool (the output too, of their broadcast shape). */
static ptq_status logic_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    if (io->in[0]->dtype != PTQ_DT_BOOL || io->in[1]->dtype != PTQ_DT_BOOL)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "inputs are %s and %s; %s takes bool",
                           ptq_dtype_name(io->in[0]->dtype), ptq_dtype_name(io->in[1]->dtype), io->node->op_type);
    return pair_layout(ctx, io, bc);
}

static ptq_status logic_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = logic_layout(ctx, io, &bc);
    if (st == PTQ_OK)
        set_bcast_out(io->out[0], PTQ_DT_BOOL, &bc);
    return st;
}

static ptq_status logic_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    ptq_status st = logic_layout(ctx, io, &bc);
    if (st == PTQ_OK)
        ptq_k_logic_ref(ptq_op_of(io)->traits->id == PTQ_OP_OR    ? PTQ_LOGIC_OR
                        : ptq_op_of(io)->traits->id == PTQ_OP_XOR ? PTQ_LOGIC_XOR
                                                                  : PTQ_LOGIC_AND,
                        &bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    return st;
}

/* Trilu: input 0 of a fixed-size dtype and rank >= 2; k (input 1, optional) one int64 value; upper 0 or 1. */
static ptq_status trilu_check(ptq_ctx *ctx, const ptq_op_io *io)
{
    PTQ_TRY_RET(ptq_op_need_sized(ctx, io, 0));
    if (io->in[0]->ndim < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input has rank %d; Trilu needs rank 2 or more", io->in[0]->ndim);
    const int64_t upper = ptq_node_attr_int(io->node, "upper", 1);
    if (upper != 0 && upper != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "upper is %lld; it must be 0 or 1", (long long)upper);
    const ptq_tensor *k = io->n_in > 1 ? io->in[1] : NULL;
    if (k && (k->dtype != PTQ_DT_INT64 || ptq_tensor_numel(k) != 1 || k->ndim > 1))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "k (input 1) must be one int64 value, got %s of rank %d",
                           ptq_dtype_name(k->dtype), k->ndim);
    return PTQ_OK;
}

static ptq_status trilu_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_status st = trilu_check(ctx, io);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

static ptq_status trilu_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    PTQ_TRY_RET(trilu_check(ctx, io));
    const ptq_tensor *x = io->in[0], *k = io->n_in > 1 ? io->in[1] : NULL;
    const int64_t rows = x->dims[x->ndim - 2], cols = x->dims[x->ndim - 1];
    ptq_k_trilu_ref(ptq_dtype_size(x->dtype), ptq_dims_prod(x->dims, 0, x->ndim - 2), rows, cols,
                    k ? *(const int64_t *)k->data : 0, (int)ptq_node_attr_int(io->node, "upper", 1), x->data,
                    io->out[0]->data);
    return PTQ_OK;
}

/* Mod's kind and fmod attribute (1 required for floats, as ONNX says). */
static ptq_status mod_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *kind, int *fmod_sign)
{
    ptq_status st = need_same_kind(ctx, io, kind);
    if (st != PTQ_OK)
        return st;
    if (*kind == PTQ_CAST_BOOL)
        return ptq_op_unsupported(ctx, io, "dtype bool");
    const int64_t f = ptq_node_attr_int(io->node, "fmod", 0);
    if (f != 0 && f != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "fmod is %lld; it must be 0 or 1", (long long)f);
    if (f == 0 && (*kind == PTQ_CAST_F32 || *kind == PTQ_CAST_F64))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "fmod must be 1 for %s inputs", ptq_dtype_name(io->in[0]->dtype));
    *fmod_sign = (int)f;
    return PTQ_OK;
}

static ptq_status mod_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_cast_kind kind = PTQ_CAST_F32;
    ptq_bcast bc;
    int fmod_sign = 0;
    ptq_status st = mod_params(ctx, io, &kind, &fmod_sign);
    if (st == PTQ_OK && (st = pair_layout(ctx, io, &bc)) == PTQ_OK)
        set_bcast_out(io->out[0], io->in[0]->dtype, &bc);
    return st;
}

static ptq_status mod_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_cast_kind kind = PTQ_CAST_F32;
    ptq_bcast bc;
    int fmod_sign = 0;
    ptq_status st = mod_params(ctx, io, &kind, &fmod_sign);
    if (st != PTQ_OK || (st = pair_layout(ctx, io, &bc)) != PTQ_OK)
        return st;
    const int64_t zero_at = ptq_k_mod_ref(kind, fmod_sign, &bc, io->in[0]->data, io->in[1]->data, io->out[0]->data);
    if (zero_at >= 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "integer division by zero at output element %lld",
                           (long long)zero_at);
    return PTQ_OK;
}

const ptq_op_def ptq_op_Split = {PTQ_OP_TRAITS(SPLIT), 2, 1u << 1, split_infer, split_run, NULL, 0, 0};
const ptq_op_def ptq_op_Where = {PTQ_OP_TRAITS(WHERE), 9, 0, where_infer, where_run, NULL, 0, 0};
const ptq_op_def ptq_op_Expand = {PTQ_OP_TRAITS(EXPAND), 8, 1u << 1, expand_infer, expand_run, NULL, 0, 0};
const ptq_op_def ptq_op_ConstantOfShape = {PTQ_OP_TRAITS(CONSTANTOFSHAPE), 9, 1u << 0, constant_of_shape_infer,
                                           constant_of_shape_run, NULL, 0, 0};
const ptq_op_def ptq_op_Range = {PTQ_OP_TRAITS(RANGE), 11, 1u << 0 | 1u << 1 | 1u << 2, range_infer, range_run,
                                 NULL, 0, 0};
const ptq_op_def ptq_op_Equal = {PTQ_OP_TRAITS(EQUAL), 7, 0, compare_infer, compare_run, NULL, 0, 0};
const ptq_op_def ptq_op_Greater = {PTQ_OP_TRAITS(GREATER), 7, 0, compare_infer, compare_run, NULL, 0, 0};
const ptq_op_def ptq_op_Less = {PTQ_OP_TRAITS(LESS), 7, 0, compare_infer, compare_run, NULL, 0, 0};
const ptq_op_def ptq_op_GreaterOrEqual = {PTQ_OP_TRAITS(GREATEROREQUAL), 12, 0, compare_infer, compare_run, NULL, 0, 0};
const ptq_op_def ptq_op_LessOrEqual = {PTQ_OP_TRAITS(LESSOREQUAL), 12, 0, compare_infer, compare_run, NULL, 0, 0};
const ptq_op_def ptq_op_Mod = {PTQ_OP_TRAITS(MOD), 10, 0, mod_infer, mod_run, NULL, 0, 0};
const ptq_op_def ptq_op_Not = {PTQ_OP_TRAITS(NOT), 1, 0, not_infer, not_run, NULL, 0, 0};
const ptq_op_def ptq_op_And = {PTQ_OP_TRAITS(AND), 7, 0, logic_infer, logic_run, NULL, 0, 0};
const ptq_op_def ptq_op_Or = {PTQ_OP_TRAITS(OR), 7, 0, logic_infer, logic_run, NULL, 0, 0};
const ptq_op_def ptq_op_Xor = {PTQ_OP_TRAITS(XOR), 7, 0, logic_infer, logic_run, NULL, 0, 0};
const ptq_op_def ptq_op_Trilu = {PTQ_OP_TRAITS(TRILU), 14, 1u << 1, trilu_infer, trilu_run, NULL, 0, 0};
