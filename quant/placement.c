/* Q/DQ placement as a rule table (quant/placement.h): for every activation,
 * the first rule of its placement that matches says whether it is
 * quantized, kept in FP16 or left alone, and why. "trt" follows TensorRT's
 * explicit-quantization fusions (REFERENCE.md "Peers in practice") and,
 * in a transformer, its FP16 LayerNorm/Softmax/residual Add layers, "ort"
 * onnxruntime quantize_static's QDQ registry (onnxruntime/quantization/
 * registry.py, operators/; symmetric activations, or asymmetric uint8 ones
 * when the core asked for is uint8), "all" every tensor.
 * Covered by tests/test_placement.c, tests/qdq_export_test.py and
 * tests/transformer_plan_test.py. */
#include <stdlib.h>
#include <string.h>

#include "model/op_traits.h"
#include "quant/placement.h"

/* What every matcher sees: the graph, its op table rows and derived facts. */
typedef struct place_graph {
    const ptq_graph *g;
    ptq_prec core;
    const unsigned char *edge;  /* [n_values] or NULL */
    const ptq_op_traits **op;   /* [n_nodes]: the traits row of each node, NULL for an op ptq does not know */
    int *n_readers;             /* [n_values]: how many node inputs read the value */
    int *fused_slot;            /* [n_nodes]: a residual Add's input slot fused into the op producing it, else -1 */
    int *level;                 /* [n_nodes]: nodes on the longest path from the inputs to it, itself too */
    const char **ort_rule;      /* [n_values]: the ort rule quantize_static's node walk gives, or NULL */
    int transformer;            /* the graph has a LayerNorm (either form) or a Softmax some node reads */
    int *ort_share;             /* [n_values]: for ort.same-as-input, the input whose scale it shares */
} place_graph;

/* rule: the name of the rule asking (the ort rules read what the node walk marked by name) */
typedef int (*place_match)(const place_graph *pg, int v, const char *rule);

/* One rule: the placement it belongs to (-1: all of them), what it does, when, and why. */
typedef struct place_rule {
    const char *name;
    int placement;
    place_action action;
    place_match match;
    const char *why;
} place_rule;

static int has_flag(const place_graph *pg, int node, unsigned flag)
{
    return node >= 0 && pg->op[node] && (pg->op[node]->flags & flag);
}

static int is_const(const ptq_value *v)
{
    return (v->flags & PTQ_VALUE_HAS_DATA) != 0;
}

static int op_is(const place_graph *pg, int node, const char *op_type)
{
    return node >= 0 && strcmp(pg->g->nodes[node].op_type, op_type) == 0 && pg->op[node];
}

static int producer_of(const place_graph *pg, int v)
{
    return v >= 0 ? pg->g->values[v].producer : -1;
}

/* A constant: an initializer, a constant attribute or a Constant node's output. */
static int is_const_input(const place_graph *pg, int v)
{
    return v < 0 || is_const(&pg->g->values[v]) || op_is(pg, producer_of(pg, v), "Constant");
}

/* Whether TensorRT runs weighted node k in the core precision: what NVIDIA
 * ModelOpt's ONNX quantizer leaves to FP16 (its find_nodes_from_convs_to_exclude
 * and the K/N >= 16 rule for Gemm/MatMul, which follow the kernels TensorRT
 * has). A Conv with fewer than 16 input or output channels (per group) runs
 * in INT8 only when one of them is a multiple of 8, the other is 16 or more
 * or the Conv reads a graph input, and the kernel is square; a grouped one
 * when its output channels are a multiple of 8 and every kernel side is 3 or
 * more. In FP8, a Conv needs more than 16 of each and a kernel of at most 32
 * taps. A Gemm/MatMul with a constant 2-D weight needs K and N of 16 or more. */
