/* Q/DQ placement rules (quant/placement.c) one by one on small graphs built
 * in memory: Conv->Relu, Conv->Clip, a residual Add (fused into the Conv,
 * its other input quantized; two Conv inputs: the shortcut quantized), MaxPool between Convs,
 * Concat of two branches, a Gemm head; each with the set of tensors the trt
 * placement quantizes written out, the ort placement's for some, the rule
 * that decided, FP16 edges, graph outputs left as computed, and
 * --placement all quantizing everything; a pre-LayerNorm attention block
 * (both attention MatMul operands quantized, LayerNorm/residual Add in FP16
 * by trt.fp16-transformer), LayerNorm written out, and a CNN that is no
 * transformer. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/placement.h"
#include "quant/quant_internal.h"
#include "testlib.h"

enum { MAX_V = 32, MAX_N = 16, MAX_IO = 4 };

/* A graph under construction: values by name, nodes in topological order. */
typedef struct gb {
    ptq_value values[MAX_V];
    ptq_node nodes[MAX_N];
    int io[MAX_N][2][MAX_IO];
    int inputs[1], outputs[1];
    int n_values, n_nodes;
    ptq_graph g;
} gb;

static int value(gb *b, const char *name)
{
    for (int v = 0; v < b->n_values; v++)
        if (strcmp(b->values[v].name, name) == 0)
            return v;
    ptq_value *v = &b->values[b->n_values];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->dtype = PTQ_DT_FLOAT;
    v->ndim = -1;
    v->producer = -1;
    /* names starting with w (weights, biases, Clip bounds) are initializers */
    v->flags = name[0] == 'w' ? PTQ_VALUE_INITIALIZER : 0;
    return b->n_values++;
}

/* Adds op_type reading the comma-separated ins and writing the comma-separated outs. */
static void node(gb *b, const char *op_type, const char *ins, const char *outs)
{
    static char names[MAX_N][2][128]; /* the input and output names of node k, split in place */
    const int k = b->n_nodes++;
    int n[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
        snprintf(names[k][j], sizeof names[k][j], "%s", j == 0 ? ins : outs);
        for (char *save = NULL, *t = strtok_r(names[k][j], ",", &save); t && n[j] < MAX_IO;
             t = strtok_r(NULL, ",", &save))
            b->io[k][j][n[j]++] = value(b, t);
    }
    for (int i = 0; i < n[1]; i++)
        b->values[b->io[k][1][i]].producer = k;
    b->nodes[k] = (ptq_node){op_type, op_type, "", n[0], n[1], b->io[k][0], b->io[k][1], 0, NULL};
}

static const ptq_graph *finish(gb *b, const char *in, const char *out)
{
    b->inputs[0] = value(b, in);
    b->outputs[0] = value(b, out);
    b->values[b->inputs[0]].flags |= PTQ_VALUE_INPUT;
    b->values[b->outputs[0]].flags |= PTQ_VALUE_OUTPUT;
    memset(&b->g, 0, sizeof b->g);
    b->g.name = "placement";
    b->g.opset = 13;
    b->g.n_values = b->n_values;
    b->g.values = b->values;
    b->g.n_nodes = b->n_nodes;
    b->g.nodes = b->nodes;
    b->g.n_inputs = 1;
    b->g.inputs = b->inputs;
    b->g.n_outputs = 1;
    b->g.outputs = b->outputs;
    return &b->g;
}

/* The decisions for g under pl: the quantized tensors (core or shared
 * scale), comma-separated in value order, must be `want`; each tensor named
 * in rules ("name=rule,...") must have that rule. */
static void expect(const char *label, const ptq_graph *g, ptq_placement pl, ptq_prec core, const unsigned char *edge,
                   const char *want, const char *rules)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    place_decision d[MAX_V];
    CHECK_MSG(ptq_placement_decide(&ctx, g, pl, core, edge, d) == PTQ_OK, "%s: %s", label, ctx.msg);
    char got[256] = "";
    for (int v = 0; v < g->n_values; v++)
        if (d[v].action == PLACE_CORE || d[v].action == PLACE_SHARE)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", got[0] ? "," : "", g->values[v].name);
    CHECK_MSG(strcmp(got, want) == 0, "%s (%s): quantized {%s}, want {%s}", label, ptq_placement_name(pl), got, want);
    char buf[1024];
    CHECK_MSG(strlen(rules) < sizeof buf, "%s: rules too long for the test", label);
    snprintf(buf, sizeof buf, "%s", rules);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = 0;
        const int v = ptq_graph_find_value(g, t);
        CHECK_MSG(v >= 0 && d[v].rule && strcmp(d[v].rule, eq + 1) == 0, "%s (%s): %s has rule %s, want %s", label,
                  ptq_placement_name(pl), t, v >= 0 && d[v].rule ? d[v].rule : "(none)", eq + 1);
        CHECK_MSG(v >= 0 && d[v].rule && ptq_placement_rule_why(d[v].rule), "%s: rule %s has no reason", label, eq + 1);
    }
    for (int v = 0; v < g->n_values; v++)
        CHECK_MSG((d[v].action == PLACE_NONE) ==
                      ((g->values[v].flags & PTQ_VALUE_HAS_DATA) != 0 || g->values[v].dtype != PTQ_DT_FLOAT),
                  "%s: %s decided %d", label, g->values[v].name, (int)d[v].action);
}

