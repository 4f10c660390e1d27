/* What ptq knows about each ONNX op apart from its kernels: its id, name and
 * domain, which inputs are weights, which tensors a plan may quantize, the
 * weight's channel axis and how the op fuses (data for Q/DQ placement).
 * model/op_traits.c holds the one table; runtime/ops.c pairs each entry
 * with its kernels by id. Covered by tests/test_op_table.c. */
#ifndef PTQ_MODEL_OP_TRAITS_H
#define PTQ_MODEL_OP_TRAITS_H

#include <string.h>

#include "ptq/graph.h"

/* Index into the traits table and every backend's per-op arrays. */
typedef enum ptq_op_id {
    PTQ_OP_CONV,
    PTQ_OP_CONVTRANSPOSE,
    PTQ_OP_GEMM,
    PTQ_OP_MATMUL,
    PTQ_OP_MAXPOOL,
    PTQ_OP_AVERAGEPOOL,
    PTQ_OP_GLOBALAVERAGEPOOL,
    PTQ_OP_BATCHNORMALIZATION,
    PTQ_OP_ADD,
    PTQ_OP_SUB,
    PTQ_OP_MUL,
    PTQ_OP_DIV,
    PTQ_OP_RELU,
    PTQ_OP_LEAKYRELU,
    PTQ_OP_CLIP,
    PTQ_OP_SIGMOID,
    PTQ_OP_HARDSIGMOID,
    PTQ_OP_HARDSWISH,
    PTQ_OP_TANH,
    PTQ_OP_SOFTMAX,
    PTQ_OP_FLATTEN,
    PTQ_OP_RESHAPE,
    PTQ_OP_SQUEEZE,
    PTQ_OP_UNSQUEEZE,
    PTQ_OP_TRANSPOSE,
    PTQ_OP_CONCAT,
    PTQ_OP_IDENTITY,
    PTQ_OP_DROPOUT,
    PTQ_OP_PAD,
    PTQ_OP_ERF,
    PTQ_OP_CONSTANT,
    PTQ_OP_REDUCEMEAN,
    PTQ_OP_LAYERNORMALIZATION,
    PTQ_OP_POW,
    PTQ_OP_SQRT,
    PTQ_OP_SHAPE,
    PTQ_OP_GATHER,
    PTQ_OP_SLICE,
    PTQ_OP_CAST,
    PTQ_OP_GELU,
    PTQ_OP_SPLIT,
    PTQ_OP_WHERE,
    PTQ_OP_EXPAND,
    PTQ_OP_RANGE,
    PTQ_OP_EQUAL,
    PTQ_OP_MOD,
    PTQ_OP_CONSTANTOFSHAPE,
    PTQ_OP_NOT,
    PTQ_OP_SCATTERND,
    PTQ_OP_REDUCESUM,
    PTQ_OP_CUMSUM,
    PTQ_OP_EXP,
    PTQ_OP_FLOOR,
    PTQ_OP_CEIL,
    PTQ_OP_ROUND,
    PTQ_OP_SIN,
    PTQ_OP_COS,
    PTQ_OP_SOFTPLUS,
    PTQ_OP_SOFTSIGN,
    PTQ_OP_ELU,
    PTQ_OP_SELU,
    PTQ_OP_CELU,
    PTQ_OP_MISH,
    PTQ_OP_PRELU,
    PTQ_OP_LOGSOFTMAX,
    PTQ_OP_MAX,
    PTQ_OP_MIN,
    PTQ_OP_INSTANCENORMALIZATION,
    PTQ_OP_NEG,
    PTQ_OP_TRILU,
    PTQ_OP_REDUCEMAX,
    PTQ_OP_ARGMAX,
    PTQ_OP_LOG,
    PTQ_OP_RECIPROCAL,
    PTQ_OP_ABS,
    PTQ_OP_GREATER,
    PTQ_OP_LESS,
    PTQ_OP_GREATEROREQUAL,
    PTQ_OP_LESSOREQUAL,
    PTQ_OP_AND,
    PTQ_OP_OR,
    PTQ_OP_RNN,
    PTQ_OP_GRU,
    PTQ_OP_LSTM,
    PTQ_OP_EINSUM,
    PTQ_OP_DEPTHTOSPACE,
    PTQ_OP_SPACETODEPTH,
    PTQ_OP_TILE,
    PTQ_OP_GLOBALMAXPOOL,
    PTQ_OP_SUM,
    PTQ_OP_MEAN,
    PTQ_OP_SIZE,
    PTQ_OP_REDUCEMIN,
    PTQ_OP_REDUCEPROD,
    PTQ_OP_REDUCEL1,
    PTQ_OP_REDUCEL2,
    PTQ_OP_REDUCESUMSQUARE,
    PTQ_OP_REDUCELOGSUM,
    PTQ_OP_REDUCELOGSUMEXP,
    PTQ_OP_ARGMIN,
    PTQ_OP_TAN,
    PTQ_OP_ASIN,
    PTQ_OP_ACOS,
    PTQ_OP_ATAN,
    PTQ_OP_SINH,
    PTQ_OP_COSH,
    PTQ_OP_ASINH,
    PTQ_OP_ACOSH,
    PTQ_OP_ATANH,
    PTQ_OP_SIGN,
    PTQ_OP_THRESHOLDEDRELU,
    PTQ_OP_SHRINK,
    PTQ_OP_LRN,
    PTQ_OP_RESIZE,
    PTQ_OP_UPSAMPLE,
    PTQ_OP_QUANTIZELINEAR,
    PTQ_OP_DEQUANTIZELINEAR,
    PTQ_OP_GROUPNORMALIZATION,
    PTQ_OP_MEANVARIANCENORMALIZATION,
    PTQ_OP_LPNORMALIZATION,
    PTQ_OP_LPPOOL,
    PTQ_OP_HARDMAX,
    PTQ_OP_ISNAN,
    PTQ_OP_ISINF,
    PTQ_OP_XOR,
    PTQ_OP_BITSHIFT,
    PTQ_OP_TOPK,
    PTQ_OP_GATHERELEMENTS,
    PTQ_OP_SCATTERELEMENTS,
    PTQ_OP_GATHERND,
    PTQ_OP_ONEHOT,
    PTQ_OP_EYELIKE,
    PTQ_OP_CASTLIKE,
    PTQ_OP_REVERSESEQUENCE,
    PTQ_OP_SCATTER,
    PTQ_OP_COUNT
} ptq_op_id;