static int trt_runs_quantized(const place_graph *pg, int k)
{
    const ptq_graph *g = pg->g;
    const ptq_node *n = &g->nodes[k];
    const int fp8 = pg->core == PTQ_PREC_FP8_E4M3 || pg->core == PTQ_PREC_FP8_E5M2;
    if ((!fp8 && pg->core != PTQ_PREC_INT8) || n->n_inputs < 2 || n->inputs[1] < 0 ||
        !is_const_input(pg, n->inputs[1]))
        return 1;
    const ptq_value *w = &g->values[n->inputs[1]];
    if (op_is(pg, k, "Conv") && w->ndim >= 3) {
        const int64_t oc = w->dims[0], ic = w->dims[1], group = ptq_node_attr_int(n, "group", 1);
        int64_t taps = 1, square = 1, min_side = w->dims[2];
        for (int d = 2; d < w->ndim; d++) {
            taps *= w->dims[d];
            square &= w->dims[d] == w->dims[2];
            min_side = w->dims[d] < min_side ? w->dims[d] : min_side;
        }
        if (oc < 16 || ic < 16) {
            int reads_input = 0;
            for (int i = 0; i < n->n_inputs; i++)
                reads_input |= n->inputs[i] >= 0 && (g->values[n->inputs[i]].flags & PTQ_VALUE_INPUT);
            if (fp8)
                return 0;
            if (group == 1)
                return (oc % 8 == 0 || ic % 8 == 0) && (reads_input || oc >= 16 || ic >= 16) && square;
            return oc % 8 == 0 && min_side >= 3;
        }
        return !fp8 || (taps <= 32 && oc > 16 && ic > 16);
    }
    if ((op_is(pg, k, "Gemm") || op_is(pg, k, "MatMul")) && w->ndim == 2) {
        const int t = op_is(pg, k, "Gemm") && ptq_node_attr_int(n, "transB", 0);
        return w->dims[t ? 1 : 0] >= 16 && w->dims[t ? 0 : 1] >= 16;
    }
    return 1;
}

/* How many weighted ops read v as a quantized non-weight input; *in_core
 * (when not NULL): how many of them TensorRT runs in the core precision. */
static int weighted_readers(const place_graph *pg, int v, int *in_core)
{
    const ptq_graph *g = pg->g;
    int n = 0;
    if (in_core)
        *in_core = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        if (!has_flag(pg, k, PTQ_OPF_WEIGHTED))
            continue;
        for (int i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] == v && ptq_op_mask_has(pg->op[k]->quant_inputs, i)) {
                n++;
                if (in_core)
                    *in_core += trt_runs_quantized(pg, k);
            }
    }
    return n;
}

/* 1 if v comes out of a layer TensorRT fuses: a weighted op, then BatchNorm
 * folded into it or a residual Add fused into it (through v's fused input). */
static int fused_layer_output(const place_graph *pg, int v)
{
    const ptq_graph *g = pg->g;
    for (int depth = 0; depth < g->n_nodes && v >= 0; depth++) {
        const int p = g->values[v].producer;
        if (p < 0)
            return 0;
        if (has_flag(pg, p, PTQ_OPF_WEIGHTED))
            return 1;
        if (has_flag(pg, p, PTQ_OPF_FOLDS_INTO_WEIGHTED) || has_flag(pg, p, PTQ_OPF_FUSIBLE_ACTIVATION))
            v = g->nodes[p].n_inputs > 0 ? g->nodes[p].inputs[0] : -1;
        else if (pg->fused_slot[p] >= 0)
            v = g->nodes[p].inputs[pg->fused_slot[p]];
        else
            return 0;
    }
    return 0;
}

/* The input slot of residual Add node k that TensorRT fuses into the op
 * producing it: a two-input Add whose input is the sole-reader output of a
 * weighted op (through BatchNorm). Of two such (a block whose shortcut is a
 * Conv too, as where ResNet downsamples), the one at the end of the longer
 * path from the graph's inputs, the block's main branch: the shortcut is the
 * residual input that is quantized, as NVIDIA's ResNet recipe quantizes the
 * downsample output and ModelOpt takes the input nearer the branches' common
 * ancestor. Paths of equal length: the later producer (the other one is
 * computed by then). -1 when the Add does not fuse. */
