/* The op table (model/op_traits.c, runtime/ops.c): every op's traits
 * (weights, quantizable tensors, channel axis, fusion flags), the pairing of
 * traits and kernels by id, resolution of a graph's nodes and its errors
 * (attributes outside the opsets an op takes them at included),
 * and the quantizable tensors the table gives (ptq_graph_quantizable). */
#include <stdlib.h>
#include <string.h>

#include "runtime/op.h"
#include "testlib.h"

#define W PTQ_OPF_WEIGHTED
#define FA PTQ_OPF_FUSES_ACTIVATION_AFTER
#define ACT PTQ_OPF_FUSIBLE_ACTIVATION
#define RES PTQ_OPF_RESIDUAL_ADD
#define BN PTQ_OPF_FOLDS_INTO_WEIGHTED
#define CM PTQ_OPF_QDQ_COMMUTES
#define ALL PTQ_OP_ALL_IO

/* What each op must say, written out independently of the table. */
static const struct {
    const char *op_type;
    unsigned weight_inputs, quant_inputs, quant_outputs, flags;
    int axis_input;
    ptq_op_axis_rule axis_rule;
    int since_opset;
    int on_cpu_fast; /* has a run_cpu */
} want[] = {
    {"Conv", 0x6, 0x3, ALL, W | FA, 1, PTQ_AXIS_FIRST, 1, 1},
    {"ConvTranspose", 0x6, 0x3, ALL, W | FA, 1, PTQ_AXIS_SECOND_UNGROUPED, 1, 1},
    {"Gemm", 0x6, 0x3, ALL, W | FA, 1, PTQ_AXIS_GEMM_B, 1, 1},
    {"MatMul", 0x2, 0x3, ALL, W | FA, 1, PTQ_AXIS_LAST, 1, 1},
    {"MaxPool", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"AveragePool", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"GlobalAveragePool", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"BatchNormalization", 0, 0, ALL, BN, -1, PTQ_AXIS_NONE, 6, 1},
    {"Add", 0, 0, ALL, RES, -1, PTQ_AXIS_NONE, 1, 1},
    {"Sub", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"Mul", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"Div", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"Relu", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"LeakyRelu", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"Clip", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"Sigmoid", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"HardSigmoid", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"HardSwish", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 14, 1},
    {"Tanh", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 1},
    {"Softmax", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"Flatten", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Reshape", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Squeeze", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Unsqueeze", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Transpose", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Concat", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"Identity", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 1},
    {"Dropout", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"Pad", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 11, 0},
    {"Erf", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 1},
    {"Constant", 0, 0, 0, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceMean", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"LayerNormalization", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 17, 1},
    {"Pow", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Sqrt", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Shape", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"Gather", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 1},
    {"Slice", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"Cast", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Gelu", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 20, 1},
    {"Split", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 2, 0},
    {"Where", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Expand", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 8, 0},
    {"Range", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"Equal", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Mod", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"ConstantOfShape", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Not", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ScatterND", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"ReduceSum", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"CumSum", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"Exp", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Floor", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Ceil", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Round", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"Sin", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Cos", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Softplus", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 0},
    {"Softsign", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 1, 0},
    {"Elu", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 6, 0},
    {"Selu", 0, 0, ALL, ACT, -1, PTQ_AXIS_NONE, 6, 0},
    {"Celu", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 12, 0},
    {"Mish", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 18, 0},
    {"PRelu", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"LogSoftmax", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"Max", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 8, 0},
    {"Min", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 8, 0},
    {"InstanceNormalization", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Neg", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Trilu", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 14, 0},
    {"ReduceMax", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ArgMax", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"Log", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Reciprocal", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Abs", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Greater", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Less", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"GreaterOrEqual", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 12, 0},
    {"LessOrEqual", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 12, 0},
    {"And", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Or", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"RNN", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"GRU", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"LSTM", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Einsum", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 12, 0},
    {"DepthToSpace", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"SpaceToDepth", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"Tile", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 6, 0},
    {"GlobalMaxPool", 0, 0, ALL, CM, -1, PTQ_AXIS_NONE, 1, 0},
    {"Sum", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Mean", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 6, 0},
    {"Size", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceMin", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceProd", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceL1", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceL2", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceSumSquare", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceLogSum", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ReduceLogSumExp", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"ArgMin", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"Tan", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Asin", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Acos", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Atan", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"Sinh", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Cosh", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Asinh", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Acosh", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Atanh", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"Sign", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"ThresholdedRelu", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"Shrink", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"LRN", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"Resize", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"Upsample", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"QuantizeLinear", 0, 0, 0, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"DequantizeLinear", 0, 0, 0, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"GroupNormalization", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 18, 0},
    {"MeanVarianceNormalization", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"LpNormalization", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"LpPool", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 2, 0},
    {"Hardmax", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"IsNaN", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"IsInf", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"Xor", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 7, 0},
    {"BitShift", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"TopK", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 1, 0},
    {"GatherElements", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"ScatterElements", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"GatherND", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 11, 0},
    {"OneHot", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"EyeLike", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
    {"CastLike", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 15, 0},
    {"ReverseSequence", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 10, 0},
    {"Scatter", 0, 0, ALL, 0, -1, PTQ_AXIS_NONE, 9, 0},
};

static void test_every_op(void)
{
    const int n_want = (int)(sizeof want / sizeof want[0]);
    CHECK(n_want == PTQ_OP_COUNT);
    for (int id = 0; id < PTQ_OP_COUNT; id++) {
        const ptq_op_traits *t = &ptq_op_traits_table[id];
        const ptq_op_def *op = ptq_op_get((ptq_op_id)id);
        CHECK_MSG(t->id == (ptq_op_id)id && op && op->traits == t, "op id %d", id);
        CHECK(t->op_type && strcmp(t->domain, "ai.onnx") == 0);
        CHECK_MSG(op && op->infer && op->run_ref, "%s", t->op_type);
    }
    CHECK(ptq_op_get(PTQ_OP_COUNT) == NULL);
    for (int k = 0; k < n_want; k++) {
        const ptq_op_def *op = ptq_op_find("", want[k].op_type);
        CHECK_MSG(op, "%s has no entry", want[k].op_type);
        if (!op)
            continue;
        const ptq_op_traits *t = op->traits;
        CHECK(ptq_op_find("ai.onnx", want[k].op_type) == op && ptq_op_find(NULL, want[k].op_type) == op);
        CHECK(ptq_op_find("com.example", want[k].op_type) == NULL);
        CHECK(ptq_op_traits_find("", want[k].op_type) == t);
        CHECK_MSG(strcmp(t->op_type, want[k].op_type) == 0, "%s", want[k].op_type);
        CHECK_MSG(t->weight_inputs == want[k].weight_inputs, "%s weight_inputs %#x", t->op_type, t->weight_inputs);
        CHECK_MSG(t->quant_inputs == want[k].quant_inputs, "%s quant_inputs %#x", t->op_type, t->quant_inputs);
        CHECK_MSG(t->quant_outputs == want[k].quant_outputs, "%s quant_outputs %#x", t->op_type, t->quant_outputs);
        CHECK_MSG(t->flags == want[k].flags, "%s flags %#x", t->op_type, t->flags);
        CHECK_MSG(t->axis_input == want[k].axis_input && t->axis_rule == want[k].axis_rule, "%s axis", t->op_type);
        CHECK_MSG(op->since_opset == want[k].since_opset, "%s since %d", t->op_type, op->since_opset);
        CHECK_MSG(!!op->run_cpu == want[k].on_cpu_fast, "%s run_cpu", t->op_type);
        CHECK(ptq_op_is_weighted(want[k].op_type) == !!(want[k].flags & W));
        /* a weighted op fuses the activations after it; weights are quantized inputs */
        CHECK(!(t->flags & W) || (t->flags & FA));
        CHECK((t->weight_inputs & ~0x6u) == 0);
    }
    CHECK(ptq_op_find("", "Foo") == NULL && ptq_op_traits_find("", "Foo") == NULL && !ptq_op_is_weighted("Foo"));
    CHECK(ptq_op_mask_has(ALL, 40) && ptq_op_mask_has(0x2, 1) && !ptq_op_mask_has(0x2, 0) && !ptq_op_mask_has(0x2, 40));
}

static void test_weight_axis(void)
{
    const ptq_op_traits *conv = ptq_op_traits_find("", "Conv"), *gemm = ptq_op_traits_find("", "Gemm");
    const ptq_op_traits *mm = ptq_op_traits_find("", "MatMul"), *relu = ptq_op_traits_find("", "Relu");
    ptq_attr trans = {.name = "transB", .type = PTQ_ATTR_INT, .i = 1};
    ptq_node plain = {.name = "n", .op_type = "Gemm", .domain = ""};
    ptq_node transposed = {.name = "n", .op_type = "Gemm", .domain = "", .n_attrs = 1, .attrs = &trans};
    CHECK(ptq_op_weight_axis(conv, &plain, 1, 4) == 0);
    CHECK(ptq_op_weight_axis(conv, &plain, 0, 4) == -1);
    CHECK(ptq_op_weight_axis(conv, &plain, 2, 1) == -1); /* the bias takes no per-channel weight scale */
    CHECK(ptq_op_weight_axis(gemm, &plain, 1, 2) == 1);  /* B [K, N] */
    CHECK(ptq_op_weight_axis(gemm, &transposed, 1, 2) == 0); /* B [N, K] */
    CHECK(ptq_op_weight_axis(gemm, &plain, 1, 1) == 0);
    CHECK(ptq_op_weight_axis(mm, &plain, 1, 3) == 2);
    CHECK(ptq_op_weight_axis(mm, &plain, 1, 2) == 1);
    CHECK(ptq_op_weight_axis(mm, &plain, 0, 2) == -1);
    CHECK(ptq_op_weight_axis(mm, &plain, 1, 0) == -1);
    /* B [K] (a vector: y = x . w) has no output axis, its one axis is the one summed over: per-"channel" scales
     * along it fit every element exactly (no rounding simulated) and no runtime takes them. One scale. */
    CHECK(ptq_op_weight_axis(mm, &plain, 1, 1) == -1);
    CHECK(ptq_op_weight_axis(relu, &plain, 1, 2) == -1);
    CHECK(ptq_op_weight_axis(NULL, &plain, 1, 2) == -1);
    /* ConvTranspose W [C_in, C_out/group, k...]: axis 1, one scale with groups (explicit group 1 is no group) */
    const ptq_op_traits *ct = ptq_op_traits_find("", "ConvTranspose");
    ptq_attr groups[2] = {{.name = "group", .type = PTQ_ATTR_INT, .i = 2},
                          {.name = "group", .type = PTQ_ATTR_INT, .i = 1}};
    const ptq_node grouped = {.name = "n", .op_type = "ConvTranspose", .domain = "", .n_attrs = 1, .attrs = &groups[0]};
    const ptq_node one = {.name = "n", .op_type = "ConvTranspose", .domain = "", .n_attrs = 1, .attrs = &groups[1]};
    const struct {
        const ptq_node *n;
        int input, ndim, axis;
    } ct_want[] = {{&plain, 1, 4, 1}, {&plain, 1, 3, 1}, {&one, 1, 4, 1},
                   {&grouped, 1, 4, -1}, {&plain, 0, 4, -1}, {&plain, 2, 1, -1}};
    for (size_t i = 0; i < sizeof ct_want / sizeof ct_want[0]; i++)
        CHECK_MSG(ptq_op_weight_axis(ct, ct_want[i].n, ct_want[i].input, ct_want[i].ndim) == ct_want[i].axis,
                  "ConvTranspose axis case %zu", i);
}

/* values: 0 X, 1 W (init), 2 B (init), 3 conv out, 4 relu out, 5 const out, 6 add out, 7 int64 shape (init), 8 reshaped */
static const int in_conv[] = {0, 1, 2}, out_conv[] = {3}, in_relu[] = {3}, out_relu[] = {4}, out_const[] = {5};
static const int in_add[] = {4, 5}, out_add[] = {6}, in_reshape[] = {6, 7}, out_reshape[] = {8};

static void graph_init(ptq_graph *g, ptq_value *v, ptq_node *n, int64_t opset)
{
    memset(g, 0, sizeof *g);
    memset(v, 0, 9 * sizeof *v);
    static const char *names[] = {"X", "W", "B", "c", "r", "k", "a", "shape", "y"};
    for (int i = 0; i < 9; i++) {
        v[i].name = names[i];
        v[i].dtype = PTQ_DT_FLOAT;
        v[i].ndim = -1;
        v[i].producer = -1;
    }
    v[1].flags = v[2].flags = v[7].flags = PTQ_VALUE_INITIALIZER;
    v[5].flags = PTQ_VALUE_CONSTANT;
    v[7].dtype = PTQ_DT_INT64;
    n[0] = (ptq_node){"conv0", "Conv", "", 3, 1, in_conv, out_conv, 0, NULL};
    n[1] = (ptq_node){"relu0", "Relu", "", 1, 1, in_relu, out_relu, 0, NULL};
    n[2] = (ptq_node){"const0", "Constant", "", 0, 1, NULL, out_const, 0, NULL};
    n[3] = (ptq_node){"add0", "Add", "", 2, 1, in_add, out_add, 0, NULL};
    n[4] = (ptq_node){"reshape0", "Reshape", "", 2, 1, in_reshape, out_reshape, 0, NULL};
    g->opset = opset;
    g->n_values = 9;
    g->values = v;
    g->n_nodes = 5;
    g->nodes = n;
}

static void test_resolve(void)
{
    ptq_graph g;
    ptq_value v[9];
    ptq_node n[5];
    ptq_ctx ctx;
    const ptq_op_def **ops = NULL;
    graph_init(&g, v, n, 13);
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_OK && ops);
    if (ops) {
        CHECK(ops[0] == ptq_op_get(PTQ_OP_CONV) && ops[1] == ptq_op_get(PTQ_OP_RELU));
        CHECK(ops[2] == ptq_op_get(PTQ_OP_CONSTANT) && ops[3] == ptq_op_get(PTQ_OP_ADD));
        CHECK(ops[4] == ptq_op_get(PTQ_OP_RESHAPE));
        /* a resolved op in io is what backends use, whatever the node's name says */
        ptq_op_io io = {.graph = &g, .node = &n[1], .op = ops[3]};
        CHECK(ptq_op_of(&io) == ptq_op_get(PTQ_OP_ADD));
        io.op = NULL;
        CHECK(ptq_op_of(&io) == ptq_op_get(PTQ_OP_RELU));
    }
    free(ops);

    n[3].op_type = "Foo";
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'add0': op Foo (domain ai.onnx, opset 13) is not supported by ptq"), "%s",
              ctx.msg);

    /* every node ptq cannot run is named at once, with an export hint where an op is newer than opset 17 */
    n[1].op_type = "Col2Im";
    g.opset = 18;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "2 nodes ptq cannot run: node 'relu0': op Col2Im (domain ai.onnx, opset 18)") &&
                  strstr(ctx.msg, "; node 'add0': op Foo (domain ai.onnx, opset 18)") &&
                  strstr(ctx.msg, "hint: the model is at an opset past 17") && strstr(ctx.msg, "opset_version=17"),
              "%s", ctx.msg);
    /* an op opset 17 has too (Det, GridSample): a re-export at 17 keeps it, so no such hint */
    n[1].op_type = "Det";
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "2 nodes ptq cannot run: node 'relu0': op Det (domain ai.onnx, opset 18)") &&
                  strstr(ctx.msg, "; node 'add0': op Foo (domain ai.onnx, opset 18)") && !strstr(ctx.msg, "hint"),
              "%s", ctx.msg);
    /* a name too long for the message is cut, so its op and the other node are still named */
    char long_name[1101];
    memset(long_name, 'N', 1100);
    long_name[1100] = '\0';
    n[1].name = long_name;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "2 nodes ptq cannot run: node 'NNNN") &&
                  strstr(ctx.msg, "N...': op Det (domain ai.onnx, opset 18)") &&
                  strstr(ctx.msg, "; node 'add0': op Foo") && !strstr(ctx.msg, "more"),
              "%s", ctx.msg);
    n[1].name = "relu0";
    n[1].op_type = "Relu";
    g.opset = 13;

    n[3].op_type = "Add";
    n[1].domain = "com.example";
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'relu0': op Relu (domain com.example, opset 13)"), "%s", ctx.msg);

    n[1].domain = "";
    n[1].op_type = "HardSwish";
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'relu0': op HardSwish (domain ai.onnx) at opset 13 is older than ptq implements "
                              "(opset 14+)"),
              "%s", ctx.msg);
    g.opset = 14;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_OK && ops && ops[1] == ptq_op_get(PTQ_OP_HARDSWISH));
    free(ops);

    /* an attribute the op takes only at other opsets is refused, not ignored: Reshape's shape before 5,
     * ReduceMean's axes before 18, Shape's start from 15 */
    const int64_t shape_ints[] = {1, -1};
    ptq_attr attr = {.name = "shape", .type = PTQ_ATTR_INTS, .n = 2, .ints = shape_ints};
    n[4].n_attrs = 1;
    n[4].attrs = &attr;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'reshape0' (Reshape, opset 14): Reshape has no shape attribute at this opset "
                              "(it takes one only before opset 5)"),
              "%s", ctx.msg);
    n[4].op_type = "ReduceMean";
    attr.name = "axes";
    for (int64_t opset = 17; opset <= 18; opset++) {
        g.opset = opset;
        ptq_ctx_init(&ctx);
        const ptq_status st = ptq_op_resolve(&ctx, &g, &ops);
        CHECK_MSG(opset == 17 ? st == PTQ_OK && ops : st == PTQ_ERR_FORMAT && !ops && strstr(ctx.msg, "reshape0") &&
                                                          strstr(ctx.msg, "no axes attribute"),
                  "opset %lld: %s", (long long)opset, ctx.msg);
        free(ops);
        ops = NULL;
    }
    n[4].op_type = "Shape";
    attr = (ptq_attr){.name = "start", .type = PTQ_ATTR_INT, .i = 1};
    for (int64_t opset = 14; opset <= 15; opset++) {
        g.opset = opset;
        ptq_ctx_init(&ctx);
        const ptq_status st = ptq_op_resolve(&ctx, &g, &ops);
        CHECK_MSG(opset == 15 ? st == PTQ_OK && ops : st == PTQ_ERR_FORMAT && strstr(ctx.msg, "only from opset 15"),
                  "opset %lld: %s", (long long)opset, ctx.msg);
        free(ops);
        ops = NULL;
    }
    /* an attribute no version of the op defines (misspelt) is refused, not ignored: a LeakyRelu with `alpah`
     * ran at slope 0.01; one ONNX gave the op at older opsets only (Add's axis, 1 to 6) is named so */
    n[4].op_type = "LeakyRelu";
    attr = (ptq_attr){.name = "alpah", .type = PTQ_ATTR_FLOAT, .f = 0.5f};
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'reshape0' (LeakyRelu, opset 15): attribute 'alpah' is not one ONNX defines for "
                              "LeakyRelu"),
              "%s", ctx.msg);
    attr.name = "alpha";
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_op_resolve(&ctx, &g, &ops) == PTQ_OK && ops, "%s", ctx.msg);
    free(ops);
    ops = NULL;
    n[4].op_type = "Add";
    attr = (ptq_attr){.name = "axis", .type = PTQ_ATTR_INT, .i = 1};
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "Add has no axis attribute at this opset (it takes one only before opset 7)"), "%s",
              ctx.msg);
    g.opset = 15;
    n[4].op_type = "Shape";
    n[4].n_attrs = 0;

    /* an attribute of another type than ONNX gives it is refused, not read as absent (the op's default): an INT
     * alpha=1 made LeakyRelu's slope 0.01, a FLOAT axis put Softmax on -1; a Constant's value must be a tensor */
    g.opset = 13;
    n[1].op_type = "LeakyRelu";
    attr = (ptq_attr){.name = "alpha", .type = PTQ_ATTR_INT, .i = 1};
    n[1].n_attrs = 1;
    n[1].attrs = &attr;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'relu0' (LeakyRelu, opset 13): attribute alpha is of type INT; LeakyRelu's is "
                              "FLOAT"),
              "%s", ctx.msg);
    attr = (ptq_attr){.name = "alpha", .type = PTQ_ATTR_FLOAT, .f = 1.0f};
    ptq_ctx_init(&ctx);
    CHECK_MSG(ptq_op_resolve(&ctx, &g, &ops) == PTQ_OK && ops, "%s", ctx.msg);
    free(ops);
    ops = NULL;
    n[1].op_type = "Softmax";
    attr = (ptq_attr){.name = "axis", .type = PTQ_ATTR_FLOAT, .f = 0.0f};
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "attribute axis is of type FLOAT; Softmax's is INT"), "%s", ctx.msg);
    static const float strides_f[] = {2.0f, 2.0f};
    n[1].n_attrs = 0;
    attr = (ptq_attr){.name = "strides", .type = PTQ_ATTR_FLOATS, .n = 2, .floats = strides_f};
    n[0].n_attrs = 1;
    n[0].attrs = &attr;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "node 'conv0' (Conv, opset 13): attribute strides is of type FLOATS; Conv's is INTS"),
              "%s", ctx.msg);
    n[0].n_attrs = 0;
    attr = (ptq_attr){.name = "value", .type = PTQ_ATTR_FLOAT, .f = 1.0f};
    n[2].n_attrs = 1;
    n[2].attrs = &attr;
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_FORMAT && !ops);
    CHECK_MSG(strstr(ctx.msg, "attribute value is of type FLOAT; Constant's is TENSOR"), "%s", ctx.msg);
    /* another domain's op types its attributes its own way */
    n[2].domain = "com.example";
    ptq_ctx_init(&ctx);
    CHECK(ptq_op_resolve(&ctx, &g, &ops) == PTQ_ERR_UNSUPPORTED && !ops);
    CHECK_MSG(!strstr(ctx.msg, "attribute value"), "%s", ctx.msg);
}