/* Rule weight.follows-input (quant/plan.c) on the attention graph g with
 * its edges: the key and value projections read the first LayerNorm's
 * output, which the edge rule keeps FP16 as the query projection's input,
 * so their weights join it; the output projection reads the quantized
 * attention output and keeps its INT8 weight; a layer whose input has no
 * entry (not observed) follows too; under target ort-cpu the precision
 * joined is FP32. */
static void check_weights_follow(const ptq_graph *g)
{
    static const struct {
        const char *name;
        int is_weight;
        ptq_prec prec;
    } ents[] = {{"ln", 0, PTQ_PREC_FP16}, {"q", 0, PTQ_PREC_FP16}, {"v", 0, PTQ_PREC_INT8},
                {"kt", 0, PTQ_PREC_INT8}, {"p", 0, PTQ_PREC_INT8},  {"o", 0, PTQ_PREC_INT8},
                {"r", 0, PTQ_PREC_FP16},  {"wq", 1, PTQ_PREC_FP16}, {"wk", 1, PTQ_PREC_INT8},
                {"wv", 1, PTQ_PREC_INT8}, {"wo", 1, PTQ_PREC_INT8}, {"wf", 1, PTQ_PREC_FP16}};
    enum { N = sizeof ents / sizeof ents[0] };
    static const char *const followed[] = {"wk", "wv"};
    for (int target = 0; target < 2; target++) {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        ptq_plan_entry e[N];
        ptq_plan p = {.n = N, .e = e, .core = PTQ_PREC_INT8, .target = target ? PTQ_TARGET_ORT_CPU : PTQ_TARGET_TRT};
        for (int i = 0; i < N; i++) {
            e[i] = (ptq_plan_entry){.name = strdup(ents[i].name), .is_weight = ents[i].is_weight,
                                    .prec = ents[i].prec, .axis = ents[i].is_weight && ents[i].prec == PTQ_PREC_INT8 ? 1 : -1,
                                    .source = strdup("test"), .rule = strdup("weight")};
            if (ptq_prec_is_quantized(e[i].prec)) {
                e[i].n_scales = 1;
                e[i].scales = malloc(sizeof *e[i].scales);
                e[i].scales[0] = 0.5f;
            }
        }
        CHECK_MSG(quant_plan_weights_follow(&ctx, g, &p) == PTQ_OK, "%s", ctx.msg);
        const ptq_prec high = target ? PTQ_PREC_FP32 : PTQ_PREC_FP16;
        for (int i = 0; i < N; i++) {
            int follows = 0;
            for (int j = 0; j < 2; j++)
                follows |= strcmp(ents[i].name, followed[j]) == 0;
            if (follows)
                CHECK_MSG(e[i].prec == high && e[i].n_scales == 0 && !e[i].scales && e[i].axis == -1 &&
                              strcmp(e[i].rule, PTQ_RULE_WEIGHT_FOLLOWS) == 0 && ptq_placement_rule_why(e[i].rule),
                          "%s should follow its FP16 input (target %d): %s, rule %s", ents[i].name, target,
                          ptq_prec_name(e[i].prec), e[i].rule);
            else
                CHECK_MSG(e[i].prec == ents[i].prec && strcmp(e[i].rule, "weight") == 0, "%s should stay %s",
                          ents[i].name, ptq_prec_name(ents[i].prec));
        }
        /* the output projection's input unobserved (no entry): its weight follows as well */
        free(e[5].name);
        e[5].name = strdup("o-not-observed");
        CHECK(quant_plan_weights_follow(&ctx, g, &p) == PTQ_OK && e[10].prec == high &&
              strcmp(e[10].rule, PTQ_RULE_WEIGHT_FOLLOWS) == 0);
        for (int i = 0; i < N; i++) {
            free(e[i].name);
            free(e[i].source);
            free(e[i].rule);
            free(e[i].scales);
        }
    }
}

