/* ReduceMean (axes as an attribute before opset 18, as input 1 from 18;
 * keepdims, noop_with_empty_axes) and LayerNormalization (opset 17: axis,
 * epsilon, the optional Mean and InvStdDev outputs) on float32, ReduceSum
 * (as ReduceMean, axes as input 1 from opset 13) and CumSum (exclusive,
 * reverse) and ReduceMax (as ReduceMean: a 1-D CNN's max over time, torch's x.max(dim).values) on float32, float64,
 * int64 and int32, and ArgMax (axis, keepdims, select_last_index; torch's argmax: a GPT classifier's last token as
 * Hugging Face finds it, eq(ids, pad).int().argmax(-1) - 1) on the same types, ReduceMin, ReduceProd, ReduceL1 and
 * ReduceSumSquare as ReduceMax, ReduceL2, ReduceLogSum and ReduceLogSumExp on float32 and float64 (sharing
 * ReduceMax's axes, shape and run; tests/ops_reduce_test.py against onnxruntime), ArgMin as ArgMax (a NaN the least),
 * through kernels/ref/reduce.c; ReduceMean over trailing axes (GlobalAveragePool's
 * shape, torchvision's `x.mean([2, 3])`) runs the CPU pooling kernel.
 * ptq_op_reduce_axes and ptq_op_layernorm_view serve the CUDA backend too
 * (kernels/cuda/reduce.cu, kernels/cuda/layernorm.cu).
 * Covered by tests/test_ops_zoo.c and the ONNX conformance run. */
#include <string.h>

#include "runtime/op_util.h"

ptq_status ptq_op_reduce_axes(ptq_ctx *ctx, const ptq_op_io *io, unsigned char *reduced, int *noop)
{
    const ptq_tensor *x = io->in[0];
    const int64_t *axes = NULL;
    int64_t n = 0;
    *noop = 0;
    memset(reduced, 0, PTQ_MAX_DIMS);
    const int64_t from = strcmp(io->node->op_type, "ReduceSum") ? 18 : 13; /* axes as input 1 */
    const ptq_attr *a = io->graph->opset < from ? ptq_node_attr(io->node, "axes") : NULL;
    if (a && a->type != PTQ_ATTR_INTS)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "the axes attribute is not a list of ints");
    PTQ_TRY_RET(ptq_op_axes(ctx, io, from, &axes, &n));
    if (n < 0)
        n = 0;
    if (n == 0) {
        if (io->graph->opset >= from && ptq_node_attr_int(io->node, "noop_with_empty_axes", 0)) {
            *noop = 1;
            return PTQ_OK;
        }
        memset(reduced, 1, (size_t)x->ndim);
        return PTQ_OK;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (ax < 0 || ax >= x->ndim || reduced[ax])
            return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range or repeated for rank %d",
                               (long long)axes[i], x->ndim);
        reduced[ax] = 1;
    }
    return PTQ_OK;
}

/* The kernels' element type of input i, float32, float64, int64 or int32 (else UNSUPPORTED naming it): ReduceSum's,
 * CumSum's and ReduceMax's. */
static ptq_status sum_elem(ptq_ctx *ctx, const ptq_op_io *io, int i, ptq_k_elem *et)
{
    const ptq_dtype dt = io->in[i] ? io->in[i]->dtype : PTQ_DT_UNDEFINED;
    *et = dt == PTQ_DT_INT64 ? PTQ_K_I64 : dt == PTQ_DT_INT32 ? PTQ_K_I32 : dt == PTQ_DT_DOUBLE ? PTQ_K_F64 : PTQ_K_F32;
    if (dt == PTQ_DT_FLOAT || dt == PTQ_DT_DOUBLE || dt == PTQ_DT_INT64 || dt == PTQ_DT_INT32)
        return PTQ_OK;
    return ptq_op_unsupported(ctx, io, "input %d is %s (ptq takes float32, float64, int64 and int32)", i,
                              ptq_dtype_name(dt));
}

