/* Indexing ops of exported models beside runtime/ops_index.c's: TopK (k from the attribute before opset 10, else a
 * host input: an initializer, a folded shape computation or a value the run computes; largest and sorted from 11),
 * GatherElements and ScatterElements (int32 or int64 indices; ScatterElements' reduction from opset 16, max and min
 * from 18; Scatter, its name at opsets 9 and 10), GatherND (int64 index tuples, batch_dims from 12), OneHot (depth
 * a host input; values of any fixed-size dtype), EyeLike (from its input's shape alone), CastLike (Cast to its
 * second input's dtype), ReverseSequence (any fixed-size dtype; int64 lengths), through kernels/ref/index2.c, their
 * CPU path too; every index read from data is checked against the shape it addresses, naming the node, before
 * anything is written. The CUDA backend hands them to the CPU. Covered by tests/ops_index_test.py and the ONNX
 * conformance run. */
#include <stdlib.h>
#include <string.h>

#include "runtime/op_util.h"

/* ---- TopK ---- */

/* TopK's element type, axis (made non-negative) and k, checked against the axis's length. */
static ptq_status topk_plan(ptq_ctx *ctx, const ptq_op_io *io, ptq_k_elem *et, int *axis, int64_t *k)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    switch (x->dtype) {
    case PTQ_DT_FLOAT: *et = PTQ_K_F32; break;
    case PTQ_DT_DOUBLE: *et = PTQ_K_F64; break;
    case PTQ_DT_INT64: *et = PTQ_K_I64; break;
    case PTQ_DT_INT32: *et = PTQ_K_I32; break;
    default:
        return ptq_op_unsupported(ctx, io, "X is %s; supported: float32, float64, int64, int32",
                                  ptq_dtype_name(x->dtype));
    }
    const int64_t a = ptq_node_attr_int(io->node, "axis", -1);
    if (x->ndim < 1 || a < -x->ndim || a >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)a, x->ndim);
    *axis = (int)(a < 0 ? a + x->ndim : a);
    if (io->graph->opset < 10) {
        const ptq_attr *ka = ptq_node_attr(io->node, "k");
        if (!ka || ka->type != PTQ_ATTR_INT)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the k attribute is missing (TopK before opset 10)");
        *k = ka->i;
    } else {
        PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
        const ptq_tensor *kt = io->in[1];
        if (kt->dtype != PTQ_DT_INT64 || kt->ndim > 1 || ptq_tensor_numel(kt) != 1)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "K (input 1) must be one int64 value, got %s of rank %d",
                               ptq_dtype_name(kt->dtype), kt->ndim);
        *k = *(const int64_t *)kt->data;
    }
    if (*k < 0 || *k > x->dims[*axis])
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "k %lld is out of range for axis %d of length %lld", (long long)*k,
                           *axis, (long long)x->dims[*axis]);
    return PTQ_OK;
}

static ptq_status topk_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_k_elem et;
    int axis;
    int64_t k;
    PTQ_TRY_RET(topk_plan(ctx, io, &et, &axis, &k));
    for (int i = 0; i < io->n_out && i < 2; i++) {
        ptq_op_same_shape(io->out[i], io->in[0]);
        io->out[i]->dims[axis] = k;
    }
    if (io->n_out > 1)
        io->out[1]->dtype = PTQ_DT_INT64;
    return PTQ_OK;
}

/* Outputs Values and Indices (either may be omitted: the executor still gives it room); sorted or not, they come
 * in order, which ONNX allows for sorted = 0. */
static ptq_status topk_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_k_elem et;
    int axis;
    int64_t k;
    PTQ_TRY_RET(topk_plan(ctx, io, &et, &axis, &k));
    if (io->n_out < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "TopK has %d outputs; it takes Values and Indices", io->n_out);
    const ptq_tensor *x = io->in[0];
    const int64_t len = x->dims[axis], outer = ptq_dims_prod(x->dims, 0, axis);
    const int64_t inner = ptq_dims_prod(x->dims, axis + 1, x->ndim);
    if (k == 0 || outer * inner == 0)
        return PTQ_OK;
    int64_t *scratch = malloc((size_t)len * 2 * sizeof *scratch);
    if (!scratch)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for an axis of %lld", (long long)len);
    const int largest = ptq_node_attr_int(io->node, "largest", 1) != 0;
    ptq_k_topk_ref(et, outer, len, inner, k, largest, x->data, io->out[0]->data, io->out[1]->data, scratch);
    free(scratch);
    return PTQ_OK;
}

