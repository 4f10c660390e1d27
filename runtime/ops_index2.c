/* Indexing ops of exported models beside runtime/ops_index.c's: TopK (k from the attribute before opset 10, else a
 * host input known before the run: an initializer or a folded shape computation; largest and sorted from 11),
 * through kernels/ref/index2.c, their CPU path too; every index read from data is checked against the
 * shape it addresses, naming the node, before anything is written. The CUDA backend hands them to the CPU.
 * Covered by tests/ops_index_test.py and the ONNX conformance run. */
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

const ptq_op_def ptq_op_TopK = {PTQ_OP_TRAITS(TOPK), 1, 1u << 1, topk_infer, topk_run, NULL, 0};