/* Fusion traits, as TensorRT applies them (DESIGN.md "Where quantization
 * happens"); read by Q/DQ placement, not by execution. */
enum {
    PTQ_OPF_WEIGHTED = 1u << 0,                /* a compute layer with weights (Conv, ConvTranspose, Gemm, MatMul) */
    PTQ_OPF_FUSES_ACTIVATION_AFTER = 1u << 1,  /* absorbs a following FUSIBLE_ACTIVATION (no rounding between) */
    PTQ_OPF_FUSIBLE_ACTIVATION = 1u << 2,      /* pointwise activation a weighted op absorbs */
    PTQ_OPF_RESIDUAL_ADD = 1u << 3,            /* Add fusible into a preceding Conv; its other input is quantized */
    PTQ_OPF_FOLDS_INTO_WEIGHTED = 1u << 4,     /* folded into the preceding weighted op's weights (BatchNorm) */
    PTQ_OPF_QDQ_COMMUTES = 1u << 5             /* Q/DQ moves through it unchanged (pooling by max, data movement) */
};

/* How a weight's output-channel axis follows from the node. */
typedef enum ptq_op_axis_rule {
    PTQ_AXIS_NONE = 0, /* no per-channel weight */
    PTQ_AXIS_FIRST,    /* axis 0 (Conv W [C_out, C_in/group, k...]) */
    PTQ_AXIS_GEMM_B,   /* Gemm B: 0 with transB, else 1 (0 for a 1-D B) */
    PTQ_AXIS_LAST,     /* MatMul B [..., K, N]: the last axis (none for a vector B [K]) */
    /* ConvTranspose W [C_in, C_out/group, k...]: axis 1 with group 1; with
     * groups axis 1 indexes a channel of every group, not an output channel
     * (runtimes that scale per output channel want C_out scales, which ONNX's
     * DequantizeLinear cannot give that layout), so one scale for the tensor */
    PTQ_AXIS_SECOND_UNGROUPED
} ptq_op_axis_rule;

#define PTQ_OP_ALL_IO (~0u) /* every input/output slot, however many */

typedef struct ptq_op_traits {
    ptq_op_id id;
    const char *op_type;       /* ONNX op name, e.g. "Conv" */
    const char *domain;        /* "ai.onnx" (also matched by "") */
    unsigned weight_inputs;    /* bit i: input i is a weight if constant (Conv/ConvTranspose W, B; Gemm B, C; MatMul B) */
    unsigned quant_inputs;     /* bit i: float input i is quantized: a weight when constant, an activation otherwise */
    unsigned quant_outputs;    /* bit i: float output i is a quantizable activation */
    int axis_input;            /* the input whose per-channel axis axis_rule gives, or -1 */
    ptq_op_axis_rule axis_rule;
    unsigned flags;            /* PTQ_OPF_* */
} ptq_op_traits;

/* [PTQ_OP_COUNT], entry i has id i. */
extern const ptq_op_traits ptq_op_traits_table[PTQ_OP_COUNT];

/* The entry of (domain, op_type), "" or NULL domain meaning ai.onnx; NULL
 * when ptq does not know the op. */
const ptq_op_traits *ptq_op_traits_find(const char *domain, const char *op_type);

/* Node n's first named output (output 0 but where a model leaves it out: an LSTM's Y with Y_h kept), or -1. */
static inline int ptq_node_first_output(const ptq_node *n)
{
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0)
            return n->outputs[i];
    return -1;
}

/* Whether node n names the outputs ptq needs: output 0, which every op ptq runs produces, but for LSTM, GRU and
 * RNN, whose Y a model may leave out (keeping Y_h), any one. */
static inline int ptq_node_has_output(const ptq_node *n)
{
    const int recurrent = !strcmp(n->op_type, "LSTM") || !strcmp(n->op_type, "GRU") || !strcmp(n->op_type, "RNN");
    return n->n_outputs > 0 && (n->outputs[0] >= 0 || (recurrent && ptq_node_first_output(n) >= 0));
}

/* The per-channel axis of a weight of rank ndim fed to node n (of op t) as
 * input `input`; -1 (one scale for the tensor) when t gives none there. */
int ptq_op_weight_axis(const ptq_op_traits *t, const ptq_node *n, int input, int ndim);

/* 1 if slot i is in mask m (an input or output mask above). */
static inline int ptq_op_mask_has(unsigned m, int i)
{
    return m == PTQ_OP_ALL_IO || (i >= 0 && i < 32 && ((m >> i) & 1u));
}

#endif