/* ---- GatherElements, ScatterElements, GatherND ---- */

/* Element i of an int32 or int64 index tensor on the host. */
static int64_t index_at(const ptq_tensor *t, int64_t i)
{
    return t->dtype == PTQ_DT_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

/* GatherElements' and ScatterElements' data (input 0), indices (input 1, int32 or int64, data's rank, no longer than
 * data on any axis but the node's, as onnxruntime requires) and axis, made non-negative. */
static ptq_status elements_plan(ptq_ctx *ctx, const ptq_op_io *io, int *axis)
{
    PTQ_TRY_RET(ptq_op_need_sized(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    if (idx->dtype != PTQ_DT_INT64 && idx->dtype != PTQ_DT_INT32)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "indices are %s; they must be int32 or int64",
                           ptq_dtype_name(idx->dtype));
    const int64_t a = ptq_node_attr_int(io->node, "axis", 0);
    if (x->ndim < 1 || a < -x->ndim || a >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)a, x->ndim);
    *axis = (int)(a < 0 ? a + x->ndim : a);
    char s_x[176], s_i[176];
    int fits = idx->ndim == x->ndim;
    for (int d = 0; fits && d < x->ndim; d++)
        fits = d == *axis || idx->dims[d] <= x->dims[d];
    if (!fits)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "indices are %s for data %s; they must have data's rank and be no "
                           "longer on any axis but %d", ptq_dims_str(idx->dims, idx->ndim, s_i, sizeof s_i),
                           ptq_dims_str(x->dims, x->ndim, s_x, sizeof s_x), *axis);
    return PTQ_OK;
}

/* at [indices' count]: the element of data each index names (its own position in indices, the index along axis),
 * every index checked against axis's length (a negative one counts from the end, once). */
static ptq_status elements_offsets(ptq_ctx *ctx, const ptq_op_io *io, int axis, int64_t *at)
{
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    const int r = x->ndim;
    const int64_t n = ptq_tensor_numel(idx), len = x->dims[axis];
    int64_t stride[PTQ_MAX_DIMS], pos[PTQ_MAX_DIMS] = {0};
    int64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = s;
        s *= x->dims[d];
    }
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = index_at(idx, i);
        if (k < -len || k >= len)
            return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "index %lld (element %lld of indices) is out of range for axis "
                               "%d of size %lld", (long long)k, (long long)i, axis, (long long)len);
        int64_t off = 0;
        for (int d = 0; d < r; d++)
            off += (d == axis ? (k < 0 ? k + len : k) : pos[d]) * stride[d];
        at[i] = off;
        for (int d = r - 1; d >= 0 && ++pos[d] == idx->dims[d]; d--)
            pos[d] = 0;
    }
    return PTQ_OK;
}

static ptq_status gather_elements_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis;
    PTQ_TRY_RET(elements_plan(ctx, io, &axis));
    ptq_op_same_shape(io->out[0], io->in[1]);
    io->out[0]->dtype = io->in[0]->dtype;
    return PTQ_OK;
}

static ptq_status gather_elements_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis;
    PTQ_TRY_RET(elements_plan(ctx, io, &axis));
    const int64_t n = ptq_tensor_numel(io->in[1]);
    if (n == 0)
        return PTQ_OK;
    int64_t *at = malloc((size_t)n * sizeof *at);
    if (!at)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for %lld indices", (long long)n);
    ptq_status st = elements_offsets(ctx, io, axis, at);
    if (st == PTQ_OK)
        ptq_k_gather_at_ref(ptq_dtype_size(io->in[0]->dtype), n, 1, at, io->in[0]->data, io->out[0]->data);
    free(at);
    return st;
}

