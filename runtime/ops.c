/* The op table: every ONNX op ptq executes, indexed by its id
 * (model/op_traits.h), each defined beside its inference and kernels in
 * runtime/ops_*.c; and the resolution of a graph's nodes to entries.
 * Covered by tests/test_op_table.c, tests/test_ops_dense.c,
 * tests/test_ops_shape.c, tests/test_ops_zoo.c, tests/test_ops_transformer.c
 * and the ONNX conformance run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/op.h"
#include "runtime/op_util.h"

extern const ptq_op_def ptq_op_Conv, ptq_op_ConvTranspose, ptq_op_Gemm, ptq_op_MatMul, ptq_op_MaxPool,
    ptq_op_AveragePool, ptq_op_GlobalAveragePool, ptq_op_BatchNormalization, ptq_op_Add, ptq_op_Sub, ptq_op_Mul,
    ptq_op_Div, ptq_op_Relu, ptq_op_LeakyRelu, ptq_op_Clip, ptq_op_Sigmoid, ptq_op_HardSigmoid, ptq_op_HardSwish,
    ptq_op_Tanh, ptq_op_Softmax, ptq_op_Flatten, ptq_op_Reshape, ptq_op_Squeeze, ptq_op_Unsqueeze, ptq_op_Transpose,
    ptq_op_Concat, ptq_op_Identity, ptq_op_Dropout, ptq_op_Pad, ptq_op_Erf, ptq_op_Constant, ptq_op_ReduceMean,
    ptq_op_LayerNormalization, ptq_op_Pow, ptq_op_Sqrt, ptq_op_Shape, ptq_op_Gather, ptq_op_Slice, ptq_op_Cast,
    ptq_op_Gelu, ptq_op_Split, ptq_op_Where, ptq_op_Expand, ptq_op_Range, ptq_op_Equal, ptq_op_Mod,
    ptq_op_ConstantOfShape, ptq_op_Not, ptq_op_ScatterND, ptq_op_ReduceSum, ptq_op_CumSum, ptq_op_Exp, ptq_op_Floor,
    ptq_op_Ceil, ptq_op_Round, ptq_op_Sin, ptq_op_Cos, ptq_op_Softplus, ptq_op_Softsign, ptq_op_Elu, ptq_op_Selu,
    ptq_op_Celu, ptq_op_Mish, ptq_op_PRelu, ptq_op_LogSoftmax, ptq_op_Max, ptq_op_Min, ptq_op_InstanceNormalization,
    ptq_op_Neg, ptq_op_Trilu, ptq_op_ReduceMax, ptq_op_ArgMax, ptq_op_Log, ptq_op_Reciprocal, ptq_op_Abs,
    ptq_op_Greater, ptq_op_Less, ptq_op_GreaterOrEqual, ptq_op_LessOrEqual, ptq_op_And, ptq_op_Or, ptq_op_RNN,
    ptq_op_GRU, ptq_op_LSTM, ptq_op_Einsum, ptq_op_DepthToSpace, ptq_op_SpaceToDepth, ptq_op_Tile, ptq_op_GlobalMaxPool,
    ptq_op_Sum, ptq_op_Mean, ptq_op_Size, ptq_op_ReduceMin, ptq_op_ReduceProd, ptq_op_ReduceL1, ptq_op_ReduceL2,
    ptq_op_ReduceSumSquare, ptq_op_ReduceLogSum, ptq_op_ReduceLogSumExp, ptq_op_ArgMin, ptq_op_Tan, ptq_op_Asin,
    ptq_op_Acos, ptq_op_Atan, ptq_op_Sinh, ptq_op_Cosh, ptq_op_Asinh, ptq_op_Acosh, ptq_op_Atanh, ptq_op_Sign,
    ptq_op_ThresholdedRelu, ptq_op_Shrink, ptq_op_LRN, ptq_op_Resize, ptq_op_Upsample, ptq_op_QuantizeLinear,
    ptq_op_DequantizeLinear, ptq_op_GroupNormalization, ptq_op_MeanVarianceNormalization, ptq_op_LpNormalization,
    ptq_op_LpPool, ptq_op_Hardmax, ptq_op_IsNaN, ptq_op_IsInf, ptq_op_Xor, ptq_op_BitShift, ptq_op_TopK,
    ptq_op_GatherElements, ptq_op_ScatterElements, ptq_op_GatherND, ptq_op_OneHot, ptq_op_EyeLike, ptq_op_CastLike,
    ptq_op_ReverseSequence, ptq_op_Scatter;

static const ptq_op_def *const op_table[PTQ_OP_COUNT] = {
    [PTQ_OP_CONV] = &ptq_op_Conv,
    [PTQ_OP_CONVTRANSPOSE] = &ptq_op_ConvTranspose,
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
    [PTQ_OP_GELU] = &ptq_op_Gelu,
    [PTQ_OP_SPLIT] = &ptq_op_Split,
    [PTQ_OP_WHERE] = &ptq_op_Where,
    [PTQ_OP_EXPAND] = &ptq_op_Expand,
    [PTQ_OP_RANGE] = &ptq_op_Range,
    [PTQ_OP_EQUAL] = &ptq_op_Equal,
    [PTQ_OP_MOD] = &ptq_op_Mod,
    [PTQ_OP_CONSTANTOFSHAPE] = &ptq_op_ConstantOfShape,
    [PTQ_OP_NOT] = &ptq_op_Not,
    [PTQ_OP_SCATTERND] = &ptq_op_ScatterND,
    [PTQ_OP_REDUCESUM] = &ptq_op_ReduceSum,
    [PTQ_OP_CUMSUM] = &ptq_op_CumSum,
    [PTQ_OP_EXP] = &ptq_op_Exp,
    [PTQ_OP_FLOOR] = &ptq_op_Floor,
    [PTQ_OP_CEIL] = &ptq_op_Ceil,
    [PTQ_OP_ROUND] = &ptq_op_Round,
    [PTQ_OP_SIN] = &ptq_op_Sin,
    [PTQ_OP_COS] = &ptq_op_Cos,
    [PTQ_OP_SOFTPLUS] = &ptq_op_Softplus,
    [PTQ_OP_SOFTSIGN] = &ptq_op_Softsign,
    [PTQ_OP_ELU] = &ptq_op_Elu,
    [PTQ_OP_SELU] = &ptq_op_Selu,
    [PTQ_OP_CELU] = &ptq_op_Celu,
    [PTQ_OP_MISH] = &ptq_op_Mish,
    [PTQ_OP_PRELU] = &ptq_op_PRelu,
    [PTQ_OP_LOGSOFTMAX] = &ptq_op_LogSoftmax,
    [PTQ_OP_MAX] = &ptq_op_Max,
    [PTQ_OP_MIN] = &ptq_op_Min,
    [PTQ_OP_INSTANCENORMALIZATION] = &ptq_op_InstanceNormalization,
    [PTQ_OP_NEG] = &ptq_op_Neg,
    [PTQ_OP_TRILU] = &ptq_op_Trilu,
    [PTQ_OP_REDUCEMAX] = &ptq_op_ReduceMax,
    [PTQ_OP_ARGMAX] = &ptq_op_ArgMax,
    [PTQ_OP_LOG] = &ptq_op_Log,
    [PTQ_OP_RECIPROCAL] = &ptq_op_Reciprocal,
    [PTQ_OP_ABS] = &ptq_op_Abs,
    [PTQ_OP_GREATER] = &ptq_op_Greater,
    [PTQ_OP_LESS] = &ptq_op_Less,
    [PTQ_OP_GREATEROREQUAL] = &ptq_op_GreaterOrEqual,
    [PTQ_OP_LESSOREQUAL] = &ptq_op_LessOrEqual,
    [PTQ_OP_AND] = &ptq_op_And,
    [PTQ_OP_OR] = &ptq_op_Or,
    [PTQ_OP_RNN] = &ptq_op_RNN,
    [PTQ_OP_GRU] = &ptq_op_GRU,
    [PTQ_OP_LSTM] = &ptq_op_LSTM,
    [PTQ_OP_EINSUM] = &ptq_op_Einsum,
    [PTQ_OP_DEPTHTOSPACE] = &ptq_op_DepthToSpace,
    [PTQ_OP_SPACETODEPTH] = &ptq_op_SpaceToDepth,
    [PTQ_OP_TILE] = &ptq_op_Tile,
    [PTQ_OP_GLOBALMAXPOOL] = &ptq_op_GlobalMaxPool,
    [PTQ_OP_SUM] = &ptq_op_Sum,
    [PTQ_OP_MEAN] = &ptq_op_Mean,
    [PTQ_OP_SIZE] = &ptq_op_Size,
    [PTQ_OP_REDUCEMIN] = &ptq_op_ReduceMin,
    [PTQ_OP_REDUCEPROD] = &ptq_op_ReduceProd,
    [PTQ_OP_REDUCEL1] = &ptq_op_ReduceL1,
    [PTQ_OP_REDUCEL2] = &ptq_op_ReduceL2,
    [PTQ_OP_REDUCESUMSQUARE] = &ptq_op_ReduceSumSquare,
    [PTQ_OP_REDUCELOGSUM] = &ptq_op_ReduceLogSum,
    [PTQ_OP_REDUCELOGSUMEXP] = &ptq_op_ReduceLogSumExp,
    [PTQ_OP_ARGMIN] = &ptq_op_ArgMin,
    [PTQ_OP_TAN] = &ptq_op_Tan,
    [PTQ_OP_ASIN] = &ptq_op_Asin,
    [PTQ_OP_ACOS] = &ptq_op_Acos,
    [PTQ_OP_ATAN] = &ptq_op_Atan,
    [PTQ_OP_SINH] = &ptq_op_Sinh,
    [PTQ_OP_COSH] = &ptq_op_Cosh,
    [PTQ_OP_ASINH] = &ptq_op_Asinh,
    [PTQ_OP_ACOSH] = &ptq_op_Acosh,
    [PTQ_OP_ATANH] = &ptq_op_Atanh,
    [PTQ_OP_SIGN] = &ptq_op_Sign,
    [PTQ_OP_THRESHOLDEDRELU] = &ptq_op_ThresholdedRelu,
    [PTQ_OP_SHRINK] = &ptq_op_Shrink,
    [PTQ_OP_LRN] = &ptq_op_LRN,
    [PTQ_OP_RESIZE] = &ptq_op_Resize,
    [PTQ_OP_UPSAMPLE] = &ptq_op_Upsample,
    [PTQ_OP_QUANTIZELINEAR] = &ptq_op_QuantizeLinear,
    [PTQ_OP_DEQUANTIZELINEAR] = &ptq_op_DequantizeLinear,
    [PTQ_OP_GROUPNORMALIZATION] = &ptq_op_GroupNormalization,
    [PTQ_OP_MEANVARIANCENORMALIZATION] = &ptq_op_MeanVarianceNormalization,
    [PTQ_OP_LPNORMALIZATION] = &ptq_op_LpNormalization,
    [PTQ_OP_LPPOOL] = &ptq_op_LpPool,
    [PTQ_OP_HARDMAX] = &ptq_op_Hardmax,
    [PTQ_OP_ISNAN] = &ptq_op_IsNaN,
    [PTQ_OP_ISINF] = &ptq_op_IsInf,
    [PTQ_OP_XOR] = &ptq_op_Xor,
    [PTQ_OP_BITSHIFT] = &ptq_op_BitShift,
    [PTQ_OP_TOPK] = &ptq_op_TopK,
    [PTQ_OP_GATHERELEMENTS] = &ptq_op_GatherElements,
    [PTQ_OP_SCATTERELEMENTS] = &ptq_op_ScatterElements,
    [PTQ_OP_GATHERND] = &ptq_op_GatherND,
    [PTQ_OP_ONEHOT] = &ptq_op_OneHot,
    [PTQ_OP_EYELIKE] = &ptq_op_EyeLike,
    [PTQ_OP_CASTLIKE] = &ptq_op_CastLike,
    [PTQ_OP_REVERSESEQUENCE] = &ptq_op_ReverseSequence,
    [PTQ_OP_SCATTER] = &ptq_op_Scatter,
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

/* The version model g imports for a non-default domain, or -1. */
static int64_t domain_version(const ptq_graph *g, const char *domain)
{
    for (int i = 0; i < g->n_opsets; i++)
        if (g->opsets[i].domain && strcmp(g->opsets[i].domain, domain) == 0)
            return g->opsets[i].version;
    return -1;
}