/* The kernel's reduction of a Reduce* node, -1 for ReduceMean (its own run). */
static int reduce_kind(const ptq_op_io *io)
{
    static const struct {
        ptq_op_id id;
        ptq_k_reduce op;
    } ops[] = {
        {PTQ_OP_REDUCESUM, PTQ_K_RED_SUM}, {PTQ_OP_REDUCEMAX, PTQ_K_RED_MAX}, {PTQ_OP_REDUCEMIN, PTQ_K_RED_MIN},
        {PTQ_OP_REDUCEPROD, PTQ_K_RED_PROD}, {PTQ_OP_REDUCEL1, PTQ_K_RED_L1}, {PTQ_OP_REDUCEL2, PTQ_K_RED_L2},
        {PTQ_OP_REDUCESUMSQUARE, PTQ_K_RED_SUM_SQUARE}, {PTQ_OP_REDUCELOGSUM, PTQ_K_RED_LOG_SUM},
        {PTQ_OP_REDUCELOGSUMEXP, PTQ_K_RED_LOG_SUM_EXP},
    };
    const ptq_op_id id = ptq_op_of(io)->traits->id;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (ops[k].id == id)
            return (int)ops[k].op;
    return -1;
}

/* Input 0's kernel element type for the node's reduction: ReduceMean float32; ReduceL2, ReduceLogSum and
 * ReduceLogSumExp (a root or log of an integer) float32 or float64; the others sum_elem's. */
static ptq_status reduce_elem(ptq_ctx *ctx, const ptq_op_io *io, ptq_k_elem *et)
{
    const int op = reduce_kind(io);
    *et = PTQ_K_F32;
    if (op < 0)
        return ptq_op_need_float(ctx, io, 0);
    PTQ_TRY_RET(sum_elem(ctx, io, 0, et));
    if ((op == PTQ_K_RED_L2 || op == PTQ_K_RED_LOG_SUM || op == PTQ_K_RED_LOG_SUM_EXP) && *et != PTQ_K_F32 &&
        *et != PTQ_K_F64)
        return ptq_op_unsupported(ctx, io, "input 0 is %s (ptq takes float32 and float64)",
                                  ptq_dtype_name(io->in[0]->dtype));
    return PTQ_OK;
}

static ptq_status reduce_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    unsigned char reduced[PTQ_MAX_DIMS];
    int noop = 0;
    ptq_k_elem et;
    ptq_status st = reduce_elem(ctx, io, &et);
    if (st != PTQ_OK || (st = ptq_op_reduce_axes(ctx, io, reduced, &noop)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    ptq_tensor *y = io->out[0];
    const int keep = ptq_node_attr_int(io->node, "keepdims", 1) != 0;
    y->dtype = x->dtype;
    y->ndim = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (noop || !reduced[d])
            y->dims[y->ndim++] = x->dims[d];
        else if (keep)
            y->dims[y->ndim++] = 1;
    }
    return PTQ_OK;
}

/* Whether the reduced axes are one non-empty block [*a, *b) of consecutive axes. */
static int one_block(const unsigned char *reduced, int ndim, int *a, int *b)
{
    int d = 0;
    while (d < ndim && !reduced[d])
        d++;
    *a = d;
    while (d < ndim && reduced[d])
        d++;
    *b = d;
    for (; d < ndim; d++)
        if (reduced[d])
            return 0;
    return *b > *a;
}