/* ScatterElements: elements_plan's checks and updates (input 2) of indices' shape and data's dtype. */
static ptq_status scatter_elements_plan(ptq_ctx *ctx, const ptq_op_io *io, int *axis, ptq_scatter_reduction *red,
                                        ptq_cast_kind *kind)
{
    PTQ_TRY_RET(elements_plan(ctx, io, axis));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 2));
    const ptq_tensor *x = io->in[0], *idx = io->in[1], *u = io->in[2];
    if (u->dtype != x->dtype)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "data is %s and updates %s; they must have one dtype",
                           ptq_dtype_name(x->dtype), ptq_dtype_name(u->dtype));
    if (u->ndim != idx->ndim || memcmp(u->dims, idx->dims, (size_t)u->ndim * sizeof u->dims[0]) != 0) {
        char s_u[176], s_i[176];
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "updates are %s and indices %s; they must have one shape",
                           ptq_dims_str(u->dims, u->ndim, s_u, sizeof s_u),
                           ptq_dims_str(idx->dims, idx->ndim, s_i, sizeof s_i));
    }
    return ptq_op_scatter_reduction(ctx, io, red, kind);
}

static ptq_status scatter_elements_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    if (ptq_op_of(io)->traits->id == PTQ_OP_SCATTER && io->graph->opset >= 11)
        return ptq_op_unsupported(ctx, io, "Scatter is deprecated from opset 11, where ONNX has no such op "
                                  "(onnxruntime refuses it); ScatterElements replaces it");
    int axis;
    ptq_scatter_reduction red;
    ptq_cast_kind kind;
    PTQ_TRY_RET(scatter_elements_plan(ctx, io, &axis, &red, &kind));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

/* Every index checked and turned into its element of data before y is touched; then data copied and the updates
 * applied in indices' order (reduction none: of equal indices the last wins, as onnxruntime does). */
static ptq_status scatter_elements_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis;
    ptq_scatter_reduction red;
    ptq_cast_kind kind;
    PTQ_TRY_RET(scatter_elements_plan(ctx, io, &axis, &red, &kind));
    const ptq_tensor *x = io->in[0];
    const int64_t n = ptq_tensor_numel(io->in[1]);
    const size_t eb = ptq_dtype_size(x->dtype);
    int64_t *at = n > 0 ? malloc((size_t)n * sizeof *at) : NULL;
    if (n > 0 && !at)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for %lld indices", (long long)n);
    ptq_status st = n > 0 ? elements_offsets(ctx, io, axis, at) : PTQ_OK;
    if (st == PTQ_OK) {
        if (io->out[0]->data != x->data && ptq_tensor_numel(x) > 0)
            memcpy(io->out[0]->data, x->data, (size_t)ptq_tensor_numel(x) * eb);
        ptq_k_scatter_nd_ref(kind, red, eb, n, 1, at, io->in[2]->data, io->out[0]->data);
    }
    free(at);
    return st;
}

/* GatherND's layout from shapes and attributes: data [batch..., rest...], indices [batch..., ..., k] int64 with the
 * first batch_dims dims data's, 1 <= k <= rank - batch_dims; the output's shape into *y (when not NULL), the
 * batches (*n_batch), the tuples in each (*n_tuples) and the elements each one takes (*n_slice). */
