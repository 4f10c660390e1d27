/* The op table: every ONNX op ptq executes, each defined beside its
 * inference and kernels in runtime/ops_*.c. Covered by tests/test_ops_dense.c, tests/test_ops_shape.c and the ONNX conformance run. */
#include <string.h>

#include "runtime/op.h"

extern const ptq_op_def ptq_op_Conv, ptq_op_Gemm, ptq_op_MatMul, ptq_op_MaxPool, ptq_op_AveragePool,
    ptq_op_GlobalAveragePool, ptq_op_BatchNormalization;
extern const ptq_op_def ptq_op_Add, ptq_op_Sub, ptq_op_Mul, ptq_op_Div, ptq_op_Relu, ptq_op_LeakyRelu, ptq_op_Clip,
    ptq_op_Sigmoid, ptq_op_HardSigmoid, ptq_op_HardSwish, ptq_op_Tanh, ptq_op_Softmax, ptq_op_Flatten,
    ptq_op_Reshape, ptq_op_Squeeze, ptq_op_Unsqueeze, ptq_op_Transpose, ptq_op_Concat, ptq_op_Identity, ptq_op_Dropout, ptq_op_Constant;

static const ptq_op_def *const op_table[] = {
    &ptq_op_Conv,    &ptq_op_Gemm,      &ptq_op_MatMul,      &ptq_op_MaxPool,   &ptq_op_AveragePool,
    &ptq_op_GlobalAveragePool, &ptq_op_BatchNormalization, &ptq_op_Add, &ptq_op_Sub, &ptq_op_Mul,
    &ptq_op_Div,     &ptq_op_Relu,      &ptq_op_LeakyRelu,   &ptq_op_Clip,      &ptq_op_Sigmoid,
    &ptq_op_HardSigmoid, &ptq_op_HardSwish, &ptq_op_Tanh,   &ptq_op_Softmax,   &ptq_op_Flatten,
    &ptq_op_Reshape, &ptq_op_Squeeze, &ptq_op_Unsqueeze, &ptq_op_Transpose, &ptq_op_Concat,      &ptq_op_Identity,  &ptq_op_Dropout,
    &ptq_op_Constant,
};

const ptq_op_def *ptq_op_find(const char *domain, const char *op_type)
{
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0)
        return NULL;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(op_table[i]->op_type, op_type) == 0)
            return op_table[i];
    return NULL;
}