/* What a node ptq cannot run says about how the model was exported, as
 * advice for torch.onnx.export; "" when nothing is recognised. */
static const char *export_hint(const ptq_graph *g, const ptq_node *n, const char *domain, int unknown)
{
    static const char *const shape_ops[] = {"Size", "NonZero", NULL}; /* the unsupported ones */
    if (strcmp(n->op_type, "ATen") == 0 || strncmp(n->op_type, "aten::", 6) == 0 || strstr(domain, "aten"))
        return "ATen fallback ops: export with torch.onnx.export's default operator_export_type and "
               "do_constant_folding=True";
    if (strcmp(domain, "com.microsoft") == 0)
        return "com.microsoft ops come from onnxruntime's contrib exporters or optimizer: export with "
               "torch.onnx.export's default operator_export_type and do_constant_folding=True, without "
               "onnxruntime's fusions";
    if (strncmp(domain, "pkg.", 4) == 0) /* pkg.onnxscript.torch_lib, pkg.torch.*: model-local functions */
        return "a function of torch's dynamo exporter (torch.onnx.export(..., dynamo=True)) that ptq cannot "
               "see into: inline the model's local functions (onnx.inliner.inline_local_functions) or export "
               "with dynamo=False";
    if (!unknown || strcmp(domain, "ai.onnx") != 0)
        return "";
    for (int i = 0; shape_ops[i]; i++)
        if (strcmp(n->op_type, shape_ops[i]) == 0)
            return "a shape computation is left in the graph: export with do_constant_folding=True and static "
                   "input shapes (no dynamic_axes)";
    /* ops ONNX added after opset 17, which an export at 17 writes as older ops; re-exporting does not
     * change any other op (Det, GridSample), so the hint would send the user round in a circle */
    static const char *const after_17[] = {"Mish", "Col2Im", "CenterCropPad", "BitwiseAnd", "BitwiseNot",
                                           "BitwiseOr", "BitwiseXor", "DeformConv", "AffineGrid", "Attention",
                                           "RMSNormalization", "RotaryEmbedding", "Swish", NULL};
    for (int i = 0; g->opset > 17 && after_17[i]; i++)
        if (strcmp(n->op_type, after_17[i]) == 0)
            return "the model is at an opset past 17: re-export with torch.onnx.export(..., opset_version=17)";
    return "";
}