static ptq_status gather_nd_plan(ptq_ctx *ctx, const ptq_op_io *io, int *b, int *k, int64_t *n_batch,
                                 int64_t *n_tuples, int64_t *n_slice, ptq_tensor *y)
{
    PTQ_TRY_RET(ptq_op_need_sized(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    const ptq_tensor *x = io->in[0], *idx = io->in[1];
    if (idx->dtype != PTQ_DT_INT64)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "indices are %s; GatherND takes int64", ptq_dtype_name(idx->dtype));
    const int64_t bd = ptq_node_attr_int(io->node, "batch_dims", 0);
    if (x->ndim < 1 || idx->ndim < 1 || bd < 0 || bd >= x->ndim || bd >= idx->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "batch_dims %lld for data of rank %d and indices of rank %d; it "
                           "must be below both ranks", (long long)bd, x->ndim, idx->ndim);
    *b = (int)bd;
    char s_x[176], s_i[176];
    const int64_t kk = idx->dims[idx->ndim - 1];
    int fits = kk >= 1 && kk <= x->ndim - *b;
    for (int d = 0; fits && d < *b; d++)
        fits = idx->dims[d] == x->dims[d];
    if (!fits)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "indices are %s for data %s with batch_dims %d: their first %d "
                           "dims must be data's and their last from 1 to %d", ptq_dims_str(idx->dims, idx->ndim, s_i,
                           sizeof s_i), ptq_dims_str(x->dims, x->ndim, s_x, sizeof s_x), *b, *b, x->ndim - *b);
    *k = (int)kk;
    const int out_rank = idx->ndim - 1 + x->ndim - *b - *k;
    if (out_rank > PTQ_MAX_DIMS)
        return ptq_op_unsupported(ctx, io, "output rank %d exceeds %d", out_rank, PTQ_MAX_DIMS);
    *n_batch = ptq_dims_prod(x->dims, 0, *b);
    *n_tuples = ptq_dims_prod(idx->dims, *b, idx->ndim - 1);
    *n_slice = ptq_dims_prod(x->dims, *b + *k, x->ndim);
    if (y) {
        y->dtype = x->dtype;
        y->ndim = 0;
        for (int d = 0; d < idx->ndim - 1; d++)
            y->dims[y->ndim++] = idx->dims[d];
        for (int d = *b + *k; d < x->ndim; d++)
            y->dims[y->ndim++] = x->dims[d];
    }
    return PTQ_OK;
}

static ptq_status gather_nd_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int b, k;
    int64_t n_batch, n_tuples, n_slice;
    return gather_nd_plan(ctx, io, &b, &k, &n_batch, &n_tuples, &n_slice, io->out[0]);
}

/* Each index tuple checked against data's dims after the batch ones (a negative entry counts from the end, once)
 * and turned into the element offset of its slice within its batch's block, before y is written. */
static ptq_status gather_nd_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int b, k;
    int64_t n_batch, n_tuples, n_slice;
    PTQ_TRY_RET(gather_nd_plan(ctx, io, &b, &k, &n_batch, &n_tuples, &n_slice, NULL));
    const ptq_tensor *x = io->in[0];
    const int64_t *idx = io->in[1]->data, n = n_batch * n_tuples, block = ptq_dims_prod(x->dims, b, x->ndim);
    if (n == 0 || n_slice == 0)
        return PTQ_OK;
    int64_t *at = malloc((size_t)n * sizeof *at);
    if (!at)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for %lld index tuples", (long long)n);
    for (int64_t j = 0; j < n; j++) {
        int64_t off = 0;
        for (int d = 0; d < k; d++) {
            const int64_t i = idx[j * k + d], dim = x->dims[b + d];
            if (i < -dim || i >= dim) {
                free(at);
                return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "index %lld (index tuple %lld, entry %d) is out of range "
                                   "for data's axis %d of size %lld", (long long)i, (long long)j, d, b + d,
                                   (long long)dim);
            }
            off = off * dim + (i < 0 ? i + dim : i);
        }
        at[j] = (j / n_tuples) * block + off * n_slice;
    }
    ptq_k_gather_at_ref(ptq_dtype_size(x->dtype), n, n_slice, at, x->data, io->out[0]->data);
    free(at);
    return PTQ_OK;
}

/* ---- OneHot ---- */

/* OneHot's axis in 0..rank(indices) and depth (input 1: one number of any numeric type, on the host, truncated as
 * onnxruntime does; 1 or more, and the output's element count within int64). */
