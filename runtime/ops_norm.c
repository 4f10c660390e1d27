/* Normalisations beside InstanceNormalization and LayerNormalization: GroupNormalization (opset 18: scale and bias
 * [num_groups]; 21: [C], stash_type 1) on float32 [N, C, D1, ...], MeanVarianceNormalization (axes), LpNormalization
 * (axis, p 1 or 2) and Hardmax (axis) on float32; IsNaN and IsInf (detect_positive, detect_negative) on float32 and
 * float64 and BitShift (direction; uint8 to uint64, broadcasting), all through kernels/ref/norm.c; LpPool (p; the
 * pools' window, through ptq_op_pool_params and kernels/ref/pool.c). The references are their CPU path too (the CUDA
 * backend hands them to the CPU). Covered by tests/ops_norm_test.py (onnxruntime) and the ONNX conformance run. */
#include <string.h>

#include "runtime/op_util.h"
#include "runtime/spatial.h"

/* GroupNormalization's X [N, C, ...] (float32, rank >= 2), num_groups (required, >= 1, dividing C), scale and bias
 * ([C] from opset 21, [num_groups] before it; either where the opset is unknown) and stash_type 1. */
static ptq_status groupnorm_params(ptq_ctx *ctx, const ptq_op_io *io, int64_t *groups, int *per_channel)
{
    char xs[96], vs[96];
    for (int i = 0; i < 3; i++)
        PTQ_TRY_RET(ptq_op_need_float(ctx, io, i));
    const ptq_tensor *x = io->in[0];
    if (x->ndim < 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "X %s must be [N, C, ...] (rank >= 2)",
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    const ptq_attr *a = ptq_node_attr(io->node, "num_groups");
    if (!a || a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the num_groups attribute is %s", a ? "not an int" : "missing");
    *groups = a->i;
    const int64_t c = x->dims[1];
    if (*groups < 1 || c % *groups != 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "num_groups %lld must be at least 1 and divide the %lld channels "
                           "of X %s", (long long)*groups, (long long)c, ptq_dims_str(x->dims, x->ndim, xs, sizeof xs));
    const int64_t opset = io->graph ? io->graph->opset : 0;
    if (ptq_node_attr_int(io->node, "stash_type", 1) != 1)
        return ptq_op_unsupported(ctx, io, "stash_type %lld (only 1, float32)",
                                  (long long)ptq_node_attr_int(io->node, "stash_type", 1));
    for (int i = 1; i < 3; i++) {
        const ptq_tensor *v = io->in[i];
        const int64_t len = v->ndim == 1 ? v->dims[0] : -1;
        const int ok = opset >= 21 ? len == c : opset >= 18 ? len == *groups : len == c || len == *groups;
        if (!ok)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "%s %s must be [%lld], one per %s of X %s (opset %lld)",
                               i == 1 ? "scale" : "bias", ptq_dims_str(v->dims, v->ndim, vs, sizeof vs),
                               (long long)(opset >= 21 ? c : *groups), opset >= 21 ? "channel" : "group",
                               ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), (long long)opset);
    }
    *per_channel = opset >= 21 || (opset < 18 && io->in[1]->dims[0] == c);
    return PTQ_OK;
}

static ptq_status groupnorm_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t groups = 1;
    int per_channel = 0;
    PTQ_TRY_RET(groupnorm_params(ctx, io, &groups, &per_channel));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status groupnorm_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t groups = 1;
    int per_channel = 0;
    PTQ_TRY_RET(groupnorm_params(ctx, io, &groups, &per_channel));
    const ptq_tensor *x = io->in[0];
    ptq_k_groupnorm_ref(x->dims[0], groups, x->dims[1] / groups, ptq_dims_prod(x->dims, 2, x->ndim), per_channel,
                        x->data, io->in[1]->data, io->in[2]->data, ptq_node_attr_float(io->node, "epsilon", 1e-5f),
                        io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_GroupNormalization = {PTQ_OP_TRAITS(GROUPNORMALIZATION), 18, 0, groupnorm_infer,
                                              groupnorm_run, NULL, 0, 0};

/* MeanVarianceNormalization's X (float32) and its axes (default [0, 2, 3]; each in [-rank, rank), none twice, at
 * least one) as a bit mask. */
static ptq_status mvn_params(ptq_ctx *ctx, const ptq_op_io *io, unsigned *mask)
{
    static const int64_t dflt[] = {0, 2, 3};
    char xs[96];
    PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    const ptq_attr *a = ptq_node_attr(io->node, "axes");
    if (a && a->type != PTQ_ATTR_INTS)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the axes attribute is not a list of ints");
    const int64_t *axes = a ? a->ints : dflt, n = a ? a->n : 3;
    if (n < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the axes attribute is empty");
    *mask = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t ax = axes[k] < 0 ? axes[k] + x->ndim : axes[k];
        if (axes[k] < -x->ndim || axes[k] >= x->ndim)
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld%s is out of range for X %s of rank %d",
                               (long long)axes[k], a ? "" : " (of the default axes [0, 2, 3])",
                               ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), x->ndim);
        if (*mask >> ax & 1u)
            return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axis %lld is given twice", (long long)axes[k]);
        *mask |= 1u << ax;
    }
    return PTQ_OK;
}