static ptq_status reduce_mean_run(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    unsigned char reduced[PTQ_MAX_DIMS];
    int noop = 0;
    ptq_status st = ptq_op_reduce_axes(ctx, io, reduced, &noop);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    if (noop) {
        if (ptq_tensor_bytes(x))
            memcpy(io->out[0]->data, x->data, ptq_tensor_bytes(x));
        return PTQ_OK;
    }
    int a, b;
    if (fast && one_block(reduced, x->ndim, &a, &b)) { /* [outer, n_red, inner]: the ref's sums, abreast */
        const int64_t outer = ptq_dims_prod(x->dims, 0, a), n_red = ptq_dims_prod(x->dims, a, b);
        const int64_t inner = ptq_dims_prod(x->dims, b, x->ndim);
        if (n_red > 0 && b == x->ndim) {
            ptq_k_global_avgpool_cpu(outer, n_red, x->data, io->out[0]->data);
            return PTQ_OK;
        }
        if (n_red > 0) {
            ptq_k_mean_mid_cpu(outer, n_red, inner, x->data, io->out[0]->data);
            return PTQ_OK;
        }
    }
    ptq_k_reduce_mean_ref(x->ndim, x->dims, reduced, x->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status reduce_mean_ref(ptq_ctx *ctx, const ptq_op_io *io)
{
    return reduce_mean_run(ctx, io, 0);
}

/* ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum or ReduceLogSumExp
 * of input 0 over the node's axes. */
static ptq_status reduce_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    unsigned char reduced[PTQ_MAX_DIMS];
    int noop = 0;
    ptq_k_elem et;
    PTQ_TRY_RET(reduce_elem(ctx, io, &et));
    PTQ_TRY_RET(ptq_op_reduce_axes(ctx, io, reduced, &noop));
    const ptq_tensor *x = io->in[0];
    const ptq_k_reduce op = (ptq_k_reduce)reduce_kind(io);
    /* noop_with_empty_axes: each element reduced alone, which leaves it as it is but for L1's |x|, L2's |x|,
     * SumSquare's x^2 and LogSum's log x (onnxruntime's and ONNX's reference) */
    if (noop && op != PTQ_K_RED_L1 && op != PTQ_K_RED_L2 && op != PTQ_K_RED_SUM_SQUARE && op != PTQ_K_RED_LOG_SUM) {
        if (ptq_tensor_bytes(x))
            memcpy(io->out[0]->data, x->data, ptq_tensor_bytes(x));
        return PTQ_OK;
    }
    if (noop)
        memset(reduced, 0, PTQ_MAX_DIMS);
    ptq_k_reduce_ref(op, x->ndim, x->dims, reduced, et, x->data, io->out[0]->data);
    return PTQ_OK;
}

/* ArgMax's (ArgMin's) axis as a non-negative axis of input 0, of a supported type and a non-empty axis at run time. */
static ptq_status argmax_axis(ptq_ctx *ctx, const ptq_op_io *io, ptq_k_elem *et, int *axis)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    PTQ_TRY_RET(sum_elem(ctx, io, 0, et));
    const ptq_tensor *x = io->in[0];
    const int64_t a = ptq_node_attr_int(io->node, "axis", 0);
    if (a < -x->ndim || a >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)a, x->ndim);
    *axis = (int)(a < 0 ? a + x->ndim : a);
    return PTQ_OK;
}

static ptq_status argmax_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_k_elem et = PTQ_K_F32;
    int axis = 0;
    PTQ_TRY_RET(argmax_axis(ctx, io, &et, &axis));
    const ptq_tensor *x = io->in[0];
    ptq_tensor *y = io->out[0];
    const int keep = ptq_node_attr_int(io->node, "keepdims", 1) != 0;
    y->dtype = PTQ_DT_INT64;
    y->ndim = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != axis || keep)
            y->dims[y->ndim++] = d == axis ? 1 : x->dims[d];
    return PTQ_OK;
}

static ptq_status argmax_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_k_elem et = PTQ_K_F32;
    int axis = 0;
    PTQ_TRY_RET(argmax_axis(ctx, io, &et, &axis));
    const ptq_tensor *x = io->in[0];
    const int64_t outer = ptq_dims_prod(x->dims, 0, axis), inner = ptq_dims_prod(x->dims, axis + 1, x->ndim);
    if (x->dims[axis] == 0 && outer * inner > 0)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %d has no element to take the %s of", axis,
                           ptq_op_of(io)->traits->id == PTQ_OP_ARGMIN ? "least" : "largest");
    (ptq_op_of(io)->traits->id == PTQ_OP_ARGMIN ? ptq_k_argmin_ref : ptq_k_argmax_ref)(
        outer, x->dims[axis], inner, et, ptq_node_attr_int(io->node, "select_last_index", 0) != 0, x->data,
        io->out[0]->data);
    return PTQ_OK;
}