static ptq_status onehot_plan(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int64_t *depth)
{
    ptq_cast_kind kind;
    for (int i = 0; i < 3; i++)
        PTQ_TRY_RET(ptq_op_need_sized(ctx, io, i));
    const ptq_tensor *idx = io->in[0], *dt = io->in[1], *v = io->in[2];
    if (!ptq_op_cast_kind(idx->dtype, &kind) || idx->dtype == PTQ_DT_BOOL)
        return ptq_op_unsupported(ctx, io, "indices are %s; supported: float32, float64 and the integers",
                                  ptq_dtype_name(idx->dtype));
    if (!ptq_op_cast_kind(dt->dtype, &kind) || dt->dtype == PTQ_DT_BOOL || ptq_tensor_numel(dt) != 1 || dt->ndim > 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "depth (input 1) must be one number, got %s of rank %d",
                           ptq_dtype_name(dt->dtype), dt->ndim);
    if (ptq_tensor_numel(v) != 2 || v->ndim != 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "values (input 2) must be [off_value, on_value], got %lld "
                           "elements of rank %d", (long long)ptq_tensor_numel(v), v->ndim);
    double d = 0;
    ptq_k_cast_ref(kind, PTQ_CAST_F64, 1, dt->data, &d);
    const int64_t n = ptq_tensor_numel(idx);
    if (!(d >= 1) || d >= 9.2e18 || (int64_t)d > INT64_MAX / (n > 0 ? n : 1))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "depth %g for %lld indices; it must be 1 or more, and the "
                           "output's element count within int64", d, (long long)n);
    *depth = (int64_t)d;
    const int64_t a = ptq_node_attr_int(io->node, "axis", -1), r = idx->ndim;
    if (a < -r - 1 || a > r || r + 1 > PTQ_MAX_DIMS)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for indices of rank %d (an output of "
                           "rank %d)", (long long)a, idx->ndim, idx->ndim + 1);
    *axis = (int)(a < 0 ? a + r + 1 : a);
    return PTQ_OK;
}

static ptq_status onehot_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis;
    int64_t depth;
    PTQ_TRY_RET(onehot_plan(ctx, io, &axis, &depth));
    const ptq_tensor *idx = io->in[0];
    ptq_tensor *y = io->out[0];
    y->dtype = io->in[2]->dtype;
    y->ndim = idx->ndim + 1;
    for (int d = 0, j = 0; d < y->ndim; d++)
        y->dims[d] = d == axis ? depth : idx->dims[j++];
    return PTQ_OK;
}

/* The indices as int64 (floats truncated toward zero), a negative one from the end, one outside [-depth, depth) -1:
 * its row all off_value, as ONNX defines it. */
static ptq_status onehot_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis;
    int64_t depth;
    ptq_cast_kind kind = PTQ_CAST_I64;
    PTQ_TRY_RET(onehot_plan(ctx, io, &axis, &depth));
    const ptq_tensor *idx = io->in[0];
    const int64_t n = ptq_tensor_numel(idx);
    if (n == 0)
        return PTQ_OK;
    int64_t *at = malloc((size_t)n * sizeof *at);
    if (!at)
        return ptq_op_fail(ctx, io, PTQ_ERR_NOMEM, "out of memory for %lld indices", (long long)n);
    ptq_op_cast_kind(idx->dtype, &kind);
    ptq_k_cast_ref(kind, PTQ_CAST_I64, n, idx->data, at);
    for (int64_t i = 0; i < n; i++)
        at[i] = at[i] < -depth || at[i] >= depth ? -1 : at[i] < 0 ? at[i] + depth : at[i];
    const size_t eb = ptq_dtype_size(io->in[2]->dtype);
    const unsigned char *v = io->in[2]->data;
    ptq_k_onehot_ref(eb, ptq_dims_prod(idx->dims, 0, axis), depth, ptq_dims_prod(idx->dims, axis, idx->ndim), at, v,
                     v + eb, io->out[0]->data);
    free(at);
    return PTQ_OK;
}

/* ---- EyeLike ---- */