static int residual_fused_slot(const place_graph *pg, int k)
{
    const ptq_graph *g = pg->g;
    const ptq_node *n = &g->nodes[k];
    if (!has_flag(pg, k, PTQ_OPF_RESIDUAL_ADD) || n->n_inputs != 2)
        return -1;
    int best = -1, best_producer = -1;
    for (int i = 0; i < 2; i++) {
        const int v = n->inputs[i], other = n->inputs[1 - i];
        if (v < 0 || other < 0 || is_const(&g->values[other]) || pg->n_readers[v] != 1)
            continue;
        int p = g->values[v].producer;
        while (p >= 0 && has_flag(pg, p, PTQ_OPF_FOLDS_INTO_WEIGHTED) && g->nodes[p].n_inputs > 0 &&
               g->nodes[p].inputs[0] >= 0 && pg->n_readers[g->nodes[p].inputs[0]] == 1)
            p = g->values[g->nodes[p].inputs[0]].producer;
        const int q = g->values[v].producer;
        if (has_flag(pg, p, PTQ_OPF_WEIGHTED) &&
            (best < 0 || pg->level[q] > pg->level[best_producer] ||
             (pg->level[q] == pg->level[best_producer] && q > best_producer))) {
            best = i;
            best_producer = q;
        }
    }
    return best;
}

static int m_always(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    (void)pg;
    (void)v;
    return 1;
}

/* A graph output no node reads: what the model returns. */
static int m_output(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    return (pg->g->values[v].flags & PTQ_VALUE_OUTPUT) && pg->n_readers[v] == 0;
}

static int m_edge(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    return pg->edge && pg->edge[v];
}

static int m_trt_commutes(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    return weighted_readers(pg, v, NULL) > 0 && has_flag(pg, pg->g->values[v].producer, PTQ_OPF_QDQ_COMMUTES);
}

static int m_trt_weighted_input(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    return weighted_readers(pg, v, NULL) > 0;
}

static int m_trt_residual_input(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    const ptq_graph *g = pg->g;
    for (int k = 0; k < g->n_nodes; k++)
        if (pg->fused_slot[k] >= 0 && g->nodes[k].inputs[1 - pg->fused_slot[k]] == v)
            return 1;
    return 0;
}

/* Read as a quantized input by weighted ops only, none of which TensorRT runs in the core precision. */
static int m_trt_small_layer(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    int in_core = 0;
    return weighted_readers(pg, v, &in_core) > 0 && in_core == 0;
}

/* Made inside a fused layer and read only by what fuses after it. */
static int m_trt_fused(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    const ptq_graph *g = pg->g;
    if (!fused_layer_output(pg, v) || pg->n_readers[v] == 0)
        return 0;
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_inputs; i++) {
            if (g->nodes[k].inputs[i] != v)
                continue;
            const int fuses = has_flag(pg, k, PTQ_OPF_FUSIBLE_ACTIVATION) ||
                              has_flag(pg, k, PTQ_OPF_FOLDS_INTO_WEIGHTED) || pg->fused_slot[k] == i;
            if (!fuses)
                return 0;
        }
    return 1;
}

/* 1 if v is LayerNorm written out, Div(Sub(x, ReduceMean(x)), Sqrt(..)),
 * or that times and then plus constants (the affine part), as exporters
 * before opset 17 write it and TensorRT fuses back into one layer. */
static int decomposed_ln_output(const place_graph *pg, int v)
{
    const ptq_graph *g = pg->g;
    int p = producer_of(pg, v);
    for (int step = 0; step < 2 && (op_is(pg, p, "Mul") || op_is(pg, p, "Add")) && g->nodes[p].n_inputs == 2;
         step++) {
        const int a = g->nodes[p].inputs[0], b = g->nodes[p].inputs[1];
        if (a < 0 || b < 0 || is_const_input(pg, a) == is_const_input(pg, b))
            return 0;
        p = producer_of(pg, is_const_input(pg, a) ? b : a);
    }
    if (!op_is(pg, p, "Div") || g->nodes[p].n_inputs != 2)
        return 0;
    const int sub = producer_of(pg, g->nodes[p].inputs[0]);
    if (!op_is(pg, sub, "Sub") || g->nodes[sub].n_inputs != 2 ||
        !op_is(pg, producer_of(pg, g->nodes[p].inputs[1]), "Sqrt"))
        return 0;
    const int mean = producer_of(pg, g->nodes[sub].inputs[1]);
    return op_is(pg, mean, "ReduceMean") && g->nodes[mean].n_inputs >= 1 &&
           g->nodes[mean].inputs[0] == g->nodes[sub].inputs[0];
}

/* An Add of two activations: the skip connection of a transformer block (a
 * bias Add has a constant input). */
static int residual_add_output(const place_graph *pg, int v)
{
    const ptq_graph *g = pg->g;
    const int p = producer_of(pg, v);
    if (!op_is(pg, p, "Add") || g->nodes[p].n_inputs != 2)
        return 0;
    return !is_const_input(pg, g->nodes[p].inputs[0]) && !is_const_input(pg, g->nodes[p].inputs[1]);
}

