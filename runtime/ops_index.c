/* The ops of exported models' shape arithmetic: Shape (start/end from
 * opset 15; reads only its input's shape, so what follows from it is known
 * before a run), Gather (any fixed-size dtype, int32/int64 indices, negative
 * ones from the end), Slice (attributes before opset 10, host inputs from
 * 10; negative steps; ONNX's clamping), Cast between the numeric dtypes and
 * ScatterND (torch's slice assignment: int64 index tuples, each checked
 * against data's shape before anything is written; the reduction attribute
 * from opset 16, max and min from 18), through kernels/ref/index.c, which is
 * their CPU path too. The batch stays dynamic: these run on the host each
 * run, on tensors of a few int64s. Covered by tests/test_ops_zoo.c and the
 * ONNX conformance run. */
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"

static ptq_status shape_range(ptq_ctx *ctx, const ptq_op_io *io, int64_t *start, int64_t *end)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const int64_t r = io->in[0]->ndim;
    int64_t s = ptq_node_attr_int(io->node, "start", 0), e = ptq_node_attr_int(io->node, "end", r);
    if (io->graph->opset < 15)
        s = 0, e = r;
    s = s < 0 ? s + r : s;
    e = e < 0 ? e + r : e;
    *start = s < 0 ? 0 : s > r ? r : s;
    *end = e < *start ? *start : e > r ? r : e;
    return PTQ_OK;
}

static ptq_status shape_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t s, e;
    ptq_status st = shape_range(ctx, io, &s, &e);
    if (st != PTQ_OK)
        return st;
    io->out[0]->dtype = PTQ_DT_INT64;
    io->out[0]->ndim = 1;
    io->out[0]->dims[0] = e - s;
    return PTQ_OK;
}

static ptq_status shape_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t s, e;
    ptq_status st = shape_range(ctx, io, &s, &e);
    if (st == PTQ_OK && e > s)
        memcpy(io->out[0]->data, io->in[0]->dims + s, (size_t)(e - s) * sizeof(int64_t));
    return st;
}

/* Gather's axis, the indices' dtype and the output's rank checked. */
static ptq_status gather_axis(ptq_ctx *ctx, const ptq_op_io *io, int *axis)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    if (ptq_dtype_size(x->dtype) == 0)
        return ptq_op_unsupported(ctx, io, "data is %s; only fixed-size dtypes are supported",
                                  ptq_dtype_name(x->dtype));
    if (idx->dtype != PTQ_DT_INT64 && idx->dtype != PTQ_DT_INT32)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "indices are %s; they must be int32 or int64",
                           ptq_dtype_name(idx->dtype));
    int64_t ax = ptq_node_attr_int(io->node, "axis", 0);
    if (ax < -x->ndim || ax >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)ax, x->ndim);
    *axis = (int)(ax < 0 ? ax + x->ndim : ax);
    if (x->ndim - 1 + idx->ndim > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "output rank %d exceeds %d", x->ndim - 1 + idx->ndim, PTQ_MAX_DIMS);
    return PTQ_OK;
}

static ptq_status gather_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis;
    ptq_status st = gather_axis(ctx, io, &axis);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    ptq_tensor *y = io->out[0];
    y->dtype = x->dtype;
    y->ndim = 0;
    for (int d = 0; d < axis; d++)
        y->dims[y->ndim++] = x->dims[d];
    for (int d = 0; d < idx->ndim; d++)
        y->dims[y->ndim++] = idx->dims[d];
    for (int d = axis + 1; d < x->ndim; d++)
        y->dims[y->ndim++] = x->dims[d];
    return PTQ_OK;
}