/* EyeLike's output dtype (the dtype attribute, else the input's) and its element kind; the input must be 2-D. */
static ptq_status eyelike_plan(ptq_ctx *ctx, const ptq_op_io *io, ptq_dtype *dt, ptq_cast_kind *kind)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    if (x->ndim != 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input is of rank %d; EyeLike takes a 2-D input", x->ndim);
    const ptq_attr *a = ptq_node_attr(io->node, "dtype");
    *dt = a && a->type == PTQ_ATTR_INT ? (ptq_dtype)a->i : x->dtype;
    if (!ptq_op_cast_kind(*dt, kind))
        return ptq_op_unsupported(ctx, io, "an output of %s (dtype %lld); supported: float32, float64, bool and the "
                                  "integers", ptq_dtype_name(*dt), (long long)*dt);
    return PTQ_OK;
}

static ptq_status eyelike_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_dtype dt = PTQ_DT_UNDEFINED;
    ptq_cast_kind kind = PTQ_CAST_F32;
    PTQ_TRY_RET(eyelike_plan(ctx, io, &dt, &kind));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = dt;
    return PTQ_OK;
}

/* Reads only the input's shape (a meta input: folded at load where the shape is known). */
static ptq_status eyelike_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_dtype dt = PTQ_DT_UNDEFINED;
    ptq_cast_kind kind = PTQ_CAST_F32;
    PTQ_TRY_RET(eyelike_plan(ctx, io, &dt, &kind));
    const float one_f = 1.0f;
    uint64_t one = 0; /* room for the widest element */
    ptq_k_cast_ref(PTQ_CAST_F32, kind, 1, &one_f, &one);
    ptq_k_eye_ref(ptq_dtype_size(dt), io->in[0]->dims[0], io->in[0]->dims[1], ptq_node_attr_int(io->node, "k", 0),
                  &one, io->out[0]->data);
    return PTQ_OK;
}

/* ---- CastLike ---- */

/* Cast's element kinds (runtime/ops_index.c): ptq_op_cast_kind's, and float16 and bfloat16. */
static int castlike_kind(ptq_dtype dt, ptq_cast_kind *k)
{
    if (dt == PTQ_DT_FLOAT16 || dt == PTQ_DT_BFLOAT16) {
        *k = dt == PTQ_DT_FLOAT16 ? PTQ_CAST_F16 : PTQ_CAST_BF16;
        return 1;
    }
    return ptq_op_cast_kind(dt, k);
}

/* input 0's kind and target_type's (input 1: only its dtype is read, a meta input), Cast's pairs. */
static ptq_status castlike_kinds(ptq_ctx *ctx, const ptq_op_io *io, ptq_cast_kind *k_from, ptq_cast_kind *k_to)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    if (!castlike_kind(io->in[0]->dtype, k_from) || !castlike_kind(io->in[1]->dtype, k_to))
        return ptq_op_unsupported(ctx, io, "a cast from %s to %s; supported: float32, float64, float16, bfloat16, "
                                  "bool and the integers", ptq_dtype_name(io->in[0]->dtype),
                                  ptq_dtype_name(io->in[1]->dtype));
    return PTQ_OK;
}

static ptq_status castlike_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_cast_kind kf = PTQ_CAST_F32, kt = PTQ_CAST_F32;
    PTQ_TRY_RET(castlike_kinds(ctx, io, &kf, &kt));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = io->in[1]->dtype;
    return PTQ_OK;
}