/* CumSum's axis (input 1, a scalar or one value of int32 or int64) as a non-negative axis of input 0. */
static ptq_status cumsum_axis(ptq_ctx *ctx, const ptq_op_io *io, int *axis)
{
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 1));
    const ptq_tensor *a = io->in[1], *x = io->in[0];
    if ((a->dtype != PTQ_DT_INT64 && a->dtype != PTQ_DT_INT32) || ptq_tensor_numel(a) != 1 || a->ndim > 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "axis (input 1) must be one int32 or int64 value, got %s of "
                           "rank %d", ptq_dtype_name(a->dtype), a->ndim);
    if (!a->data)
        return ptq_op_unsupported(ctx, io, "axis (input 1) is computed at run time");
    const int64_t v = a->dtype == PTQ_DT_INT64 ? *(const int64_t *)a->data : *(const int32_t *)a->data;
    if (v < -x->ndim || v >= x->ndim || x->ndim < 1)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)v, x->ndim);
    *axis = (int)(v < 0 ? v + x->ndim : v);
    return PTQ_OK;
}

static ptq_status cumsum_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    ptq_k_elem et;
    int axis;
    PTQ_TRY_RET(ptq_op_need_input(ctx, io, 0));
    PTQ_TRY_RET(sum_elem(ctx, io, 0, &et));
    PTQ_TRY_RET(cumsum_axis(ctx, io, &axis));
    ptq_op_same_shape(io->out[0], io->in[0]);
    io->out[0]->dtype = io->in[0]->dtype;
    return PTQ_OK;
}

static ptq_status cumsum_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    ptq_k_elem et;
    int axis;
    PTQ_TRY_RET(sum_elem(ctx, io, 0, &et));
    PTQ_TRY_RET(cumsum_axis(ctx, io, &axis));
    const ptq_tensor *x = io->in[0];
    ptq_k_cumsum_ref(ptq_dims_prod(x->dims, 0, axis), x->dims[axis], ptq_dims_prod(x->dims, axis + 1, x->ndim), et,
                     ptq_node_attr_int(io->node, "exclusive", 0) != 0, ptq_node_attr_int(io->node, "reverse", 0) != 0,
                     x->data, io->out[0]->data);
    return PTQ_OK;
}

static ptq_status reduce_mean_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return reduce_mean_run(ctx, io, 1);
}

/* X viewed as [rows, cols] split at the (non-negative) axis; scale and the
 * optional bias must hold cols values. */
ptq_status ptq_op_layernorm_view(ptq_ctx *ctx, const ptq_op_io *io, int *axis, int64_t *rows, int64_t *cols,
                                 float *eps)
{
    ptq_status st = ptq_op_need_float(ctx, io, 0);
    if (st != PTQ_OK || (st = ptq_op_need_float(ctx, io, 1)) != PTQ_OK)
        return st;
    if (io->n_in > 2 && io->in[2] && (st = ptq_op_need_float(ctx, io, 2)) != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    int64_t ax = ptq_node_attr_int(io->node, "axis", -1);
    if (ax < -x->ndim || ax >= x->ndim)
        return ptq_op_fail(ctx, io, PTQ_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)ax, x->ndim);
    *axis = (int)(ax < 0 ? ax + x->ndim : ax);
    *rows = ptq_dims_prod(x->dims, 0, *axis);
    *cols = ptq_dims_prod(x->dims, *axis, x->ndim);
    for (int i = 1; i < 3 && i < io->n_in; i++)
        if (io->in[i] && ptq_tensor_numel(io->in[i]) != *cols)
            return ptq_op_unsupported(ctx, io, "input %d has %lld values for %lld normalized ones (broadcasting)", i,
                                      (long long)ptq_tensor_numel(io->in[i]), (long long)*cols);
    if (ptq_node_attr_int(io->node, "stash_type", 1) != 1)
        return ptq_op_unsupported(ctx, io, "stash_type %lld (only 1, float32)",
                                  (long long)ptq_node_attr_int(io->node, "stash_type", 1));
    if (io->n_out > 3)
        return ptq_op_fail(ctx, io, PTQ_ERR_FORMAT, "%d outputs; LayerNormalization has at most 3", io->n_out);
    *eps = ptq_node_attr_float(io->node, "epsilon", 1e-5f);
    return PTQ_OK;
}