/* Bytes of s a message shows (at most max, not splitting a UTF-8 character); a longer s is followed by "...",
 * so a node with a 1 MB name still leaves room to name its op and domain. */
static int shown(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return (int)n;
    for (n = max; n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80; n--)
        ;
    return (int)n;
}
#define DOTS(s, max) (strlen(s) > (max) ? "..." : "")

/* One failure naming every node ptq cannot run (bad[k] != 0: 1 unknown op,
 * 2 opset older than ptq's entry), as many as fit in a message, then the
 * first export hint that applies. */
static ptq_status fail_unsupported(ptq_ctx *ctx, const ptq_graph *g, const ptq_op_def *const *ops,
                                   const unsigned char *bad, int n_bad)
{
    char msg[PTQ_MSG_BYTES], item[PTQ_MSG_BYTES];
    const char *hint = "";
    size_t used = 0;
    int listed = 0;
    msg[0] = '\0';
    if (n_bad > 1)
        used = (size_t)snprintf(msg, sizeof msg, "%d nodes ptq cannot run: ", n_bad);
    for (int k = 0; k < g->n_nodes; k++) {
        if (!bad[k])
            continue;
        const ptq_node *n = &g->nodes[k];
        const char *domain = n->domain && n->domain[0] ? n->domain : "ai.onnx";
        const int64_t dv = strcmp(domain, "ai.onnx") != 0 ? domain_version(g, domain) : -1;
        char dver[32] = "";
        if (dv >= 0)
            snprintf(dver, sizeof dver, " version %lld", (long long)dv);
        int at = snprintf(item, sizeof item, "node '%.*s%s': op %.*s%s (domain %.*s%s", shown(n->name, 200), n->name,
                          DOTS(n->name, 200), shown(n->op_type, 80), n->op_type, DOTS(n->op_type, 80),
                          shown(domain, 80), domain, DOTS(domain, 80));
        if (bad[k] == 1)
            snprintf(item + at, sizeof item - (size_t)at, "%s, opset %lld) is not supported by ptq", dver,
                     (long long)g->opset);
        else
            snprintf(item + at, sizeof item - (size_t)at, ") at opset %lld is older than ptq implements (opset %d+)",
                     (long long)g->opset, ops[k]->since_opset);
        if (!hint[0])
            hint = export_hint(g, n, domain, bad[k] == 1);
        /* room for "; " and the tail: "; and N more" plus the hint */
        if (used + strlen(item) + 2 + 24 + 8 + strlen(hint) < sizeof msg) {
            used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s", listed ? "; " : "", item);
            listed++;
        }
    }
    if (listed < n_bad)
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%sand %d more", listed ? "; " : "", n_bad - listed);
    return ptq_fail(ctx, PTQ_ERR_UNSUPPORTED, "%s%s%s", msg, hint[0] ? "; hint: " : "", hint);
}