/* 1 if g is a transformer: it has LayerNormalization, LayerNorm written
 * out, or a Softmax that some node reads (attention; a classifier's final
 * Softmax is a graph output). */
static int has_transformer_ops(const place_graph *pg)
{
    const ptq_graph *g = pg->g;
    for (int k = 0; k < g->n_nodes; k++) {
        const int out = g->nodes[k].n_outputs > 0 ? g->nodes[k].outputs[0] : -1;
        if (op_is(pg, k, "LayerNormalization") || (op_is(pg, k, "Softmax") && out >= 0 && pg->n_readers[out] > 0) ||
            (out >= 0 && decomposed_ln_output(pg, out)))
            return 1;
    }
    return 0;
}

/* In a transformer: the output of LayerNorm, Softmax or a residual Add. */
static int m_trt_fp16_transformer(const place_graph *pg, int v, const char *rule)
{
    (void)rule;
    if (!pg->transformer)
        return 0;
    const int p = producer_of(pg, v);
    return op_is(pg, p, "LayerNormalization") || op_is(pg, p, "Softmax") || residual_add_output(pg, v) ||
           decomposed_ln_output(pg, v);
}

/* quantize_static's walk marked v with this very rule. */
static int m_ort(const place_graph *pg, int v, const char *rule)
{
    return pg->ort_rule[v] && strcmp(pg->ort_rule[v], rule) == 0;
}