ptq_status ptq_op_gather_plan(ptq_ctx *ctx, const ptq_op_io *io, const void *idx_data, int *axis, int64_t *at)
{
    ptq_status st = gather_axis(ctx, io, axis);
    if (st != PTQ_OK || !idx_data)
        return st;
    const ptq_tensor *idx = io->in[1];
    const int64_t n = ptq_tensor_numel(idx), len = io->in[0]->dims[*axis];
    for (int64_t i = 0; i < n; i++) {
        int64_t k = idx->dtype == PTQ_DT_INT64 ? ((const int64_t *)idx_data)[i] : ((const int32_t *)idx_data)[i];
        if (k < -len || k >= len)
            return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "index %lld is out of range for axis %d of size %lld",
                               (long long)k, *axis, (long long)len);
        at[i] = k < 0 ? k + len : k;
    }
    return PTQ_OK;
}

/* gather_run, and with fast the blocks one index takes when they are contiguous (nothing before the axis) copied
 * over the CPU pool. */
static ptq_status gather_with(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    int axis;
    ptq_status st = gather_axis(ctx, io, &axis);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    const int64_t n = ptq_tensor_numel(idx), len = x->dims[axis];
    int64_t one, *at = n <= 1 ? &one : malloc((size_t)n * sizeof *at);
    if (!at)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "node '%s': out of memory for %lld indices", io->node->name,
                        (long long)n);
    if ((st = ptq_op_gather_plan(ctx, io, idx->data, &axis, at)) != PTQ_OK) {
        if (at != &one)
            free(at);
        return st;
    }
    const size_t eb = ptq_dtype_size(x->dtype);
    const int64_t outer = ptq_dims_prod(x->dims, 0, axis), inner = ptq_dims_prod(x->dims, axis + 1, x->ndim);
    if (fast && outer == 1) {
        const size_t block = (size_t)inner * eb;
        for (int64_t i = 0; i < n; i++)
            ptq_k_copy_cpu(block, (const unsigned char *)x->data + (size_t)at[i] * block,
                           (unsigned char *)io->out[0]->data + (size_t)i * block);
    } else {
        ptq_k_gather_ref(eb, outer, len, inner, n, at, x->data, io->out[0]->data);
    }
    if (at != &one)
        free(at);
    return PTQ_OK;
}

static ptq_status gather_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    return gather_with(ctx, io, 0);
}

static ptq_status gather_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return gather_with(ctx, io, 1);
}

static ptq_status attr_list(ptq_ctx *ctx, const ptq_op_io *io, const char *name, int64_t *v, int64_t *n)
{
    const ptq_attr *a = ptq_node_attr(io->node, name);
    *n = -1;
    if (!a)
        return PTQ_OK;
    if (a->type != PTQ_ATTR_INTS || a->n > PTQ_MAX_DIMS)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the %s attribute is not a list of at most %d ints", name,
                           PTQ_MAX_DIMS);
    *n = a->n;
    memcpy(v, a->ints, (size_t)a->n * sizeof *v);
    return PTQ_OK;
}