/* PTQ_ERR_FORMAT naming the first node of g with an attribute its op's schema at g's opset does not define
 * (runtime/onnx_attrs.c): a misspelt one (LeakyRelu's `alpah`), or one ONNX moved to an input or added at another
 * opset (ReduceMean's axes at 18, Squeeze's at 13, Split's num_outputs from 18). Each op reads only the attributes
 * its schema has, so the node would be run with the op's defaults, computing another function than the model's
 * author meant (a LeakyRelu of slope 0.01, a ReduceMean over every axis); ONNX's checker and onnxruntime refuse
 * such a node ("Unrecognized attribute"). */
static ptq_status check_onnx_attrs(ptq_ctx *ctx, const ptq_graph *g)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
            continue;
        for (int j = 0; j < n->n_attrs; j++) {
            const char *attr = n->attrs[j].name;
            char range[160] = "";
            size_t used = 0;
            int found = 0, defined = 0;
            for (int i = 0; i < ptq_onnx_attr_range_count && !found; i++) {
                const ptq_onnx_attr_range *r = &ptq_onnx_attr_ranges[i];
                if (strcmp(n->op_type, r->op_type) != 0 || strcmp(attr, r->attr) != 0)
                    continue;
                found = g->opset >= r->from && g->opset < r->before;
                if (used < sizeof range)
                    used += (size_t)(r->before == INT64_MAX
                        ? snprintf(range + used, sizeof range - used, "%sfrom opset %lld", defined ? ", " : "",
                                   (long long)r->from)
                        : r->from <= 1
                        ? snprintf(range + used, sizeof range - used, "%sbefore opset %lld", defined ? ", " : "",
                                   (long long)r->before)
                        : snprintf(range + used, sizeof range - used, "%sat opsets %lld to %lld", defined ? ", " : "",
                                   (long long)r->from, (long long)r->before - 1));
                defined = 1;
            }
            if (found)
                continue;
            if (defined)
                return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%.*s%s' (%s, opset %lld): %s has no %.*s%s attribute at "
                                "this opset (it takes one only %s); ONNX's checker refuses the node",
                                shown(n->name, 200), n->name, DOTS(n->name, 200), n->op_type, (long long)g->opset,
                                n->op_type, shown(attr, 80), attr, DOTS(attr, 80), range);
            return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%.*s%s' (%s, opset %lld): attribute '%.*s%s' is not one ONNX "
                            "defines for %s; ONNX's checker and onnxruntime refuse the node (a misspelt attribute "
                            "would leave the op's default)", shown(n->name, 200), n->name, DOTS(n->name, 200),
                            n->op_type, (long long)g->opset, shown(attr, 80), attr, DOTS(attr, 80), n->op_type);
        }
    }
    return PTQ_OK;
}