/* The rules, tried in order for each activation; the first that matches decides. */
static const place_rule rules[] = {
    {"trt.output", PTQ_PLACEMENT_TRT, PLACE_FP32, m_output,
     "what the model returns, read by no node: TensorRT hands it back in float, the Q/DQ export leaves it as is"},
    {"ort.output", PTQ_PLACEMENT_ORT, PLACE_FP32, m_output,
     "what the model returns, read by no node: left unrounded (quantize_static would round it; ptq's export cannot)"},
    {PTQ_RULE_EDGE, -1, PLACE_FP16, m_edge,
     "the first and last compute layers (their inputs and outputs) stay in high precision: FP16, FP32 for "
     "target ort-cpu. Under --placement ort too, by ptq's choice: quantize_static has no such rule and quantizes "
     "them, and a tensor that takes such a tensor's scale there (ort.same-as-input) takes the scale it would have"},
    {"trt.small-layer", PTQ_PLACEMENT_TRT, PLACE_FP16, m_trt_small_layer,
     "read only by Conv/Gemm/MatMul layers TensorRT does not run in the core precision, which stay in FP16: "
     "INT8 Conv with under 16 input or output channels (per group) unless one is a multiple of 8, the other 16 "
     "or more (or the input is the model's) and the kernel square, or grouped with output channels a multiple "
     "of 8 and kernel sides of 3 or more; FP8 Conv with 16 channels or fewer on either side or a kernel over 32 "
     "taps; Gemm/MatMul with a constant weight whose K or N is under 16 (NVIDIA ModelOpt's exclusions, "
     "modelopt.onnx.quantization.graph_utils)"},
    {"all.observed", PTQ_PLACEMENT_ALL, PLACE_CORE, m_always,
     "--placement all: every activation is rounded where it is produced"},
    {"trt.commutes", PTQ_PLACEMENT_TRT, PLACE_CORE, m_trt_commutes,
     "a weighted op reads it from MaxPool/Reshape/Flatten/Transpose/Concat, which Q/DQ commutes through: "
     "rounding it equals TensorRT rounding that op's inputs with this scale"},
    {"trt.weighted-input", PTQ_PLACEMENT_TRT, PLACE_CORE, m_trt_weighted_input,
     "TensorRT runs Conv/ConvTranspose/Gemm/MatMul on quantized inputs"},
    {"trt.residual-input", PTQ_PLACEMENT_TRT, PLACE_CORE, m_trt_residual_input,
     "the other input of an Add TensorRT fuses into the Conv making its first input (of two Conv inputs, the Add "
     "fuses into the one on the longer path, the main branch: the shortcut is quantized)"},
    {"trt.fused", PTQ_PLACEMENT_TRT, PLACE_FP32, m_trt_fused,
     "inside a fused Conv/Gemm+BatchNorm+activation(+Add) layer: TensorRT rounds nothing there"},
    {PTQ_RULE_FP16_TRANSFORMER, PTQ_PLACEMENT_TRT, PLACE_FP16, m_trt_fp16_transformer,
     "a LayerNormalization (or LayerNorm written out), Softmax or residual Add (two activation inputs) output in "
     "a transformer: TensorRT, FP16 enabled, computes these layers in FP16 and hands their outputs on in FP16. "
     "Where one feeds a MatMul/Gemm it is that op's quantized input instead (trt.weighted-input: the layer "
     "computes in FP16, then the Q/DQ rounds its output to the core)"},
    {"trt.unquantized", PTQ_PLACEMENT_TRT, PLACE_FP32, m_always,
     "no weighted op or fused Add reads it: TensorRT keeps it in the layer's float precision"},
    {"ort.op-io", PTQ_PLACEMENT_ORT, PLACE_CORE, m_ort,
     "an input or output of an op quantize_static quantizes (Conv, Gemm, MatMul, Add, Mul, pools, ...)"},
    {"ort.activation", PTQ_PLACEMENT_ORT, PLACE_CORE, m_ort,
     "a Relu/Clip output whose input is quantized (with symmetric activations the Relu/Clip stays and its input "
     "is quantized too; with uint8 ones see ort.removed-activation)"},
    {"ort.removed-activation", PTQ_PLACEMENT_ORT, PLACE_FP32, m_ort,
     "read only by a Relu/Clip that quantize_static removes with uint8 activations: the QuantizeLinear after "
     "it (zero point at the bottom of the range) clamps as the activation did, and onnxruntime fuses the "
     "producer with it"},
    {"ort.same-as-input", PTQ_PLACEMENT_ORT, PLACE_SHARE, m_ort,
     "a MaxPool/AveragePool/reshape/Resize output whose input is quantized: quantize_static gives it the input's "
     "scale (the scale the input would have where ptq keeps the input as an edge)"},
    {"ort.unquantized", PTQ_PLACEMENT_ORT, PLACE_FP32, m_always,
     "no op quantize_static quantizes reads or writes it"},
    {PTQ_RULE_NO_RANGE, -1, PLACE_FP16, NULL,
     "the archive holds no values of it to quantize with, though another rule would: it is always empty (a dim of "
     "size 0) or saw only zeros, and stays in high precision, FP16 (FP32 for target ort-cpu); or it saw values too "
     "small for a normal float32 scale (|x| below about 1e-36), and stays FP32"},
    {PTQ_RULE_WEIGHT, -1, PLACE_NONE, NULL,
     "Conv/ConvTranspose/Gemm/MatMul weights: the core precision, one scale per output channel (a grouped "
     "ConvTranspose's: one for the tensor)"},
    {PTQ_RULE_WEIGHT_FOLLOWS, -1, PLACE_NONE, NULL,
     "the weight of a Conv/Gemm/MatMul that reads no quantized activation (an input another rule keeps in high "
     "precision, such as a first layer's input read by a second layer) stays in that precision too: the layer "
     "runs in float, and an integer weight beside a float input is a weight-only layer that runtimes do not "
     "compute as the simulation would (onnxruntime turns such a MatMul into MatMulNBits, which rounds its float "
     "input to int8 per block of 32 at run time)"},
};
enum { N_RULES = (int)(sizeof rules / sizeof rules[0]) };

/* onnxruntime quantize_static's op classes (QDQ format, default op types: QLinearOpsRegistry and QDQRegistry;
 * an op of the first that has no QDQ quantizer takes QDQOperatorBase, every input and output). */
typedef enum ort_class {
    ORT_NONE,
    ORT_IO,        /* QDQOperatorBase, QDQConv, QDQGemm, QDQMatMul: every float input and output */
    ORT_NORM,      /* QDQNormalization: input 0, the scale when it is no constant, the outputs */
    ORT_REMOVABLE, /* QDQRemovableActivation */
    ORT_DIRECT,    /* QDQDirect8BitOp, QDQMaxPool, QDQResize: a quantized input's output takes its parameters */
    ORT_SPLIT,     /* QDQSplit: the input is quantized, every output takes its parameters */
    ORT_GATHER,    /* QDQGather: as ORT_DIRECT; a constant table is quantized, the output too */
    ORT_PAD,       /* QDQPad: the inputs; the output takes input 0's parameters where padding adds no new value */
    ORT_WHERE,     /* QDQWhere: the output, with its own parameters, when both value inputs are quantized */
} ort_class;