/* The share each tensor named in shares ("name=input,...") must have: the value whose scale it takes. */
static void expect_shares(const char *label, const ptq_graph *g, ptq_prec core, const char *shares)
{
    ptq_ctx ctx;
    ptq_ctx_init(&ctx);
    place_decision d[MAX_V];
    CHECK_MSG(ptq_placement_decide(&ctx, g, PTQ_PLACEMENT_ORT, core, NULL, d) == PTQ_OK, "%s: %s", label, ctx.msg);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", shares);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        *eq = 0;
        const int v = ptq_graph_find_value(g, t), from = ptq_graph_find_value(g, eq + 1);
        CHECK_MSG(v >= 0 && d[v].action == PLACE_SHARE && d[v].share == from, "%s: %s shares %s, want %s", label, t,
                  v >= 0 && d[v].share >= 0 ? g->values[d[v].share].name : "(none)", eq + 1);
    }
}

/* The ops of quantize_static's registry past the CNN ones, each between ops outside it (Neg, Sub) so that only
 * its own quantizer marks its tensors, as onnxruntime 1.32 marks them (tests/ort_placement_test.py compares with
 * quantize_static itself): QDQSplit, CumSum and ArgMax (QDQOperatorBase), Slice (QDQDirect8BitOp), QDQPad with
 * each padding, QDQNormalization, QDQWhere, QDQGather (of an initializer table or a Constant node's), and
 * QDQMaxPool below opset 12. */
static void check_ort_registry(void)
{
    gb b;
    const ptq_prec I8 = PTQ_PREC_INT8;
    memset(&b, 0, sizeof b);
    node(&b, "Neg", "x", "a");
    node(&b, "Split", "a", "s1,s2");
    node(&b, "Sub", "s1,s2", "d");
    node(&b, "CumSum", "d,wax", "cs");
    node(&b, "Neg", "cs", "e");
    node(&b, "Mul", "e,wc", "m");
    node(&b, "Slice", "m,wst,wen", "sl");
    node(&b, "Neg", "sl", "f");
    node(&b, "ArgMax", "f", "i");
    const ptq_graph *g = finish(&b, "x", "i");
    b.values[ptq_graph_find_value(g, "i")].dtype = PTQ_DT_INT64;
    for (int u = 0; u < 2; u++) {
        const ptq_prec core = u ? PTQ_PREC_UINT8 : I8;
        expect("split cumsum slice argmax", g, PTQ_PLACEMENT_ORT, core, NULL, "a,s1,s2,d,cs,e,m,sl,f",
               "x=ort.unquantized,a=ort.op-io,s1=ort.same-as-input,s2=ort.same-as-input,d=ort.op-io,cs=ort.op-io,"
               "sl=ort.same-as-input,f=ort.op-io");
        expect_shares("split cumsum slice argmax", g, core, "s1=a,s2=a,sl=m");
    }

    static float zero = 0.0f, one = 1.0f;
    static const ptq_attr reflect = {.name = "mode", .type = PTQ_ATTR_STRING, .s = "reflect", .s_len = 7};
    memset(&b, 0, sizeof b);
    node(&b, "Neg", "x", "a");
    node(&b, "LayerNormalization", "a,wg,wb", "ln");
    node(&b, "Neg", "ln", "n");
    node(&b, "Pad", "n,wp", "p0");
    node(&b, "Neg", "p0", "q");
    node(&b, "Pad", "q,wp,wv", "p1");
    node(&b, "Neg", "p1", "r");
    node(&b, "Pad", "r,wp", "p2");
    node(&b, "Neg", "p2", "y");
    b.nodes[7].n_attrs = 1;
    b.nodes[7].attrs = &reflect;
    g = finish(&b, "x", "y");
    ptq_value *wv = &b.values[ptq_graph_find_value(g, "wv")];
    wv->data = &one;
    wv->n_bytes = sizeof one;
    expect("layernorm pad", g, PTQ_PLACEMENT_ORT, I8, NULL, "a,ln,n,p0,q,p1,r,p2",
           "a=ort.op-io,ln=ort.op-io,n=ort.op-io,p0=ort.same-as-input,q=ort.op-io,p1=ort.op-io,r=ort.op-io,"
           "p2=ort.same-as-input,y=ort.output");
    expect_shares("layernorm pad", g, I8, "p0=n,p2=r");
    wv->data = &zero; /* padding with 0 adds no new value */
    expect_shares("pad with 0", g, I8, "p1=q");

    memset(&b, 0, sizeof b);
    node(&b, "Neg", "x", "a");
    node(&b, "Mul", "a,wc", "m1");
    node(&b, "Mul", "a,wc2", "m2");
    node(&b, "Greater", "a,wz", "cond");
    node(&b, "Where", "cond,m1,m2", "h");
    node(&b, "Where", "cond,wz,m1", "h2");
    node(&b, "Neg", "h2", "n");
    node(&b, "Gather", "h,widx", "gq");
    node(&b, "Gather", "wtab,ids", "ge");
    node(&b, "Gather", "ctab,ids", "gc"); /* a Constant node's table is no initializer: quantize_static leaves it */
    node(&b, "Sub", "ge,n", "s");
    node(&b, "InstanceNormalization", "s,wis,wib", "in");
    node(&b, "MaxPool", "in", "mp");
    node(&b, "Neg", "mp", "y");
    g = finish(&b, "x", "y");
    b.values[ptq_graph_find_value(g, "cond")].dtype = PTQ_DT_BOOL;
    b.values[ptq_graph_find_value(g, "ids")].dtype = PTQ_DT_INT64;
    b.values[ptq_graph_find_value(g, "ctab")].flags = PTQ_VALUE_CONSTANT;
    expect("where gather instancenorm", g, PTQ_PLACEMENT_ORT, I8, NULL, "a,m1,m2,h,gq,ge,s,in,mp",
           "h=ort.op-io,h2=ort.unquantized,gq=ort.same-as-input,ge=ort.op-io,gc=ort.unquantized,s=ort.op-io,"
           "in=ort.op-io,mp=ort.same-as-input");
    expect_shares("where gather instancenorm", g, I8, "gq=h,mp=in");
    b.g.opset = 11; /* QDQMaxPool leaves a MaxPool below opset 12 alone */
    expect("maxpool opset 11", g, PTQ_PLACEMENT_ORT, I8, NULL, "a,m1,m2,h,gq,ge,s,in", "mp=ort.unquantized");
}