/* The type ONNX gives each attribute of the ops ptq runs, by name: every op here types a name alike (onnx.defs,
 * every opset), but for "value" (Pad's FLOAT before 11, which ptq does not run). The ops read an attribute of
 * another type as absent, so such a node would compute with the default (LeakyRelu's alpha 0.01 for an INT
 * alpha=1, Softmax on axis -1 for a FLOAT axis); ONNX's checker refuses it. */
static const struct {
    const char *op_type, *attr; /* op_type NULL: any op */
    ptq_attr_type type;
} attr_types[] = {
    {"Constant", "value", PTQ_ATTR_TENSOR},
    {"ConstantOfShape", "value", PTQ_ATTR_TENSOR},
    {NULL, "activation_alpha", PTQ_ATTR_FLOATS},
    {NULL, "activation_beta", PTQ_ATTR_FLOATS},
    {NULL, "activations", PTQ_ATTR_STRINGS},
    {NULL, "allowzero", PTQ_ATTR_INT},
    {NULL, "alpha", PTQ_ATTR_FLOAT},
    {NULL, "approximate", PTQ_ATTR_STRING},
    {NULL, "auto_pad", PTQ_ATTR_STRING},
    {NULL, "axes", PTQ_ATTR_INTS},
    {NULL, "axis", PTQ_ATTR_INT},
    {NULL, "beta", PTQ_ATTR_FLOAT},
    {NULL, "blocksize", PTQ_ATTR_INT},
    {NULL, "broadcast", PTQ_ATTR_INT},
    {NULL, "ceil_mode", PTQ_ATTR_INT},
    {NULL, "clip", PTQ_ATTR_FLOAT},
    {NULL, "consumed_inputs", PTQ_ATTR_INTS},
    {NULL, "count_include_pad", PTQ_ATTR_INT},
    {NULL, "dilations", PTQ_ATTR_INTS},
    {NULL, "direction", PTQ_ATTR_STRING},
    {NULL, "end", PTQ_ATTR_INT},
    {NULL, "ends", PTQ_ATTR_INTS},
    {NULL, "epsilon", PTQ_ATTR_FLOAT},
    {NULL, "equation", PTQ_ATTR_STRING},
    {NULL, "fmod", PTQ_ATTR_INT},
    {NULL, "group", PTQ_ATTR_INT},
    {NULL, "hidden_size", PTQ_ATTR_INT},
    {NULL, "input_forget", PTQ_ATTR_INT},
    {NULL, "is_test", PTQ_ATTR_INT},
    {NULL, "keepdims", PTQ_ATTR_INT},
    {NULL, "kernel_shape", PTQ_ATTR_INTS},
    {NULL, "layout", PTQ_ATTR_INT},
    {NULL, "linear_before_reset", PTQ_ATTR_INT},
    {NULL, "max", PTQ_ATTR_FLOAT},
    {NULL, "min", PTQ_ATTR_FLOAT},
    {NULL, "mode", PTQ_ATTR_STRING},
    {NULL, "momentum", PTQ_ATTR_FLOAT},
    {NULL, "noop_with_empty_axes", PTQ_ATTR_INT},
    {NULL, "num_outputs", PTQ_ATTR_INT},
    {NULL, "output_padding", PTQ_ATTR_INTS},
    {NULL, "output_shape", PTQ_ATTR_INTS},
    {NULL, "pads", PTQ_ATTR_INTS},
    {NULL, "perm", PTQ_ATTR_INTS},
    {NULL, "ratio", PTQ_ATTR_FLOAT},
    {NULL, "reduction", PTQ_ATTR_STRING},
    {NULL, "seed", PTQ_ATTR_INT},
    {NULL, "shape", PTQ_ATTR_INTS},
    {NULL, "spatial", PTQ_ATTR_INT},
    {NULL, "split", PTQ_ATTR_INTS},
    {NULL, "start", PTQ_ATTR_INT},
    {NULL, "starts", PTQ_ATTR_INTS},
    {NULL, "stash_type", PTQ_ATTR_INT},
    {NULL, "storage_order", PTQ_ATTR_INT},
    {NULL, "strides", PTQ_ATTR_INTS},
    {NULL, "to", PTQ_ATTR_INT},
    {NULL, "training_mode", PTQ_ATTR_INT},
    {NULL, "transA", PTQ_ATTR_INT},
    {NULL, "transB", PTQ_ATTR_INT},
    {NULL, "value_float", PTQ_ATTR_FLOAT},
    {NULL, "value_floats", PTQ_ATTR_FLOATS},
    {NULL, "value_int", PTQ_ATTR_INT},
    {NULL, "value_ints", PTQ_ATTR_INTS},
};