static const struct {
    const char *op_type;
    ort_class cls;
} ort_ops[] = {
    {"Conv", ORT_IO}, {"ConvTranspose", ORT_IO}, {"Gemm", ORT_IO}, {"MatMul", ORT_IO}, {"Add", ORT_IO},
    {"Mul", ORT_IO}, {"LeakyRelu", ORT_IO}, {"Sigmoid", ORT_IO}, {"GlobalAveragePool", ORT_IO}, {"Concat", ORT_IO},
    {"Softmax", ORT_IO}, {"ArgMax", ORT_IO}, {"CumSum", ORT_IO},
    {"BatchNormalization", ORT_NORM}, {"InstanceNormalization", ORT_NORM}, {"LayerNormalization", ORT_NORM},
    {"Relu", ORT_REMOVABLE}, {"Clip", ORT_REMOVABLE},
    {"Reshape", ORT_DIRECT}, {"Transpose", ORT_DIRECT}, {"Squeeze", ORT_DIRECT}, {"Unsqueeze", ORT_DIRECT},
    {"Flatten", ORT_DIRECT}, {"AveragePool", ORT_DIRECT}, {"MaxPool", ORT_DIRECT}, {"Slice", ORT_DIRECT},
    {"Resize", ORT_DIRECT}, {"TopK", ORT_DIRECT},
    {"Split", ORT_SPLIT}, {"Gather", ORT_GATHER}, {"GatherElements", ORT_GATHER}, {"Pad", ORT_PAD}, {"Where", ORT_WHERE},
};

static ort_class ort_class_of(const ptq_node *n)
{
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return ORT_NONE;
    for (size_t i = 0; i < sizeof ort_ops / sizeof ort_ops[0]; i++)
        if (strcmp(ort_ops[i].op_type, n->op_type) == 0)
            return ort_ops[i].cls;
    return ORT_NONE;
}

static int is_activation(const ptq_graph *g, int v)
{
    return v >= 0 && g->values[v].dtype == PTQ_DT_FLOAT && !is_const(&g->values[v]);
}

static void ort_mark(place_graph *pg, int v, const char *rule, int share)
{
    if (is_activation(pg->g, v) && !pg->ort_rule[v]) {
        pg->ort_rule[v] = rule;
        pg->ort_share[v] = share;
    }
}

/* QDQPad's _should_quantize_output_same_as_input: mode reflect, edge or wrap repeat input values; constant mode
 * pads with 0 (the attribute value below opset 11, else input 2 when given), which every range holds. A padding
 * value that is no float32 constant gives the output its own parameters. */
static int ort_pad_shares(const ptq_graph *g, const ptq_node *n)
{
    const ptq_attr *mode = ptq_node_attr(n, "mode");
    if (mode && mode->s && strcmp(mode->s, "constant") != 0)
        return strcmp(mode->s, "reflect") == 0 || strcmp(mode->s, "edge") == 0 || strcmp(mode->s, "wrap") == 0;
    if (g->opset < 11)
        return ptq_node_attr_float(n, "value", 0.0f) == 0.0f;
    if (n->n_inputs < 3 || n->inputs[2] < 0)
        return 1;
    const ptq_value *pad = &g->values[n->inputs[2]];
    float value = 1.0f;
    if (!is_const(pad) || pad->dtype != PTQ_DT_FLOAT || pad->n_bytes != sizeof value)
        return 0;
    memcpy(&value, pad->data, sizeof value);
    return value == 0.0f;
}

/* quantize_static's walk over the nodes in graph order: what each op's
 * quantizer marks, a tensor keeping its first mark. */
