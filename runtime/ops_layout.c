/* DepthToSpace (DCR and CRD) and SpaceToDepth on [N, C, H, W] of any fixed-size dtype (pixel-shuffle
 * super-resolution nets, space-to-depth stems), Tile (any fixed-size dtype; repeats a host input, folded where it is
 * a constant or computed from constants and shapes, run with each batch's where it is data), GlobalMaxPool, the
 * variadic Sum and Mean (float32, numpy broadcasting) and Size (of any input, from its shape alone), through
 * kernels/ref/layout.c, which is their CPU path too; the CUDA backend hands them to the CPU. Covered by the ONNX
 * node suite and tests/ops_shape_test.py. */
#include <string.h>

#include "runtime/op_util.h"

/* DepthToSpace / SpaceToDepth: input 0 [N, C, H, W] of a fixed-size dtype, the blocksize attribute >= 1 dividing
 * what it must (C by blocksize^2; H and W for SpaceToDepth) and leaving every output dim within int64; *crd:
 * DepthToSpace's mode is CRD (DCR before opset 11, which has no mode). */
static ptq_status space_depth_check(ptq_ctx *ctx, const ptq_op_io *io, int to_depth, int64_t *block, int *crd)
{
    char xs[96];
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (x->ndim != 4)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s must be [N, C, H, W] (rank 4)",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    const ptq_attr *a = ptq_node_attr(io->node, "blocksize");
    if (!a || a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the blocksize attribute (an int) is missing");
    *block = a->i;
    if (*block < 1 || *block > INT32_MAX)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "blocksize is %lld; it must be 1 to %d", (long long)*block,
                           INT32_MAX);
    *crd = 0;
    const ptq_attr *m = ptq_node_attr(io->node, "mode");
    if (m && !to_depth) {
        if (m->type != PTQ_ATTR_STRING || (strcmp(m->s, "DCR") != 0 && strcmp(m->s, "CRD") != 0))
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "mode '%.40s' is not DCR or CRD", m->s ? m->s : "");
        *crd = strcmp(m->s, "CRD") == 0;
    }
    const int64_t b = *block, b2 = b * b; /* b < 2^31: b^2 fits */
    if (!to_depth) {
        if (x->dims[1] % b2 != 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s: C is not a multiple of blocksize^2 = %lld",
                               ptq_dims_str(x->dims, 4, xs, sizeof xs), (long long)b2);
        if (x->dims[2] > INT64_MAX / b || x->dims[3] > INT64_MAX / b)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s: H or W times blocksize %lld overflows",
                               ptq_dims_str(x->dims, 4, xs, sizeof xs), (long long)b);
    } else {
        if (x->dims[2] % b != 0 || x->dims[3] % b != 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s: H and W must be multiples of blocksize %lld",
                               ptq_dims_str(x->dims, 4, xs, sizeof xs), (long long)b);
        if (x->dims[1] > INT64_MAX / b2)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s: C times blocksize^2 %lld overflows",
                               ptq_dims_str(x->dims, 4, xs, sizeof xs), (long long)b2);
    }
    return PTQ_OK;
}

static ptq_status space_depth_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t b;
    int crd;
    const int to_depth = ptq_op_of(io)->traits->id == PTQ_OP_SPACETODEPTH;
    ptq_status st = space_depth_check(ctx, io, to_depth, &b, &crd);
    if (st != PTQ_OK)
        return st;
    ptq_tensor *y = io->out[0];
    ptq_op_same_shape(y, io->in[0]);
    y->dims[1] = to_depth ? y->dims[1] * b * b : y->dims[1] / (b * b);
    y->dims[2] = to_depth ? y->dims[2] / b : y->dims[2] * b;
    y->dims[3] = to_depth ? y->dims[3] / b : y->dims[3] * b;
    return PTQ_OK;
}

static ptq_status space_depth_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t b;
    int crd;
    const int to_depth = ptq_op_of(io)->traits->id == PTQ_OP_SPACETODEPTH;
    PTQ_TRY_RET(space_depth_check(ctx, io, to_depth, &b, &crd));
    const ptq_tensor *x = io->in[0];
    const size_t elem = ptq_dtype_size(x->dtype);
    if (to_depth)
        ptq_k_space_to_depth_ref(elem, x->dims[0], x->dims[1], x->dims[2] / b, x->dims[3] / b, b, x->data,
                                 io->out[0]->data);
    else
        ptq_k_depth_to_space_ref(elem, x->dims[0], x->dims[1] / (b * b), x->dims[2], x->dims[3], b, crd, x->data,
                                 io->out[0]->data);
    return PTQ_OK;
}

/* Tile: input 0 of a fixed-size dtype; repeats (input 1) 1-D int64 of one entry an axis, each >= 0; out [rank]
 * gets input 0's dims times them, refused where a dim or the element count would pass int64. */
static ptq_status tile_dims(ptq_ctx *ctx, const ptq_op_io *io, int64_t *out)
{
    char xs[96];
    ptq_status st = ptq_op_need_sized(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_input(ctx, io, 1)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0], *r = io->in[1];
    if (r->dtype != PTQ_DT_INT64 || r->ndim != 1 || r->dims[0] != x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "repeats (input 1) must be 1-D int64 of %d entries (the input's "
                           "rank), got %s %s", x->ndim, ptq_dtype_name(r->dtype),
                           ptq_dims_str(r->dims, r->ndim, xs, sizeof xs));
    const int64_t *rep = r->data;
    int64_t n = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (rep[d] < 0)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "repeats[%d] is %lld; repeats must be >= 0", d,
                               (long long)rep[d]);
        if (rep[d] > 0 && x->dims[d] > INT64_MAX / rep[d])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "dim %d: %lld times repeats %lld overflows", d,
                               (long long)x->dims[d], (long long)rep[d]);
        out[d] = x->dims[d] * rep[d];
        if (n > 0 && out[d] > INT64_MAX / 16 / n) /* 16: the widest element, so the bytes fit too */
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s tiled by the repeats has too many elements",
                               ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
        n *= out[d];
    }
    return PTQ_OK;
}

