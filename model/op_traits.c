/* The op traits table (model/op_traits.h): weights, quantizable tensors,
 * channel axes and fusion traits of every op ptq knows, one row each.
 * Covered by tests/test_op_table.c. */
#include <string.h>

#include "model/op_traits.h"

#define W01 (1u << 0 | 1u << 1) /* data and weight inputs of a weighted op */
#define ACT PTQ_OPF_FUSIBLE_ACTIVATION
#define COMMUTES PTQ_OPF_QDQ_COMMUTES
#define WEIGHTED (PTQ_OPF_WEIGHTED | PTQ_OPF_FUSES_ACTIVATION_AFTER)

/* A row without weights: float outputs quantizable, nothing else. */
#define PLAIN(ID, NAME, FLAGS) [ID] = {ID, NAME, "ai.onnx", 0, 0, PTQ_OP_ALL_IO, -1, PTQ_AXIS_NONE, FLAGS}

const ptq_op_traits ptq_op_traits_table[PTQ_OP_COUNT] = {
    /* W [C_out, ...] and B [C_out] are weights; X and W are quantized, the bias is not */
    [PTQ_OP_CONV] = {PTQ_OP_CONV, "Conv", "ai.onnx", 1u << 1 | 1u << 2, W01, PTQ_OP_ALL_IO, 1, PTQ_AXIS_FIRST, WEIGHTED},
    /* W [C_in, C_out/group, k...] and B [C_out]: as Conv, the output channels on W's axis 1 */
    [PTQ_OP_CONVTRANSPOSE] = {PTQ_OP_CONVTRANSPOSE, "ConvTranspose", "ai.onnx", 1u << 1 | 1u << 2, W01, PTQ_OP_ALL_IO, 1,
                              PTQ_AXIS_SECOND_UNGROUPED, WEIGHTED},
    [PTQ_OP_GEMM] = {PTQ_OP_GEMM, "Gemm", "ai.onnx", 1u << 1 | 1u << 2, W01, PTQ_OP_ALL_IO, 1, PTQ_AXIS_GEMM_B, WEIGHTED},
    [PTQ_OP_MATMUL] = {PTQ_OP_MATMUL, "MatMul", "ai.onnx", 1u << 1, W01, PTQ_OP_ALL_IO, 1, PTQ_AXIS_LAST, WEIGHTED},
    PLAIN(PTQ_OP_MAXPOOL, "MaxPool", COMMUTES),
    PLAIN(PTQ_OP_AVERAGEPOOL, "AveragePool", 0),
    PLAIN(PTQ_OP_GLOBALAVERAGEPOOL, "GlobalAveragePool", 0),
    PLAIN(PTQ_OP_BATCHNORMALIZATION, "BatchNormalization", PTQ_OPF_FOLDS_INTO_WEIGHTED),
    PLAIN(PTQ_OP_ADD, "Add", PTQ_OPF_RESIDUAL_ADD),
    PLAIN(PTQ_OP_SUB, "Sub", 0),
    PLAIN(PTQ_OP_MUL, "Mul", 0),
    PLAIN(PTQ_OP_DIV, "Div", 0),
    PLAIN(PTQ_OP_RELU, "Relu", ACT),
    PLAIN(PTQ_OP_LEAKYRELU, "LeakyRelu", ACT),
    PLAIN(PTQ_OP_CLIP, "Clip", ACT),
    PLAIN(PTQ_OP_SIGMOID, "Sigmoid", ACT),
    PLAIN(PTQ_OP_HARDSIGMOID, "HardSigmoid", ACT),
    PLAIN(PTQ_OP_HARDSWISH, "HardSwish", ACT),
    PLAIN(PTQ_OP_TANH, "Tanh", ACT),
    PLAIN(PTQ_OP_SOFTMAX, "Softmax", 0),
    PLAIN(PTQ_OP_FLATTEN, "Flatten", COMMUTES),
    PLAIN(PTQ_OP_RESHAPE, "Reshape", COMMUTES),
    PLAIN(PTQ_OP_SQUEEZE, "Squeeze", COMMUTES),
    PLAIN(PTQ_OP_UNSQUEEZE, "Unsqueeze", COMMUTES),
    PLAIN(PTQ_OP_TRANSPOSE, "Transpose", COMMUTES),
    PLAIN(PTQ_OP_CONCAT, "Concat", COMMUTES),
    PLAIN(PTQ_OP_IDENTITY, "Identity", COMMUTES),
    PLAIN(PTQ_OP_DROPOUT, "Dropout", COMMUTES),
    /* zero padding commutes with a symmetric rounding (0 stays 0) */
    PLAIN(PTQ_OP_PAD, "Pad", COMMUTES),
    PLAIN(PTQ_OP_ERF, "Erf", 0),
    /* its output is a constant, not an activation */
    [PTQ_OP_CONSTANT] = {PTQ_OP_CONSTANT, "Constant", "ai.onnx", 0, 0, 0, -1, PTQ_AXIS_NONE, 0},
    PLAIN(PTQ_OP_REDUCEMEAN, "ReduceMean", 0),
    /* scale and bias are not quantized (as BatchNormalization's) */
    PLAIN(PTQ_OP_LAYERNORMALIZATION, "LayerNormalization", 0),
    PLAIN(PTQ_OP_POW, "Pow", 0),
    PLAIN(PTQ_OP_SQRT, "Sqrt", 0),
    /* shape arithmetic: integer outputs, which no plan quantizes */
    PLAIN(PTQ_OP_SHAPE, "Shape", 0),
    PLAIN(PTQ_OP_GATHER, "Gather", 0),
    PLAIN(PTQ_OP_SLICE, "Slice", COMMUTES),
    PLAIN(PTQ_OP_CAST, "Cast", 0),
    PLAIN(PTQ_OP_GELU, "Gelu", 0),
    /* data movement, like Slice and Concat */
    PLAIN(PTQ_OP_SPLIT, "Split", COMMUTES),
    PLAIN(PTQ_OP_WHERE, "Where", 0),
    PLAIN(PTQ_OP_EXPAND, "Expand", COMMUTES),
    /* index arithmetic and masks: integer or bool outputs mostly */
    PLAIN(PTQ_OP_RANGE, "Range", 0),
    PLAIN(PTQ_OP_EQUAL, "Equal", 0),
    PLAIN(PTQ_OP_MOD, "Mod", 0),
    PLAIN(PTQ_OP_CONSTANTOFSHAPE, "ConstantOfShape", 0),
    PLAIN(PTQ_OP_NOT, "Not", 0),
    /* torch's slice assignment (swin_t's shifted-window mask) */
    PLAIN(PTQ_OP_SCATTERND, "ScatterND", 0),
    /* a masked mean's sums (torch's x.sum(1)) and position ids from a mask (torch.cumsum) */
    PLAIN(PTQ_OP_REDUCESUM, "ReduceSum", 0),
    PLAIN(PTQ_OP_CUMSUM, "CumSum", 0),
    /* elementwise functions torch exports; Elu, Selu, Softplus and Softsign are activations TensorRT fuses after a
     * Conv/Gemm (its IActivationLayer kinds, as LeakyRelu and HardSigmoid); Celu and Mish are no such kind, and
     * rounding (Floor, Ceil, Round) does not commute with Q/DQ's: the scale is not a power of ten */
    PLAIN(PTQ_OP_EXP, "Exp", 0),
    PLAIN(PTQ_OP_FLOOR, "Floor", 0),
    PLAIN(PTQ_OP_CEIL, "Ceil", 0),
    PLAIN(PTQ_OP_ROUND, "Round", 0),
    PLAIN(PTQ_OP_SIN, "Sin", 0),
    PLAIN(PTQ_OP_COS, "Cos", 0),
    PLAIN(PTQ_OP_SOFTPLUS, "Softplus", ACT),
    PLAIN(PTQ_OP_SOFTSIGN, "Softsign", ACT),
    PLAIN(PTQ_OP_ELU, "Elu", ACT),
    PLAIN(PTQ_OP_SELU, "Selu", ACT),
    PLAIN(PTQ_OP_CELU, "Celu", 0),
    PLAIN(PTQ_OP_MISH, "Mish", 0),
    /* torch's PReLU: its slope is not quantized (as BatchNormalization's scale); not one of TensorRT's
     * IActivationLayer kinds (a layer of its own), so no fusible activation */
    PLAIN(PTQ_OP_PRELU, "PRelu", 0),
    /* torch's log_softmax, a classifier's last op: as Softmax (no transformer rule reads it) */
    PLAIN(PTQ_OP_LOGSOFTMAX, "LogSoftmax", 0),
    /* torch.maximum/minimum and clamp by tensors: the inputs' scales may differ, so Q/DQ does not commute */
    PLAIN(PTQ_OP_MAX, "Max", 0),
    PLAIN(PTQ_OP_MIN, "Min", 0),
    /* torch's InstanceNorm and GroupNorm: scale and B are not quantized (as LayerNormalization's); the statistics
     * are the data's own, so nothing folds into a Conv before it */
    PLAIN(PTQ_OP_INSTANCENORMALIZATION, "InstanceNormalization", 0),
    /* rotary embeddings' rotate_half (LLaMA's cat(-x2, x1)) */
    PLAIN(PTQ_OP_NEG, "Neg", 0),
    /* torch.tril/triu: a GPT-style causal mask */
    PLAIN(PTQ_OP_TRILU, "Trilu", 0),
    /* a 1-D CNN's max over time (torch's x.max(dim).values) */
    PLAIN(PTQ_OP_REDUCEMAX, "ReduceMax", 0),
    /* a decoder classifier's last token (Hugging Face's eq(ids, pad).int().argmax(-1) - 1): an int64 output */
    PLAIN(PTQ_OP_ARGMAX, "ArgMax", 0),
    /* T5's relative position buckets: log(|i - j| / max_exact) */
    PLAIN(PTQ_OP_LOG, "Log", 0),
    /* torch 2.x's RMSNorm and rsqrt (1 / sqrt) */
    PLAIN(PTQ_OP_RECIPROCAL, "Reciprocal", 0),
    /* T5's relative position buckets: |i - j| of int64 positions */
    PLAIN(PTQ_OP_ABS, "Abs", 0),
    /* T5's relative position buckets: (j - i > 0) on int64 positions, a bool output */
    PLAIN(PTQ_OP_GREATER, "Greater", 0),
    /* T5's relative position buckets: |j - i| < max_exact on int64 positions, a bool output */
    PLAIN(PTQ_OP_LESS, "Less", 0),
    /* torch's x >= y (ge): a bool output */
    PLAIN(PTQ_OP_GREATEROREQUAL, "GreaterOrEqual", 0),
    /* torch's x <= y (le): a bool output */
    PLAIN(PTQ_OP_LESSOREQUAL, "LessOrEqual", 0),
    /* masks combined (torch's a & b on bools): a bool output */
    PLAIN(PTQ_OP_AND, "And", 0),
    /* masks combined (torch's a | b on bools): a bool output */
    PLAIN(PTQ_OP_OR, "Or", 0),
    /* torch's nn.RNN / nn.GRU / nn.LSTM: W, R, B and P stay float (no weight row: TensorRT's and onnxruntime's
     * Q/DQ placements quantize no recurrent layer, and a rounding would repeat through every step); the outputs
     * are activations, observed as any other; no Q/DQ moves through the gates' nonlinear sums */
    PLAIN(PTQ_OP_RNN, "RNN", 0),
    PLAIN(PTQ_OP_GRU, "GRU", 0),
    PLAIN(PTQ_OP_LSTM, "LSTM", 0),
    /* torch.einsum (attention's bhid,bhjd->bhij): not a weighted op (which input is a weight depends on the
     * equation), and a rounding does not commute with its sums of products */
    PLAIN(PTQ_OP_EINSUM, "Einsum", 0),
    /* pixel shuffle (super-resolution nets) and its inverse: data movement, which Q/DQ commutes through as
       Transpose */
    PLAIN(PTQ_OP_DEPTHTOSPACE, "DepthToSpace", COMMUTES),
    PLAIN(PTQ_OP_SPACETODEPTH, "SpaceToDepth", COMMUTES),
    /* copies of its input: data movement, as DepthToSpace */
    PLAIN(PTQ_OP_TILE, "Tile", COMMUTES),
    /* a max, as MaxPool's: Q/DQ's rounding is monotonic */
    PLAIN(PTQ_OP_GLOBALMAXPOOL, "GlobalMaxPool", COMMUTES),
    /* arithmetic on inputs of their own scales, as Sub: Q/DQ does not commute through it */
    PLAIN(PTQ_OP_SUM, "Sum", 0),
    PLAIN(PTQ_OP_MEAN, "Mean", 0),
    /* shape arithmetic, as Shape: an integer output, which no plan quantizes */
    PLAIN(PTQ_OP_SIZE, "Size", 0),
    /* the rest of ONNX's reductions, plain as ReduceMax and ReduceSum are (placement keeps them float): torch's
     * x.min(dim).values, prod (shape arithmetic), the p-norms (F.normalize's x / ReduceL2(x)), logsumexp */
    PLAIN(PTQ_OP_REDUCEMIN, "ReduceMin", 0),
    PLAIN(PTQ_OP_REDUCEPROD, "ReduceProd", 0),
    PLAIN(PTQ_OP_REDUCEL1, "ReduceL1", 0),
    PLAIN(PTQ_OP_REDUCEL2, "ReduceL2", 0),
    PLAIN(PTQ_OP_REDUCESUMSQUARE, "ReduceSumSquare", 0),
    PLAIN(PTQ_OP_REDUCELOGSUM, "ReduceLogSum", 0),
    PLAIN(PTQ_OP_REDUCELOGSUMEXP, "ReduceLogSumExp", 0),
    /* torch's argmin (an int64 output), plain as ArgMax */
    PLAIN(PTQ_OP_ARGMIN, "ArgMin", 0),
    /* torch's trigonometric and hyperbolic functions, sign, and the activations ThresholdedRelu and Shrink
     * (Hardshrink, Softshrink): plain as Sin, Cos and Elu are (not among the activations placement fuses) */
    PLAIN(PTQ_OP_TAN, "Tan", 0),
    PLAIN(PTQ_OP_ASIN, "Asin", 0),
    PLAIN(PTQ_OP_ACOS, "Acos", 0),
    PLAIN(PTQ_OP_ATAN, "Atan", 0),
    PLAIN(PTQ_OP_SINH, "Sinh", 0),
    PLAIN(PTQ_OP_COSH, "Cosh", 0),
    PLAIN(PTQ_OP_ASINH, "Asinh", 0),
    PLAIN(PTQ_OP_ACOSH, "Acosh", 0),
    PLAIN(PTQ_OP_ATANH, "Atanh", 0),
    PLAIN(PTQ_OP_SIGN, "Sign", 0),
    PLAIN(PTQ_OP_THRESHOLDEDRELU, "ThresholdedRelu", 0),
    PLAIN(PTQ_OP_SHRINK, "Shrink", 0),
    /* AlexNet-, GoogLeNet- and SqueezeNet-era zoo models' normalisation across channels after a Conv's ReLU: plain,
     * as InstanceNormalization (a statistic of the data, nothing to fold into the Conv; not monotone, so Q/DQ does
     * not commute with it) */
    PLAIN(PTQ_OP_LRN, "LRN", 0),
    /* torch's F.interpolate / nn.Upsample (UNet, FPN). Not COMMUTES: that flag is the op's, and only nearest's
     * outputs are among its inputs' values (linear and cubic mix them) */
    PLAIN(PTQ_OP_RESIZE, "Resize", 0),
    PLAIN(PTQ_OP_UPSAMPLE, "Upsample", 0),
    /* a model that already holds Q/DQ (ptq's own export, quantize_static, ModelOpt) runs; no plan quantizes one
     * (calibrate, plan, sensitivity and export refuse such a model), so no tensor of theirs is quantizable: the
     * integer and FP8 codes are not float, and a DequantizeLinear's output is already on a grid */
    [PTQ_OP_QUANTIZELINEAR] = {PTQ_OP_QUANTIZELINEAR, "QuantizeLinear", "ai.onnx", 0, 0, 0, -1, PTQ_AXIS_NONE, 0},
    [PTQ_OP_DEQUANTIZELINEAR] = {PTQ_OP_DEQUANTIZELINEAR, "DequantizeLinear", "ai.onnx", 0, 0, 0, -1, PTQ_AXIS_NONE,
                                 0},
    /* diffusion UNets' GroupNorm: plain, as InstanceNormalization (its statistics are the data's, nothing folds into
     * the Conv before it; not monotone, so Q/DQ does not commute with it) */
    PLAIN(PTQ_OP_GROUPNORMALIZATION, "GroupNormalization", 0),
    /* normalises over its axes as InstanceNormalization over [2, ndim) with no scale or bias: plain, as it is */
    PLAIN(PTQ_OP_MEANVARIANCENORMALIZATION, "MeanVarianceNormalization", 0),
    /* x over its L1 or L2 norm along an axis (embeddings, contrastive heads): plain, as MeanVarianceNormalization */
    PLAIN(PTQ_OP_LPNORMALIZATION, "LpNormalization", 0),
    /* a window's Lp norm: plain, as AveragePool (not monotone in a signed input, so Q/DQ does not commute) */
    PLAIN(PTQ_OP_LPPOOL, "LpPool", 0),
    /* a one-hot of the largest value: plain, as Softmax */
    PLAIN(PTQ_OP_HARDMAX, "Hardmax", 0),
    /* bool outputs: plain, nothing to quantize */
    PLAIN(PTQ_OP_ISNAN, "IsNaN", 0),
    PLAIN(PTQ_OP_ISINF, "IsInf", 0),
    /* bool, as And and Or */
    PLAIN(PTQ_OP_XOR, "Xor", 0),
    /* integer shifts: plain, nothing to quantize */
    PLAIN(PTQ_OP_BITSHIFT, "BitShift", 0),
    /* a top-k pooling head (torch.topk): Values are input values, Indices int64; plain as Gather, so a Values read by
     * a Conv/Gemm gets its own scale (TensorRT is not known to move Q/DQ through TopK, so trt.commutes would
     * promise a fusion that may not happen) */
    PLAIN(PTQ_OP_TOPK, "TopK", 0),
    /* torch.gather, scatter / scatter_add and advanced indexing (x[idx_a, idx_b]): plain as Gather and ScatterND
     * (an output made of data's values and, for the scatters, the updates', which a Q/DQ of data alone does not
     * cover) */
    PLAIN(PTQ_OP_GATHERELEMENTS, "GatherElements", 0),
    PLAIN(PTQ_OP_SCATTERELEMENTS, "ScatterElements", 0),
    PLAIN(PTQ_OP_GATHERND, "GatherND", 0),
    /* F.one_hot and label smoothing: an output of two values (off, on), from integer indices */
    PLAIN(PTQ_OP_ONEHOT, "OneHot", 0),
    /* torch.eye_like masks: ones and zeros from a shape, nothing a Q/DQ commutes with */
    PLAIN(PTQ_OP_EYELIKE, "EyeLike", 0),
    /* torch's x.type_as(y) (opset 15 on): plain as Cast */
    PLAIN(PTQ_OP_CASTLIKE, "CastLike", 0),
    /* bidirectional recurrent layers as Keras/TF converters write them: data moved, not computed; plain as Gather */
    PLAIN(PTQ_OP_REVERSESEQUENCE, "ReverseSequence", 0),
    /* torch.scatter at opsets 9 and 10: ScatterElements' older name */
    PLAIN(PTQ_OP_SCATTER, "Scatter", 0),
};

const ptq_op_traits *ptq_op_traits_find(const char *domain, const char *op_type)
{
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0)
        return NULL;
    for (int i = 0; i < PTQ_OP_COUNT; i++)
        if (strcmp(ptq_op_traits_table[i].op_type, op_type) == 0)
            return &ptq_op_traits_table[i];
    return NULL;
}

int ptq_op_weight_axis(const ptq_op_traits *t, const ptq_node *n, int input, int ndim)
{
    if (!t || input != t->axis_input || ndim < 1)
        return -1;
    switch (t->axis_rule) {
    case PTQ_AXIS_FIRST: return 0;
    case PTQ_AXIS_GEMM_B: return ptq_node_attr_int(n, "transB", 0) ? 0 : (ndim >= 2 ? 1 : 0);
    case PTQ_AXIS_LAST: return ndim >= 2 ? ndim - 1 : -1; /* B [K] has no output axis: one scale */
    case PTQ_AXIS_SECOND_UNGROUPED: return ndim >= 2 && ptq_node_attr_int(n, "group", 1) == 1 ? 1 : -1;
    case PTQ_AXIS_NONE: break;
    }
    return -1;
}