static void ort_walk(place_graph *pg)
{
    const ptq_graph *g = pg->g;
    const int fp8 = pg->core == PTQ_PREC_FP8_E4M3 || pg->core == PTQ_PREC_FP8_E5M2;
    const int asymmetric = pg->core == PTQ_PREC_UINT8;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_node *n = &g->nodes[k];
        const int in0 = n->n_inputs > 0 ? n->inputs[0] : -1, out0 = n->n_outputs > 0 ? n->outputs[0] : -1;
        switch (ort_class_of(n)) {
        case ORT_IO:
            for (int i = 0; i < n->n_inputs; i++)
                ort_mark(pg, n->inputs[i], "ort.op-io", -1);
            for (int i = 0; i < n->n_outputs; i++)
                ort_mark(pg, n->outputs[i], "ort.op-io", -1);
            break;
        case ORT_NORM:
            for (int i = 0; i < n->n_inputs && i < 2; i++)
                ort_mark(pg, n->inputs[i], "ort.op-io", -1);
            for (int i = 0; i < n->n_outputs; i++)
                ort_mark(pg, n->outputs[i], "ort.op-io", -1);
            break;
        case ORT_REMOVABLE:
            if (in0 < 0 || !pg->ort_rule[in0])
                break;
            /* try_replacing_upstream_output: the activation goes when its input has no other reader and is
               neither a graph input nor output; its output keeps its own parameters */
            if (asymmetric && pg->n_readers[in0] == 1 &&
                !(g->values[in0].flags & (PTQ_VALUE_INPUT | PTQ_VALUE_OUTPUT)) && is_activation(g, out0)) {
                pg->ort_rule[in0] = "ort.removed-activation";
                pg->ort_share[in0] = -1;
            }
            ort_mark(pg, out0, "ort.activation", -1);
            break;
        case ORT_DIRECT:
            /* QDQMaxPool leaves FP8 MaxPool, and any below opset 12, alone; QDQResize a Resize below opset 11 */
            if (strcmp(n->op_type, "MaxPool") == 0 && (fp8 || g->opset < 12))
                break;
            if (strcmp(n->op_type, "Resize") == 0 && g->opset < 11)
                break;
            if (in0 >= 0 && pg->ort_rule[in0])
                ort_mark(pg, out0, "ort.same-as-input", in0);
            break;
        case ORT_SPLIT:
            ort_mark(pg, in0, "ort.op-io", -1);
            for (int i = 0; in0 >= 0 && pg->ort_rule[in0] && i < n->n_outputs; i++)
                ort_mark(pg, n->outputs[i], "ort.same-as-input", in0);
            break;
        case ORT_GATHER:
            /* a table from the file's initializers (is_valid_quantize_weight: a Constant node's is none) is
               quantized as a weight, per tensor, and the output with its parameters: ptq rounds no constant beside
               Conv/Gemm/MatMul weights, so the output takes its own */
            if (in0 >= 0 && (g->values[in0].flags & PTQ_VALUE_INITIALIZER) && g->values[in0].dtype == PTQ_DT_FLOAT)
                ort_mark(pg, out0, "ort.op-io", -1);
            else if (in0 >= 0 && pg->ort_rule[in0])
                ort_mark(pg, out0, "ort.same-as-input", in0);
            break;
        case ORT_PAD:
            for (int i = 0; i < n->n_inputs; i++)
                ort_mark(pg, n->inputs[i], "ort.op-io", -1);
            if (in0 >= 0 && pg->ort_rule[in0] && ort_pad_shares(g, n))
                ort_mark(pg, out0, "ort.same-as-input", in0);
            else
                ort_mark(pg, out0, "ort.op-io", -1);
            break;
        case ORT_WHERE:
            if (n->n_inputs == 3 && n->inputs[1] >= 0 && n->inputs[2] >= 0 && pg->ort_rule[n->inputs[1]] &&
                pg->ort_rule[n->inputs[2]])
                for (int i = 0; i < n->n_outputs; i++)
                    ort_mark(pg, n->outputs[i], "ort.op-io", -1);
            break;
        case ORT_NONE: break;
        }
    }
}

void ptq_placement_edges(const ptq_graph *g, unsigned char *edge)
{
    memset(edge, 0, (size_t)g->n_values);
    int first = -1, last = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const ptq_op_traits *t = ptq_op_traits_find(g->nodes[k].domain, g->nodes[k].op_type);
        if (t && (t->flags & PTQ_OPF_WEIGHTED)) {
            if (first < 0)
                first = k;
            last = k;
        }
    }
    for (int j = 0; j < 2 && first >= 0; j++) {
        const ptq_node *n = &g->nodes[j == 0 ? first : last];
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0)
                edge[n->inputs[i]] = 1;
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i] >= 0)
                edge[n->outputs[i]] = 1;
    }
}

