/* The op table: every ONNX op ptq executes, indexed by its id
 * (model/op_traits.h), each defined beside its inference and kernels in
 * runtime/ops_*.c; and the resolution of a graph's nodes to entries.
 * Covered by tests/test_op_table.c, tests/test_ops_dense.c,
 * tests/test_ops_shape.c and the ONNX conformance run. */
#include <stdlib.h>

#include "runtime/op.h"

extern const ptq_op_def ptq_op_Conv, ptq_op_Gemm, ptq_op_MatMul, ptq_op_MaxPool, ptq_op_AveragePool,
    ptq_op_GlobalAveragePool, ptq_op_BatchNormalization;
extern const ptq_op_def ptq_op_Add, ptq_op_Sub, ptq_op_Mul, ptq_op_Div, ptq_op_Relu, ptq_op_LeakyRelu, ptq_op_Clip,
    ptq_op_Sigmoid, ptq_op_HardSigmoid, ptq_op_HardSwish, ptq_op_Tanh, ptq_op_Softmax, ptq_op_Flatten,
    ptq_op_Reshape, ptq_op_Squeeze, ptq_op_Unsqueeze, ptq_op_Transpose, ptq_op_Concat, ptq_op_Identity, ptq_op_Dropout, ptq_op_Pad, ptq_op_Erf,
    ptq_op_Constant, ptq_op_ReduceMean, ptq_op_LayerNormalization, ptq_op_Pow, ptq_op_Sqrt, ptq_op_Shape,
    ptq_op_Gather, ptq_op_Slice, ptq_op_Cast;

static const ptq_op_def *const op_table[PTQ_OP_COUNT] = {
    [PTQ_OP_CONV] = &ptq_op_Conv,
    [PTQ_OP_GEMM] = &ptq_op_Gemm,
    [PTQ_OP_MATMUL] = &ptq_op_MatMul,
    [PTQ_OP_MAXPOOL] = &ptq_op_MaxPool,
    [PTQ_OP_AVERAGEPOOL] = &ptq_op_AveragePool,
    [PTQ_OP_GLOBALAVERAGEPOOL] = &ptq_op_GlobalAveragePool,
    [PTQ_OP_BATCHNORMALIZATION] = &ptq_op_BatchNormalization,
    [PTQ_OP_ADD] = &ptq_op_Add,
    [PTQ_OP_SUB] = &ptq_op_Sub,
    [PTQ_OP_MUL] = &ptq_op_Mul,
    [PTQ_OP_DIV] = &ptq_op_Div,
    [PTQ_OP_RELU] = &ptq_op_Relu,
    [PTQ_OP_LEAKYRELU] = &ptq_op_LeakyRelu,
    [PTQ_OP_CLIP] = &ptq_op_Clip,
    [PTQ_OP_SIGMOID] = &ptq_op_Sigmoid,
    [PTQ_OP_HARDSIGMOID] = &ptq_op_HardSigmoid,
    [PTQ_OP_HARDSWISH] = &ptq_op_HardSwish,
    [PTQ_OP_TANH] = &ptq_op_Tanh,
    [PTQ_OP_SOFTMAX] = &ptq_op_Softmax,
    [PTQ_OP_FLATTEN] = &ptq_op_Flatten,
    [PTQ_OP_RESHAPE] = &ptq_op_Reshape,
    [PTQ_OP_SQUEEZE] = &ptq_op_Squeeze,
    [PTQ_OP_UNSQUEEZE] = &ptq_op_Unsqueeze,
    [PTQ_OP_TRANSPOSE] = &ptq_op_Transpose,
    [PTQ_OP_CONCAT] = &ptq_op_Concat,
    [PTQ_OP_IDENTITY] = &ptq_op_Identity,
    [PTQ_OP_DROPOUT] = &ptq_op_Dropout,
    [PTQ_OP_PAD] = &ptq_op_Pad,
    [PTQ_OP_ERF] = &ptq_op_Erf,
    [PTQ_OP_CONSTANT] = &ptq_op_Constant,
    [PTQ_OP_REDUCEMEAN] = &ptq_op_ReduceMean,
    [PTQ_OP_LAYERNORMALIZATION] = &ptq_op_LayerNormalization,
    [PTQ_OP_POW] = &ptq_op_Pow,
    [PTQ_OP_SQRT] = &ptq_op_Sqrt,
    [PTQ_OP_SHAPE] = &ptq_op_Shape,
    [PTQ_OP_GATHER] = &ptq_op_Gather,
    [PTQ_OP_SLICE] = &ptq_op_Slice,
    [PTQ_OP_CAST] = &ptq_op_Cast,
};

const ptq_op_def *ptq_op_get(ptq_op_id id)
{
    return (unsigned)id < PTQ_OP_COUNT ? op_table[id] : NULL;
}

const ptq_op_def *ptq_op_find(const char *domain, const char *op_type)
{
    const ptq_op_traits *t = ptq_op_traits_find(domain, op_type);
    return t ? op_table[t->id] : NULL;
}

const ptq_op_def *ptq_op_of(const ptq_op_io *io)
{
    return io->op ? io->op : ptq_op_find(io->node->domain, io->node->op_type);
}

ptq_status ptq_op_resolve(ptq_ctx *ctx, const ptq_graph *g, const ptq_op_def ***out)
{
    *out = NULL;
    const ptq_op_def **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    if (!ops)
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory resolving the ops of %d nodes", g->n_nodes);
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const char *domain = n->domain && n->domain[0] ? n->domain : "ai.onnx";
        const ptq_op_def *op = ptq_op_find(n->domain, n->op_type);
        ptq_status st = PTQ_OK;
        if (!op)
            st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "node '%s': op %s (domain %s, opset %lld) is not supported by ptq",
                          n->name, n->op_type, domain, (long long)g->opset);
        else if (g->opset > 0 && g->opset < op->since_opset)
            st = ptq_fail(ctx, PTQ_ERR_UNSUPPORTED,
                          "node '%s': op %s (domain %s) at opset %lld is older than ptq implements (opset %d+)",
                          n->name, n->op_type, domain, (long long)g->opset, op->since_opset);
        if (st != PTQ_OK) {
            free(ops);
            return st;
        }
        ops[k] = op;
    }
    *out = ops;
    return PTQ_OK;
}