static void test_quantizable(void)
{
    ptq_graph g;
    ptq_value v[9];
    ptq_node n[5];
    unsigned char act[9], wt[9];
    graph_init(&g, v, n, 13);
    ptq_graph_quantizable(&g, act, wt);
    /* X and W quantized at the Conv (the bias is not); every float output but the Constant's */
    static const unsigned char want_act[9] = {1, 0, 0, 1, 1, 0, 1, 0, 1}, want_wt[9] = {0, 1, 0, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(act, want_act, 9) == 0 && memcmp(wt, want_wt, 9) == 0);
    /* an op ptq does not know still has activations as outputs */
    n[3].op_type = "Foo";
    ptq_graph_quantizable(&g, act, NULL);
    CHECK(memcmp(act, want_act, 9) == 0);
    /* a constant first input of MatMul is a weight too */
    n[0].op_type = "MatMul";
    n[0].n_inputs = 2;
    v[0].flags = PTQ_VALUE_INITIALIZER;
    ptq_graph_quantizable(&g, act, wt);
    CHECK(act[0] == 0 && wt[0] == 1 && wt[1] == 1 && wt[2] == 0);
}

int main(void)
{
    test_every_op();
    test_weight_axis();
    test_resolve();
    test_quantizable();
    return test_done("test_op_table");
}