/* The normalisations beside InstanceNormalization (GroupNormalization, MeanVarianceNormalization,
 * LpNormalization): a Conv's output normalised, then
 * negated into a Conv. Plain ops as InstanceNormalization under trt and all (its output is quantized only where a
 * Conv reads it); quantize_static's registry has no quantizer for them (onnxruntime 1.32's registry.py), so under
 * ort their output stays float where InstanceNormalization's (QDQNormalization) is quantized. */
static void check_norms(void)
{
    static const char *const ops[] = {"InstanceNormalization", "GroupNormalization",
                                      "MeanVarianceNormalization", "LpNormalization"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        gb b;
        const ptq_prec I8 = PTQ_PREC_INT8;
        const int inorm = i == 0;
        memset(&b, 0, sizeof b);
        node(&b, "Neg", "x", "a");
        node(&b, "Conv", "a,w1", "c");
        node(&b, ops[i], "c,ws,wb", "n");
        node(&b, "Neg", "n", "m");
        node(&b, "Conv", "m,w2", "d");
        node(&b, "Neg", "d", "y");
        const ptq_graph *g = finish(&b, "x", "y");
        expect(ops[i], g, PTQ_PLACEMENT_TRT, I8, NULL, "a,m", "a=trt.weighted-input,c=trt.unquantized,"
               "n=trt.unquantized,m=trt.weighted-input,d=trt.unquantized");
        expect(ops[i], g, PTQ_PLACEMENT_ALL, I8, NULL, "x,a,c,n,m,d,y", "c=all.observed,n=all.observed");
        expect(ops[i], g, PTQ_PLACEMENT_ORT, I8, NULL, inorm ? "a,c,n,m,d" : "a,c,m,d",
               inorm ? "c=ort.op-io,n=ort.op-io,m=ort.op-io" : "c=ort.op-io,n=ort.unquantized,m=ort.op-io");
    }
}