ptq_status ptq_placement_decide(ptq_ctx *ctx, const ptq_graph *g, ptq_placement pl, ptq_prec core,
                                const unsigned char *edge, place_decision *out)
{
    ptq_status st = PTQ_OK;
    place_graph pg = {g, core, edge, NULL, NULL, NULL, NULL, NULL, 0, NULL};
    pg.op = calloc((size_t)g->n_nodes + 1, sizeof *pg.op);
    pg.fused_slot = calloc((size_t)g->n_nodes + 1, sizeof *pg.fused_slot);
    pg.n_readers = calloc((size_t)g->n_values + 1, sizeof *pg.n_readers);
    pg.ort_rule = calloc((size_t)g->n_values + 1, sizeof *pg.ort_rule);
    pg.ort_share = calloc((size_t)g->n_values + 1, sizeof *pg.ort_share);
    pg.level = calloc((size_t)g->n_nodes + 1, sizeof *pg.level);
    if (!pg.op || !pg.fused_slot || !pg.n_readers || !pg.ort_rule || !pg.ort_share || !pg.level) {
        st = ptq_fail(ctx, PTQ_ERR_NOMEM, "out of memory placing quantization");
        goto done;
    }
    for (int k = 0; k < g->n_nodes; k++) { /* nodes in graph order: a node's producers come before it */
        pg.op[k] = ptq_op_traits_find(g->nodes[k].domain, g->nodes[k].op_type);
        int longest = 0;
        for (int i = 0; i < g->nodes[k].n_inputs; i++) {
            const int v = g->nodes[k].inputs[i];
            if (v < 0)
                continue;
            pg.n_readers[v]++;
            const int p = g->values[v].producer;
            if (p >= 0 && p < k && pg.level[p] > longest)
                longest = pg.level[p];
        }
        pg.level[k] = longest + 1;
    }
    for (int k = 0; k < g->n_nodes; k++)
        pg.fused_slot[k] = residual_fused_slot(&pg, k);
    pg.transformer = has_transformer_ops(&pg);
    if (pl == PTQ_PLACEMENT_ORT)
        ort_walk(&pg);
    for (int v = 0; v < g->n_values; v++) {
        out[v] = (place_decision){NULL, PLACE_NONE, -1};
        if (!is_activation(g, v))
            continue;
        for (int r = 0; r < N_RULES; r++) {
            if (!rules[r].match || (rules[r].placement >= 0 && rules[r].placement != (int)pl) ||
                !rules[r].match(&pg, v, rules[r].name))
                continue;
            out[v] = (place_decision){rules[r].name, rules[r].action,
                                      rules[r].action == PLACE_SHARE ? pg.ort_share[v] : -1};
            break;
        }
    }
done:
    free(pg.op);
    free(pg.fused_slot);
    free(pg.n_readers);
    free(pg.ort_rule);
    free(pg.ort_share);
    free(pg.level);
    return st;
}

const char *ptq_placement_rule_why(const char *rule)
{
    for (int r = 0; rule && r < N_RULES; r++)
        if (strcmp(rules[r].name, rule) == 0)
            return rules[r].why;
    return NULL;
}

int ptq_placement_rule_owner(const char *rule, int *weights_only)
{
    for (int r = 0; rule && r < N_RULES; r++) {
        if (strcmp(rules[r].name, rule) != 0)
            continue;
        if (weights_only)
            *weights_only = rules[r].action == PLACE_NONE;
        /* ptq_plan_make_target gives an observed tensor no rule covers all.observed, whatever the placement */
        return strcmp(rule, "all.observed") == 0 ? -1 : rules[r].placement;
    }
    return -2;
}

static const char *const placement_names[] = {[PTQ_PLACEMENT_TRT] = "trt", [PTQ_PLACEMENT_ORT] = "ort",
                                              [PTQ_PLACEMENT_ALL] = "all"};

const char *ptq_placement_name(ptq_placement p)
{
    return (int)p >= 0 && (int)p < 3 ? placement_names[p] : "?";
}

ptq_status ptq_placement_parse(ptq_ctx *ctx, const char *s, ptq_placement *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, placement_names[i]) == 0) {
            *out = (ptq_placement)i;
            return PTQ_OK;
        }
    return ptq_fail(ctx, PTQ_ERR_INVALID_ARG, "unknown placement '%s' (choices: trt, ort, all)", s);
}