ptq_status ptq_op_slice_plan(ptq_ctx *ctx, const ptq_op_io *io, int64_t *start, int64_t *step, int64_t *out_dims)
{
    int64_t starts[PTQ_MAX_DIMS], ends[PTQ_MAX_DIMS], axes[PTQ_MAX_DIMS], steps[PTQ_MAX_DIMS];
    int64_t n_s, n_e, n_a, n_st = -1;
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (ptq_dtype_size(x->dtype) == 0)
        return ptq_op_unsupported(ctx, io, "data is %s; only fixed-size dtypes are supported",
                                  ptq_dtype_name(x->dtype));
    if (io->graph->opset < 10) {
        if ((st = attr_list(ctx, io, "starts", starts, &n_s)) != PTQ_OK ||
            (st = attr_list(ctx, io, "ends", ends, &n_e)) != PTQ_OK ||
            (st = attr_list(ctx, io, "axes", axes, &n_a)) != PTQ_OK)
            return st;
    } else if ((st = ptq_op_int_list(ctx, io, 1, starts, &n_s)) != PTQ_OK ||
               (st = ptq_op_int_list(ctx, io, 2, ends, &n_e)) != PTQ_OK ||
               (st = ptq_op_int_list(ctx, io, 3, axes, &n_a)) != PTQ_OK ||
               (st = ptq_op_int_list(ctx, io, 4, steps, &n_st)) != PTQ_OK) {
        return st;
    }
    if (n_s < 0 || n_e != n_s || (n_a >= 0 && n_a != n_s) || (n_st >= 0 && n_st != n_s))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "starts, ends, axes and steps must have one length");
    int seen[PTQ_MAX_DIMS] = {0};
    for (int d = 0; d < x->ndim; d++) {
        start[d] = 0;
        step[d] = 1;
        out_dims[d] = x->dims[d];
    }
    for (int64_t i = 0; i < n_s; i++) {
        int64_t a = n_a >= 0 ? axes[i] : i, dim, s = starts[i], e = ends[i], k = n_st >= 0 ? steps[i] : 1;
        if (a < 0)
            a += x->ndim;
        if (a < 0 || a >= x->ndim || seen[a]++)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range or repeated for rank %d",
                               (long long)(n_a >= 0 ? axes[i] : i), x->ndim);
        if (k == 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "step 0 on axis %lld", (long long)a);
        dim = x->dims[a];
        s = s < 0 ? (s < -dim ? -1 : s + dim) : s; /* -1: before the first, clamped below */
        e = e < 0 ? (e < -dim ? -1 : e + dim) : e;
        if (k > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            out_dims[a] = e > s ? (e - s - 1) / k + 1 : 0; /* no overflow for steps near INT64_MAX */
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            /* |k| in uint64: -INT64_MIN does not fit an int64 */
            out_dims[a] = s > e ? (int64_t)((uint64_t)(s - e - 1) / ((uint64_t)0 - (uint64_t)k)) + 1 : 0;
        }
        if (out_dims[a] <= 1)
            k = 1; /* one element or none: the step is never taken */
        start[a] = s;
        step[a] = k;
    }
    return PTQ_OK;
}

static ptq_status slice_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t start[PTQ_MAX_DIMS], step[PTQ_MAX_DIMS], dims[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_slice_plan(ctx, io, start, step, dims);
    if (st != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    memcpy(io->out[0]->dims, dims, (size_t)io->in[0]->ndim * sizeof dims[0]);
    return PTQ_OK;
}

static ptq_status slice_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t start[PTQ_MAX_DIMS], step[PTQ_MAX_DIMS], dims[PTQ_MAX_DIMS];
    ptq_status st = ptq_op_slice_plan(ctx, io, start, step, dims);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    ptq_k_slice_ref(ptq_dtype_size(x->dtype), x->ndim, x->dims, dims, start, step, x->data, io->out[0]->data);
    return PTQ_OK;
}

/* Cast's element kinds: ptq_op_cast_kind's, and float16 and bfloat16 (weights stored in 16 bits and cast to
 * float32, a round trip through float16; ptq's other ops take neither). */
static int cast_kind(ptq_dtype dt, ptq_cast_kind *k)
{
    if (dt == PTQ_DT_FLOAT16 || dt == PTQ_DT_BFLOAT16) {
        *k = dt == PTQ_DT_FLOAT16 ? PTQ_CAST_F16 : PTQ_CAST_BF16;
        return 1;
    }
    return ptq_op_cast_kind(dt, k);
}