static ptq_status tile_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t dims[PTQ_MAX_DIMS];
    ptq_status st = tile_dims(ctx, io, dims);
    if (st != PTQ_OK)
        return st;
    ptq_op_same_shape(io->out[0], io->in[0]);
    memcpy(io->out[0]->dims, dims, (size_t)io->in[0]->ndim * sizeof *dims);
    return PTQ_OK;
}

static ptq_status tile_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t dims[PTQ_MAX_DIMS];
    PTQ_TRY_RET(tile_dims(ctx, io, dims));
    const ptq_tensor *x = io->in[0];
    if (ptq_tensor_numel(io->out[0]) > 0)
        ptq_k_tile_ref(ptq_dtype_size(x->dtype), x->ndim, x->dims, dims, x->data, io->out[0]->data);
    return PTQ_OK;
}

/* GlobalMaxPool: float32 [N, C, spatial...] of at least one spatial position into [N, C, 1, ...]. */
static ptq_status global_maxpool_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    char xs[96];
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (x->ndim < 3 || ptq_dims_prod(x->dims, 2, x->ndim) < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %s must be [N, C, spatial...] (rank >= 3) with a spatial "
                           "position", ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    ptq_op_same_shape(io->out[0], x);
    for (int d = 2; d < x->ndim; d++)
        io->out[0]->dims[d] = 1;
    return PTQ_OK;
}

static ptq_status global_maxpool_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    PTQ_TRY_RET(global_maxpool_infer(ctx, (ptq_op_io *)io));
    const ptq_tensor *x = io->in[0];
    ptq_k_global_maxpool_ref(x->dims[0] * x->dims[1], ptq_dims_prod(x->dims, 2, x->ndim), x->data, io->out[0]->data);
    return PTQ_OK;
}

/* Sum / Mean: one or more inputs, all present and float32; *shape (rank and dims) the broadcast of them all. */
static ptq_status sum_shape(ptq_ctx *ctx, const ptq_op_io *io, ptq_tensor *shape)
{
    ptq_bcast bc;
    if (io->n_in < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "no inputs");
    for (int i = 0; i < io->n_in; i++)
        PTQ_TRY_RET(ptq_op_need_float(ctx, io, i));
    *shape = *io->in[0];
    for (int i = 1; i < io->n_in; i++) {
        if (ptq_op_bcast(ctx, shape, io->in[i], &bc) != PTQ_OK)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "input %d: %s", i, ctx->msg);
        shape->ndim = bc.ndim;
        memcpy(shape->dims, bc.out_dims, (size_t)bc.ndim * sizeof *bc.out_dims);
    }
    return PTQ_OK;
}

static ptq_status sum_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_tensor shape;
    ptq_status st = sum_shape(ctx, io, &shape);
    if (st == PTQ_OK)
        ptq_op_same_shape(io->out[0], &shape);
    return st;
}

static ptq_status sum_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    const int mean = ptq_op_of(io)->traits->id == PTQ_OP_MEAN;
    for (int i = 0; i < io->n_in; i++) {
        PTQ_TRY_RET(ptq_op_need_float(ctx, io, i));
        PTQ_TRY_RET(ptq_op_bcast(ctx, io->out[0], io->in[i], &bc));
        ptq_k_sum_ref(i == 0, mean && i == io->n_in - 1 ? (float)io->n_in : 0.0f, &bc, io->in[i]->data,
                      io->out[0]->data);
    }
    return PTQ_OK;
}

/* Size: the element count of input 0 (its shape alone: a meta input) as an int64 scalar. */
static ptq_status size_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    io->out[0]->dtype = PTQ_DT_INT64;
    io->out[0]->ndim = 0;
    return PTQ_OK;
}

static ptq_status size_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    const int64_t n = ptq_dims_prod(io->in[0]->dims, 0, io->in[0]->ndim);
    memcpy(io->out[0]->data, &n, sizeof n);
    return PTQ_OK;
}

const ptq_op_def ptq_op_DepthToSpace = {PTQ_OP_TRAITS(DEPTHTOSPACE), 1, 0, space_depth_infer, space_depth_run,
                                        NULL, 0, 0};
const ptq_op_def ptq_op_SpaceToDepth = {PTQ_OP_TRAITS(SPACETODEPTH), 1, 0, space_depth_infer, space_depth_run,
                                        NULL, 0, 0};
const ptq_op_def ptq_op_Tile = {PTQ_OP_TRAITS(TILE), 6, 1u << 1, tile_infer, tile_run, NULL, 0, 0};
const ptq_op_def ptq_op_GlobalMaxPool = {PTQ_OP_TRAITS(GLOBALMAXPOOL), 1, 0, global_maxpool_infer, global_maxpool_run,
                                         NULL, 0, 0};
const ptq_op_def ptq_op_Sum = {PTQ_OP_TRAITS(SUM), 6, 0, sum_infer, sum_run, NULL, 0, 0};
const ptq_op_def ptq_op_Mean = {PTQ_OP_TRAITS(MEAN), 6, 0, sum_infer, sum_run, NULL, 0, 0};
const ptq_op_def ptq_op_Size = {PTQ_OP_TRAITS(SIZE), 1, 0, size_infer, size_run, NULL, 1u << 0, 0};