static ptq_status mvn_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    unsigned mask = 0;
    PTQ_TRY_RET(mvn_params(ctx, io, &mask));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status mvn_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    unsigned mask = 0;
    PTQ_TRY_RET(mvn_params(ctx, io, &mask));
    const ptq_tensor *x = io->in[0];
    ptq_k_mvn_ref(x->ndim, x->dims, mask, x->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_MeanVarianceNormalization = {PTQ_OP_TRAITS(MEANVARIANCENORMALIZATION), 9, 0, mvn_infer,
                                                     mvn_run, NULL, 0, 0};

/* LpNormalization's X (float32), axis (default -1, in [-rank, rank)) and p (1 or 2, default 2). */
static ptq_status lpnorm_params(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int *p)
{
    char xs[96];
    PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    const int64_t ax = ptq_node_attr_int(io->node, "axis", -1), pv = ptq_node_attr_int(io->node, "p", 2);
    if (ax < -x->ndim || ax >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for X %s of rank %d", (long long)ax,
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), x->ndim);
    if (pv != 1 && pv != 2)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "p %lld must be 1 or 2", (long long)pv);
    *axis = (int)(ax < 0 ? ax + x->ndim : ax);
    *p = (int)pv;
    return PTQ_OK;
}

static ptq_status lpnorm_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis = 0, p = 2;
    PTQ_TRY_RET(lpnorm_params(ctx, io, &axis, &p));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status lpnorm_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int axis = 0, p = 2;
    PTQ_TRY_RET(lpnorm_params(ctx, io, &axis, &p));
    const ptq_tensor *x = io->in[0];
    ptq_k_lpnorm_ref(ptq_dims_prod(x->dims, 0, axis), x->dims[axis], ptq_dims_prod(x->dims, axis + 1, x->ndim), p,
                     x->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_LpNormalization = {PTQ_OP_TRAITS(LPNORMALIZATION), 1, 0, lpnorm_infer, lpnorm_run, NULL, 0, 0};

/* Hardmax's X (float32) as [outer, len, inner]: from opset 13 along axis (default -1), before it over the block
 * [axis, rank) X is coerced to (default 1), as Softmax. */
static ptq_status hardmax_view(ptq_ctx *ctx, const ptq_op_io *io, int64_t *outer, int64_t *len, int64_t *inner)
{
    char xs[96];
    PTQ_TRY_RET(ptq_op_need_float(ctx, io, 0));
    const ptq_tensor *x = io->in[0];
    const int block = io->graph && io->graph->opset > 0 && io->graph->opset < 13;
    const int64_t ax = ptq_node_attr_int(io->node, "axis", block ? 1 : -1);
    if (ax < -x->ndim || ax >= x->ndim || (block && x->ndim == 0))
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for X %s of rank %d", (long long)ax,
                           ptq_dims_str(x->dims, x->ndim, xs, sizeof xs), x->ndim);
    const int a = (int)(ax < 0 ? ax + x->ndim : ax);
    *outer = ptq_dims_prod(x->dims, 0, a);
    *len = block ? ptq_dims_prod(x->dims, a, x->ndim) : x->dims[a];
    *inner = block ? 1 : ptq_dims_prod(x->dims, a + 1, x->ndim);
    return PTQ_OK;
}

static ptq_status hardmax_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int64_t outer = 1, len = 1, inner = 1;
    PTQ_TRY_RET(hardmax_view(ctx, io, &outer, &len, &inner));
    ptq_op_same_shape(io->out[0], io->in[0]);
    return PTQ_OK;
}

static ptq_status hardmax_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int64_t outer = 1, len = 1, inner = 1;
    PTQ_TRY_RET(hardmax_view(ctx, io, &outer, &len, &inner));
    ptq_k_hardmax_ref(outer, len, inner, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_Hardmax = {PTQ_OP_TRAITS(HARDMAX), 1, 0, hardmax_infer, hardmax_run, NULL, 0, 0};

/* IsNaN's and IsInf's X: float32 or float64 (float16 and bfloat16 are not run); 1 for float64. */
static ptq_status isfloat_check(ptq_ctx *ctx, const ptq_op_io *io, int *dbl)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    const ptq_dtype dt = io->in[0]->dtype;
    if (dt != PTQ_DT_FLOAT && dt != PTQ_DT_DOUBLE)
        return ptq_op_unsupported(ctx, io, "input is %s; only float32 and float64 are supported", ptq_dtype_name(dt));
    *dbl = dt == PTQ_DT_DOUBLE;
    return PTQ_OK;
}

static ptq_status isfloat_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int dbl = 0;
    PTQ_TRY_RET(isfloat_check(ctx, io, &dbl));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = PTQ_DT_BOOL;
    return PTQ_OK;
}