static ptq_status layernorm_infer(ptq_ctx *ctx, ptq_op_io *io)
{
    int axis = 0;
    int64_t rows = 0, cols = 0;
    float eps = 1e-5f;
    ptq_status st = ptq_op_layernorm_view(ctx, io, &axis, &rows, &cols, &eps);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *x = io->in[0];
    ptq_op_same_shape(io->out[0], x);
    for (int i = 1; i < io->n_out; i++) {
        ptq_op_same_shape(io->out[i], x);
        for (int d = axis; d < x->ndim; d++)
            io->out[i]->dims[d] = 1;
    }
    return PTQ_OK;
}

static ptq_status layernorm_with(ptq_ctx *ctx, const ptq_op_io *io, int fast)
{
    int axis = 0;
    int64_t rows = 0, cols = 0;
    float eps = 1e-5f;
    ptq_status st = ptq_op_layernorm_view(ctx, io, &axis, &rows, &cols, &eps);
    if (st != PTQ_OK)
        return st;
    const ptq_tensor *b = io->n_in > 2 ? io->in[2] : NULL;
    (fast ? ptq_k_layernorm_cpu : ptq_k_layernorm_ref)(rows, cols, io->in[0]->data, io->in[1]->data,
                                                       b ? b->data : NULL, eps, io->out[0]->data,
                                                       io->n_out > 1 ? io->out[1]->data : NULL,
                                                       io->n_out > 2 ? io->out[2]->data : NULL);
    return PTQ_OK;
}

static ptq_status layernorm_run(ptq_ctx *ctx, const ptq_op_io *io)
{
    return layernorm_with(ctx, io, 0);
}

static ptq_status layernorm_run_cpu(ptq_ctx *ctx, const ptq_op_io *io)
{
    return layernorm_with(ctx, io, 1);
}

const ptq_op_def ptq_op_ReduceMean = {PTQ_OP_TRAITS(REDUCEMEAN), 1, 1u << 1, reduce_infer, reduce_mean_ref,
                                      reduce_mean_cpu, 0, 0};
const ptq_op_def ptq_op_ReduceSum = {PTQ_OP_TRAITS(REDUCESUM), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceMax = {PTQ_OP_TRAITS(REDUCEMAX), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceMin = {PTQ_OP_TRAITS(REDUCEMIN), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceProd = {PTQ_OP_TRAITS(REDUCEPROD), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceL1 = {PTQ_OP_TRAITS(REDUCEL1), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceL2 = {PTQ_OP_TRAITS(REDUCEL2), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceSumSquare = {PTQ_OP_TRAITS(REDUCESUMSQUARE), 1, 1u << 1, reduce_infer, reduce_run, NULL,
                                           0, 0};
const ptq_op_def ptq_op_ReduceLogSum = {PTQ_OP_TRAITS(REDUCELOGSUM), 1, 1u << 1, reduce_infer, reduce_run, NULL, 0, 0};
const ptq_op_def ptq_op_ReduceLogSumExp = {PTQ_OP_TRAITS(REDUCELOGSUMEXP), 1, 1u << 1, reduce_infer, reduce_run, NULL,
                                           0, 0};
const ptq_op_def ptq_op_ArgMax = {PTQ_OP_TRAITS(ARGMAX), 1, 0, argmax_infer, argmax_run, NULL, 0, 0};
const ptq_op_def ptq_op_ArgMin = {PTQ_OP_TRAITS(ARGMIN), 1, 0, argmax_infer, argmax_run, NULL, 0, 0};
const ptq_op_def ptq_op_CumSum = {PTQ_OP_TRAITS(CUMSUM), 11, 1u << 1, cumsum_infer, cumsum_run, NULL, 0, 0};
const ptq_op_def ptq_op_LayerNormalization = {PTQ_OP_TRAITS(LAYERNORMALIZATION), 17, 0, layernorm_infer,
                                              layernorm_run, layernorm_run_cpu, 0, 0};