static ptq_status cast_kinds(ptq_ctx *ctx, const ptq_op_io *io, ptq_dtype *to, ptq_cast_kind *k_from,
                             ptq_cast_kind *k_to)
{
    ptq_status st = ptq_op_need_input(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_attr *a = ptq_node_attr(io->node, "to");
    if (!a || a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the to attribute is missing");
    *to = (ptq_dtype)a->i;
    if (!cast_kind(io->in[0]->dtype, k_from) || !cast_kind(*to, k_to))
        return ptq_op_unsupported(ctx, io, "a cast from %s to %s; supported: float32, float64, float16, bfloat16, "
                                  "bool and the integers", ptq_dtype_name(io->in[0]->dtype), ptq_dtype_name(*to));
    return PTQ_OK;
}

static ptq_status cast_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_dtype to = PTQ_DT_UNDEFINED;
    ptq_cast_kind kf = PTQ_CAST_F32, kt = PTQ_CAST_F32;
    ptq_status st = cast_kinds(ctx, io, &to, &kf, &kt);
    if (st != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = to;
    return PTQ_OK;
}

static ptq_status cast_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_dtype to = PTQ_DT_UNDEFINED;
    ptq_cast_kind kf = PTQ_CAST_F32, kt = PTQ_CAST_F32;
    ptq_status st = cast_kinds(ctx, io, &to, &kf, &kt);
    if (st == PTQ_OK)
        ptq_k_cast_ref(kf, kt, ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return st;
}

/* ---- ScatterND ---- */

ptq_status ptq_op_scatter_reduction(ptq_ctx *ctx, const ptq_op_io *io, ptq_scatter_reduction *red,
                                    ptq_cast_kind *kind)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    const ptq_attr *a = io->graph->opset >= 16 ? ptq_node_attr(io->node, "reduction") : NULL;
    *red = PTQ_SCATTER_NONE;
    *kind = PTQ_CAST_F32;
    if (a) {
        int r = -1;
        for (int i = 0; a->type == PTQ_ATTR_STRING && a->s && i < (int)(sizeof names / sizeof names[0]); i++)
            if (strcmp(a->s, names[i]) == 0)
                r = i;
        if (r < 0 || (r >= PTQ_SCATTER_MAX && io->graph->opset < 18))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "reduction '%.40s' at opset %lld; %s takes none, add and mul "
                               "from opset 16, max and min from 18", a->type == PTQ_ATTR_STRING && a->s ? a->s
                               : "(not a string)", (long long)io->graph->opset, io->node->op_type);
        *red = (ptq_scatter_reduction)r;
    }
    if (*red != PTQ_SCATTER_NONE && !ptq_op_cast_kind(io->in[0]->dtype, kind))
        return ptq_op_unsupported(ctx, io, "reduction %s on %s; supported: float32, float64, bool and the integers",
                                  names[*red], ptq_dtype_name(io->in[0]->dtype));
    return PTQ_OK;
}

/* ScatterND's layout, from shapes and attributes only (data, indices [..., k] int64 and updates
 * [indices.shape[:-1] + data.shape[k:]], all checked before the executor allocates the output): k, the index
 * tuples (*n_slices), the elements each one addresses (*n_slice), the reduction and, for one, data's kind. */
static ptq_status scatter_nd_plan(ptq_ctx *ctx, const ptq_op_io *io, int *k, int64_t *n_slices, int64_t *n_slice,
                                  ptq_scatter_reduction *red, ptq_cast_kind *kind)
{
    ptq_status st = PTQ_OK;
    for (int i = 0; i < 3; i++)
        if ((st = ptq_op_need_sized(ctx, io, i)) != PTQ_OK)
            return st;
    const ptq_tensor *x = io->in[0], *idx = io->in[1], *u = io->in[2];
    if (idx->dtype != PTQ_DT_INT64)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "indices are %s; ScatterND takes int64",
                           ptq_dtype_name(idx->dtype));
    if (u->dtype != x->dtype)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "data is %s and updates %s; they must have one dtype",
                           ptq_dtype_name(x->dtype), ptq_dtype_name(u->dtype));
    if (x->ndim < 1 || idx->ndim < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "data (rank %d) and indices (rank %d) must have rank 1 or more",
                           x->ndim, idx->ndim);
    const int64_t kk = idx->dims[idx->ndim - 1];
    if (kk < 0 || kk > x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "indices' last dim is %lld; it must be at most data's rank %d",
                           (long long)kk, x->ndim);
    *k = (int)kk;
    /* updates: indices.shape[:-1] + data.shape[k:] */
    int64_t want[2 * PTQ_MAX_DIMS];
    int n_want = 0;
    for (int d = 0; d < idx->ndim - 1; d++)
        want[n_want++] = idx->dims[d];
    for (int d = *k; d < x->ndim; d++)
        want[n_want++] = x->dims[d];
    if (u->ndim != n_want || memcmp(u->dims, want, (size_t)n_want * sizeof want[0]) != 0) {
        char s_u[176], s_x[176], s_i[176], s_want[352]; /* up to 16 dims of 20 digits and an x */
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "updates are %s; for data %s and indices %s they must be "
                           "indices.shape[:-1] + data.shape[%d:] = %s", ptq_dims_str(u->dims, u->ndim, s_u, sizeof s_u),
                           ptq_dims_str(x->dims, x->ndim, s_x, sizeof s_x),
                           ptq_dims_str(idx->dims, idx->ndim, s_i, sizeof s_i), *k,
                           ptq_dims_str(want, n_want, s_want, sizeof s_want));
    }
    *n_slices = ptq_dims_prod(idx->dims, 0, idx->ndim - 1);
    *n_slice = ptq_dims_prod(x->dims, *k, x->ndim);
    return ptq_op_scatter_reduction(ctx, io, red, kind);
}