/* As Cast to target_type's dtype (the saturate attribute of opset 19 concerns float8 only, which ptq refuses). */
static ptq_status castlike_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_cast_kind kf = PTQ_CAST_F32, kt = PTQ_CAST_F32;
    PTQ_TRY_RET(castlike_kinds(ctx, io, &kf, &kt));
    ptq_k_cast_ref(kf, kt, ptq_tensor_numel(io->in[0]), io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

/* ---- ReverseSequence ---- */

/* ReverseSequence's axes (batch_axis and time_axis: 0 and 1, one each) on input [.., .., rest...] of rank 2 or
 * more, and sequence_lens (input 1): int64 [batch]. */
static ptq_status reverse_sequence_plan(ptq_ctx *ctx, const ptq_op_io *io, int *time_axis)
{
    PTQ_TRY_RET(ptq_op_need_sized(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    const ptq_tensor *x = io->in[0], *lens = io->in[1];
    const int64_t ba = ptq_node_attr_int(io->node, "batch_axis", 1), ta = ptq_node_attr_int(io->node, "time_axis", 0);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "batch_axis %lld and time_axis %lld; they must be 0 and 1, one "
                           "each", (long long)ba, (long long)ta);
    if (x->ndim < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input is of rank %d; ReverseSequence takes rank 2 or more",
                           x->ndim);
    if (lens->dtype != PTQ_DT_INT64 || lens->ndim != 1 || lens->dims[0] != x->dims[ba])
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "sequence_lens is %s of rank %d (%lld long); it must be int64 "
                           "[%lld], one per batch entry", ptq_dtype_name(lens->dtype), lens->ndim,
                           (long long)(lens->ndim == 1 ? lens->dims[0] : -1), (long long)x->dims[ba]);
    *time_axis = (int)ta;
    return PTQ_OK;
}

static ptq_status reverse_sequence_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int ta;
    PTQ_TRY_RET(reverse_sequence_plan(ctx, io, &ta));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

/* Every length checked against the time axis (0 .. its length, as onnxruntime takes them) before y is written. */
static ptq_status reverse_sequence_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int ta;
    PTQ_TRY_RET(reverse_sequence_plan(ctx, io, &ta));
    const ptq_tensor *x = io->in[0];
    const int64_t *lens = io->in[1]->data, n_time = x->dims[ta], n_batch = x->dims[1 - ta];
    for (int64_t b = 0; b < n_batch; b++)
        if (lens[b] < 0 || lens[b] > n_time)
            return ptq_op_fail(ctx, io, PTQ_ERR_DATA, "sequence_lens[%lld] is %lld; it must be from 0 to the time "
                               "axis's length %lld", (long long)b, (long long)lens[b], (long long)n_time);
    ptq_k_reverse_sequence_ref(ptq_dtype_size(x->dtype), ta == 0, n_time, n_batch, ptq_dims_prod(x->dims, 2, x->ndim),
                               lens, x->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_TopK = {PTQ_OP_TRAITS(TOPK), 1, 1u << 1, topk_infer, topk_run, NULL, 0, 0};
const ptq_op_def ptq_op_GatherElements = {PTQ_OP_TRAITS(GATHERELEMENTS), 11, 0, gather_elements_infer,
                                          gather_elements_run, NULL, 0, 0};
const ptq_op_def ptq_op_ScatterElements = {PTQ_OP_TRAITS(SCATTERELEMENTS), 11, 0, scatter_elements_infer,
                                           scatter_elements_run, NULL, 0, 0};
/* Scatter (opsets 9 and 10) is ScatterElements without reduction: torch.scatter exported at those opsets. */
const ptq_op_def ptq_op_Scatter = {PTQ_OP_TRAITS(SCATTER), 9, 0, scatter_elements_infer, scatter_elements_run, NULL,
                                   0, 0};
const ptq_op_def ptq_op_GatherND = {PTQ_OP_TRAITS(GATHERND), 11, 0, gather_nd_infer, gather_nd_run, NULL, 0, 0};
const ptq_op_def ptq_op_OneHot = {PTQ_OP_TRAITS(ONEHOT), 9, 1u << 1, onehot_infer, onehot_run, NULL, 0, 0};
const ptq_op_def ptq_op_EyeLike = {PTQ_OP_TRAITS(EYELIKE), 9, 0, eyelike_infer, eyelike_run, NULL, 1u << 0, 0};
const ptq_op_def ptq_op_CastLike = {PTQ_OP_TRAITS(CASTLIKE), 15, 0, castlike_infer, castlike_run, NULL, 1u << 1, 0};
const ptq_op_def ptq_op_ReverseSequence = {PTQ_OP_TRAITS(REVERSESEQUENCE), 10, 0, reverse_sequence_infer,
                                           reverse_sequence_run, NULL, 0, 0};