int main(void)
{
    gb b;
    const ptq_prec I8 = PTQ_PREC_INT8;

    /* Conv -> Relu -> Conv: quantized at the Conv inputs, never between Conv and Relu */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Conv", "r1,w2,w2b", "y2");
    const ptq_graph *g = finish(&b, "x", "y2");
    expect("conv-relu", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,r1",
           "x=trt.weighted-input,y1=trt.fused,r1=trt.weighted-input,y2=trt.output");
    expect("conv-relu", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1",
           "x=ort.op-io,y1=ort.op-io,r1=ort.activation,y2=ort.output");
    expect("conv-relu", g, PTQ_PLACEMENT_ALL, I8, NULL, "x,y1,r1,y2", "y1=all.observed");
    expect("conv-relu uint8", g, PTQ_PLACEMENT_ORT, PTQ_PREC_UINT8, NULL, "x,r1",
           "x=ort.op-io,y1=ort.removed-activation,r1=ort.activation,y2=ort.output");
    /* the FP16 edges: both Convs are the first and last compute layers */
    unsigned char edge[MAX_V];
    ptq_placement_edges(g, edge);
    expect("conv-relu edges", g, PTQ_PLACEMENT_TRT, I8, edge, "", "x=edge,y1=edge,r1=edge,y2=trt.output");
    expect("conv-relu edges", g, PTQ_PLACEMENT_ALL, I8, edge, "", "x=edge,y2=edge");
    CHECK(edge[ptq_graph_find_value(g, "w1")] && edge[ptq_graph_find_value(g, "w2b")]);

    /* Conv -> Clip (ReLU6) -> Conv: the Clip fuses as the Relu does */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Clip", "y1,wmin,wmax", "c1");
    node(&b, "Conv", "c1,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("conv-clip", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,c1", "y1=trt.fused,c1=trt.weighted-input");

    /* Conv -> each other activation TensorRT fuses into the Conv -> Conv: as the Relu */
    static const char *const fused_acts[] = {"LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish"};
    for (int i = 0; i < 4; i++) {
        memset(&b, 0, sizeof b);
        node(&b, "Conv", "x,w1", "y1");
        node(&b, fused_acts[i], "y1", "a1");
        node(&b, "Conv", "a1,w2", "y2");
        g = finish(&b, "x", "y2");
        expect(fused_acts[i], g, PTQ_PLACEMENT_TRT, I8, NULL, "x,a1", "y1=trt.fused,a1=trt.weighted-input");
    }

    /* Conv -> Relu -> Reshape -> Gemm: Q/DQ commutes through the Reshape, so its output (what the Gemm
       reads) is the quantized tensor and the Relu output inside the fused layer is not */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Reshape", "r1,wshape", "f");
    node(&b, "Gemm", "f,w2,w2b", "y2");
    g = finish(&b, "x", "y2");
    expect("reshape", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,f", "y1=trt.fused,f=trt.commutes");

    /* Conv -> BatchNorm -> Relu: nothing rounded inside the fused layer */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "BatchNormalization", "y1,ws,wb,wm,wv", "bn");
    node(&b, "Relu", "bn", "r1");
    node(&b, "Conv", "r1,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("conv-bn-relu", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,r1", "y1=trt.fused,bn=trt.fused");

    /* residual: Add(Conv, skip) fuses into the Conv; the skip (made by a Sigmoid no Conv
     * reads) is quantized by the residual rule, the Conv and Add outputs are not */
    memset(&b, 0, sizeof b);
    node(&b, "Sigmoid", "x", "s");
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Conv", "r1,w2", "y2");
    node(&b, "Add", "y2,s", "a");
    node(&b, "Relu", "a", "r2");
    node(&b, "Conv", "r2,w3", "y3");
    g = finish(&b, "x", "y3");
    expect("residual", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,s,r1,r2",
           "s=trt.residual-input,y2=trt.fused,a=trt.fused,r2=trt.weighted-input,x=trt.weighted-input");
    expect("residual", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,s,y1,r1,y2,a,r2", "s=ort.op-io,a=ort.op-io");
    /* uint8 activations (target ort-cpu): quantize_static removes each Relu whose input only it reads,
       the Conv and Add outputs before them stay float; the Relu outputs keep their own parameters */
    expect("residual uint8", g, PTQ_PLACEMENT_ORT, PTQ_PREC_UINT8, NULL, "x,s,r1,y2,r2",
           "y1=ort.removed-activation,a=ort.removed-activation,r1=ort.activation,r2=ort.activation,y2=ort.op-io");

    /* residual of two Convs on paths of one length: the Add fuses into the later one, the
     * earlier one's output is quantized */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Conv", "x,w2", "k");
    node(&b, "Add", "y1,k", "a");
    node(&b, "Relu", "a", "r");
    node(&b, "Conv", "r,w3", "y3");
    g = finish(&b, "x", "y3");
    expect("residual-2conv", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,y1,r", "y1=trt.residual-input,k=trt.fused");

    /* a downsampling block as PyTorch exports it: main branch Conv->Relu->Conv, then the
     * shortcut Conv; the Add fuses into the main branch's Conv (the longer path) and the
     * shortcut's output is the quantized residual input, though its Conv comes later */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Conv", "r1,w2", "y2");
    node(&b, "Conv", "x,w3", "k");
    node(&b, "Add", "y2,k", "a");
    node(&b, "Relu", "a", "r");
    node(&b, "Conv", "r,w4", "y4");
    g = finish(&b, "x", "y4");
    expect("residual-downsample", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,r1,k,r",
           "k=trt.residual-input,y2=trt.fused,a=trt.fused,y1=trt.fused,r1=trt.weighted-input");

    /* MaxPool between Convs: the point is the MaxPool output (it commutes), not its input */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "MaxPool", "r1", "p");
    node(&b, "Conv", "p,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("maxpool", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,p", "r1=trt.unquantized,p=trt.commutes");
    expect("maxpool", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,p", "p=ort.same-as-input,y2=ort.output");
    /* quantize_static leaves an FP8 MaxPool alone; the Conv then quantizes its input itself */
    expect("maxpool fp8", g, PTQ_PLACEMENT_ORT, PTQ_PREC_FP8_E4M3, NULL, "x,y1,r1,p", "p=ort.op-io");
    {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        place_decision d[MAX_V];
        CHECK(ptq_placement_decide(&ctx, g, PTQ_PLACEMENT_ORT, I8, NULL, d) == PTQ_OK);
        CHECK_MSG(d[ptq_graph_find_value(g, "p")].share == ptq_graph_find_value(g, "r1"),
                  "the MaxPool output shares its input's scale");
    }

    /* a UNet's upsampling between Convs: quantize_static's QDQResize gives a Resize output its input's scale from
     * opset 11 and leaves one before 11 alone (the Conv then quantizes its input itself), as it does Upsample */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Resize", "r1", "u");
    node(&b, "Conv", "u,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("resize", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,u", "u=ort.same-as-input,y2=ort.output");
    {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        place_decision d[MAX_V];
        CHECK(ptq_placement_decide(&ctx, g, PTQ_PLACEMENT_ORT, I8, NULL, d) == PTQ_OK);
        CHECK_MSG(d[ptq_graph_find_value(g, "u")].share == ptq_graph_find_value(g, "r1"),
                  "the Resize output shares its input's scale");
    }
    b.g.opset = 10;
    expect("resize opset 10", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,u", "u=ort.op-io");
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Upsample", "r1", "u");
    node(&b, "Conv", "u,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("upsample", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,u", "u=ort.op-io");

    /* Concat of two Conv+Relu branches feeding a Conv: quantized once, after the Concat */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Conv", "x,w2", "y2");
    node(&b, "Relu", "y2", "r2");
    node(&b, "Concat", "r1,r2", "c");
    node(&b, "Conv", "c,w3", "y3");
    g = finish(&b, "x", "y3");
    expect("concat", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,c",
           "r1=trt.unquantized,r2=trt.unquantized,c=trt.commutes");
    expect("concat", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,y2,r2,c", "c=ort.op-io");

    /* Gemm head: Conv -> Relu -> GlobalAveragePool -> Flatten -> Gemm */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "GlobalAveragePool", "r1", "gp");
    node(&b, "Flatten", "gp", "f");
    node(&b, "Gemm", "f,wfc,wfb", "logits");
    g = finish(&b, "x", "logits");
    expect("gemm-head", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,f",
           "r1=trt.unquantized,gp=trt.unquantized,f=trt.commutes,logits=trt.output");
    expect("gemm-head", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,y1,r1,gp,f",
           "gp=ort.op-io,f=ort.same-as-input,logits=ort.output");

    /* uint8: a Relu whose input has another reader stays, and so does its input's quantization */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,w1", "y1");
    node(&b, "Relu", "y1", "r1");
    node(&b, "Add", "y1,r1", "a");
    node(&b, "Conv", "a,w2", "y2");
    g = finish(&b, "x", "y2");
    expect("relu two readers uint8", g, PTQ_PLACEMENT_ORT, PTQ_PREC_UINT8, NULL, "x,y1,r1,a",
           "y1=ort.op-io,r1=ort.activation");

    /* an op outside quantize_static's registry (Sub) quantizes nothing: its output is left */
    memset(&b, 0, sizeof b);
    node(&b, "Sub", "x,wc", "d");
    node(&b, "Conv", "d,w1", "y1");
    g = finish(&b, "x", "y1");
    expect("sub", g, PTQ_PLACEMENT_ORT, I8, NULL, "d", "x=ort.unquantized,d=ort.op-io,y1=ort.output");
    expect("sub", g, PTQ_PLACEMENT_TRT, I8, NULL, "d", "x=trt.unquantized,d=trt.weighted-input");

    /* a pre-LayerNorm attention block (a bias Add after the projection, as exporters write it):
     * both operands of Q.K^T and softmax.V (MatMuls of two activations) are quantized (K^T
     * through its Transpose); the LayerNorm and Softmax outputs feeding MatMuls are their
     * quantized inputs; the residual Add and the LayerNorm no MatMul reads stay in FP16; the
     * score Mul (no such op in the rule) is left in FP32 */
    memset(&b, 0, sizeof b);
    node(&b, "LayerNormalization", "x,wg,wb", "ln");
    node(&b, "MatMul", "ln,wq", "q");
    node(&b, "MatMul", "ln,wk", "k");
    node(&b, "MatMul", "ln,wv", "v");
    node(&b, "Transpose", "k", "kt");
    node(&b, "MatMul", "q,kt", "s");
    node(&b, "Mul", "s,wscale", "ss");
    node(&b, "Softmax", "ss", "p");
    node(&b, "MatMul", "p,v", "o");
    node(&b, "MatMul", "o,wo", "proj");
    node(&b, "Add", "wpb,proj", "pb");
    node(&b, "Add", "x,pb", "res");
    node(&b, "LayerNormalization", "res,wg2,wb2", "ln2");
    node(&b, "Relu", "ln2", "r");
    node(&b, "MatMul", "r,wf", "y");
    g = finish(&b, "x", "y");
    expect("attention", g, PTQ_PLACEMENT_TRT, I8, NULL, "ln,q,v,kt,p,o,r",
           "ln=trt.weighted-input,q=trt.weighted-input,kt=trt.commutes,v=trt.weighted-input,p=trt.weighted-input,"
           "o=trt.weighted-input,k=trt.unquantized,ss=trt.unquantized,proj=trt.unquantized,pb=trt.unquantized,"
           "res=trt.fp16-transformer,ln2=trt.fp16-transformer,x=trt.unquantized,y=trt.output");
    expect("attention fp8", g, PTQ_PLACEMENT_TRT, PTQ_PREC_FP8_E4M3, NULL, "ln,q,v,kt,p,o,r",
           "res=trt.fp16-transformer,ln2=trt.fp16-transformer");
    {
        ptq_ctx ctx;
        ptq_ctx_init(&ctx);
        place_decision d[MAX_V];
        CHECK(ptq_placement_decide(&ctx, g, PTQ_PLACEMENT_TRT, I8, NULL, d) == PTQ_OK);
        CHECK_MSG(d[ptq_graph_find_value(g, "res")].action == PLACE_FP16 &&
                  d[ptq_graph_find_value(g, "ln2")].action == PLACE_FP16, "residual Add and LayerNorm in FP16");
        const int s_mm = ptq_graph_find_value(g, "s"), o_mm = ptq_graph_find_value(g, "o");
        const ptq_node *qk = &g->nodes[g->values[s_mm].producer], *pv = &g->nodes[g->values[o_mm].producer];
        for (int i = 0; i < 2; i++)
            CHECK_MSG(d[qk->inputs[i]].action == PLACE_CORE && d[pv->inputs[i]].action == PLACE_CORE,
                      "attention MatMul input %d quantized", i);
    }
    /* with the edges, the first and last MatMuls' tensors are FP16 by the edge rule first */
    ptq_placement_edges(g, edge);
    expect("attention edges", g, PTQ_PLACEMENT_TRT, I8, edge, "v,kt,p,o",
           "ln=edge,q=edge,r=edge,y=trt.output,res=trt.fp16-transformer,ln2=trt.fp16-transformer");
    check_weights_follow(g);
    /* the ort placement is quantize_static's: no FP16 rule */
    expect("attention ort", g, PTQ_PLACEMENT_ORT, I8, NULL, "x,ln,q,k,v,kt,s,ss,p,o,proj,pb,res,ln2,r",
           "res=ort.op-io,ln2=ort.op-io,r=ort.activation");

    /* LayerNorm written out (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, then the affine Mul and
     * Add) makes a transformer too: its normalized and affine outputs are FP16, the rest FP32 */
    memset(&b, 0, sizeof b);
    node(&b, "ReduceMean", "x", "m");
    node(&b, "Sub", "x,m", "d");
    node(&b, "Pow", "d,wtwo", "d2");
    node(&b, "ReduceMean", "d2", "var");
    node(&b, "Add", "var,weps", "ve");
    node(&b, "Sqrt", "ve", "sd");
    node(&b, "Div", "d,sd", "n");
    node(&b, "Mul", "n,wg", "ng");
    node(&b, "Add", "ng,wb", "ln");
    node(&b, "Add", "ln,x", "res");
    node(&b, "Constant", "", "c");
    node(&b, "Add", "res,c", "rc");
    node(&b, "Relu", "rc", "r");
    node(&b, "MatMul", "r,wf", "y");
    g = finish(&b, "x", "y");
    /* an Add of a Constant node's output (GELU's + 1) is no residual Add */
    expect("decomposed layernorm", g, PTQ_PLACEMENT_TRT, I8, NULL, "r",
           "n=trt.fp16-transformer,ng=trt.fp16-transformer,ln=trt.fp16-transformer,res=trt.fp16-transformer,"
           "m=trt.unquantized,d=trt.unquantized,ve=trt.unquantized,sd=trt.unquantized,rc=trt.unquantized");

    /* no LayerNorm and a Softmax only at the output: not a transformer, an Add of two activations stays
     * FP32 as in a CNN */
    memset(&b, 0, sizeof b);
    node(&b, "Sigmoid", "x", "s1");
    node(&b, "Tanh", "x", "t1");
    node(&b, "Add", "s1,t1", "a");
    node(&b, "Relu", "a", "r");
    node(&b, "Conv", "r,w1", "y1");
    node(&b, "Softmax", "y1", "prob");
    g = finish(&b, "x", "prob");
    expect("cnn add", g, PTQ_PLACEMENT_TRT, I8, NULL, "r",
           "a=trt.unquantized,y1=trt.unquantized,prob=trt.output");

    /* trt.small-layer: the layers TensorRT does not run in the core precision (ModelOpt's exclusions) read
     * FP16 inputs; the weights' shapes decide (OC, IC per group, kernel) */
    memset(&b, 0, sizeof b);
    node(&b, "Conv", "x,wa", "y0"); /* 8 <- 8, reads the model's input: INT8, not FP8 */
    node(&b, "Relu", "y0", "r0");
    node(&b, "Conv", "r0,wb", "y1"); /* 8 <- 8: neither */
    node(&b, "Relu", "y1", "r1");
    node(&b, "Conv", "r1,wc", "y2"); /* 24 <- 8: INT8, not FP8 (8 channels in) */
    node(&b, "Relu", "y2", "r2");
    node(&b, "Conv", "r2,wd", "y3"); /* 24 <- 24, 7x7: INT8, not FP8 (49 taps) */
    node(&b, "Relu", "y3", "r3");
    node(&b, "Conv", "r3,wg", "y4"); /* depthwise, 16 groups of 1, 3x3: INT8, not FP8 */
    node(&b, "Relu", "y4", "r4");
    node(&b, "MatMul", "r4,we", "y5"); /* K 24, N 32: both */
    node(&b, "Relu", "y5", "r5");
    node(&b, "Gemm", "r5,wf", "y6"); /* N 10: neither */
    static const struct {
        const char *name;
        int ndim;
        int64_t dims[4];
    } shapes[] = {{"wa", 4, {8, 8, 3, 3}},   {"wb", 4, {8, 8, 3, 3}}, {"wc", 4, {24, 8, 3, 3}},
                  {"wd", 4, {24, 24, 7, 7}}, {"wg", 4, {16, 1, 3, 3}}, {"we", 2, {24, 32}}, {"wf", 2, {24, 10}}};
    for (int i = 0; i < (int)(sizeof shapes / sizeof shapes[0]); i++) {
        ptq_value *w = &b.values[value(&b, shapes[i].name)];
        w->ndim = shapes[i].ndim;
        memcpy(w->dims, shapes[i].dims, sizeof shapes[i].dims);
    }
    static const ptq_attr groups = {.name = "group", .type = PTQ_ATTR_INT, .i = 16};
    b.nodes[8].n_attrs = 1;
    b.nodes[8].attrs = &groups;
    g = finish(&b, "x", "y6");
    expect("small layers int8", g, PTQ_PLACEMENT_TRT, I8, NULL, "x,r1,r2,r3,r4",
           "x=trt.weighted-input,r0=trt.small-layer,r1=trt.weighted-input,r3=trt.weighted-input,"
           "r5=trt.small-layer,y1=trt.fused");
    expect("small layers fp8", g, PTQ_PLACEMENT_TRT, PTQ_PREC_FP8_E4M3, NULL, "r4",
           "x=trt.small-layer,r0=trt.small-layer,r1=trt.small-layer,r2=trt.small-layer,r3=trt.small-layer,"
           "r4=trt.weighted-input,r5=trt.small-layer");
    /* the rule is trt's: --placement all and ort round them as before */
    expect("small layers all", g, PTQ_PLACEMENT_ALL, I8, NULL, "x,y0,r0,y1,r1,y2,r2,y3,r3,y4,r4,y5,r5,y6", "");
    check_ort_registry();
    check_norms();
    return test_done("test_placement");
}