static ptq_status scatter_nd_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int k;
    int64_t n_slices, n_slice;
    ptq_scatter_reduction red;
    ptq_cast_kind kind;
    ptq_status st = scatter_nd_plan(ctx, io, &k, &n_slices, &n_slice, &red, &kind);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], io->in[0]);
    return st;
}

/* Every index tuple checked against data's dims (a negative entry counts from the end, once) and turned into
 * the element offset of its slice, all before y is touched; then data copied and the updates applied. */
static ptq_status scatter_nd_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int k;
    int64_t n_slices, n_slice;
    ptq_scatter_reduction red;
    ptq_cast_kind kind;
    ptq_status st = scatter_nd_plan(ctx, io, &k, &n_slices, &n_slice, &red, &kind);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    const int64_t *idx = io->in[1]->data;
    int64_t one, *at = n_slices <= 1 ? &one : malloc((size_t)n_slices * sizeof *at);
    if (!at)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for %lld index tuples", (long long)n_slices);
    for (int64_t j = 0; j < n_slices; j++) {
        int64_t off = 0;
        for (int d = 0; d < k; d++) {
            const int64_t i = idx[j * k + d], dim = x->dims[d];
            if (i < -dim || i >= dim) {
                if (at != &one)
                    free(at);
                return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "index %lld (index tuple %lld, entry %d) is out of range "
                                   "for data's axis %d of size %lld", (long long)i, (long long)j, d, d,
                                   (long long)dim);
            }
            off = off * dim + (i < 0 ? i + dim : i);
        }
        at[j] = off * n_slice;
    }
    const size_t eb = ptq_dtype_size(x->dtype);
    if (io->out[0]->data != x->data && ptq_tensor_numel(x) > 0)
        memcpy(io->out[0]->data, x->data, (size_t)ptq_tensor_numel(x) * eb);
    ptq_k_scatter_nd_ref(kind, red, eb, n_slices, n_slice, at, io->in[2]->data, io->out[0]->data);
    if (at != &one)
        free(at);
    return PTQ_OK;
}

const ptq_op_def ptq_op_Shape = {PTQ_OP_TRAITS(SHAPE), 1, 0, shape_infer, shape_run, NULL, 1u << 0, 0};
const ptq_op_def ptq_op_Gather = {PTQ_OP_TRAITS(GATHER), 1, 0, gather_infer, gather_run, gather_run_cpu, 0, 0};
const ptq_op_def ptq_op_Slice = {PTQ_OP_TRAITS(SLICE), 1, 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4, slice_infer,
                                 slice_run, NULL, 0, 0};
const ptq_op_def ptq_op_Cast = {PTQ_OP_TRAITS(CAST), 6, 0, cast_infer, cast_run, NULL, 0, 0};
const ptq_op_def ptq_op_ScatterND = {PTQ_OP_TRAITS(SCATTERND), 11, 0, scatter_nd_infer, scatter_nd_run, NULL, 0, 0};