static ptq_status isnan_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int dbl = 0;
    PTQ_TRY_RET(isfloat_check(ctx, io, &dbl));
    ptq_k_isnan_ref(ptq_tensor_numel(io->in[0]), dbl, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status isinf_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    int dbl = 0;
    PTQ_TRY_RET(isfloat_check(ctx, io, &dbl));
    ptq_k_isinf_ref(ptq_tensor_numel(io->in[0]), dbl, ptq_node_attr_int(io->node, "detect_positive", 1) != 0,
                    ptq_node_attr_int(io->node, "detect_negative", 1) != 0, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_IsNaN = {PTQ_OP_TRAITS(ISNAN), 9, 0, isfloat_infer, isnan_run, NULL, 0, 0};
const ptq_op_def ptq_op_IsInf = {PTQ_OP_TRAITS(ISINF), 10, 0, isfloat_infer, isinf_run, NULL, 0, 0};

/* BitShift's inputs: one unsigned integer type (uint8 to uint64) with numpy broadcasting, and direction (required:
 * LEFT or RIGHT; *left 1 for LEFT). */
static ptq_status bitshift_layout(ptq_ctx *ctx, const ptq_op_io *io, ptq_bcast *bc, int *left)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    const ptq_dtype da = io->in[0]->dtype, db = io->in[1]->dtype;
    if (da != db || (da != PTQ_DT_UINT8 && da != PTQ_DT_UINT16 && da != PTQ_DT_UINT32 && da != PTQ_DT_UINT64))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "inputs are %s and %s; BitShift takes two of one of uint8, "
                           "uint16, uint32 and uint64", ptq_dtype_name(da), ptq_dtype_name(db));
    const ptq_attr *a = ptq_node_attr(io->node, "direction");
    if (!a || a->type != PTQ_ATTR_STRING || (strcmp(a->s, "LEFT") != 0 && strcmp(a->s, "RIGHT") != 0))
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the direction attribute is %s%s%s; it must be LEFT or RIGHT",
                           !a ? "missing" : a->type != PTQ_ATTR_STRING ? "not a string" : "'",
                           a && a->type == PTQ_ATTR_STRING ? a->s : "", a && a->type == PTQ_ATTR_STRING ? "'" : "");
    *left = strcmp(a->s, "LEFT") == 0;
    ptq_status st = ptq_op_bcast(ctx, io->in[0], io->in[1], bc);
    return st == PTQ_OK ? st : ptq_op_fail(ctx, io, st, "%s", ctx->msg);
}

static ptq_status bitshift_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_bcast bc;
    int left = 0;
    PTQ_TRY_RET(bitshift_layout(ctx, io, &bc, &left));
    ptq_tensor *y = io->out[0]; /* the broadcast shape, the inputs' type */
    y->dtype = io->in[0]->dtype;
    y->ndim = bc.ndim;
    memcpy(y->dims, bc.out_dims, (size_t)bc.ndim * sizeof bc.out_dims[0]);
    return PTQ_OK;
}

static ptq_status bitshift_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_bcast bc;
    int left = 0;
    PTQ_TRY_RET(bitshift_layout(ctx, io, &bc, &left));
    ptq_k_bitshift_ref((int)ptq_dtype_size(io->in[0]->dtype), left, &bc, io->in[0]->data, io->in[1]->data,
                       io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_BitShift = {PTQ_OP_TRAITS(BITSHIFT), 11, 0, bitshift_infer, bitshift_run, NULL, 0, 0};

/* LpPool's window, through the pooling ops' ptq_op_pool_params (kernel_shape, strides, pads, auto_pad, dilations and
 * ceil_mode from opset 18), and p: an int of at least 1 (opset 2 on), 2 unless given. */
static ptq_status lppool_params(ptq_ctx *ctx, const ptq_op_io *io, ptq_pool_params *p, int64_t *lp)
{
    PTQ_TRY_RET(ptq_op_pool_params(ctx, io, p));
    const ptq_attr *a = ptq_node_attr(io->node, "p");
    if (a && a->type != PTQ_ATTR_INT)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the p attribute is not an int");
    *lp = a ? a->i : 2;
    if (*lp < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "p %lld must be at least 1", (long long)*lp);
    return PTQ_OK;
}

static ptq_status lppool_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_pool_params p;
    int64_t lp = 2;
    PTQ_TRY_RET(lppool_params(ctx, io, &p, &lp));
    /* x: [N, C, spatial...] -> y: [N, C, out...] */
    return ptq_window_output(ctx, io, p.n, p.c, io->in[0]->ndim - 2, p.out, io->out[0]);
}

static ptq_status lppool_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_pool_params p;
    int64_t lp = 2;
    PTQ_TRY_RET(lppool_params(ctx, io, &p, &lp));
    ptq_k_lppool_ref(&p, lp, io->in[0]->data, io->out[0]->data);
    return PTQ_OK;
}

const ptq_op_def ptq_op_LpPool = {PTQ_OP_TRAITS(LPPOOL), 2, 0, lppool_infer, lppool_run, NULL, 0, 0};