/* PTQ_ERR_FORMAT naming the first node of g with an attribute of another type than ONNX gives it. */
static ptq_status check_attr_types(ptq_ctx *ctx, const ptq_graph *g)
{
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
            continue;
        for (int j = 0; j < n->n_attrs; j++) {
            const ptq_attr *a = &n->attrs[j];
            for (size_t i = 0; i < sizeof attr_types / sizeof attr_types[0]; i++) {
                if (strcmp(a->name, attr_types[i].attr) != 0 ||
                    (attr_types[i].op_type && strcmp(n->op_type, attr_types[i].op_type) != 0))
                    continue;
                if (a->type != attr_types[i].type)
                    return ptq_fail(ctx, PTQ_ERR_FORMAT, "node '%.*s%s' (%s, opset %lld): attribute %s is of type %s; "
                                    "%s's is %s, and ONNX's checker refuses the node", shown(n->name, 200), n->name,
                                    DOTS(n->name, 200), n->op_type, (long long)g->opset, a->name,
                                    ptq_op_attr_type_name(a->type), n->op_type,
                                    ptq_op_attr_type_name(attr_types[i].type));
                break;
            }
        }
    }
    return PTQ_OK;
}

ptq_status ptq_op_resolve(ptq_ctx *ctx, const ptq_graph *g, const ptq_op_def ***out)
{
    *out = NULL;
    const ptq_op_def **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
    unsigned char *bad = calloc((size_t)g->n_nodes + 1, 1);
    if (!ops || !bad) {
        free(ops);
        free(bad);
        return ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory resolving the ops of %d nodes", g->n_nodes);
    }
    int n_bad = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        ops[k] = ptq_op_find(n->domain, n->op_type);
        if (!ops[k])
            bad[k] = 1;
        else if (g->opset > 0 && g->opset < ops[k]->since_opset)
            bad[k] = 2;
        n_bad += bad[k] != 0;
    }
    if (n_bad) {
        ptq_status st = fail_unsupported(ctx, g, ops, bad, n_bad);
        free(ops);
        free(bad);
        return st;
    }
    free(bad);
    ptq_status st = check_onnx_attrs(ctx, g);
    if (st == PTQ_OK)
        st = check_attr_types(ctx, g);
    if (st != PTQ_OK) {
        free(ops);
        return st;
    }
    *out = ops;
    return PTQ_OK;
}
